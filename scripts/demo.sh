#!/usr/bin/env bash
# quip's main job, for `make demo`: a conversation from the shell. A first
# question, a follow-up that continues it (restoring the first turn's
# evaluated state from the prefix cache instead of recomputing it), the
# conversation log, then a raw continuation with log-probabilities and a
# speed measurement. With no MODEL given it makes its own tiny model with
# random weights (its text is gibberish; the mechanics are real).
# Everything quip stores goes under build/demo-home (QUIP_HOME), not into
# your own conversations.
#   scripts/demo.sh [MODEL.gguf]
set -euo pipefail
model=${1:-}
if [ -z "$model" ]; then
  model=build/demo-tiny.gguf
  build/quip-synth tiny "$model"
  echo "demo: no MODEL=path.gguf given: made a tiny llama model with random weights at $model" >&2
fi
export QUIP_HOME=$PWD/build/demo-home QUIP_SESSION=demo
unset QUIP_CONFIG
set -x
build/quip inspect "$model"
build/quip -m "$model" -n 32 --stats 'What is 1+1?'
build/quip -c -n 32 --stats 'Not that trivial, is it?'
build/quip log -n 3
id=$(build/quip log -n 1 --json | grep -o '"id":[0-9]*' | head -n 1 | cut -d: -f2)
build/quip show "$id"
build/quip --raw -m "$model" -n 4 --logprobs 3 --json 'Once upon a time'
build/quip cache stats
build/quip bench -m "$model" -p 64 -n 16 -r 3
