#!/usr/bin/env bash
# Installs every Debian package that quip's build, tests, fuzz target and demo
# need. Idempotent: when everything is present it only asks dpkg and returns.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  clang libclang-rt-dev clang-format   # fuzz target (libFuzzer) and `make format`
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev
  libpcre2-dev                        # pre-tokenizer regexes (with JIT)
  libxxhash-dev                       # vocabulary hash tables
  libsqlite3-dev                      # conversation store
  libtomlplusplus-dev                 # config.toml
  python3-jsonschema                  # checks the JSON Schema corpus's labels (tests/grammar)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
else
  sudo=
fi
export DEBIAN_FRONTEND=noninteractive
# Try with the package lists we have; refresh them only when that fails
# (a fresh machine has empty lists, an old one may name versions long gone).
if ! $sudo apt-get install -y --no-install-recommends "${missing[@]}"; then
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
