#!/usr/bin/env bash
# quip's main job, for `make demo`: a model continues a prompt (--raw, no
# chat template yet), streamed to stdout, after `quip inspect` shows what
# the model is. With no MODEL given it makes its own tiny model with random
# weights (its text is gibberish; the mechanics are real).
#   scripts/demo.sh [MODEL.gguf]
set -euo pipefail
model=${1:-}
if [ -z "$model" ]; then
  model=build/demo-tiny.gguf
  build/quip-synth tiny "$model"
  echo "demo: no MODEL=path.gguf given: made a tiny llama model with random weights at $model" >&2
fi
set -x
build/quip inspect "$model"
build/quip --raw -m "$model" -n 48 'Once upon a time'
echo
build/quip --raw -m "$model" -n 4 --logprobs 3 --json 'Once upon a time'
build/quip bench -m "$model" -p 64 -n 16 -r 3
