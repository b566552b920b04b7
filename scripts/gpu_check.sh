#!/usr/bin/env bash
# The GPU check: on a GPU server, builds actorpipe against that machine's own PyTorch,
# runs every *_cuda test and the GPU benchmark, and writes their tables and logs into
# OUT_DIR. Needs no network there: the Debian packages actorpipe builds with come along
# as .deb files (fetched beforehand on a machine with apt: `--fetch`) and are unpacked
# with `dpkg -x` into a folder of their own, never over the machine's /.
#
#   scripts/gpu_check.sh --fetch            download the .deb files into .gpu-debs/ (apt)
#   scripts/gpu_check.sh OUT_DIR            the check (about 6 minutes on 16 cores)
#   scripts/gpu_check.sh --tests-only OUT_DIR   what the *_cuda tests need, and them; no benchmark
#   scripts/gpu_check.sh --bench-only OUT_DIR   what the GPU benchmark needs, and it; no tests
#   scripts/gpu_check.sh --dry-run OUT_DIR  every step that needs no GPU, where there is none:
#                                           tools, packages (fetched if missing), the
#                                           unpacked prefix, the configure; no build or run
#
# ACTORPIPE_GPU_DEBS names another folder of .deb files; ACTORPIPE_GPU_PREFIX where they
# are unpacked (default: a fresh temporary folder); ACTORPIPE_GPU_BENCH_ARGS more
# arguments for the benchmark (`--steps 10`, say).
#
# The GPU servers this is written for (read off an H100 80GB HBM3 and an H200, both
# driver 580.159.04; on the H200 the whole check took 357 s): Ubuntu 24.04 (glibc 2.39); g++ 13.3 (no clang, no ccache); python3 3.12 in
# /opt/torch/.venv with torch 2.11.0+cu130 (CUDA 13.0, cuDNN 9.19, NCCL 2.28.9; c10d with
# NCCL and Gloo, no Gloo headers in torch/include), and meson 1.12, ninja 1.13 and cmake
# 4.4 in that environment; pkg-config and dpkg; Boost, CLI11 and nlohmann-json headers in
# /usr/include but no Boost.Test library, no CAF, TOML++, Lua or PLplot. LibTorch's
# libraries load the CUDA runtime, cuBLAS, cuDNN and NCCL of PyTorch's nvidia-* wheels
# (site-packages/nvidia/{cu13,cudnn,nccl}/lib); the toolkit in /usr/local/cuda has no NCCL
# header, so the build takes the CUDA runtime and NCCL headers from those wheels too.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
debs=${ACTORPIPE_GPU_DEBS:-$root/.gpu-debs}
# What the build needs that such a server lacks, with what their libraries load.
packages=(
  libcaf-dev libcaf-core0.17 libcaf-io0.17 libcaf-openssl0.17
  libtomlplusplus-dev libtomlplusplus3
  liblua5.4-dev liblua5.4-0
  libboost-test-dev libboost-test1.74-dev libboost-test1.74.0 libboost1.74-dev
  libplplot-dev libplplot17 libshp2 libfreetype6 libbrotli1 libpng16-16 libcsirocsa0 libcsironn0 libqhull-r8.0
  libqsastime0 libltdl7
  libcli11-dev nlohmann-json3-dev libgloo-dev zlib1g-dev zlib1g libssl-dev libssl3
  libprotobuf-dev libprotobuf32 libprotobuf-lite32 protobuf-compiler libprotoc32
  # The default job's data, which the *_cuda tests train on.
  dataset-fashion-mnist
)

usage() {
  echo "usage: $0 --fetch | [--dry-run | --tests-only | --bench-only] OUT_DIR" >&2
  exit 2
}

fetch() {
  command -v apt-get >/dev/null || { echo "gpu_check: --fetch needs apt-get (a Debian 12 machine)" >&2; exit 1; }
  mkdir -p "$debs"
  echo "==> downloading ${#packages[@]} packages into $debs"
  (cd "$debs" && apt-get download "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
}

dry_run=false
tests_only=false
bench_only=false
case "${1:-}" in
  --fetch) fetch; exit 0 ;;
  --dry-run) dry_run=true; shift ;;
  --tests-only) tests_only=true; shift ;;
  --bench-only) bench_only=true; shift ;;
  -h|--help) usage ;;
