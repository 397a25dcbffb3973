#!/bin/sh
# check_neloop.sh PTDECODE TRACE ELF: a trace whose image makes the flow an
# endless jump loop (found by fuzz_rawpt; it used to buffer without bound).
# Both decoders must report the never-ending loop at the loop's address,
# resync, finish, and agree instruction for instruction.
set -u
ptdecode=$1 trace=$2 elf=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
rc=0
# 1 GiB of address space is plenty for a bounded decode (not under ASan,
# whose shadow memory needs terabytes of address space)
limit=1048576
grep -q __asan_init "$ptdecode" && limit=unlimited
for d in fast libipt; do
    (ulimit -v $limit; timeout 120 "$ptdecode" --decoder=$d --pt "$trace" \
        --elf "$elf" --cpu 6/158/10 --insn >"$tmp/$d.out" 2>"$tmp/$d.err")
    got=$?
    if [ $got -ge 124 ]; then
        echo "FAIL: $d: exit $got (timeout, signal or out of memory)"; rc=1; continue
    fi
    pat='^\[error .*ip=0x40019c: never-ending loop: 1048576 instructions at 0x40019c without trace'
    if grep -qE "$pat" "$tmp/$d.out"; then
        echo "OK: $d: $(grep -E "$pat" "$tmp/$d.out")"
    else
        echo "FAIL: $d: no never-ending loop error"; tail -3 "$tmp/$d.out"; rc=1
    fi
done
if cmp -s "$tmp/fast.out" "$tmp/libipt.out"; then
    echo "OK: fast and libipt agree ($(wc -l <"$tmp/fast.out") lines)"
else
    echo "FAIL: fast and libipt differ"; diff "$tmp/fast.out" "$tmp/libipt.out" | head -5; rc=1
fi
exit $rc
