#!/usr/bin/env bash
# The follow-up benchmark of the prefix cache: a conversation of about 1.5k
# tokens, then a follow-up turn with a 16-token answer, timed end to end as
# a user runs it (process start to exit), with the prefix cache and, as the
# baseline in the same run, without it (--no-cache: the whole conversation
# evaluated again, as every chat CLI does). Two follow-ups: a short one
# ("Why N?": the new turn is its template tokens and a few characters) and
# a long question. quip-synth vocabularies split text into characters, so
# the long one evaluates ~84 tokens where a trained vocabulary needs ~25;
# the output shows each turn's counts.
#   scripts/bench_followup.sh [MODEL.gguf] [REPS] [THREADS]
# Without MODEL it makes a Qwen2.5-0.5B-shaped Q4_K_M model with quip-synth.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-} reps=${2:-5} threads=${3:-2}
build=${BUILD:-build}
quip=$build/quip
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$model" ]; then
  model=$work/qwen2.5-0.5b-q4_k_m.gguf
  "$build/quip-synth" qwen2.5-0.5b "$model" --type q4_k_m
fi
export QUIP_HOME=$work/home QUIP_SESSION=bench-followup
unset QUIP_CONFIG

# About 1.5k tokens of conversation: a long first question (numbered
# sentences, so the tokenizer cannot squeeze them) and its answer. The
# sentences are counted in the model's own tokens (a quip-synth vocabulary
# splits text much finer than a trained one).
sentences() { for i in $(seq 1 "$1"); do echo "Sentence $i of the context says something new."; done; }
per10=$(sentences 10 | "$quip" tokenize -m "$model" --ids --no-bos - | wc -w)
sentences $((14500 / per10)) >"$work/context.txt"
first=$("$quip" -m "$model" -t "$threads" -n 16 --ignore-eos --json -f "$work/context.txt")
cid=$(printf '%s' "$first" | python3 -c 'import json,sys; print(json.load(sys.stdin)["conversation"])')

now_ms() { date +%s%3N; }
run() {  # run LABEL QUESTION FLAGS...: one timed follow-up, forked from turn 1 each time
  local label=$1 question=$2
  shift 2
  local t0 t1 out
  t0=$(now_ms)
  out=$("$quip" --cid "$cid@1" -t "$threads" -n 16 --ignore-eos --json "$@" "$question")
  t1=$(now_ms)
  printf '%s %d %s\n' "$label" $((t1 - t0)) \
    "$(printf '%s' "$out" | python3 -c 'import json,sys; u=json.load(sys.stdin)["usage"]; print(u["prompt_tokens"], u["cached_tokens"], u["evaluated_tokens"])')"
}
{
  # Another question each time, so that no follow-up finds its own turn cached.
  for rep in $(seq 1 "$reps"); do
    run short-cached "Why $rep?"
    run short-uncached "Why $rep?" --no-cache
    run long-cached "Which sentence mentions the number $rep, and why does it matter?"
    run long-uncached "Which sentence mentions the number $rep, and why does it matter?" --no-cache
  done
} | python3 -c '
import statistics, sys
rows = {}
for line in sys.stdin:
    label, ms, prompt, cached, evaluated = line.split()
    rows.setdefault(label, []).append((int(ms), int(prompt), int(cached), int(evaluated)))
for label, rs in rows.items():
    ms = [r[0] for r in rs]
    print(f"{label:15s} median {statistics.median(ms):7.0f} ms  (min {min(ms)}, max {max(ms)}, n {len(ms)})  "
          f"prompt {rs[0][1]} tokens, cached {rs[0][2]}, evaluated {rs[0][3]}")
for kind in ("short", "long"):
    c = statistics.median(r[0] for r in rows[kind + "-cached"])
    u = statistics.median(r[0] for r in rows[kind + "-uncached"])
    print(f"{kind}: speed-up {u / c:.1f}x (uncached / cached, same run)")
'
