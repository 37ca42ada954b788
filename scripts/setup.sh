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
  libcpp-httplib-dev                  # quip serve and the shell attaching to it
  curl                                # the server tests drive it with curl
  libtomlplusplus-dev                 # config.toml
  libcurl4-openssl-dev                # remote backends over HTTP(S)
  libssl-dev                          # SHA-256 of pulled models (libcrypto)
  python3-jsonschema                  # checks the JSON Schema corpus's labels (tests/grammar)
  python3-pip                         # what Debian lacks of the tests' Python (below)
  dpkg-dev file                       # make deb: CPack finds the Depends with file and dpkg-shlibdeps
  groff-base man-db                   # the man page's tests (groff -ww, man --warnings)
  zsh fish                            # the completion scripts' tests run in each shell
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
# pip_install PYTHON PACKAGE...: from the Python package index into that
# interpreter (pip comes with it, or as Debian's python3-pip above); past
# Debian's "externally managed" refusal where it makes one.
pip_install() {
  local py=$1
  shift
  "$py" -m pip --version >/dev/null 2>&1 ||
    $sudo apt-get install -y --no-install-recommends python3-pip
  "$py" -m pip install --quiet "$@" 2>/dev/null ||
    "$py" -m pip install --quiet --break-system-packages "$@"
}

# The tests validate --json-schema answers with Python's jsonschema, whose
# date-time and time checks need rfc3339-validator, which Debian 12 does not
# package: from the Python package index when no python3 has both.
python_validators() {
  local py
  for py in python3 /usr/bin/python3; do
    "$py" -c 'import jsonschema, rfc3339_validator' >/dev/null 2>&1 && return 0
  done
  echo "setup: installing jsonschema and rfc3339-validator from the Python package index" >&2
  pip_install python3 jsonschema rfc3339-validator
}

# The serve tests also drive quip serve with OpenAI's own client, the
# `openai` package, which Debian 12 does not package: from the Python
# package index, for /usr/bin/python3, the interpreter those tests run.
python_openai() {
  /usr/bin/python3 -c 'import openai' >/dev/null 2>&1 && return 0
  echo "setup: installing openai from the Python package index" >&2
  pip_install /usr/bin/python3 openai
}

if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
else
  sudo=
fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -eq 0 ]; then
  python_validators
  python_openai
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
# Try with the package lists we have; refresh them only when that fails
# (a fresh machine has empty lists, an old one may name versions long gone).
if ! $sudo apt-get install -y --no-install-recommends "${missing[@]}"; then
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
python_validators
python_openai
