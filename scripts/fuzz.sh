#!/usr/bin/env bash
# Runs a libFuzzer target for a number of seconds on a seed corpus made from
# the shared test data.
#   scripts/fuzz.sh FUZZER SECONDS SHARED_DIR gguf|text|jinja|config|edits|reasoning|gbnf|json_schema|sse|api|manifests|hf
# gguf: seeds are the heads of the shared GGUF files (for file parsers).
# text: seeds are the tokenizer test strings and slices of a book.
# jinja: seeds are the shared chat templates.
# config: seeds are config.toml files, valid and broken.
# edits: seeds are a few edit lists (the target builds its own files).
# reasoning: seeds are model outputs with thinking sections and channels.
# gbnf: seeds are the test grammars (tests/data/grammars), each with a text.
# json_schema: seeds are the schemas of tests/data/json_schemas.
# sse: seeds are OpenAI-style event streams (the first byte: the piece size).
# api: seeds are request bodies of `quip serve` (the first byte: the route).
# manifests: seeds are Ollama and llama.cpp manifests and split file names
#   (the first byte: which).
# hf: seeds are the hub's listings of repositories (the first byte: the quant tag).
set -euo pipefail
fuzzer=$1 seconds=$2 shared=$3 kind=$4
name=$(basename "$fuzzer")${QUIP_FUZZ_VOCAB:+-$(basename "$QUIP_FUZZ_VOCAB" .gguf)}
work=$(dirname "$fuzzer")/run-$name
seeds=$work/seeds corpus=$work/corpus
rm -rf "$seeds" && mkdir -p "$seeds" "$corpus"

