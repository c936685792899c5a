#!/usr/bin/env bash
# The wheels the GPU check carries to a bare GPU machine (Python 3.12, x86-64 Linux, no package
# registry: torch, transformers, peft and accelerate are there; TRL, datasets, the ALFWorld engine
# and skillos's own small dependencies are not). Run here, from the repo root, with network:
#
#     tests/gpu/prepare_wheels.sh [DIR]      (default .whl, ignored by git)
#
# Versions are the ones installed in this environment (pinned exactly, so the GPU runs what was
# tested here). Then carry DIR to the machine and run tests/gpu/check.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-.whl}
PY=${PYTHON:-.venv/bin/python}
LIMIT_MIB=64  # the device tool carries at most 64 MiB with the working tree

# Pure-Python or manylinux wheels on PyPI: TRL and what it needs that the machine lacks, skillos's
# own small dependencies, and the ALFWorld engine (alfworld, textworld and textworld's needs).
BINARY="trl datasets dill multiprocess rank-bm25 python-frontmatter alfworld textworld tatsu hashids
        mementos more-itertools termcolor prompt-toolkit wcwidth"
# No wheel on PyPI (sdist only): built here. Their compiled parts are shared libraries loaded with
# ctypes (tagged py3-none-any), so a build on this x86-64 Linux (older glibc) runs there.
BUILT="fast-downward-textworld jericho"

pinned() {  # NAME==VERSION as installed here; stops if one is missing
  "$PY" - "$@" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version
for name in sys.argv[1:]:
    try:
        print(f"{name}=={version(name)}")
    except PackageNotFoundError:
        sys.exit(f"prepare_wheels: {name} is not installed here; install the [train,alfworld] extras first")
EOF
}

rm -rf "$DIR" && mkdir -p "$DIR"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$DIR" $(pinned $BINARY)
"$PY" -m pip wheel -q --no-deps -w "$DIR" $(pinned $BUILT)  # pip's wheel cache spares the rebuild

size=$(du -sk "$DIR" | cut -f1)
echo "$(ls "$DIR"/*.whl | wc -l) wheels in $DIR: $((size / 1024)) MiB (limit $LIMIT_MIB MiB with the working tree)"
if [ $((size / 1024)) -ge $LIMIT_MIB ]; then
  echo "prepare_wheels: $DIR is over $LIMIT_MIB MiB; the device tool cannot carry it" >&2
  exit 1
fi
