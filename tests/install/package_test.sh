#!/usr/bin/env bash
# quip installed like a real tool: builds the Debian package with CPack from
# BUILD_DIR (a built tree), unpacks it with dpkg -x into a scratch root, runs
# quip --version from there and checks the files it holds and the library
# packages it declares (dpkg-deb -I); then installs with cmake --install into a
# DESTDIR and checks the same files under the prefix.
# Usage: tests/install/package_test.sh BUILD_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() {
  echo "package_test: $*" >&2
  exit 1
}
# Nothing of the user's own reaches the runs below.
unset QUIP_HOME QUIP_CONFIG QUIP_SESSION QUIP_MAX_INPUT

expected_version=$("$build/quip" --version | head -n 1)
files=(bin/quip share/man/man1/quip.1.gz share/bash-completion/completions/quip
       share/zsh/vendor-completions/_quip share/fish/vendor_completions.d/quip.fish)

# Files under ROOT/PREFIX: each one there, quip runs and says its version,
# the scripts are what `quip completion` prints, the page reads without warnings.
check_tree() {
  local root=$1 prefix=$2 f shell
  for f in "${files[@]}"; do
    [ -f "$root$prefix/$f" ] || fail "$prefix/$f is not installed"
  done
  local version
  version=$("$root$prefix/bin/quip" --version | head -n 1)
  [ "$version" = "$expected_version" ] || fail "installed quip says '$version', not '$expected_version'"
  for shell in bash zsh fish; do
    case $shell in
      bash) f=share/bash-completion/completions/quip ;;
      zsh) f=share/zsh/vendor-completions/_quip ;;
      fish) f=share/fish/vendor_completions.d/quip.fish ;;
    esac
    cmp -s "$root$prefix/$f" <("$build/quip" completion "$shell") ||
      fail "$prefix/$f is not what 'quip completion $shell' prints"
  done
  # The page, gzipped without a name or time (gzip -9n): what `quip --man` prints.
  cmp -s <(gzip -dc "$root$prefix/share/man/man1/quip.1.gz") <("$build/quip" --man) ||
    fail "$prefix/share/man/man1/quip.1.gz is not what 'quip --man' prints"
  [ "$(od -An -tx1 -j3 -N5 "$root$prefix/share/man/man1/quip.1.gz" | tr -d ' ')" = 0000000000 ] ||
    fail "$prefix/share/man/man1/quip.1.gz holds a file name or time (not gzip -n)"
  if command -v man >/dev/null; then
    local warnings
    warnings=$(MANPAGER=cat man --warnings -l "$root$prefix/share/man/man1/quip.1.gz" 2>&1 >/dev/null)
    [ -z "$warnings" ] || fail "man --warnings: $warnings"
  fi
}

# The package, as `make deb` makes it.
if ! (cd "$scratch" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$scratch/out") \
    >"$scratch/cpack.log" 2>&1; then
  cat "$scratch/cpack.log" >&2
  fail "cpack failed"
fi
debs=("$scratch"/out/quip_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "no quip_*.deb in $(ls "$scratch/out")"
deb=${debs[0]}
case $(basename "$deb") in
  "quip_${expected_version#quip }_$(dpkg --print-architecture).deb") ;;
  *) fail "package file name $(basename "$deb")" ;;
esac
dpkg-deb -I "$deb" >"$scratch/info"
grep -qx ' Package: quip' "$scratch/info" || fail "dpkg-deb -I: no 'Package: quip'"
grep -qx " Version: ${expected_version#quip }" "$scratch/info" || fail "dpkg-deb -I: wrong version"
grep -q '^ Maintainer: .' "$scratch/info" || fail "dpkg-deb -I: no maintainer"
depends=$(sed -n 's/^ Depends: //p' "$scratch/info")
for lib in libc6 libstdc++6 libcurl4 libsqlite3-0 libpcre2-8-0 libxxhash0; do
  [[ ", $depends," == *", $lib "* ]] || fail "Depends lacks $lib: $depends"
done
# Only quip and its documents: no test or tool programs.
listed=$(dpkg-deb -c "$deb" | awk '$NF !~ /\/$/ {print $NF}' | sort)
wanted=$(printf './usr/%s\n' "${files[@]}" | sort)
[ "$listed" = "$wanted" ] || fail "the package holds:
$listed"
dpkg -x "$deb" "$scratch/root"
check_tree "$scratch/root" /usr
# Its dependencies can be met here, as apt would install it (simulated).
if command -v apt-get >/dev/null; then
  apt-get install -s "$deb" >"$scratch/apt.log" 2>&1 || { cat "$scratch/apt.log" >&2; fail "apt-get -s install"; }
  grep -q '^Inst quip ' "$scratch/apt.log" || { cat "$scratch/apt.log" >&2; fail "apt would not install quip"; }
fi

# cmake --install, as `make install PREFIX=/usr/local DESTDIR=...` runs it.
DESTDIR="$scratch/destdir" cmake --install "$build" --prefix /usr/local >"$scratch/install.log" ||
  fail "cmake --install failed: $(cat "$scratch/install.log")"
check_tree "$scratch/destdir" /usr/local
echo "package_test: ok ($(basename "$deb"); Depends: $depends)"
