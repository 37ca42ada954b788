#!/usr/bin/env python3
"""Records reference.json: llama.cpp's outputs on RoPE-scaled files.

    tests/data/rope_scaled/record.py REF_LOGPROBS QUIP_SYNTH > reference.json

Each model is a file that `quip-synth SHAPE FILE --rope-scaling SCALING`
writes (random weights, the same bytes on every machine: the seed is
fixed), named "SHAPE SCALING". REF_LOGPROBS is ref_logprobs.cpp of this
folder, built against llama.cpp's libllama (README.md): for each prompt,
its tokens, 16 greedy tokens and the top 8 log-probabilities of each step,
the format of ../shared/*/reference.json.
"""
import json
import os
import subprocess
import sys
import tempfile

CASES = [
    ("tiny", "linear:4"),
    ("tiny", "yarn:4:512"),
    ("tiny-qwen2", "linear:2"),
    ("tiny-qwen2", "yarn:8:256"),
    ("tiny-qwen3", "yarn:4:1024"),
    ("tiny-qwen3", "linear:8"),
]
# A short prompt, and one of 400 byte tokens: positions where the scaled
# and unscaled angles are far apart.
PROMPTS = [
    "The quick brown fox jumps over the lazy dog.",
    " ".join(f"line {i}: the tide rose {i % 7} feet at dawn." for i in range(12)),
]
N_PREDICT = 16


def main():
    ref_logprobs, synth = sys.argv[1], sys.argv[2]
    models = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape, scaling in CASES:
            path = os.path.join(tmp, "m.gguf")
            subprocess.run([synth, shape, path, "--rope-scaling", scaling], check=True)
            out = subprocess.run([ref_logprobs, path, str(N_PREDICT), f"{shape} {scaling}"] +
                                 PROMPTS, check=True, capture_output=True).stdout
            entry = json.loads(out)
            entry["shape"], entry["rope_scaling"] = shape, scaling
            models.append(entry)
    json.dump({"reference": "llama.cpp build 9749 (d32676d77), libllama, CPU, AVX-512 build "
                            "without AVX512_FP16, 2 threads, context and batch 4096",
               "n_predict": N_PREDICT, "models": models}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
