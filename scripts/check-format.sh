#!/usr/bin/env bash
# Fails when a C++ file of the tree differs from what clang-format (.clang-format)
# makes of it, and names the files. `scripts/check-format.sh --fix` rewrites them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # New files count before they are added; ignored ones (build folders) never do.
  mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp')
else
  mapfile -t files < <(find actors bench plugins runtime tests tools -name '*.cpp' -o -name '*.hpp')
fi
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
drift=()
for file in "${files[@]}"; do
  clang-format --dry-run --Werror "$file" >/dev/null 2>&1 || drift+=("$file")
done
if ((${#drift[@]})); then
  echo "clang-format would change ${#drift[@]} file(s): ${drift[*]}" >&2
  echo "run scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "format: ${#files[@]} files as clang-format has them"
