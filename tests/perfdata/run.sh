#!/bin/sh
# run.sh TEST PDUMP WORKDIR SHARED_TRACES: runs one perf.data reader test
# (check_perfdata.py); exits 77 (skip) when python3 is absent.
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
exec python3 "$(dirname "$0")/check_perfdata.py" "$@"
