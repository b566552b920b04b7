#!/usr/bin/env bash
# Sets up actorpipe on Debian 12 from a fresh clone, then runs the default job or the
# tests. Installs only what is missing (apt, non-interactive), so it is safe to repeat.
#
#   scripts/bootstrap.sh        install, build, run the default job
#   scripts/bootstrap.sh test   install, build, run the whole test suite
#
# ACTORPIPE_BUILD_DIR chooses the build folder (default: build/ in the checkout).
set -euo pipefail

mode=${1:-run}
case "$mode" in
  run|test) ;;
  *) echo "usage: $0 [run|test]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${ACTORPIPE_BUILD_DIR:-$root/build}

packages=(
  g++ meson ninja-build pkg-config cmake ccache
  libcaf-dev libtorch-dev libtomlplusplus-dev liblua5.4-dev libboost-test-dev libplplot-dev
  nlohmann-json3-dev libcli11-dev zlib1g-dev
  # Headers of the Gloo that LibTorch's c10d carries tensors between processes with.
  libgloo-dev
  # LibTorch's recommended BLAS; without it Debian falls back to the reference BLAS,
  # several times slower on every linear layer.
  libopenblas0-openmp
  dataset-fashion-mnist
)
# The test run also checks the tree's formatting, makes certificates for the TLS tests
# (openssl) and, as root, two servers out of network namespaces (iproute2).
[ "$mode" = test ] && packages+=(clang-format openssl iproute2)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "==> installing: ${missing[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$build/build.ninja" ]; then
  echo "==> configuring $build"
  meson setup "$build" "$root"
fi
echo "==> building"
ninja -C "$build"

if [ "$mode" = run ]; then
  echo "==> actorpipe run configs/fashion-mnist.toml"
  "$build/runtime/cli/actorpipe" run "$root/configs/fashion-mnist.toml"
  echo
  echo "The actorpipe binary is $build/runtime/cli/actorpipe"
  exit 0
fi

echo "==> testing"
status=0
"$root/scripts/check-format.sh" || status=$?
meson test -C "$build" --print-errorlogs || status=$?
# One closing line that any CI can read, counted from Meson's own log.
log="$build/meson-logs/testlog.json"
passed=$(grep -c '"result": "OK"' "$log" || true)
failed=$(grep -c -E '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
skipped=$(grep -c '"result": "SKIP"' "$log" || true)
echo "suites: $passed passed, $failed failed, $skipped skipped"
exit "$status"
