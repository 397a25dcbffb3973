#!/bin/sh
# check_threads_layout.sh PTSYNTH PTDECODE OUT CMD [ARGS]
#
# Records CMD with `ptsynth record --perf-layout threads` (OUT/perf.data is
# a directory: data, data.N, as perf record --threads writes it) and checks
# that ptdecode, with both decoders at -j1 and -j2, lists exactly the
# ground truth (OUT/expected.insn) and exactly what perf script prints,
# and `--branches` perf script --itrace=be's branches.
# perf's oracle: perf script on the directory where perf reads the AUX data
# of data.N files; Debian's perf 6.1 reads an AUXTRACE payload at its
# data.N offset but in the header file (0 instructions), so then the same
# records joined into one file (perfdir_join.py) are perf's input.
# Exit 0 = match, 1 = mismatch, 77 = skipped (reason printed).
set -u
ptsynth=$1; ptdecode=$2; out=$3; shift 3
here=$(dirname "$0")
command -v perf >/dev/null 2>&1 || { echo "SKIP: perf not installed"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
rm -rf "$out"
"$ptsynth" record -o "$out" --perf-layout threads "$@" >"$out.stdout" 2>"$out.stderr" || {
	echo "FAIL: ptsynth failed:"; cat "$out.stderr"; exit 1; }
pd=$out/perf.data
[ -d "$pd" ] && [ -f "$pd/data" ] && [ -f "$pd/data.0" ] || {
	echo "FAIL: $pd is not a perf.data directory with data and data.0"; exit 1; }
sh "$here/../perf_home.sh" "$out.home" "$out" || exit 1
export HOME="$out.home"
n=$(wc -l <"$out/expected.insn")
rc=0

# the layout: every AUXTRACE record (type 71) in a data.N file, none in
# data; perf finds HEADER_DIR_FORMAT
python3 "$here/perfdir_join.py" --list "$pd" >"$out.types" || exit 1
n_aux=$(awk '$1 ~ /^data\.[0-9]+$/ && $2 == 71 { n += $3 } END { print n + 0 }' "$out.types")
n_aux_hdr=$(awk '$1 == "data" && $2 == 71 { n += $3 } END { print n + 0 }' "$out.types")
if [ "$n_aux" -eq 0 ] || [ "$n_aux_hdr" -ne 0 ]; then
	echo "FAIL: AUXTRACE records: $n_aux in data.N files, $n_aux_hdr in data"; rc=1
fi
perf report --header-only -i "$pd" >"$out.header" 2>&1
grep -q "^# directory data version : 1" "$out.header" || {
	echo "FAIL: perf finds no HEADER_DIR_FORMAT version 1"; rc=1; }

perf script -i "$pd" --itrace=i0ns -F ip 2>"$out.perf.stderr" |
	awk 'NF { print "0x" $1 }' >"$out.perf.insn"
perfcap=$out    # the directory whose perf.data perf script reads
if [ -s "$out.perf.insn" ]; then
	echo "perf script decodes the directory itself: $(wc -l <"$out.perf.insn") instructions"
else
	echo "NOTE: perf $(perf version 2>/dev/null | awk '{print $3}') decodes no instruction from" \
	     "the directory (it reads data.N AUX payloads from the header file, or" \
	     "dies of SIGBUS past its end); perf's oracle is the same records joined" \
	     "into one file"
	perfcap=$out.joined
	rm -rf "$perfcap" && mkdir "$perfcap" || exit 1
	python3 "$here/perfdir_join.py" "$pd" "$perfcap/perf.data" || exit 1
	perf script -i "$perfcap/perf.data" --itrace=i0ns -F ip 2>"$out.perf.stderr" |
		awk 'NF { print "0x" $1 }' >"$out.perf.insn"
fi
if cmp -s "$out.perf.insn" "$out/expected.insn"; then
	echo "OK: perf decodes $n of $n instructions exactly"
else
	echo "FAIL: perf: $(wc -l <"$out.perf.insn") instructions, $n expected"
	diff "$out/expected.insn" "$out.perf.insn" | head -n 6; rc=1
fi
for d in fast libipt; do
	for j in 1 2; do
		got=$out.$d.j$j.insn
		"$ptdecode" -q -j$j --decoder=$d --insn --no-sym --no-disasm "$out" \
			2>"$got.stderr" | grep '^0x' >"$got"
		if cmp -s "$got" "$out/expected.insn" && cmp -s "$got" "$out.perf.insn"; then
			echo "OK: ptdecode --decoder=$d -j$j: $n instructions, = ground truth = perf"
		else
			echo "FAIL: ptdecode --decoder=$d -j$j: $(wc -l <"$got") instructions, $n expected"
			diff "$out/expected.insn" "$got" | head -n 6; head -n 5 "$got.stderr"; rc=1
		fi
	done
done
# --branches: perf script --itrace=be's branches, trace starts and stops
# (check_timeline.py's comparison, per thread and in perf's order with
# CPUs and times), both decoders at -j1 and -j2
python3 - "$here/../timeline" "$ptdecode" "$out" "$perfcap" <<'EOF' || rc=1
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import check_timeline as ct  # noqa: E402
ptdecode, out, perfcap = sys.argv[2:5]
pbr = ct.perf_branches(perfcap)
if not pbr:
    ct.fail('perf script --itrace=be lists no branch')
for dec in ('fast', 'libipt'):
    for j in ('1', '2'):
        ctx = 'ptdecode --decoder=%s -j%s' % (dec, j)
        obr = ct.ours_branches(ct.run([ptdecode, '-q', '--decoder=' + dec, '-j', j, '-t',
                                       '--no-sym', '--branches', out]))
        nbr, ntrace, nparked, _, _ = ct.compare_branches(obr, pbr, ctx)
        print('OK: %s --branches: %d branches, %d trace starts/stops = perf script '
              '--itrace=be (%d listed after a trace stop)' % (ctx, nbr, ntrace, nparked))
EOF
# the directory alone, given as ptdecode's input, decodes the same
"$ptdecode" -q --insn --no-sym --no-disasm "$pd" 2>"$out.dironly.stderr" | grep '^0x' >"$out.dironly.insn"
cmp -s "$out.dironly.insn" "$out/expected.insn" || {
	echo "FAIL: ptdecode $pd (the directory alone) differs from the ground truth"
	head -n 5 "$out.dironly.stderr"; rc=1; }
exit $rc
