#!/bin/sh
# run.sh TEST BUILD_DIR WORK_DIR SHARED_TRACES: one corruption test
# (corrupt.py); exits 77 (skip) when python3 is absent.
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
exec python3 "$(dirname "$0")/corrupt.py" "$@"
