#!/bin/sh
# cli_perfdata.sh PTDECODE TEST_CS_PERF PERFDATA_DIR
#
# ptdecode on simpleperf's real cs_etm perf.data files (AOSP testdata):
#   - perf_etm.data with --search-path: instructions, no gaps, no errors;
#     every instruction inside the executable MMAP2 of etm_test_loop as
#     `perf report -D` prints it; the instruction count equal to the sum of
#     trc_pkt_lister's ranges over the same AUX bytes (test_cs_perf's
#     oracle run); without --search-path the code is missing: gaps, no
#     instructions.
#   - perf_with_missing_aux_data.data: a clear message, exit 1, no crash.
# Exit 0 = ok, 1 = failure, 77 = skipped.
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
ptd=$1
tcp=$2
dir=$3
data=$dir/perf_etm.data
need_input "$data"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# perf's own HOME (here and in TEST_CS_PERF): nothing from this machine
sh "$(dirname "$0")/../perf_home.sh" "$tmp/home" || exit 1
export HOME="$tmp/home"
fail() { echo "FAIL: $*"; exit 1; }
stat_of() { sed -n "s/^$1: //p" "$2"; }

"$ptd" --search-path "$dir" --stats "$data" >"$tmp/stats" 2>"$tmp/err" ||
	fail "ptdecode --stats exited with $? ($(cat "$tmp/err"))"
n=$(stat_of instructions "$tmp/stats")
[ "${n:-0}" -gt 0 ] || fail "no instructions decoded"
[ "$(stat_of gaps "$tmp/stats")" = 0 ] || fail "gaps: $(stat_of gaps "$tmp/stats")"
[ "$(stat_of errors "$tmp/stats")" = 0 ] || fail "errors: $(stat_of errors "$tmp/stats")"
echo "ok   perf_etm.data: $n instructions, 0 gaps, 0 errors"

"$ptd" --search-path "$dir" --insn --no-sym --no-disasm "$data" 2>/dev/null |
	sed -n 's/^\(0x[0-9a-f]*\).*/\1/p' >"$tmp/ips"
[ "$(wc -l <"$tmp/ips")" = "$n" ] || fail "--insn prints $(wc -l <"$tmp/ips") instructions, --stats $n"

if command -v perf >/dev/null 2>&1; then
	# executable mappings of etm_test_loop: [start(len) @ ...]: ?-x? path
	perf report -D -i "$data" 2>/dev/null |
		sed -n 's/.*PERF_RECORD_MMAP2 .*\[\(0x[0-9a-f]*\)(\(0x[0-9a-f]*\)) @ .*\]: ..x. .*etm_test_loop$/\1 \2/p' \
		>"$tmp/maps"
	[ -s "$tmp/maps" ] || fail "perf report -D shows no executable mapping of etm_test_loop"
	# compare as 16-digit hex strings (awk numbers lose 64-bit precision)
	out=$(awk 'function h(x) { sub(/^0x/, "", x); return sprintf("%16s", x) }
		   function add(a, b,   r, c, i, d, x, y) {  # hex a + b
			   a = h(a); b = h(b); gsub(/ /, "0", a); gsub(/ /, "0", b)
			   r = ""; c = 0
			   for (i = 16; i >= 1; i--) {
				   x = index("0123456789abcdef", substr(a, i, 1)) - 1
				   y = index("0123456789abcdef", substr(b, i, 1)) - 1
				   d = x + y + c; c = int(d / 16)
				   r = substr("0123456789abcdef", d % 16 + 1, 1) r
			   }
			   return r }
		   function z(x) { x = h(x); gsub(/ /, "0", x); return x }
		   NR == FNR { s[NR] = z($1); e[NR] = add($1, $2); m = NR; next }
		   { a = z($1); ok = 0
		     for (i = 1; i <= m; i++) if (a >= s[i] && a < e[i]) ok = 1
		     if (!ok) bad++ }
		   END { print bad + 0 }' "$tmp/maps" "$tmp/ips" 2>&1)
	[ "$out" = 0 ] || fail "$out instructions outside etm_test_loop's executable mapping ($(cat "$tmp/maps"))"
	echo "ok   all $n instructions inside etm_test_loop's executable mapping (perf report -D)"
else
	echo "note: perf not installed: mapping check skipped"
fi

# the instruction count of the oracle (trc_pkt_lister ranges)
o=$("$tcp" "$data" "$dir" 2>&1 | sed -n 's/.*same as trc_pkt_lister (\([0-9]*\) instructions).*/\1/p')
if [ -n "$o" ]; then
	[ "$o" = "$n" ] || fail "trc_pkt_lister's ranges hold $o instructions, ptdecode decodes $n"
	echo "ok   $n instructions = trc_pkt_lister's ranges"
else
	echo "note: trc_pkt_lister oracle not available (test_cs_perf skipped part 2)"
fi

"$ptd" --stats "$data" >"$tmp/stats2" 2>&1
[ "$(stat_of instructions "$tmp/stats2")" = 0 ] && [ "$(stat_of gaps "$tmp/stats2")" -gt 0 ] ||
	fail "without --search-path etm_test_loop cannot be found, yet: $(tr '\n' ' ' <"$tmp/stats2")"
echo "ok   without --search-path: 0 instructions, $(stat_of gaps "$tmp/stats2") gaps"

bad=$dir/perf_with_missing_aux_data.data
"$ptd" --stats "$bad" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] || fail "perf_with_missing_aux_data.data: exit $rc, expected 1 ($(cat "$tmp/err"))"
[ "$(wc -l <"$tmp/err")" -ge 1 ] && grep -q 'no AUX trace data\|AUX' "$tmp/err" ||
	fail "perf_with_missing_aux_data.data: no clear message: $(cat "$tmp/err")"
echo "ok   perf_with_missing_aux_data.data: exit 1, $(head -1 "$tmp/err")"
exit 0