esac
[ $# -eq 1 ] || usage
out=$(mkdir -p "$1" && cd "$1" && pwd)
log=$out/gpu_check.log
: >"$log"
say() { echo "$*" | tee -a "$log"; }
started=$(date +%s)
elapsed() { echo "$(($(date +%s) - started)) s"; }

# --- the machine ----------------------------------------------------------------
say "==> the machine"
missing_tools=()
for tool in python3 meson ninja g++ pkg-config dpkg; do
  command -v "$tool" >/dev/null || missing_tools+=("$tool")
done
((${#missing_tools[@]} == 0)) || { say "gpu_check: missing tools: ${missing_tools[*]}"; exit 1; }
{
  uname -srm
  g++ --version | head -n 1
  echo "meson $(meson --version), ninja $(ninja --version)"
  python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "GPUs", torch.cuda.device_count())'
  if command -v nvidia-smi >/dev/null; then nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; fi
} 2>&1 | tee -a "$log"
gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())')
if [ "$gpus" = 0 ] && ! $dry_run; then
  say "gpu_check: python3's torch sees no GPU here; --dry-run checks the rest"
  exit 1
fi

# --- the packages, unpacked into a prefix of their own -----------------------------
if [ ! -d "$debs" ] || ! ls "$debs"/*.deb >/dev/null 2>&1; then
  if command -v apt-get >/dev/null && $dry_run; then fetch; else
    say "gpu_check: no .deb files in $debs: run '$0 --fetch' on a machine with apt first"
    exit 1
  fi
fi
lacking() {
  absent=()
  for package in "${packages[@]}"; do
    ls "$debs/${package}_"*.deb >/dev/null 2>&1 || absent+=("$package")
  done
}
lacking
if ((${#absent[@]})) && $dry_run && command -v apt-get >/dev/null; then
  fetch
  lacking
fi
((${#absent[@]} == 0)) || { say "gpu_check: $debs lacks: ${absent[*]} (run '$0 --fetch')"; exit 1; }
if [ -n "${ACTORPIPE_GPU_PREFIX:-}" ]; then
  prefix=$ACTORPIPE_GPU_PREFIX
else
  prefix=$(mktemp -d /tmp/actorpipe-gpu-prefix.XXXXXX)
  trap 'rm -rf "$prefix"; [ -z "${dataset_link:-}" ] || rm -f "$dataset_link"' EXIT
fi
say "==> unpacking ${#packages[@]} packages into $prefix"
for package in "${packages[@]}"; do
  dpkg -x "$(ls "$debs/${package}_"*.deb | sed -n 1p)" "$prefix"
done
# Their pkg-config files and absolute links name /usr and /lib: the prefix's, here.
find "$prefix" -name '*.pc' -exec sed -i -E "s#(=|-I|-L|\")/usr#\1$prefix/usr#g" {} +
while IFS= read -r link; do
  target=$(readlink "$link")
  [ -e "$prefix$target" ] && ln -sfn "$prefix$target" "$link"
done < <(find "$prefix" -type l -lname '/*')
# Fashion-MNIST where jobs look for it by default, for the check's length only: a link,
# taken away at the end, and only where the machine has none.
datasets=/usr/share/datasets
if ! $dry_run && [ ! -e "$datasets/fashion-mnist" ] && mkdir -p "$datasets" 2>/dev/null &&
  ln -s "$prefix$datasets/fashion-mnist" "$datasets/fashion-mnist"; then
  dataset_link=$datasets/fashion-mnist
fi
libs=$prefix/usr/lib/x86_64-linux-gnu
for expected in usr/include/caf/all.hpp usr/include/toml++/toml.h usr/include/lua5.4/lua.h \
  usr/include/boost/test/unit_test.hpp usr/include/plplot/plplot.h usr/include/CLI/CLI.hpp \
  usr/include/nlohmann/json.hpp usr/include/gloo/context.h usr/lib/x86_64-linux-gnu/libcaf_core.so \
  usr/lib/x86_64-linux-gnu/libboost_unit_test_framework.so usr/lib/x86_64-linux-gnu/libplplot.so usr/bin/protoc \
  usr/include/google/protobuf/message.h; do
  [ -e "$prefix/$expected" ] || { say "gpu_check: the unpacked packages lack $expected"; exit 1; }
done
export PKG_CONFIG_PATH=$libs/pkgconfig:$prefix/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export CPLUS_INCLUDE_PATH=$prefix/usr/include:$prefix/usr/include/x86_64-linux-gnu${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
export LIBRARY_PATH=$libs${LIBRARY_PATH:+:$LIBRARY_PATH}
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export BOOST_ROOT=$prefix/usr
export PATH=$PATH:$prefix/usr/bin # protoc, after what the machine has

# --- configure, build ---------------------------------------------------------------
build=${ACTORPIPE_BUILD_DIR:-$root/build-gpu}
say "==> configuring $build against python3's LibTorch ($(elapsed))"
meson setup --wipe "$build" "$root" >"$out/configure.log" 2>&1 || meson setup "$build" "$root" >"$out/configure.log" 2>&1 ||
  { tail -n 30 "$out/configure.log" | tee -a "$log"; exit 1; }
grep -E 'LibTorch|CUDA' "$out/configure.log" | tee -a "$log"
if $dry_run; then
  say "==> dry run: configured; on a GPU server the check goes on with:"
  say "    ninja -C $build; meson test -C $build gpu_cuda training_cuda transport_cuda; $build/bench/gpu_bench $root"
  exit 0
fi
status=0
say "==> building ($(elapsed))"
# -k 0: whatever builds is checked, and the log names what did not.
targets=()
if $tests_only; then
  # The tests, the commands they run and the plugins they plan with.
  mapfile -t targets < <(ninja -C "$build" -t targets all | sed -n -E 's#^(plugins/[^:]*\.so):.*#\1#p')
  targets+=(tests/training_cuda_test tests/transport_cuda_test tests/gpu_cuda_test runtime/cli/actorpipe
    runtime/cli/actorpipe-train)
elif $bench_only; then
  mapfile -t targets < <(ninja -C "$build" -t targets all | sed -n -E 's#^(plugins/[^:]*\.so):.*#\1#p')
  targets+=(bench/gpu_bench)
fi
ninja -C "$build" -k 0 "${targets[@]}" >"$out/build.log" 2>&1 || { grep -A5 -E 'error|FAILED' "$out/build.log" | sed -n 1,40p | tee -a "$log"; status=1; }

# --- the *_cuda tests, the benchmark ---------------------------------------------
if ! $bench_only; then
  say "==> the *_cuda tests ($(elapsed))"
  cuda_tests=$(meson test -C "$build" --no-rebuild --list 2>/dev/null | grep -E '_cuda$' | tr '\n' ' ' || true)
  # shellcheck disable=SC2086
  meson test -C "$build" --no-rebuild --print-errorlogs --test-args=--log_level=message $cuda_tests >"$out/tests.log" 2>&1 || status=1
  grep -E '^ *[0-9]+/[0-9]+ ' "$out/tests.log" | tee -a "$log"
  # (meson's own lines, which quote the whole environment, are left out)
  grep -h -E 'test accuracy|peak allocated|alone|NCCL|error|fatal|gpu_cuda:' "$build/meson-logs/testlog.txt" |
    grep -v -E '^(Inherited environment|command|env):' | sed -n 1,40p | tee -a "$log"
  cp "$build/meson-logs/testlog.txt" "$out/testlog.txt"
  say "==> this machine as actorpipe sees it"
  {
    "$build/runtime/cli/actorpipe" --version
    "$build/runtime/cli/actorpipe" devices --nccl
    "$build/runtime/cli/actorpipe" devices --cluster "$build/this-machine.toml" && cat "$build/this-machine.toml"
  } 2>&1 | tee -a "$log" || status=1
fi
if $tests_only; then
  say "==> done in $(elapsed): $([ $status = 0 ] && echo ok || echo FAILED)"
  exit $status
fi
say "==> the GPU benchmark ($(elapsed))"
# The actorpipe runs' Perfetto traces, one archive (ui.perfetto.dev opens each).
traces=$build/gpu-bench-traces
rm -rf "$traces"
# shellcheck disable=SC2086
"$build/bench/gpu_bench" "$root" --json "$out/gpu_bench.json" --traces "$traces" ${ACTORPIPE_GPU_BENCH_ARGS:-} 2>&1 | tee "$out/gpu_bench.txt" | tee -a "$log" || status=1
if [ -f "$traces/plain-loop-bf16.kineto.json" ]; then
  say "==> the plain LibTorch loop's kernels against PyTorch eager's ($(elapsed))"
  python3 "$root/bench/kernel_table.py" "$traces/plain-loop-bf16.kineto.json" "$traces"/eager-bf16*.kineto.json 2>&1 |
    tee -a "$log" || status=1
fi
[ ! -d "$traces" ] || tar -czf "$out/gpu_bench_traces.tar.gz" -C "$traces" .
say "==> done in $(elapsed): $([ $status = 0 ] && echo ok || echo FAILED)"
exit $status
