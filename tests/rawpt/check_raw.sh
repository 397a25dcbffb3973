#!/bin/sh
# check_raw.sh PTDECODE PTENC PTLOOP DIR TRACE PAGES INSNS ERRORS
# Decodes a raw Intel PT trace with its page cache with both decoders and
# compares with ptloop (libipt's instruction decoder run directly, as
# ptxed runs it, on the same libipt): --decoder=libipt must give the same
# flow (instructions, paging events, errors with their trace offset and
# IP), the fast decoder the same instructions and errors.  INSNS and
# ERRORS are libipt 2.0.x's counts (../shared/traces/README.md), checked
# when that is the libipt linked.
set -eu
ptdecode=$1 ptenc=$2 ptloop=$3 dir=$4 trace=$5 pages=$6 want_insns=$7 want_errors=$8
if [ ! -d "$dir" ]; then
    echo "SKIP: $dir not found (the shared real traces are not beside this checkout)"
    exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$ptloop" "$dir/$trace" "pages:$dir/$pages.addr:$dir/$pages.dump" >"$tmp/oracle"
grep -E '^(0x|\[paging|\[error)' "$tmp/oracle" >"$tmp/oracle.flow" || true
o_insns=$(grep -c '^0x' "$tmp/oracle.flow" || true)
o_errors=$(grep -c '^\[error' "$tmp/oracle.flow" || true)
ver=$("$ptenc" --libipt-version)
echo "libipt $ver (ptloop): $o_insns instructions, $o_errors errors"
case $ver in
2.0.*) [ "$o_insns" = "$want_insns" ] && [ "$o_errors" = "$want_errors" ] ||
    { echo "FAIL: libipt 2.0 gives $want_insns instructions, $want_errors errors"; exit 1; } ;;
esac
# insns and errors only: the fast decoder does not report the PSB+ status
# events (paging) of stretches where tracing is off
insns_errors() { grep -E '^(0x|\[error)' "$1" || true; }
rc=0
for dec in libipt fast; do
    "$ptdecode" -q --decoder=$dec --pt "$dir/$trace" \
        --pages "$dir/$pages.addr:$dir/$pages.dump" --insn --no-sym --no-disasm \
        >"$tmp/out" 2>&1 || true
    grep -E '^(0x|\[paging|\[error)' "$tmp/out" >"$tmp/flow" || true
    if [ $dec = libipt ]; then
        cmp -s "$tmp/oracle.flow" "$tmp/flow" || {
            echo "FAIL: $dec: the flow differs from ptloop's:"
            diff "$tmp/oracle.flow" "$tmp/flow" | head -20; rc=1; }
    else
        insns_errors "$tmp/oracle.flow" >"$tmp/o.ie"
        insns_errors "$tmp/flow" >"$tmp/f.ie"
        cmp -s "$tmp/o.ie" "$tmp/f.ie" || {
            echo "FAIL: $dec: instructions or errors differ from ptloop's:"
            diff "$tmp/o.ie" "$tmp/f.ie" | head -20; rc=1; }
    fi
    "$ptdecode" -q --decoder=$dec --pt "$dir/$trace" \
        --pages "$dir/$pages.addr:$dir/$pages.dump" --stats >"$tmp/stats" 2>&1 || true
    ni=$(sed -n 's/^instructions: //p' "$tmp/stats")
    ne=$(sed -n 's/^errors: //p' "$tmp/stats")
    echo "$dec: $ni instructions, $ne errors"
    [ "$ni" = "$o_insns" ] && [ "$ne" = "$o_errors" ] || { echo "FAIL: $dec --stats"; rc=1; }
done
[ $rc = 0 ] && echo PASS
exit $rc
