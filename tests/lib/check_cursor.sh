#!/bin/sh
# check_cursor.sh ORACLE gen BENCHGEN KIND: the cursor against the linear
#   decode on a generated 2 M-instruction trace;
# check_cursor.sh ORACLE pieces BENCHGEN KIND: on a generated 3 M-instruction
#   trace (KIND-mtc: with MTC and TSC packets, a new time every few
#   blocks; KIND-cyc: with CYC packets too, a new time nearly every
#   block), an index of PSB pieces (decoded again on demand) saved
#   beside the trace and read back by a second session, with searches
#   for addresses anywhere (the pieces' code summaries skip most pieces);
# check_cursor.sh ORACLE lines PTSYNTH FX_LOOP: a ptsynth recording of a
#   program with DWARF lines, PSBs every 512 bytes (pieces of ~8000
#   instructions), with finds of source lines entered (the pieces their
#   addresses cannot be in are passed) as well as of addresses;
# check_cursor.sh ORACLE damaged CORRUPT_TOOL CAPTURE: on a copy of a
#   capture whose trace has bytes flipped in the middle of its AUX data,
#   so that the decode has errors: they must be positions the cursor stops
#   at (cursor_oracle's "need-stops");
# check_cursor.sh ORACLE psb PTSYNTH PROGRAM: PROGRAM recorded with a PSB
#   every 64 bytes, so that its signal deliveries and returns fall near
#   and across the pieces' borders (skips with 77 where ptsynth cannot
#   trace).
set -eu
oracle=$1 mode=$2 tool=$3 arg=$4
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
case $mode in
gen)
    "$tool" "$arg" 2000000 "$tmp/t.ptd" 11 >/dev/null
    exec "$oracle" "$tmp/t.ptd" 2000 ;;
pieces)
    # KIND-mtc, KIND-cyc: with timing packets (a new time every few blocks)
    case $arg in
    *-mtc) "$tool" --mtc "${arg%-mtc}" 3000000 "$tmp/t.ptd" 13 >/dev/null ;;
    *-cyc) "$tool" --mtc --cyc "${arg%-cyc}" 3000000 "$tmp/t.ptd" 13 >/dev/null ;;
    *) "$tool" "$arg" 3000000 "$tmp/t.ptd" 13 >/dev/null ;;
    esac
    exec "$oracle" "$tmp/t.ptd" 1000 - need-pieces index-file far-finds ;;
lines)
    # 400 arguments: 440 rounds of its loop, about 180 000 instructions
    # shellcheck disable=SC2046
    if ! "$tool" record --psb-period 512 -o "$tmp/t.ptd" -- "$arg" $(seq 1 400) \
        >"$tmp/log" 2>&1; then
        echo "check_cursor.sh: SKIP: ptsynth record failed: $(tail -1 "$tmp/log")"
        exit 77
    fi
    exec "$oracle" "$tmp/t.ptd" 1000 - need-pieces far-finds need-line-entries ;;
damaged)
    cp -r "$arg" "$tmp/t.ptd"
    "$tool" auxspan "$tmp/t.ptd/perf.data" >"$tmp/spans"
    python3 - "$tmp/t.ptd/perf.data" "$tmp/spans" <<'PY'
import sys
data = bytearray(open(sys.argv[1], 'rb').read())
for l in open(sys.argv[2]):
    off, size = map(int, l.split())
    # damage a few bytes in each span's second and third quarter
    for frac in (0.3, 0.55, 0.8):
        p = off + int(size * frac)
        for k in range(4):
            data[p + k] ^= 0x5a
open(sys.argv[1], 'wb').write(data)
PY
    exec "$oracle" "$tmp/t.ptd" 2000 need-stops ;;
psb)
    if ! "$tool" record --psb-period 64 -o "$tmp/t.ptd" -- "$arg" >/dev/null; then
        echo "SKIP: ptsynth could not record $arg (ptrace not allowed?)"
        exit 77
    fi
    exec "$oracle" "$tmp/t.ptd" 3000 need-pieces index-file ;;
esac
echo "check_cursor.sh: unknown mode $mode" >&2
exit 2
