#!/usr/bin/env python3
"""Records llama.cpp's tokenization of test strings into llama-tokenize.json.

Usage: record_llama_tokenize.py LLAMA_TOKENIZE SHARED_DIR DEMO_MODEL QUIP > llama-tokenize.json

LLAMA_TOKENIZE is llama.cpp's llama-tokenize (build 9749 for the committed
file), SHARED_DIR the ../shared folder, DEMO_MODEL SmolLM2-135M-Instruct.Q4_1.gguf.
Each string goes through a file (-f, read verbatim) with --no-escape --ids
--log-disable, in three modes:
  plain    --no-bos --no-parse-special   (as the vocab/*.out files are made)
  prompt   --no-parse-special            (BOS as the model asks: a raw prompt)
  special  (defaults: BOS, special tokens parsed, as chat templates are fed)
A run that does not exit 0 (llama.cpp aborts on text some vocabularies cannot
spell) is recorded as {"aborted": true}, with quip's own answer under "quip"
(QUIP tokenize --ids, read from stdin), which is to be checked by hand against
the rule README.md states.
"""
import json
import os
import subprocess
import sys
import tempfile

SEP = "\n__ggml_vocab_test__\n"

# Vocabularies: (name in the json, path under SHARED_DIR, "demo", or
# "fetched:FILE" for another model of scripts/fetch_models.sh beside the demo
# model; whether the shared .inp strings are recorded too).
VOCABS = [
    ("real/stories260K.gguf", True),
    ("real/TinyStories-656K-Q8_0.gguf", True),
    ("demo", True),
    ("vocab/ggml-vocab-llama-spm.gguf", False),
    ("vocab/ggml-vocab-phi-3.gguf", False),
    ("vocab/ggml-vocab-llama-bpe.gguf", False),
    ("vocab/ggml-vocab-gpt-2.gguf", False),
    ("vocab/ggml-vocab-deepseek-llm.gguf", False),
    ("vocab/ggml-vocab-deepseek-coder.gguf", False),
    ("vocab/ggml-vocab-falcon.gguf", False),
    ("vocab/ggml-vocab-mpt.gguf", False),
    ("vocab/ggml-vocab-starcoder.gguf", False),
    ("vocab/ggml-vocab-refact.gguf", False),
    ("models/tiny-qwen2-e64-f16.gguf", False),
    ("archs/tiny-phi3-e96-f16.gguf", False),
    ("fetched:gemma-3-270m-q4_k_m.gguf", True),
]

# Strings with special-token text, spaces around it, and characters some
# vocabularies cannot spell.
SPECIAL_TEXTS = [
    "<s>[INST] brackets [/INST] </s> <unk>",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>Hello<|endoftext|><|endoftext|>",
    "a</s>b <s> c<unk>d<unk><s></s>",
    "<|user|>\nHello<|end|>\n<|assistant|>\n  <|end|>  x",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<reponame>x<file_sep>y<filename>z<fim_prefix>a<fim_suffix>b<fim_middle>",
    "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>c<|repo_name|><|file_sep|>",
    "  <|im_end|>  spaces  </s>  around <s>  \n",
    "<|start_story|>Once upon a time<|end_story|> the end",
    "<｜begin▁of▁sentence｜>User: hi<｜end▁of▁sentence｜>",
    "Hello (world) [x] {y} caf\u00e9 \u2713 \U0001F600 ((",
    "",
]

MODES = {
    "plain": ["--no-bos", "--no-parse-special"],
    "prompt": ["--no-parse-special"],
    "special": [],
}


def tokenize(binary, model, text, flags):
    with tempfile.NamedTemporaryFile("wb", delete=False) as f:
        f.write(text.encode("utf-8"))
        path = f.name
    try:
        env = dict(os.environ, GGML_NO_BACKTRACE="1")
        r = subprocess.run([binary, "-m", model, "-f", path, "--no-escape", "--ids",
                            "--log-disable"] + flags,
                           capture_output=True, env=env, timeout=300)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        return {"aborted": True}
    return {"ids": json.loads(r.stdout.decode().strip().splitlines()[-1])}


QUIP_FLAGS = {"plain": ["--no-bos"], "prompt": [], "special": ["--parse-special"]}


def quip_tokenize(quip, model, text, mode):
    r = subprocess.run([quip, "tokenize", "-m", model, "--ids"] + QUIP_FLAGS[mode] + ["-"],
                       input=text.encode("utf-8"), capture_output=True, timeout=300, check=True)
    return [int(t) for t in r.stdout.split()]


def main():
    binary, shared, demo, quip = sys.argv[1:5]
    inp = open(os.path.join(shared, "vocab", "ggml-vocab-llama-spm.gguf.inp"),
               encoding="utf-8").read().split(SEP)
    if inp and inp[-1] == "":
        inp.pop()
    out = {
        "llama_cpp": "build 9749 (d32676d77), tools/tokenize",
        "how": "tests/data/README.md",
        "modes": MODES,
        "vocabs": [],
    }
    for name, with_inp in VOCABS:
        if name == "demo":
            model = demo
        elif name.startswith("fetched:"):  # beside the demo model (fetch_models.sh)
            model = os.path.join(os.path.dirname(demo), name[len("fetched:"):])
        else:
            model = os.path.join(shared, name)
        cases = []
        texts = [(t, m) for t in SPECIAL_TEXTS for m in MODES]
        if with_inp:
            texts += [(t, "plain") for t in inp]
        for text, mode in texts:
            case = {"text": text, "mode": mode}
            case.update(tokenize(binary, model, text, MODES[mode]))
            if "aborted" in case:
                case["quip"] = quip_tokenize(quip, model, text, mode)
            cases.append(case)
        out["vocabs"].append({"vocab": name, "cases": cases})
        print(name, len(cases), file=sys.stderr)
    write(out)


def write(out):
    # One case per line, so that a change shows as a change of cases.
    dump = lambda v: json.dumps(v, ensure_ascii=False)
    w = sys.stdout.write
    w("{\n")
    for key in ("llama_cpp", "how", "modes"):
        w(f" {dump(key)}: {dump(out[key])},\n")
    w(' "vocabs": [\n')
    for i, v in enumerate(out["vocabs"]):
        w(f'  {{"vocab": {dump(v["vocab"])}, "cases": [\n')
        w(",\n".join("   " + dump(c) for c in v["cases"]))
        w("\n  ]}" + ("," if i + 1 < len(out["vocabs"]) else "") + "\n")
    w(" ]\n}\n")


if __name__ == "__main__":
    main()
