#!/usr/bin/env bash
# Runs a libFuzzer target for a number of seconds on a seed corpus made from
# the heads of the GGUF files in the shared test data.
#   scripts/fuzz.sh FUZZER SECONDS SHARED_DIR
set -euo pipefail
fuzzer=$1 seconds=$2 shared=$3
work=$(dirname "$fuzzer")
seeds=$work/seeds corpus=$work/corpus
rm -rf "$seeds" && mkdir -p "$seeds" "$corpus"

if [ -d "$shared/models" ]; then
  for f in "$shared"/models/*.gguf "$shared"/vocab/*.gguf; do
    # Headers and metadata sit at the front; whole files would only slow each run.
    head -c 4096 "$f" >"$seeds/$(basename "$f").4k"
    head -c 65536 "$f" >"$seeds/$(basename "$f").64k"
  done
elif [ -n "${CI:-}" ]; then
  echo "fuzz: shared test data not found at $shared (CI is set)" >&2
  exit 1
else
  echo "fuzz: shared test data not found at $shared; fuzzing from an empty corpus" >&2
fi

echo "fuzz: $(basename "$fuzzer") for ${seconds}s"
"$fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/" "$corpus" "$seeds" 2>"$work/fuzz.log" || {
  tail -n 40 "$work/fuzz.log" >&2
  echo "fuzz: $(basename "$fuzzer") found a failure; the input is saved under $work/" >&2
  exit 1
}
grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)' "$work/fuzz.log" || true
echo "fuzz: no failures"
