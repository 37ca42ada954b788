#!/usr/bin/env python3
"""Writes a small Gemma 4 style vocabulary (tokenizer.ggml.model = "gemma4").

Usage: make_vocab.py OUT.gguf

A vocabulary-only GGUF v3 file, written here byte by byte (no gguf package,
and not quip's own writer, so that both llama.cpp and quip read a file made
independently of either): the special tokens of Gemma 4 with the token types
its converter gives them (llama.cpp's conversion/gemma.py, Gemma4Model), the
256 byte tokens <0x00>..<0xFF>, single characters (spaces written as U+2581
"▁"), and the tokens a list of merges makes. Deterministic: the same bytes on
every run.

On purpose, unlike a converted file:
  - tokenizer.ggml.add_bos_token is false: llama.cpp adds BOS to Gemma 4
    text anyway, which the recorded cases show;
  - the merge "q z" makes "qz", which is no token (Hugging Face would refuse
    such a vocabulary; llama.cpp merges it and writes it as its bytes);
  - "</s>" is a token, to show that with "<|tool_response>" it is plain text.
"""
import struct
import sys

SPACE = "\u2581"

# Token types, as llama.cpp's llama_token_type.
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

SPECIALS = [
    ("<pad>", CONTROL),
    ("<eos>", CONTROL),
    ("<bos>", CONTROL),
    ("<unk>", UNKNOWN),
    ("<mask>", CONTROL),
    ("<|turn>", CONTROL),
    ("<turn|>", CONTROL),
    ("<start_of_turn>", CONTROL),
    ("<end_of_turn>", CONTROL),
    # The converter makes these user-defined so that they are always shown;
    # llama.cpp makes "<|tool_response>" a control token again (it ends
    # generation).
    ("<|channel>", USER_DEFINED),
    ("<channel|>", USER_DEFINED),
    ("<|tool_response>", USER_DEFINED),
    ("<unused0>", UNUSED),
]

# Characters that are tokens of their own. Not here, so written as bytes:
# "\r", "ö", "ï", "ß", "€", "語", "😀", U+00A0, and more.
CHARS = ([SPACE, "\n", "\t"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] +
         list("HWTIGC") + list("0123456789") + list(".,!?'\"-:;()<>/|_=#*[]") +
         ["é", "ü", "ñ", "中", "文", "日", "本", "—"])

# Merges, in rank order: "left right".
MERGES = [
    (SPACE, "t"), ("h", "e"), (SPACE + "t", "he"),            # ▁the
    (SPACE, SPACE), (SPACE * 2, SPACE * 2),                   # ▁▁ ▁▁▁▁
    ("l", "l"), ("e", "ll"), ("H", "ell"), ("Hell", "o"),     # Hello
    (SPACE, "w"), ("o", "r"), (SPACE + "w", "or"),            # ▁wor
    ("l", "d"), (SPACE + "wor", "ld"),                        # ▁world
    ("o", SPACE + "w"),                                       # o▁w: a token with ▁ inside
    ("\n", "\n"),                                             # \n\n
    ("\t", "\t"),                                             # \t\t
    ("a", "a"),                                               # aa
    (SPACE, "a"), ("n", "d"), (SPACE + "a", "nd"),            # ▁and
    ("i", "n"), ("in", "g"),                                  # ing
    ("c", "a"), ("ca", "f"), ("caf", "é"),                    # café
    (SPACE, "n"),                                             # ▁n
    ("中", "文"), (SPACE, "中文"),                             # ▁中文
    ("日", "本"),                                             # 日本
    ("!", "!"),                                               # !!
    ("1", "2"), ("12", "3"),                                  # 123
    ("<", "/"), ("</", "s"), ("</s", ">"),                    # </s>
    ("q", "z"),                                               # qz: no such token
    (SPACE, "x"), ("x", SPACE),                               # ▁x x▁
    ("e", "s"), ("t", "es"), ("tes", "t"),                    # test
]
NOT_TOKENS = {"qz"}

# Tokens no merge makes: llama.cpp takes a run of newlines that is a token
# whole ("\n\n\n"), but any other text only as merges make it ("▁▁▁" never).
UNMERGED = ["\n\n\n", SPACE * 3]


def tokens_and_types():
    tokens = [t for t, _ in SPECIALS]
    types = [k for _, k in SPECIALS]
    for b in range(256):
        tokens.append(f"<0x{b:02X}>")
        types.append(BYTE)
    for t in CHARS:
        tokens.append(t)
        types.append(NORMAL)
    for left, right in MERGES:
        t = left + right
        if t not in NOT_TOKENS and t not in tokens:
            tokens.append(t)
            types.append(NORMAL)
    for t in UNMERGED:
        tokens.append(t)
        types.append(NORMAL)
    assert len(set(tokens)) == len(tokens)
    for left, right in MERGES:
        assert " " not in left + right
        assert left in tokens or left in NOT_TOKENS, left
        assert right in tokens or right in NOT_TOKENS, right
    return tokens, types


# GGUF value types.
U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return gguf_string(key) + struct.pack("<I", vtype) + payload


def array(elem_type, items):
    out = struct.pack("<IQ", elem_type, len(items))
    for item in items:
        if elem_type == STRING:
            out += gguf_string(item)
        elif elem_type == I32:
            out += struct.pack("<i", item)
        elif elem_type == F32:
            out += struct.pack("<f", item)
        else:
            raise ValueError(elem_type)
    return out


def main():
    tokens, types = tokens_and_types()
    ids = {t: i for i, t in enumerate(tokens)}
    entries = [
        kv("general.architecture", STRING, gguf_string("gemma4")),
        kv("general.name", STRING, gguf_string("quip gemma4 test vocabulary")),
        kv("tokenizer.ggml.model", STRING, gguf_string("gemma4")),
        kv("tokenizer.ggml.tokens", ARRAY, array(STRING, tokens)),
        kv("tokenizer.ggml.scores", ARRAY, array(F32, [0.0] * len(tokens))),
        kv("tokenizer.ggml.token_type", ARRAY, array(I32, types)),
        kv("tokenizer.ggml.merges", ARRAY, array(STRING, [f"{l} {r}" for l, r in MERGES])),
        kv("tokenizer.ggml.bos_token_id", U32, struct.pack("<I", ids["<bos>"])),
        kv("tokenizer.ggml.eos_token_id", U32, struct.pack("<I", ids["<eos>"])),
        kv("tokenizer.ggml.unknown_token_id", U32, struct.pack("<I", ids["<unk>"])),
        kv("tokenizer.ggml.padding_token_id", U32, struct.pack("<I", ids["<pad>"])),
        kv("tokenizer.ggml.add_space_prefix", BOOL, struct.pack("<?", False)),
        kv("tokenizer.ggml.add_bos_token", BOOL, struct.pack("<?", False)),
        kv("tokenizer.ggml.add_eos_token", BOOL, struct.pack("<?", False)),
    ]
    # Header (magic, version 3, no tensors, the entries), padded to the
    # default alignment of 32 where the (empty) data section starts.
    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(entries)) + b"".join(entries)
    out += b"\0" * (-len(out) % 32)
    with open(sys.argv[1], "wb") as f:
        f.write(out)
    print(f"{sys.argv[1]}: {len(tokens)} tokens, {len(MERGES)} merges", file=sys.stderr)


if __name__ == "__main__":
    main()