if [ "$kind" = json_schema ]; then
  # The "schema" value of each corpus file, written compactly.
  here=$(cd "$(dirname "$0")/.." && pwd)
  for f in "$here"/tests/data/json_schemas/*.json; do
    python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["schema"]))' "$f" \
      >"$seeds/$(basename "$f")" || cp "$f" "$seeds/"
  done
elif [ "$kind" = gbnf ]; then
  # "GRAMMAR\0TEXT" (fuzz/gbnf_fuzz.cpp).
  here=$(cd "$(dirname "$0")/.." && pwd)
  for g in "$here"/tests/data/grammars/*.gbnf; do
    { cat "$g"; printf '\000{"a": [1, "x"]}'; } >"$seeds/$(basename "$g")"
  done
elif [ "$kind" = sse ]; then
  # The first byte is the size of the pieces the stream arrives in.
  printf '\003data: {"choices":[{"delta":{"content":"Hel"},"finish_reason":null}]}\n\ndata: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\ndata: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":2}}}\n\ndata: [DONE]\n\n' >"$seeds/openai"
  printf '\001: keep-alive\r\n\r\ndata: {"choices":[{"delta":{"reasoning_content":"hm"}}]}\r\n\r\nevent: error\ndata: {"error":{"message":"x"}}\n\n' >"$seeds/crlf"
  printf '\007\357\273\277data: a\rdata: b\r\rid: 1\nretry: 5\ndata:\n\n' >"$seeds/bom-cr"
  printf '\002data: {"error":"overloaded"}\n\ndata: [1]\n\ndata: {"choices":{}}' >"$seeds/broken"
elif [ "$kind" = api ]; then
  # The first byte picks the parser (0 OpenAI chat, 1 completions, 2 Ollama
  # chat, 3 generate, 4 show) and the stop matcher's piece size.
  printf '\000{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":5,"stop":["\\n","END"],"logprobs":true,"top_logprobs":2}' >"$seeds/openai-chat"
  printf '\005{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}}' >"$seeds/openai-schema"
  printf '\001{"prompt":["Once upon"],"max_tokens":3,"seed":7}' >"$seeds/completion"
  printf '\002{"model":"m","messages":[{"role":"user","content":"x"}],"options":{"num_predict":4,"num_ctx":64,"stop":"y"},"format":"json","think":false}' >"$seeds/ollama-chat"
  printf '\003{"model":"m","prompt":"Why?","system":"Be brief.","raw":false,"stream":false}' >"$seeds/generate"
  printf '\004{"model":"m"}' >"$seeds/show"
elif [ "$kind" = manifests ]; then
  printf '\000{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:%s","size":488},"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:%s","size":397807936},{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:%s","size":1482}]}' \
    "$(printf 'a%.0s' $(seq 64))" "$(printf 'b%.0s' $(seq 64))" "$(printf 'c%.0s' $(seq 64))" >"$seeds/ollama"
  printf '\001{"ggufFile":{"rfilename":"sub/Model-Q4_K_M.gguf","blobId":"0123","size":1,"lfs":{"sha256":"ab","size":1,"pointerSize":135}},"mmprojFile":{"rfilename":"mmproj-f16.gguf"}}' >"$seeds/llama.cpp"
  printf '\002Qwen2.5-7B-Instruct-Q4_K_M-00001-of-00002.gguf' >"$seeds/split"
elif [ "$kind" = hf ]; then
  # The first byte picks the quant tag (fuzz/hf_listing_fuzz.cpp).
  sha=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  commit=0123456789abcdef0123456789abcdef01234567
  printf '\000{"id":"a/b","sha":"%s","siblings":[{"rfilename":"README.md","blobId":"x","size":7},{"rfilename":"m-Q4_K_M.gguf","size":9,"lfs":{"sha256":"%s","size":9,"pointerSize":135}},{"rfilename":"mmproj-F16.gguf","size":2,"lfs":{"sha256":"%s","size":2}}]}' "$commit" "$sha" "$sha" >"$seeds/listing"
  printf '\002{"sha":"%s","siblings":[{"rfilename":"Q8_0/m-Q8_0-00001-of-00002.gguf","size":1,"lfs":{"sha256":"%s","size":1}},{"rfilename":"Q8_0/m-Q8_0-00002-of-00002.gguf","size":1,"lfs":{"sha256":"%s","size":1}}]}' "$commit" "$sha" "$sha" >"$seeds/split"
  printf '\001hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0' >"$seeds/ref"
  printf '\003{"sha":"%s","siblings":[{"rfilename":"../x.gguf"},{"rfilename":"a\\u0085.gguf"}]}' "$commit" >"$seeds/broken"
elif [ "$kind" = reasoning ]; then
  # A model's output in each style: the first byte's low bits pick the
  # style (1 tags, 2 harmony, else none), bit 2 the start inside the
  # reasoning, the rest the piece size.
  printf '\001<think>\nThe user greets.\n</think>\n\nHello!' >"$seeds/tags"
  printf '\005Hmm.</think>\n\nParis.' >"$seeds/tags-inside"
  printf '\006<|channel|>analysis<|message|>Hi.<|end|><|start|>assistant<|channel|>final<|message|>Hello' \
    >"$seeds/harmony"
  printf '\016<|channel|>commentary to=f <|constrain|>json<|message|>{}<|end|>' >"$seeds/commentary"
elif [ "$kind" = config ]; then
  cat >"$seeds/full.toml" <<'TOML'
model = "qwen"
temp = 0
threads = 2
[models.qwen]
path = "~/models/qwen2.5-0.5b-instruct-q4_k_m.gguf"
system = "Answer in one line."
temp = 0.7
top_k = 40
top_p = 0.95
min_p = 0.05
repeat_penalty = 1.1
seed = 7
ctx_size = 4096
n_predict = 256
template = "chatml.jinja"
[models."llama 3"]
path = "/srv/llama.gguf"
[cache]
max_size = "4GiB"
TOML
  printf 'tmep = 0.5\n[models.q]\nsystem = "x"\n' >"$seeds/broken.toml"
  printf '[cache]\nmax_size = 1000000\n' >"$seeds/size.toml"
elif [ "$kind" = edits ]; then
  printf '\x00' >"$seeds/none"
  printf '\x01\x00\x20\x01\x00\x60\x80' >"$seeds/header"
  printf '\x00\x02\x00\x01\xff\x00\x50' >"$seeds/rows-truncated"
  printf '\x03QUIP-KV' >"$seeds/whole"
  # Bit 2: the hybrid model's segments (rows and a recurrent state).
  printf '\x05\x00\x20\x01\x00\x60\x80' >"$seeds/hybrid-header"
  printf '\x05\x00\x10\xff\xff\x40\x50' >"$seeds/hybrid-state"
elif [ -d "$shared/models" ]; then
  if [ "$kind" = jinja ]; then
    cp "$shared"/templates/*.jinja "$seeds/"
  elif [ "$kind" = gguf ]; then
    for f in "$shared"/models/*.gguf "$shared"/vocab/*.gguf "$shared"/archs/*.gguf; do
      [ -f "$f" ] || continue
      # Headers and metadata sit at the front; whole files would only slow each run.
      head -c 4096 "$f" >"$seeds/$(basename "$f").4k"
      head -c 65536 "$f" >"$seeds/$(basename "$f").64k"
    done
    # Whole small files of the families whose binding reads the most keys
    # and tensors (latent attention, Gated DeltaNet, gemma4's per-layer shapes), so that mutations
    # reach Model::bind's checks too.
    synth=$(dirname "$fuzzer")/quip-synth
    if [ -x "$synth" ]; then
      for shape in tiny-qwen35 tiny-qwen35moe tiny-deepseek2 tiny-gemma4 tiny-gemma4moe; do
        "$synth" "$shape" "$seeds/$shape.gguf" --type q8_0 >/dev/null
      done
    fi
  else
    awk -v dir="$seeds" 'BEGIN { RS = "\n__ggml_vocab_test__\n" } { printf "%s", $0 > (dir "/case" NR) }' \
      "$shared"/vocab/ggml-vocab-llama-bpe.gguf.inp
    for i in 1 2 3 4 5 6 7 8; do
      (tail -c +$((i * 300000)) "$shared/text/war-and-peace.txt" | head -c 2000 >"$seeds/book$i") || true
    done
  fi
elif [ -n "${CI:-}" ]; then
  echo "fuzz: shared test data not found at $shared (CI is set)" >&2
  exit 1
else
  echo "fuzz: shared test data not found at $shared; fuzzing from an empty corpus" >&2
fi

echo "fuzz: $name for ${seconds}s"
"$fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/" "$corpus" "$seeds" 2>"$work/fuzz.log" || {
  tail -n 40 "$work/fuzz.log" >&2
  echo "fuzz: $name found a failure; the input is saved under $work/" >&2
  exit 1
}
grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)' "$work/fuzz.log" || true
echo "fuzz: no failures"
