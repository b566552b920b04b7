#!/usr/bin/env bash
# Sets up actorpipe on Debian 12 from a fresh clone, then runs the default job or the
# tests. Installs only what is missing (apt, non-interactive), so it is safe to repeat.
#
#   scripts/bootstrap.sh        install, build, run the default job
#   scripts/bootstrap.sh test   install, build, run the whole test suite
#
# LibTorch is the one inside PyTorch 2.11.0 (CUDA-enabled; it runs where no GPU is), which
# pip installs into a virtual environment outside the clone, so that later clones and CI
# reuse it: ACTORPIPE_VENV (default: ~/.cache/actorpipe/torch-2.11.0). Its python3 is
# first on PATH for the build and the tests (their PyTorch eager references).
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
  python3 python3-venv
  libcaf-dev libtomlplusplus-dev liblua5.4-dev libboost-test-dev libplplot-dev
  nlohmann-json3-dev libcli11-dev zlib1g-dev libssl-dev libprotobuf-dev protobuf-compiler
  # Headers that c10d's Gloo process group header names (the Gloo code is LibTorch's own).
  libgloo-dev
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

torch_version=2.11.0
venv=${ACTORPIPE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/actorpipe/torch-$torch_version}
has_torch() { "$venv/bin/python3" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null; }
if ! has_torch; then
  echo "==> installing PyTorch $torch_version (LibTorch with CUDA, c10d, Gloo and NCCL) into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "torch==$torch_version" numpy
  has_torch || { echo "PyTorch $torch_version did not install into $venv" >&2; exit 1; }
fi
# The tests read a run's TensorBoard event files with TensorBoard itself.
if [ "$mode" = test ] && ! "$venv/bin/python3" -c "import tensorboard" 2>/dev/null; then
  echo "==> installing TensorBoard into $venv (the tests read event files with it)"
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check tensorboard
fi
export PATH="$venv/bin:$PATH"
# ccache caches what compiles with the precompiled LibTorch header (actors/pch) only
# with these: the header's defines and timestamps are its own, not the file's.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}pch_defines,time_macros,include_file_mtime,include_file_ctime"

if [ ! -f "$build/build.ninja" ]; then
  echo "==> configuring $build"
  meson setup "$build" "$root"
else
  # The same LibTorch as the tests' python3, even in a folder configured before.
  meson setup --reconfigure "$build" "$root" >/dev/null
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
