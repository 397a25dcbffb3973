#!/bin/sh
# check_progress.sh PTDECODE CAPTURE [CS_PERF_DATA]: the progress line on
# standard error, for an Intel PT capture (both decoders) and a CoreSight
# perf.data (when given and present).
# Run on a terminal (script(1) gives one) with the delay set to 0 it shows
# "ptdecode: DONE of TOTAL trace (P%), N instructions, R instructions/s"
# with TOTAL the trace's bytes as --stats counts them and P never going
# down, then erases itself; never with -q, never when standard error is
# not a terminal, never when the view writes to that terminal, never for a
# decode shorter than the delay.
set -u
ptdecode=$1 cap=$2 cs=${3:-}
command -v script >/dev/null 2>&1 || { echo "SKIP: script(1) not installed"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
rc=0
# on_tty DELAY ARGS...: ptdecode on a terminal, what it wrote there
on_tty() {
    delay=$1; shift
    PTDECODE_PROGRESS_DELAY_MS=$delay script -q -e -c "$ptdecode $*" /dev/null |
        tr '\r' '\n' >"$tmp/tty"
}
# check INPUT OPTIONS...: the progress lines of one decode on a terminal
check() {
    input=$1; shift
    bytes=$("$ptdecode" -q --stats "$input" | sed -n 's/^trace bytes: //p')
    total=$(awk -v b="$bytes" 'BEGIN { u = " B"; split("kB MB GB TB", us, " ");
        for (i = 1; b >= 1000 && i <= 4; i++) { b /= 1000; u = " " us[i] }
        printf(u == " B" || b >= 100 ? "%.0f%s" : b >= 10 ? "%.1f%s" : "%.2f%s", b, u) }')
    line="^ptdecode: [0-9.]+ [kMGT]?B of $total trace \\(([0-9]+)%\\), [0-9.]+ [kMGT]? ?instructions, [0-9.]+ [kMGT]? ?instructions/s"
    view="$*"
    on_tty 0 "$@" "$input"
    n=$(grep -cE "$line" "$tmp/tty")
    pcts=$(grep -E "$line" "$tmp/tty" | sed -E 's/.*\(([0-9]+)%\).*/\1/' | tr '\n' ' ')
    if [ "$n" -eq 0 ]; then
        echo "FAIL: $view: no progress line on the terminal:"; cat -v "$tmp/tty"; rc=1
    elif ! echo "$pcts" | awk '{ for (i = 2; i <= NF; i++) if ($i < $(i-1) || $i > 100) exit 1 }'; then
        echo "FAIL: $view: percentages go down or past 100: $pcts"; rc=1
    elif ! cat -v "$tmp/tty" | awk '/trace \(/ { p = NR } /^\^\[\[K/ { e = NR }
                                    END { exit !(e > p) }'; then
        echo "FAIL: $view: the line is not erased at the end"; rc=1
    else
        echo "OK: $view: $n progress lines ($pcts%), total $total"
    fi
}
for dec in fast libipt; do
    for view in "--stats" "--insn -o $tmp/out" "--coverage -o $tmp/out"; do
        # shellcheck disable=SC2086
        check "$cap" --decoder=$dec $view
    done
done
[ -n "$cs" ] && [ -f "$cs" ] && check "$cs" --stats
none() {  # what: ptdecode's terminal output must hold no progress line
    if grep -qE '^ptdecode: .* trace \(' "$tmp/tty"; then
        echo "FAIL: progress shown $1"; rc=1
    else
        echo "OK: no progress $1"
    fi
}
on_tty 0 -q --stats "$cap"; none "with -q"
on_tty 0 --insn "$cap"; none "when --insn writes to the terminal"
on_tty 600000 --stats "$cap"; none "for a decode shorter than the delay (10 minutes here)"
PTDECODE_PROGRESS_DELAY_MS=0 "$ptdecode" --stats "$cap" >/dev/null 2>"$tmp/tty"
none "when standard error is not a terminal"
exit $rc
