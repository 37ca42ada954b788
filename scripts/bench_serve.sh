#!/usr/bin/env bash
# quip serve under load, in one run:
#   1. aggregate generation speed of 1 stream and of STREAMS concurrent
#      streams (OpenAI streaming chat, N tokens each) on the llama-3.2-1b
#      Q4_K_M shape, THREADS threads; with LLAMA_SERVER=path/to/llama-server,
#      the same against `llama-server -np STREAMS` on the same file;
#   2. the latency of an attached `quip -n 1 hi`, process start to exit, on
#      the qwen2.5-0.5b Q4_K_M shape with the model resident, against the
#      same call in-process (--local).
#   scripts/bench_serve.sh [STREAMS] [N] [THREADS]
# Models are random-weight quip-synth files of those shapes (generation
# never ends early: -n tokens each). Not a test: figures for the notes.
set -euo pipefail
cd "$(dirname "$0")/.."
streams=${1:-8} n=${2:-32} threads=${3:-2}
build=${BUILD:-build}
quip=$build/quip
work=$(mktemp -d)
export QUIP_HOME=$work/home QUIP_SESSION=bench-serve
unset QUIP_CONFIG QUIP_SOCKET QUIP_NO_SERVE
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$QUIP_HOME"
big=$work/llama-3.2-1b-q4_k_m.gguf small=$work/qwen2.5-0.5b-q4_k_m.gguf
"$build/quip-synth" llama-3.2-1b "$big" --type q4_k_m >/dev/null
"$build/quip-synth" qwen2.5-0.5b "$small" --type q4_k_m >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

wait_health() {  # URL
  for _ in $(seq 1 600); do
    curl -sf "$1/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "bench_serve: no server at $1" >&2
  exit 1
}

# load URL K N TAG: K concurrent streams of N tokens each, their prompts
# marked with TAG (a new tag: nothing cached); prints "tokens seconds".
load() {
  python3 - "$1" "$2" "$3" "$4" <<'PY'
import http.client, json, sys, threading, time, urllib.parse
base, k, n, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
u = urllib.parse.urlparse(base)
counts = [0] * k
def one(i):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    body = {"stream": True, "max_tokens": n, "temperature": 0,
            "ignore_eos": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "Run %s: write about the number %03d." % (tag, i)}]}
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    for line in r:
        line = line.strip()
        if line.startswith(b"data: {"):
            j = json.loads(line[6:])
            if j.get("usage"):
                counts[i] = j["usage"]["completion_tokens"]
t = time.time()
ts = [threading.Thread(target=one, args=(i,)) for i in range(k)]
[x.start() for x in ts]
[x.join() for x in ts]
print(sum(counts), time.time() - t)
PY
}

# measure URL K: "wall generating" tok/s of K concurrent streams. Wall: the
# tokens of K streams of N + 8 tokens over their time, prompts included.
# Generating: the K * N more tokens of those streams than of K streams of 8
# tokens, over the time they added; the prompts' time (the same prompts'
# lengths in both runs, nothing cached) cancels out.
run_tag=100
measure() {
  local short long
  run_tag=$((run_tag + 1)); short=$(load "$1" "$2" 8 "$run_tag")
  run_tag=$((run_tag + 1)); long=$(load "$1" "$2" $((n + 8)) "$run_tag")
  echo "$short $long" | awk '{ printf "%.2f %.2f", $3 / $4, ($3 - $1) / ($4 - $2) }'
}

# The server's batch steps and rows so far: "steps rows".
batch_counts() {  # URL
  curl -s "$1/metrics" | awk '$1 == "quip_batch_steps_total" { s = $2 }
    $1 == "quip_batch_rows_total" { r = $2 } END { print s + 0, r + 0 }'
}

# "quip serve (...)": ONE and MANY as "wall generation"
report() {  # NAME ONE MANY
  echo "$1: 1 stream $(cut -d' ' -f2 <<<"$2") tok/s generating ($(cut -d' ' -f1 <<<"$2") wall)," \
    "$streams streams $(cut -d' ' -f2 <<<"$3") tok/s generating ($(cut -d' ' -f1 <<<"$3") wall):" \
    "x$(echo "$3 $2" | awk '{ printf "%.2f", $2 / $4 }') generating, x$(echo "$3 $2" | awk '{ printf "%.2f", $1 / $3 }') wall"
}

echo "bench_serve: $streams streams of $n tokens, $threads threads, llama-3.2-1b Q4_K_M shape"
# quip serve with continuous batching, then without (each call its own
# forward pass, with its share of the threads): the baseline of this run.
for mode in batching no-batching; do
  flags=()
  [ "$mode" = no-batching ] && flags=(--no-batching)
  "$quip" serve -m "$big" --port "$port" -t "$threads" --parallel "$streams" "${flags[@]}" \
    2>"$work/serve.log" &
  pids+=($!)
  wait_health "http://127.0.0.1:$port"
  load "http://127.0.0.1:$port" 1 8 warm >/dev/null  # the model mapped and paged in
  one=$(measure "http://127.0.0.1:$port" 1)
  before=$(batch_counts "http://127.0.0.1:$port")
  many=$(measure "http://127.0.0.1:$port" "$streams")
  steps=$(echo "$before $(batch_counts "http://127.0.0.1:$port")" |
    awk '{ if ($3 > $1) printf "%.2f", ($4 - $2) / ($3 - $1); else print "-" }')
  report "quip serve ($mode)" "$one" "$many"
  echo "  calls decoded per step in the $streams-stream run: $steps"
  [ "$mode" = batching ] && many_batched=$many
  "$quip" serve --stop >/dev/null
  wait "${pids[-1]}" 2>/dev/null || true
done
many=$many_batched

if [ -n "${LLAMA_SERVER:-}" ]; then
  "$LLAMA_SERVER" -m "$big" --port "$port" -t "$threads" -np "$streams" -c $((streams * 512)) \
    >"$work/llama.log" 2>&1 &
  pids+=($!)
  wait_health "http://127.0.0.1:$port"
  load "http://127.0.0.1:$port" 1 8 warm >/dev/null
  l_one=$(measure "http://127.0.0.1:$port" 1)
  l_many=$(measure "http://127.0.0.1:$port" "$streams")
  report "llama-server -np $streams" "$l_one" "$l_many"
  echo "quip/llama-server at $streams streams: $(echo "$many $l_many" |
    awk '{ printf "x%.2f generating, x%.2f wall", $2 / $4, $1 / $3 }')"
fi

# Latency of an attached call with the model resident, against in-process.
"$quip" serve -m "$small" -t "$threads" 2>>"$work/serve.log" &
pids+=($!)
for _ in $(seq 1 600); do [ -S "$QUIP_HOME/serve.sock" ] && break; sleep 0.1; done
"$quip" -m "$small" -n 1 hi >/dev/null  # loads it in the server
python3 - "$quip" "$small" <<'PY'
import os, statistics, subprocess, sys, time
quip, model = sys.argv[1], sys.argv[2]
def ms(extra, env):
    t = time.perf_counter()
    subprocess.run([quip, "-m", model, "-n", "1", *extra, "hi"], stdout=subprocess.DEVNULL, check=True,
                   env=env)
    return (time.perf_counter() - t) * 1000
env = dict(os.environ)
attached = [ms([], env) for _ in range(10)]
local = [ms(["--local"], env) for _ in range(5)]
print("quip -n 1 hi, qwen2.5-0.5b shape: attached median %.1f ms (min %.1f), in-process median %.1f ms"
      % (statistics.median(attached), min(attached), statistics.median(local)))
PY
"$quip" serve --stop >/dev/null
