#!/usr/bin/env python3
"""Records reference.json: llama.cpp's outputs on quip-synth's files.

    tests/data/synth_models/record.py REF_LOGPROBS QUIP_SYNTH > reference.json
    tests/data/synth_models/record.py REF_LOGPROBS QUIP_SYNTH --add-missing reference.json

Each model is a file that `quip-synth SHAPE FILE OPTIONS...` writes (random
weights, the same bytes on every machine: the seed is fixed), named
"SHAPE OPTIONS". REF_LOGPROBS is ref_logprobs.cpp of this folder, built
against llama.cpp's libllama (README.md): for each prompt, its tokens, 16
greedy tokens and the top 8 log-probabilities of each step, the format of
../shared/*/reference.json. With --add-missing FILE, it records only the
cases FILE does not hold yet and appends them to FILE, leaving its other
entries as they are.
"""
import json
import os
import subprocess
import sys
import tempfile

CASES = [
    ("tiny", "--rope-scaling linear:4"),
    ("tiny", "--rope-scaling yarn:4:512"),
    ("tiny-qwen2", "--rope-scaling linear:2"),
    ("tiny-qwen2", "--rope-scaling yarn:8:256"),
    ("tiny-qwen3", "--rope-scaling yarn:4:1024"),
    ("tiny-qwen3", "--rope-scaling linear:8"),
    # LongRoPE: the reference's context (4096) is beyond 1024, so the long
    # factors apply, and within 4096, so the short ones.
    ("tiny-phi3", "--rope-scaling longrope:1024"),
    ("tiny-phi3", "--rope-scaling longrope:4096"),
    # What llama.cpp's loaders read in every family (one attn_qkv, Q/K/V
    # biases) and in some (llama's attention output and FFN biases,
    # qwen2's output bias).
    ("tiny", "--fused-qkv --biases"),
    ("tiny-qwen2", "--biases"),
    ("tiny-qwen3", "--fused-qkv"),
    ("tiny-phi3", "--biases"),
    # glm4: fused gate/up, pre- and post-norms, half rotation; NextN blocks
    # counted in block_count but not run.
    ("tiny-glm4", ""),
    ("tiny-glm4", "--nextn 1 --biases"),
    ("tiny-glm4", "--fused-qkv --nextn 2"),
    # mistral3 (Ministral 3): YaRN with its log multiplier and beta values,
    # and the attention temperature past each 64 positions of the original
    # context (the long prompt reaches position 400).
    ("tiny-mistral3", "--rope-scaling yarn:16:64 --yarn-log-mul 1 --attn-temperature 0.1"),
    ("tiny-mistral3", "--rope-scaling yarn:4:512 --yarn-log-mul 0.5 --yarn-beta 16:2 --biases"),
    # qwen3vl's text model: interleaved multimodal rotation, which for text
    # positions is NeoX rotation.
    ("tiny-qwen3vl", ""),
    ("tiny-qwen3vl", "--rope-scaling yarn:4:1024"),
    # exaone4: norms after the branches only; windows only in the 64-block
    # model (every 4th layer global and unrotated), ignored in the others.
    ("tiny-exaone4", "--sliding-window 16"),
    ("tiny-exaone4-64", "--sliding-window 16"),
    # cohere2 (Command R7B): LayerNorms, parallel attention and FFN, windows
    # on 3 of 4 layers and no rotation on the 4th, logits times logit_scale.
    ("tiny-cohere2", "--sliding-window 16"),
    # Mixtures of experts: qwen3moe (softmax over all experts, the chosen
    # renormalized), and gpt-oss (sinks, biases, softmax over the chosen
    # logits, clamped SwiGLU, windows on alternate layers, YaRN), in F32,
    # in llama-quantize's MXFP4_MOE mix, and all MXFP4.
    ("tiny-qwen3moe", ""),
    ("tiny-qwen3moe", "--mix q4_k_m"),
    ("tiny-gpt-oss", "--sliding-window 16"),
    ("tiny-gpt-oss", "--mix mxfp4_moe --sliding-window 24"),
    ("tiny-gpt-oss", "--type mxfp4 --sliding-window 16 --rope-scaling yarn:8:256"),
    # qwen2moe (a shared expert beside the chosen ones, gated by a sigmoid,
    # the chosen weights not renormalized) and llama with experts
    # (Mixtral: softmax router, renormalized, experts feed_forward_length
    # wide).
    ("tiny-qwen2moe", ""),
    ("tiny-qwen2moe", "--mix q4_k_m"),
    ("tiny-mixtral", ""),
    ("tiny-mixtral", "--type q4_0"),
    # deepseek2's latent attention (queries through a low rank, or one
    # attn_q in the lite form), sigmoid routing with a selection bias,
    # normalized and scaled, or softmax (lite); shared experts, a leading
    # dense layer; YaRN with DeepSeek's mscale_all_dim (0.707, as
    # DeepSeek-V2-Lite; and 1).
    ("tiny-deepseek2", ""),
    ("tiny-deepseek2", "--type f16 --lite"),
    ("tiny-deepseek2", "--lite --rope-scaling yarn:4:512 --yarn-log-mul 0.0707"),
    ("tiny-deepseek2", "--type q8_0 --rope-scaling yarn:8:256 --yarn-log-mul 0.1"),
    # The experts' gate and up as one ffn_gate_up_exps.
    ("tiny-deepseek2", "--type f16 --fuse-gate-up"),
    # qwen35 (Qwen3.5): gated delta-net layers (a causal convolution, then
    # the delta rule with per-head decay and a gated RMS norm) and, every
    # 4th layer, attention with a sigmoid output gate, Q/K norms and
    # interleaved multimodal rotation over a quarter of each head; state 64
    # (whole 64-wide SIMD loops) and 32 (their leftovers).
    # qwen35moe: the same layers with experts beside a gated shared one, in
    # F32 and in llama-quantize's Q4_K_M mix. No --fused-qkv case: the
    # delta-net layers already have attn_qkv, and llama.cpp's qwen35 graph
    # reads only a separate attn_q, attn_k and attn_v in its attention.
    ("tiny-qwen35", ""),
    ("tiny-qwen35", "--state-size 32 --type q8_0"),
    ("tiny-qwen35moe", ""),
    ("tiny-qwen35moe", "--mix q4_k_m"),
    # gemma4 (Gemma 4): sliding layers with narrower heads and more KV heads
    # than the full-attention ones, whose rotation turns a quarter of the
    # head (rope_freqs); values RMS-normed; the last two layers reading
    # earlier layers' keys and values, with a twice as wide FFN; per-layer
    # embeddings; output scales. The MoE one: experts beside the dense FFN
    # with their own norms and scales, the full-attention layer's values
    # its keys' projection. F32, and llama-quantize's Q4_K_M mix.
    ("tiny-gemma4", ""),
    ("tiny-gemma4", "--mix q4_k_m"),
    ("tiny-gemma4moe", ""),
    ("tiny-gemma4moe", "--mix q4_k_m"),
]
# A short prompt, and one of 400 byte tokens: positions where the scaled
# and unscaled angles are far apart.
PROMPTS = [
    "The quick brown fox jumps over the lazy dog.",
    " ".join(f"line {i}: the tide rose {i % 7} feet at dawn." for i in range(12)),
]
N_PREDICT = 16


