#!/bin/sh
# check_count_events.sh PTSYNTH COUNT_EVENTS [ptsynth options] -- CMD
# [ARGS]: records CMD with ptsynth, then count_events compares the fast
# decoder's count-only events with libipt's, times included.  Exit 77:
# ptsynth cannot trace here.
set -u
ptsynth=$1 count=$2
shift 2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$ptsynth" record -o "$tmp/t.ptd" "$@" >"$tmp/out" 2>&1 || {
    if grep -qi "ptrace\|permission\|not permitted" "$tmp/out"; then
        echo "SKIP: ptsynth cannot trace here:"; cat "$tmp/out"; exit 77
    fi
    echo "FAIL: ptsynth failed:"; cat "$tmp/out"; exit 1; }
"$count" "$tmp/t.ptd"
