#!/usr/bin/env bash
# quip against llama.cpp on the same files: for each model, `quip bench`
# and the given llama-bench with the same threads, interleaved (quip,
# llama.cpp, quip, llama.cpp ... model by model, ROUNDS times), then one
# markdown table: pp and tg of both, quip / llama.cpp, and the rate at which
# quip's generation reads the weights against what this machine streams on
# the same threads (quip bench measures both in the same run). Medians of
# the rounds.
#   scripts/compare_llama_cpp.sh LLAMA_BENCH [[LABEL=]MODEL.gguf...]
# Without MODEL: the shapes of issue 15 made by quip-synth with
# llama-quantize's Q4_K_M mix (qwen2.5-0.5b, llama-3.2-1b, qwen2.5-7b,
# qwen2.5-14b) and llama-3.2-1b in Q8_0 and F16, kept in MODELS (default
# build/bench-models; files already there are reused). SHAPES overrides the
# list, as SHAPE:TYPE words (TYPE a quip-synth --type name, or FTYPE-mix
# for --mix FTYPE).
# Each bench call starts with its file read once into the page cache.
# Environment: THREADS (2), PROMPT (512), GEN (128), REPS (2: repetitions
# inside each bench call), ROUNDS (2), BUILD (build).
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: scripts/compare_llama_cpp.sh LLAMA_BENCH [[LABEL=]MODEL.gguf...]" >&2
  exit 2
fi
llama_bench=$1
shift
[ -x "$llama_bench" ] || { echo "compare_llama_cpp.sh: '$llama_bench' is not an executable" >&2; exit 2; }
cd "$(dirname "$0")/.."
build=${BUILD:-build}
threads=${THREADS:-2} prompt=${PROMPT:-512} gen=${GEN:-128} reps=${REPS:-2} rounds=${ROUNDS:-2}
[ -x "$build/quip" ] || { echo "compare_llama_cpp.sh: build $build/quip first (make build)" >&2; exit 2; }

entries=()
if [ $# -eq 0 ]; then
  models=${MODELS:-$build/bench-models}
  mkdir -p "$models"
  for spec in ${SHAPES:-qwen2.5-0.5b:q4_k_m llama-3.2-1b:q4_k_m llama-3.2-1b:q8_0 llama-3.2-1b:f16 qwen2.5-7b:q4_k_m qwen2.5-14b:q4_k_m}; do
    shape=${spec%%:*} type=${spec#*:}
    f=$models/$shape-$type.gguf
    if [ ! -s "$f" ]; then
      echo "making $f" >&2
      case $type in
        *-mix) "$build/quip-synth" "$shape" "$f.part" --mix "${type%-mix}" ;;
        *) "$build/quip-synth" "$shape" "$f.part" --type "$type" ;;
      esac
      mv "$f.part" "$f"
    fi
    entries+=("$shape $(echo "$type" | tr a-z A-Z)=$f")
  done
fi
for m in "$@"; do
  case $m in
    *=*) entries+=("$m") ;;
    *) entries+=("$(basename "$m" .gguf)=$m") ;;
  esac
done
for entry in "${entries[@]}"; do
  [ -r "${entry#*=}" ] || { echo "compare_llama_cpp.sh: cannot read '${entry#*=}'" >&2; exit 2; }
done

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq 1 "$rounds"); do
  for entry in "${entries[@]}"; do
    label=${entry%%=*} file=${entry#*=}
    echo "round $round: $label" >&2
    # Each engine starts with the file in the page cache: where a model
    # fills most of the memory, llama.cpp's repacked copy of its weights
    # pushes the file out, and the next run would read it from disk.
    cat "$file" >/dev/null
    "$build/quip" bench -m "$file" -p "$prompt" -n "$gen" -t "$threads" -r "$reps" --json |
      python3 -c 'import json,sys
for r in json.load(sys.stdin):
    print(sys.argv[1], "quip", r["test"][:2], r["tokens_per_s"], r.get("weights_gb_per_s", 0), r.get("stream_gb_per_s", 0), sep="\t")' "$label" >>"$results"
    cat "$file" >/dev/null
    "$llama_bench" -m "$file" -p "$prompt" -n "$gen" -t "$threads" -fa 1 -r "$reps" -o json 2>/dev/null |
      python3 -c 'import json,sys
for r in json.load(sys.stdin):
    print(sys.argv[1], "llama", "pp" if r["n_gen"] == 0 else "tg", r["avg_ts"], 0, 0, sep="\t")' "$label" >>"$results"
  done
done

python3 - "$results" "$prompt" "$gen" "$threads" "$rounds" <<'PY'
import collections, statistics, sys
path, prompt, gen, threads, rounds = sys.argv[1:]
runs = collections.defaultdict(list)
order = []
for line in open(path):
    label, engine, test, tps, weights, stream = line.rstrip("\n").split("\t")
    if label not in order:
        order.append(label)
    runs[label, engine, test].append((float(tps), float(weights), float(stream)))
def med(label, engine, test, field=0):
    v = runs.get((label, engine, test))
    return statistics.median(x[field] for x in v) if v else float("nan")
print(f"| model | pp{prompt} quip / llama.cpp | ratio | tg{gen} quip / llama.cpp | ratio | quip tg reads GB/s (of stream) |")
print("|---|---|---|---|---|---|")
for label in order:
    cells = [label]
    for test in ("pp", "tg"):
        q, l = med(label, "quip", test), med(label, "llama", test)
        cells += [f"{q:.1f} / {l:.1f}" if test == "pp" else f"{q:.2f} / {l:.2f}", f"{q / l:.2f}"]
    gbs, stream = med(label, "quip", "tg", 1), med(label, "quip", "tg", 2)
    cells.append(f"{gbs:.1f} of {stream:.1f} ({100 * gbs / stream:.0f}%)" if stream > 0 else "-")
    print("| " + " | ".join(cells) + " |")
print(f"\n({threads} threads, medians of {rounds} interleaved round(s); "
      f"quip bench -p {prompt} -n {gen}, llama-bench -fa 1 -p {prompt} -n {gen})")
PY
