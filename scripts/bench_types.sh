#!/usr/bin/env bash
# quip against llama.cpp on every tensor type: one llama-3.2-1b-shaped file
# per type, made by quip-synth (one type for every matrix, as
# llama-quantize --pure; the shape's widths are multiples of 256, so no
# K-quant row falls back to another type), then for each file `quip bench`
# and the given llama-bench, interleaved (quip, llama.cpp, quip, ... per
# type), same threads. Prints one markdown table: pp and tg of both, and
# quip / llama.cpp, the medians of ROUNDS rounds.
#   scripts/bench_types.sh LLAMA_BENCH [MODEL.gguf...]
# MODEL.gguf: further files to compare (e.g. a downloaded model), one row each.
# Environment: TYPES (default: every type quip runs), SHAPE (llama-3.2-1b),
# THREADS (2), PROMPT (128), GEN (32), REPS (3: repetitions inside each
# bench call), ROUNDS (1), MODELS (directory of the synthetic files,
# default build/bench-types; files already there are reused), BUILD (build).
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: scripts/bench_types.sh LLAMA_BENCH [MODEL.gguf...]" >&2
  exit 2
fi
llama_bench=$1
shift
[ -x "$llama_bench" ] || { echo "bench_types.sh: '$llama_bench' is not an executable" >&2; exit 2; }
cd "$(dirname "$0")/.."
build=${BUILD:-build}
types=${TYPES:-"q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs f16 bf16"}
shape=${SHAPE:-llama-3.2-1b} threads=${THREADS:-2} prompt=${PROMPT:-128} gen=${GEN:-32}
reps=${REPS:-3} rounds=${ROUNDS:-1} models=${MODELS:-$build/bench-types}
mkdir -p "$models"

files=()
for t in $types; do
  f=$models/$shape-$t.gguf
  if [ ! -s "$f" ]; then
    echo "making $f" >&2
    "$build/quip-synth" "$shape" "$f.part" --type "$t"
    mv "$f.part" "$f"
  fi
  files+=("$(echo "$t" | tr a-z A-Z)=$f")
done
for m in "$@"; do files+=("$(basename "$m" .gguf)=$m"); done

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq 1 "$rounds"); do
  for entry in "${files[@]}"; do
    label=${entry%%=*} file=${entry#*=}
    echo "round $round: $label" >&2
    "$build/quip" bench -m "$file" -p "$prompt" -n "$gen" -t "$threads" -r "$reps" --json |
      python3 -c 'import json,sys
for r in json.load(sys.stdin): print(sys.argv[1], "quip", r["test"][:2], r["tokens_per_s"])' "$label" >>"$results"
    "$llama_bench" -m "$file" -p "$prompt" -n "$gen" -t "$threads" -fa 1 -r "$reps" -o json 2>/dev/null |
      python3 -c 'import json,sys
for r in json.load(sys.stdin):
    print(sys.argv[1], "llama", "pp" if r["n_gen"] == 0 else "tg", r["avg_ts"])' "$label" >>"$results"
  done
done

python3 - "$results" "$prompt" "$gen" "$threads" "$rounds" <<'EOF'
import collections, statistics, sys
path, prompt, gen, threads, rounds = sys.argv[1:]
runs = collections.defaultdict(list)
order = []
for line in open(path):
    label, engine, test, tps = line.split()
    if label not in order:
        order.append(label)
    runs[label, engine, test].append(float(tps))
def med(label, engine, test):
    v = runs.get((label, engine, test))
    return statistics.median(v) if v else float("nan")
print(f"| type | pp{prompt} quip / llama.cpp | ratio | tg{gen} quip / llama.cpp | ratio |")
print("|---|---|---|---|---|")
for label in order:
    cells = [label]
    for test in ("pp", "tg"):
        q, l = med(label, "quip", test), med(label, "llama", test)
        cells += [f"{q:.1f} / {l:.1f}" if test == "pp" else f"{q:.2f} / {l:.2f}", f"{q / l:.2f}"]
    print("| " + " | ".join(cells) + " |")
print(f"\n({threads} threads, medians of {rounds} interleaved round(s); "
      f"quip bench -p {prompt} -n {gen}, llama-bench -fa 1 -p {prompt} -n {gen})")
EOF