def record(ref_logprobs, synth, cases):
    """The reference entries of `cases`, (shape, options) pairs."""
    models = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape, options in cases:
            path = os.path.join(tmp, "m.gguf")
            subprocess.run([synth, shape, path] + options.split(), check=True)
            out = subprocess.run([ref_logprobs, path, str(N_PREDICT), f"{shape} {options}".strip()] +
                                 PROMPTS, check=True, capture_output=True).stdout
            entry = json.loads(out)
            entry["shape"], entry["options"] = shape, options
            models.append(entry)
    return models


def main():
    if len(sys.argv) not in (3, 5) or (len(sys.argv) == 5 and sys.argv[3] != "--add-missing"):
        sys.exit(__doc__)
    ref_logprobs, synth = sys.argv[1], sys.argv[2]
    if len(sys.argv) == 5:
        path = sys.argv[4]
        with open(path) as f:
            reference = json.load(f)
        held = {m["model"] for m in reference["models"]}
        missing = [c for c in CASES if f"{c[0]} {c[1]}".strip() not in held]
        reference["models"] += record(ref_logprobs, synth, missing)
        with open(path, "w") as f:
            json.dump(reference, f, indent=1)
            f.write("\n")
        print(f"{path}: added {len(missing)} models", file=sys.stderr)
        return
    json.dump({"reference": "llama.cpp build 9749 (d32676d77), libllama, CPU, AVX-512 build "
                            "without AVX512_FP16, 2 threads, context and batch 4096",
               "n_predict": N_PREDICT, "models": record(ref_logprobs, synth, CASES)},
              sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
