#!/usr/bin/env bash
# The cost of constrained output: generation time per token with a grammar
# (tests/data/grammars/json.gbnf: any JSON), against free generation of the
# same prompt, in the same run, interleaved, medians of REPS. Also the
# load time each pays (constrained: plus the vocabulary's trie, built once
# per process).
#   scripts/bench_constrained.sh [MODEL.gguf] [REPS] [N] [THREADS]
# Without MODEL: Gemma 3 270M (a 262k-token vocabulary; scripts/fetch_models.sh
# gemma3-270m). A trained model gives real JSON; its answer may end before N
# tokens (per-token times are over what each call generated).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/quip/models/gemma-3-270m-q4_k_m.gguf}
reps=${2:-5} n=${3:-128} threads=${4:-2}
quip=${BUILD:-build}/quip
[ -f "$model" ] || { echo "bench_constrained: no model at $model (scripts/fetch_models.sh gemma3-270m)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export QUIP_HOME=$work/home QUIP_SESSION=bench-constrained
unset QUIP_CONFIG
prompt='Describe three European capitals as a JSON list of objects with name, country, population and a one-line description.'
grammar=tests/data/grammars/json.gbnf

# one FLAGS...: prints "load_ms generation_ms generated_tokens" of one call.
one() {
  "$quip" -m "$model" -t "$threads" -n "$n" --no-cache --json "$@" "$prompt" |
    python3 -c 'import json,sys
j=json.load(sys.stdin); t=j["timings"]
print(t["load_ms"], t["generation_ms"], j["usage"]["generated_tokens"])' || true
}
for _ in $(seq 1 "$reps"); do
  one >>"$work/free"
  one --grammar "$grammar" >>"$work/constrained"
done
python3 - "$work/free" "$work/constrained" "$model" <<'PY'
import statistics, sys
def read(p):
    rows = [list(map(float, l.split())) for l in open(p) if l.strip()]
    return (statistics.median(r[0] for r in rows),
            statistics.median(r[1] / max(r[2], 1) for r in rows),
            statistics.median(r[2] for r in rows))
free, con = read(sys.argv[1]), read(sys.argv[2])
print(f"model {sys.argv[3]}")
print(f"free         load {free[0]:8.1f} ms   {free[1]:7.2f} ms/token   ({free[2]:.0f} tokens)")
print(f"constrained  load {con[0]:8.1f} ms   {con[1]:7.2f} ms/token   ({con[2]:.0f} tokens)")
print(f"per-token ratio constrained/free: {con[1] / free[1]:.3f}")
PY
