#!/usr/bin/env python3
"""Records golden.json: llama.cpp's greedy answers on Gemma 3 270M.

    tests/data/gemma3-270m/record.py LLAMA_COMPLETION MODEL > golden.json

Each case is a raw prompt (the file has no chat template: it is the base
model), answered by `llama-completion -m MODEL -p PROMPT -n N --temp 0
-no-cnv --no-display-prompt -t 2 -c 1024 --seed 1`; `text` is its stdout
without its trailer (" [end of text]\n" after an end-of-generation token,
then "\n\n").
"""
import hashlib
import json
import subprocess
import sys

# A passage of some 700 tokens: past the model's sliding window of 512
# positions, and past the 512 cached positions where a decoding step's
# attention is split over the threads.
LONG = " ".join(
    f"Entry {i}: the lighthouse keeper wrote that the tide came in at {i % 12 + 1} o'clock, "
    f"the gulls numbered {i * 7 % 50}, and the lamp burned {['oil', 'gas', 'wax'][i % 3]}."
    for i in range(24)
) + " Summary of the entries:"

CASES = [
    ("The capital of France is", 48),
    ("Once upon a time, in a small village by the sea,", 64),
    ("def fibonacci(n):", 64),
    ("Le chat est assis sur", 32),
    ("I love pizza 🍕 and café au lait. In German:", 32),
    ("1, 2, 3, 5, 8, 13,", 24),
    (LONG, 48),
]


def main():
    completion, model = sys.argv[1], sys.argv[2]
    with open(model, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    cases = []
    for prompt, n in CASES:
        out = subprocess.run(
            [completion, "-m", model, "-p", prompt, "-n", str(n), "--temp", "0", "-no-cnv",
             "--no-display-prompt", "-t", "2", "-c", "1024", "--seed", "1"],
            check=True, capture_output=True).stdout.decode("utf-8")
        # llama-completion ends with "\n\n", after " [end of text]\n" when
        # the model ended its text.
        assert out.endswith("\n\n"), out
        out = out[:-2]
        stopped = out.endswith(" [end of text]\n")
        if stopped:
            out = out[: -len(" [end of text]\n")]
        cases.append({"kind": "raw", "prompt": prompt, "n_predict": n, "text": out,
                      "stopped_at_eos": stopped})
    json.dump({"model": "gemma-3-270m-q4_k_m.gguf", "model_sha256": sha,
               "reference": "llama.cpp build 9749 (d32676d77), CPU, AVX-512 build without "
                            "AVX512_FP16, 2 threads",
               "cases": cases}, sys.stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
