#!/usr/bin/env bash
# The GPU check in one command, from the repo root: tests/gpu/check.sh [OUT] [options]
# (OUT defaults to $OUT; see tests/gpu/check.py for the options). python3 is the machine's own
# Python, the one that holds torch; set PYTHON to use another.
cd "$(dirname "$0")/../.." && exec "${PYTHON:-python3}" tests/gpu/check.py "$@"
