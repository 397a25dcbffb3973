#!/bin/sh
# check_badinput.sh PTDECODE PDMUTATE CAPTURE: every kind of bad input gets
# one clear message naming the problem, a non-zero exit, and no crash.
set -u
ptdecode=$1 mutate=$2 cap=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
rc=0
# expect NAME WANT_EXIT PATTERN -- ARGS: runs ptdecode, checks the exit
# status (never a signal) and that stderr matches PATTERN
expect() {
    name=$1 want=$2 pat=$3; shift 4
    "$ptdecode" "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
    if [ $got -ge 128 ]; then
        echo "FAIL: $name: killed by signal $((got - 128))"; rc=1; return
    fi
    if [ "$want" = nonzero ] && [ $got -eq 0 ]; then
        echo "FAIL: $name: exit 0"; rc=1; return
    fi
    if ! grep -qE "$pat" "$tmp/err"; then
        echo "FAIL: $name: message does not match /$pat/:"; head -3 "$tmp/err"; rc=1; return
    fi
    echo "OK: $name (exit $got): $(grep -E "$pat" "$tmp/err" | head -1)"
}
pd=$cap/perf.data
size=$(wc -c <"$pd")

# output that cannot be written (through the writer thread, and stdout)
if [ -w /dev/full ]; then
    expect "full disk (-o)" nonzero 'error writing /dev/full' -- -q --insn -o /dev/full "$cap"
    "$ptdecode" -q --insn "$cap" >/dev/full 2>"$tmp/err"; got=$?
    if [ $got -eq 0 ] || ! grep -q 'error writing standard output' "$tmp/err"; then
        echo "FAIL: full disk (stdout): exit $got: $(head -1 "$tmp/err")"; rc=1
    else
        echo "OK: full disk (stdout) (exit $got): $(head -1 "$tmp/err")"
    fi
fi

expect "missing file" nonzero 'cannot open /nonexistent/x.ptd: No such file' -- /nonexistent/x.ptd
printf 'hello\n' >"$tmp/notperf"
expect "not a perf.data" nonzero 'is not a perf.data file' -- "$tmp/notperf"
: >"$tmp/empty"
expect "empty file" nonzero 'is not a perf.data file|empty|truncated' -- "$tmp/empty"
head -c 100 "$pd" >"$tmp/short.data"
expect "truncated header" nonzero 'truncated|too short|cannot' -- "$tmp/short.data"
head -c $((size * 6 / 10)) "$pd" >"$tmp/cut.data"
expect "truncated perf.data" nonzero 'truncated' -- "$tmp/cut.data"
"$mutate" "$pd" "$tmp/noinfo.data" retype 70 >/dev/null
expect "AUX data without AUXTRACE_INFO" nonzero 'no AUXTRACE_INFO' -- "$tmp/noinfo.data"
"$mutate" "$pd" "$tmp/pmu.data" auxinfo-type 99 >/dev/null
expect "unknown PMU type" nonzero 'AUX trace type 99 .*not supported' -- "$tmp/pmu.data"
# missing image: without the text store and with a sysroot that holds
# nothing, the code is nowhere; each gap names the range and the file
mkdir -p "$tmp/noimg.ptd"; cp "$pd" "$tmp/noimg.ptd/perf.data"
"$ptdecode" --sysroot "$tmp/empty-root" --insn "$tmp/noimg.ptd" >"$tmp/out" 2>"$tmp/err"
if grep -qE '^\[gap .*no code for \[0x[0-9a-f]+, 0x[0-9a-f]+\).*no code for /.*: file .* not found' "$tmp/out"; then
    echo "OK: missing image: $(grep -m1 '^\[gap' "$tmp/out")"
else
    echo "FAIL: missing image not reported with its range and file"; head -3 "$tmp/out"; rc=1
fi
exit $rc
