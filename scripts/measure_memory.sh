#!/usr/bin/env bash
# Runs N quip processes at once on one model and prints, for each, what
# /proc/PID/smaps_rollup says while it generates: how much of its memory is
# shared with the others (the weights, in the page cache) and how much is
# its own (KV cache and scratch).
#
#   scripts/measure_memory.sh QUIP MODEL [N] [THREADS]
set -euo pipefail
quip=${1:?usage: measure_memory.sh QUIP MODEL [N] [THREADS]}
model=${2:?usage: measure_memory.sh QUIP MODEL [N] [THREADS]}
n=${3:-3}
threads=${4:-1}

cat "$model" >/dev/null  # a warm page cache, as after any earlier call
# Their conversations go to a folder of their own, not into yours.
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export QUIP_HOME=$home
pids=()
for _ in $(seq "$n"); do
  "$quip" --raw -m "$model" -t "$threads" -n 100000 --ignore-eos --ctx-size 512 --no-cache \
    "The quick brown fox jumps over the lazy dog." >/dev/null &
  pids+=($!)
done
sleep "${SAMPLE_AFTER:-4}"
printf '%-8s %10s %10s %14s %14s %14s\n' pid rss_mib pss_mib shared_clean private_clean private_dirty
for pid in "${pids[@]}"; do
  awk -v pid="$pid" '
    /^Rss:/ {rss=$2} /^Pss:/ {pss=$2} /^Shared_Clean:/ {sc=$2}
    /^Private_Clean:/ {pc=$2} /^Private_Dirty:/ {pd=$2}
    END {printf "%-8s %10.1f %10.1f %10.1f MiB %10.1f MiB %10.1f MiB\n", pid, rss/1024, pss/1024, sc/1024, pc/1024, pd/1024}
  ' "/proc/$pid/smaps_rollup"
done
kill "${pids[@]}" 2>/dev/null || true
wait 2>/dev/null || true
