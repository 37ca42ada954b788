#!/usr/bin/env bash
# quip against llama.cpp on every tensor type: one llama-3.2-1b-shaped file
# per type, made by quip-synth (one type for every matrix, as
# llama-quantize --pure; the shape's widths are multiples of 256, so no
# K-quant row falls back to another type), then for each file `quip bench`
# and the given llama-bench, interleaved (quip, llama.cpp, quip, ... per
# type), same threads, by scripts/compare_llama_cpp.sh, which prints the
# table: pp and tg of both, and quip / llama.cpp, the medians of ROUNDS
# rounds.
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

PROMPT=$prompt GEN=$gen THREADS=$threads REPS=$reps ROUNDS=$rounds BUILD=$build \
  exec scripts/compare_llama_cpp.sh "$llama_bench" "${files[@]}"
