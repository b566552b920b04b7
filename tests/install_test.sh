#!/usr/bin/env bash
# The installed SDK as a user outside this tree gets it: installs the build into a
# temporary prefix, builds examples/custom_plugin and examples/embed_host against it
# from copies of their folders alone (pkg-config finds actorpipe), and runs them:
# the out-of-tree partitioner and its Lua twin must plan alike through the installed
# `actorpipe`, and the host must train, cancel a run and run a script. Then runs every
# code block of docs/lua.md, docs/embedding.md and docs/plugins.md against the same
# installation (tests/doc_blocks.py).
#
#   install_test.sh SOURCE_ROOT BUILD_ROOT
set -euo pipefail
source_root=$1
build_root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "install_test: $*" >&2
  exit 1
}

# DESTDIR stages the installation under $work; its pkg-config files are relocatable, so
# they name it there as they are (docs/embedding.md).
DESTDIR=$work/destdir meson install -C "$build_root" --no-rebuild --quiet >/dev/null
pc=$(find "$work/destdir" -name actorpipe.pc -print -quit)
[ -n "$pc" ] || fail "no actorpipe.pc installed"
export PKG_CONFIG_PATH=$(dirname "$pc")
root=$(cd "$(pkg-config --variable=prefix actorpipe)" && pwd)
case "$root" in "$work/destdir"/*) ;; *) fail "actorpipe.pc names $root, not the staged installation" ;; esac
actorpipe=$root/bin/actorpipe
"$actorpipe" --version

# The out-of-tree plugin, and the same algorithm in Lua.
cp -r "$source_root/examples/custom_plugin" "$work/custom_plugin"
meson setup "$work/custom_plugin/build" "$work/custom_plugin" >/dev/null
ninja -C "$work/custom_plugin/build" >/dev/null
job=$source_root/configs/vgg16-4dev.toml
"$actorpipe" plan "$job" --plugin-path "$work/custom_plugin/build" --partitioner greedy --json >"$work/greedy.json"
"$actorpipe" plan "$job" --plugin-path "$work/custom_plugin/greedy.lua" --partitioner greedy-lua --json \
  >"$work/greedy-lua.json"
python3 - "$work/greedy.json" "$work/greedy-lua.json" <<'PY' || fail "the C++ and Lua greedy partitioners plan differently"
import json, sys
cpp, lua = (json.load(open(path)) for path in sys.argv[1:3])
assert cpp["partitioner"] == "greedy" and lua["partitioner"] == "greedy-lua", (cpp["partitioner"], lua["partitioner"])
cuts = lambda plan: [(s["begin"], s["end"]) for s in plan["stages"]]
assert len(cpp["stages"]) > 1, "one stage plans nothing to compare"
assert cuts(cpp) == cuts(lua), (cuts(cpp), cuts(lua))
assert cpp["iteration_time_ms"] == lua["iteration_time_ms"]
print("greedy and greedy-lua cut alike:", [(c[0]["block"], c[1]["block"]) for c in cuts(cpp)])
PY

# The host application.
cp -r "$source_root/examples/embed_host" "$work/embed_host"
meson setup "$work/embed_host/build" "$work/embed_host" >/dev/null
ninja -C "$work/embed_host/build" >/dev/null
(cd "$work/embed_host" && build/embed_host job.toml script.lua "$work/out") | tee "$work/host.log"
grep -q "^second run: cancelled after step" "$work/host.log" || fail "the second run was not cancelled"
[ -f "$work/out/first/checkpoint.pt" ] || fail "the first run left no checkpoint"
[ -f "$work/out/second/checkpoint.pt" ] || fail "the cancelled run left no checkpoint"
[ -f "$work/out/script/plan.json" ] || fail "the script wrote no plan.json"
# Every code block of the docs that show the SDK, Lua and embedding, run as written.
python3 "$source_root/tests/doc_blocks.py" --bin "$root/bin" --source "$source_root" --work "$work/docs" \
  "$source_root/docs/lua.md" "$source_root/docs/embedding.md" "$source_root/docs/plugins.md" \
  "$source_root/docs/data.md"
echo "install_test: ok"
