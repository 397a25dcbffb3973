#!/bin/sh
# check_fixture.sh PTSYNTH OUTDIR DECODERS [ptsynth options] -- CMD [ARGS]
#
# Records CMD with ptsynth into OUTDIR (a NAME.ptd directory), then checks
# that every decoder in DECODERS (comma-separated) lists exactly the
# instruction addresses of OUTDIR/expected.insn, in order.  Decoders:
#   perf        perf script --itrace=i0ns -F ip (Linux perf's own decoder)
#   cmd:PROG    PROG OUTDIR prints one hex address per line (e.g. ptdecode)
# Exit 0 = match, 1 = mismatch or failure, 77 = skipped (reason printed).
set -u
[ $# -ge 4 ] || { echo "usage: $0 PTSYNTH OUTDIR DECODERS [opts] -- CMD [ARGS]"; exit 1; }
ptsynth=$1; out=$2; decoders=$3; shift 3

case ",$decoders," in *,perf,*)
	command -v perf >/dev/null 2>&1 || { echo "SKIP: perf not installed"; exit 77; } ;;
esac
rm -rf "$out"
"$ptsynth" record -o "$out" "$@" >"$out.stdout" 2>"$out.stderr" || {
	echo "FAIL: ptsynth failed:"; cat "$out.stderr"; exit 1; }
n=$(wc -l <"$out/expected.insn")
[ "$n" -gt 0 ] || { echo "FAIL: no instructions recorded"; exit 1; }
# perf's own HOME: the recording's vDSO, nothing from this machine
sh "$(dirname "$0")/../perf_home.sh" "$out.home" "$out" || exit 1
export HOME="$out.home"

rc=0
case ",$decoders," in *,perf,*)
	# perf must also accept the whole file in its raw dump.
	n_aux=$( { perf script -D -i "$out/perf.data" 2>"$out.dump.stderr"
		  echo "rc=$?" >"$out.dump.rc"; } | grep -c "Intel Processor Trace data")
	if [ "$(cat "$out.dump.rc")" != rc=0 ] || [ "$n_aux" -eq 0 ]; then
		echo "FAIL: perf script -D rejects $out/perf.data:"
		head -n 5 "$out.dump.stderr"; rc=1
	fi ;;
esac
IFS=,
for d in $decoders; do
	unset IFS
	got="$out.$(echo "$d" | tr -c 'A-Za-z0-9\n' _).insn"
	case "$d" in
	perf)
		perf script -i "$out/perf.data" --itrace=i0ns -F ip 2>"$got.stderr" |
			awk 'NF { print "0x" $1 }' >"$got" ;;
	cmd:*)
		${d#cmd:} "$out" 2>"$got.stderr" | awk 'NF { a = $1; if (a !~ /^0x/) a = "0x" a; print a }' >"$got" ;;
	*) echo "FAIL: unknown decoder $d"; exit 1 ;;
	esac
	m=$(wc -l <"$got")
	if cmp -s "$got" "$out/expected.insn"; then
		echo "OK: $d decodes $m of $n instructions exactly"
	else
		echo "FAIL: $d: $m instructions decoded, $n expected; first difference:"
		diff "$out/expected.insn" "$got" | head -n 6
		head -n 5 "$got.stderr"
		rc=1
	fi
done
exit $rc
