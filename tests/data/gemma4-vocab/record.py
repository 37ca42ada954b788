#!/usr/bin/env python3
"""Records llama.cpp's tokenization of test strings with the gemma4 vocabulary.

Usage: record.py LLAMA_TOKENIZE VOCAB.gguf > llama-tokenize.json

LLAMA_TOKENIZE is llama.cpp's llama-tokenize (build 9749 for the committed
file), VOCAB.gguf the file make_vocab.py writes. Each string goes through a
file (-f, read verbatim) with --no-escape --ids --log-disable, in three modes
(as tests/data/record_llama_tokenize.py):
  plain    --no-bos --no-parse-special
  prompt   --no-parse-special            (BOS as the model asks: a raw prompt)
  special  (defaults: BOS, special tokens parsed, as chat templates are fed)
The tokens that end generation are read from llama-tokenize's own log
(-v: the "print_info: EOG token = ID" lines).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

SPACE = "\u2581"

TEXTS = [
    "",
    "Hello world",
    " Hello world",
    "Hello world ",
    "Hello   world",
    " ",
    "    ",
    "the the  the   the",
    "\n",
    "\n\n",
    "\n\n\n",
    "\n\n\n\n\n",
    "Hello\nworld",
    "Hello \n world\n\n",
    " \n \n",
    "\r\n",
    "\t",
    "\tindented\t\ttabs\t\t\t",
    "caf\u00e9 na\u00efve ni\u00f1o \u00fcber",
    "\u4e2d\u6587 \u65e5\u672c\u8a9e",
    "emoji \U0001F600 ok",
    "\u00df\u20ac\u00f6",
    "x\u00a0y",
    "aaaa aaa aa a",
    "Hello world!!!",
    "qz qzq zq",
    "123 4567",
    "o world",
    "x x  x",
    "testing tests",
    "\u2014 dash \u2014",
    SPACE + "literal" + SPACE + SPACE + "bars",
    "</s> and <eos>",
    "  <eos>  <bos>  ",
    "<|turn>user\nHi there<turn|>\n<|turn>model\n",
    "<start_of_turn>user\nhello<end_of_turn>\n",
    "<|channel>thought\n<channel|>done",
    "<|tool_response>x<|tool_response>",
    "<bos><pad><unk><mask><unused0>",
    "<eos",
]

MODES = {
    "plain": ["--no-bos", "--no-parse-special"],
    "prompt": ["--no-parse-special"],
    "special": [],
}


def run(binary, model, text, flags):
    with tempfile.NamedTemporaryFile("wb", delete=False) as f:
        f.write(text.encode("utf-8"))
        path = f.name
    try:
        env = dict(os.environ, GGML_NO_BACKTRACE="1")
        return subprocess.run([binary, "-m", model, "-f", path, "--no-escape", "--ids"] + flags,
                              capture_output=True, env=env, timeout=300, check=True)
    finally:
        os.unlink(path)


def main():
    binary, model = sys.argv[1:3]
    log = run(binary, model, "x", ["-v"]).stderr.decode()
    eog = sorted({int(m) for m in re.findall(r"print_info: EOG token\s*=\s*(\d+)", log)})
    cases = []
    for text in TEXTS:
        for mode, flags in MODES.items():
            r = run(binary, model, text, flags + ["--log-disable"])
            ids = json.loads(r.stdout.decode().strip().splitlines()[-1])
            cases.append({"text": text, "mode": mode, "ids": ids})
    dump = lambda v: json.dumps(v, ensure_ascii=False)
    w = sys.stdout.write
    w("{\n")
    w(f' "llama_cpp": {dump("build 9749 (d32676d77), tools/tokenize")},\n')
    w(f' "how": {dump("tests/data/gemma4-vocab/README.md")},\n')
    w(f' "modes": {dump(MODES)},\n')
    w(f' "eog": {dump(eog)},\n')
    w(' "cases": [\n')
    w(",\n".join("  " + dump(c) for c in cases))
    w("\n ]\n}\n")


if __name__ == "__main__":
    main()
