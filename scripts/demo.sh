#!/usr/bin/env bash
# quip's main job, for `make demo`: a conversation from the shell on a real
# model. A question, a follow-up that continues it (its --stats line shows the
# first turn restored from the prefix cache instead of evaluated again), a
# nested call, piped input, the conversation log, then a speed measurement.
#   scripts/demo.sh [MODEL.gguf]
# Without MODEL (when scripts/fetch_models.sh could not fetch the demo model)
# it makes a tiny llama model with random weights: its text is gibberish,
# the mechanics are real.
# Everything quip stores goes under build/demo-home (QUIP_HOME), not into
# your own conversations; the model is given once, as the default model of
# that home's config.toml.
set -euo pipefail
model=${1:-}
if [ -z "$model" ]; then
  model=build/demo-tiny.gguf
  build/quip-synth tiny "$model"
  echo "demo: no real model: using a tiny llama model with random weights ($model); its answers are gibberish" >&2
fi
model=$(realpath "$model")
home=$PWD/build/demo-home
mkdir -p "$home/config"
printf 'model = "%s"\n' "$model" >"$home/config/config.toml"
export QUIP_HOME=$home QUIP_SESSION=demo-$$ PATH=$PWD/build:$PATH
unset QUIP_CONFIG

# Each command is shown as a shell would show it, then run.
run() {
  printf '\n$ %s\n' "$1" >&2
  eval "$1"
}

run "quip inspect '$model' | head -n 14"
run "quip 'What is 1+1?'"
run "quip -c --stats 'And what is that number times ten?'"
run "quip \"\$(quip 'Name one planet of the solar system. Answer with its name only.') is a planet. Tell me one fact about it.\""
if git rev-parse --git-dir >/dev/null 2>&1; then
  run "git log -3 --format=%s | quip -n 64 'Summarize these commit messages in one sentence.'"
else
  run "head -n 12 README.md | quip -n 64 'Summarize this text in one sentence.'"
fi
run "quip log -n 4"
run "quip show \$(quip log -n 4 --json | grep -o '\"id\":[0-9]*' | tail -n 1 | cut -d: -f2)"
run "quip cache stats"
run "quip bench -m '$model' -p 64 -n 16 -r 3"
