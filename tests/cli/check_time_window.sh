#!/bin/sh
# check_time_window.sh PTDECODE CAPTURE: --time START,END picks the same
# instructions in every view.  The oracle: the instructions of the whole
# `--insn -t` decode (libipt's decoder) whose time lies in the window,
# counted here; --insn, --coverage (the block interface) and --stats
# (count-only) must give that many, with both decoders at -j1 and -j2.
set -eu
ptdecode=$1 cap=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ptdecode" -q --decoder=libipt --insn -t --no-sym --no-disasm "$cap" |
    awk '/^0x/ { print $4 }' >"$tmp/times"
n=$(wc -l <"$tmp/times")
[ "$n" -gt 1000 ] || { echo "FAIL: only $n timed instructions in $cap"; exit 1; }
# the middle half of the recording's time
start=$(sed -n "$((n / 4))p" "$tmp/times")
end=$(sed -n "$((3 * n / 4))p" "$tmp/times")
want=$(awk -v s="$start" -v e="$end" '$1 >= s && $1 <= e' "$tmp/times" | wc -l)
rc=0
for dec in fast libipt; do
    for j in 1 2; do
        opt="--decoder=$dec -j$j --time=$start,$end"
        insn=$("$ptdecode" -q $opt --insn --no-sym --no-disasm "$cap" | grep -c '^0x' || true)
        cov=$("$ptdecode" -q $opt --coverage "$cap" | awk '{ s += $2 } END { print s + 0 }')
        st=$("$ptdecode" $opt --stats "$cap" 2>&1 | awk '/^instructions:/ { print $2 }')
        if [ "$insn" != "$want" ] || [ "$cov" != "$want" ] || [ "$st" != "$want" ]; then
            echo "FAIL: $opt: --insn $insn, --coverage $cov, --stats $st; $want in the window"
            rc=1
        fi
    done
done
[ $rc = 0 ] && echo "ok: $want of $n instructions in [$start, $end] in every view"
exit $rc
