#!/usr/bin/env bash
# quip's main job, for `make demo`. Until the engine lands this inspects a
# model and tokenizes a sentence with it; with no MODEL given it makes its
# own tiny model with random weights.
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
build/quip tokenize -m "$model" 'Hello from quip!'
