#!/bin/sh
# check_maxinsns.sh PTDECODE "N1 N2 ..." gen BENCHGEN [BENCHGEN OPTIONS] KIND
# check_maxinsns.sh PTDECODE "N1 N2 ..." trace PTDECODE INPUT ARGUMENTS
# The fast decoder with --max-insns N (1 and 2 threads) stops after
# libipt's first N instructions in every view: --insn lists them, the
# --coverage counts sum to N and equal those of libipt's first N
# instructions, --stats counts N.  N 0 is the whole trace.  Segments the
# fast decoder hands to libipt (a CYC calibration it cannot know, a packet
# it leaves to libipt) come to the block views as instruction events: the
# Ns lie inside them.  "trace" inputs must fall back at one thread (the
# check says so when they do not).  Also, the whole trace's --branches
# (taken branches, trace ends and begins from the disable and enable
# events) equal libipt's: libipt, run from the queue's start up to the
# instructions handed out, does not repeat the events after them.
set -eu
ptdecode=$1 maxlist=$2 how=$3
shift 3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if [ "$how" = gen ]; then
    gen=$1
    shift
    "$gen" "$@" 400000 "$tmp/t.ptd" 11 >/dev/null
    set -- "$tmp/t.ptd"
else
    for a in "$@"; do
        case $a in
        /*) [ -e "${a%%:*}" ] || { echo "SKIP: $a not found (shared traces)"; exit 77; } ;;
        esac
    done
fi
# the oracle: libipt's instructions, one IP a line
"$ptdecode" -q --decoder=libipt --insn --no-sym --no-disasm "$@" |
    grep '^0x' | cut -d' ' -f1 >"$tmp/lib.ip"
total=$(wc -l <"$tmp/lib.ip")
fb1=$("$ptdecode" -q -j1 --coverage --stats "$@" 2>&1 |
    sed -n 's/^segments: .*(\([0-9]*\) decoded by libipt)/\1/p')
fb2=$("$ptdecode" -q -j2 --coverage --stats "$@" 2>&1 |
    sed -n 's/^segments: .*(\([0-9]*\) decoded by libipt)/\1/p')
if [ "$how" = trace ] && [ "${fb1:-0}" = 0 ]; then
    echo "FAIL: no segment decoded by libipt at -j1: the check tests nothing"
    exit 1
fi
rc=0
for m in $maxlist; do
    want=$m
    [ "$m" = 0 ] && want=$total
    head -n "$want" "$tmp/lib.ip" >"$tmp/want.ip"
    sort "$tmp/want.ip" | uniq -c | awk '{ print $2, $1 }' | sort >"$tmp/want.cov"
    for j in 1 2; do
        "$ptdecode" -q -j$j --max-insns "$m" --insn --no-sym --no-disasm "$@" |
            grep '^0x' | cut -d' ' -f1 >"$tmp/got.ip"
        cmp -s "$tmp/got.ip" "$tmp/want.ip" || {
            echo "FAIL: -j$j --max-insns $m --insn: $(wc -l <"$tmp/got.ip") lines, not libipt's first $want"
            rc=1; }
        "$ptdecode" -q -j$j --max-insns "$m" --coverage "$@" |
            awk '{ print $1, $2 }' | sort >"$tmp/got.cov"
        cmp -s "$tmp/got.cov" "$tmp/want.cov" || {
            echo "FAIL: -j$j --max-insns $m --coverage counts $(awk '{ s += $2 } END { print s + 0 }' \
                "$tmp/got.cov") instructions, not libipt's first $want"
            rc=1; }
        c=$("$ptdecode" -q -j$j --max-insns "$m" --stats "$@" | sed -n 's/^instructions: //p')
        [ "$c" = "$want" ] || { echo "FAIL: -j$j --max-insns $m --stats counts $c, not $want"; rc=1; }
    done
done
"$ptdecode" -q --decoder=libipt --branches "$@" >"$tmp/lib.br"
for j in 1 2; do
    "$ptdecode" -q -j$j --branches "$@" >"$tmp/got.br"
    cmp -s "$tmp/got.br" "$tmp/lib.br" || {
        echo "FAIL: -j$j --branches differ from libipt's:"; diff "$tmp/got.br" "$tmp/lib.br" | head -5; rc=1; }
done
[ $rc = 0 ] && echo "OK: --max-insns $maxlist: libipt's first N instructions and count" \
    "(--insn, --coverage, --stats at -j1, -j2; $total in all; --branches equal; segments decoded by" \
    "libipt: ${fb1:-0} at -j1, ${fb2:-0} at -j2)"
exit $rc
