#!/bin/sh
# check_perfetto_usage.sh PTDECODE CAPTURE: --perfetto refuses what would
# mix its binary trace with text (a terminal, --format=json, --coverage),
# with a message naming the way out; a full disk is an error, not a
# silently short trace.
set -u
ptd=$1 cap=$2
rc=0
expect() { # WANT_RC PATTERN CMD...
    want=$1 pat=$2; shift 2
    err=$("$@" 2>&1 >/dev/null); got=$?
    if [ "$got" -ne "$want" ] || ! printf '%s' "$err" | grep -q -- "$pat"; then
        echo "FAIL: $* -> exit $got, \"$err\" (want $want, /$pat/)"; rc=1
    else
        echo "OK: $* -> exit $got: $err"
    fi
}
expect 2 "format=json" "$ptd" --perfetto --format=json -o /dev/null "$cap"
expect 2 "coverage" "$ptd" --perfetto --coverage -o /dev/null "$cap"
if command -v script >/dev/null 2>&1; then
    # standard output a terminal (script(1) gives it one)
    out=$(script -qec "$ptd --perfetto $cap" /dev/null 2>&1); got=$?
    if [ $got -ne 2 ] || ! printf '%s' "$out" | grep -q -- "-o FILE"; then
        echo "FAIL: --perfetto to a terminal -> exit $got: $out"; rc=1
    else
        echo "OK: --perfetto to a terminal refused"
    fi
fi
[ -w /dev/full ] && expect 1 "error writing" "$ptd" --perfetto -o /dev/full "$cap"
exit $rc
