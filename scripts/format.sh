#!/usr/bin/env bash
# Formats the C++/CUDA sources with the project's style (.clang-format: Google's, 100 columns).
#   scripts/format.sh          rewrite the files in place
#   scripts/format.sh --check  list the files that differ from the style, exit 1 if any
# Comments are not re-wrapped (ReflowComments: false): many hold aligned tables.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cu' '*.cuh' '*.h' '*.cpp')
if [[ ${1:-} == --check ]]; then
  bad=0
  for f in "${files[@]}"; do
    if ! clang-format "$f" | cmp -s - "$f"; then echo "$f"; bad=1; fi
  done
  exit $bad
fi
clang-format -i "${files[@]}"
