#!/bin/sh
# cmp_perf.sh SNAP2PERF PTDECODE SNAPSHOT_DIR [search|v2]...
#
# Wraps a CoreSight snapshot in a cs_etm perf.data (snap2perf) and checks
# that ptdecode decodes the perf.data exactly as it decodes the snapshot:
# the same instructions and the same inaccessible-code gaps (their ips), in
# the same order, per trace source (--cpu-filter; each source has its own
# CPU).  The snapshot path is checked against trc_pkt_lister by
# cmp_ranges.sh, so this checks the perf.data path.  When perf is
# installed, `perf report -D` (the oracle for the file format) must read
# the file and see its AUXTRACE_INFO and AUXTRACE records.
# Options: search = MMAP2 names under a directory that does not exist, so
# images are found only through --search-path; v2 = header version 2,
# trace IDs in AUX_OUTPUT_HW_ID records.
# Exit 0 = same, 1 = different, 77 = skipped.
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
s2p=$1
ptd=$2
dir=$3
shift 3
search=0
v2=0
opts=
for o in "$@"; do
	case $o in
	search) search=1; opts="$opts --image-root /nonexistent-snapshot-images" ;;
	v2) v2=1; opts="$opts --hdr-version 2" ;;
	*) echo "cmp_perf.sh: unknown option $o"; exit 2 ;;
	esac
done
need_input "$dir"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# perf's own HOME: nothing from this machine
sh "$(dirname "$0")/../perf_home.sh" "$tmp/home" || exit 1
export HOME="$tmp/home"
name=$(basename "$dir")

# shellcheck disable=SC2086
if ! "$s2p" $opts "$dir" "$tmp/perf.data" >"$tmp/info" 2>"$tmp/s2p.err"; then
	echo "FAIL $name: snap2perf failed"
	cat "$tmp/info" "$tmp/s2p.err"
	exit 1
fi

if [ $v2 = 1 ]; then
	echo "note: header version 2 not checked by perf (Debian's perf 6.1 reads <= 1)"
elif command -v perf >/dev/null 2>&1; then
	# perf report -D exits 0 even when it rejects a record
	if ! perf report -D -i "$tmp/perf.data" >"$tmp/perf.D" 2>&1 ||
	   grep -q 'failed to process\|^Error' "$tmp/perf.D"; then
		echo "FAIL $name: perf report -D cannot read the perf.data"
		grep -v '^\.' "$tmp/perf.D" | head -5
		exit 1
	fi
	nsrc=$(grep -c '^source ' "$tmp/info")
	if ! grep -q 'PERF_RECORD_AUXTRACE_INFO type: 3' "$tmp/perf.D" ||
	   [ "$(grep -c '^[[:space:]]*Magic number' "$tmp/perf.D")" != "$nsrc" ] ||
	   ! grep -q 'PERF_RECORD_AUXTRACE size' "$tmp/perf.D"; then
		echo "FAIL $name: perf report -D does not see the cs_etm AUXTRACE_INFO with $nsrc CPUs and the AUXTRACE data"
		exit 1
	fi
else
	echo "note: perf not installed, file format not checked by perf"
fi

sp=
if [ $search = 1 ]; then
	for d in $(sed -n 's/^image-dir //p' "$tmp/info" | sort -u); do
		sp="$sp --search-path $d"
	done
fi

# Instructions and gap ips, in order.
flow() {
	"$ptd" --insn --no-sym --no-disasm "$@" 2>"$tmp/err" |
		sed -n 's/^\(0x[0-9a-f]*\).*/\1/p; s/^\[gap .*ip=\(0x[0-9a-f]*\).*/GAP \1/p'
}

# Sources whose CPU the snapshot knows (cpu_N) are compared one by one; a
# single source with an invented CPU is compared whole.
cpus=$(awk '$1 == "source" && $7 == "from-name" { print $5 }' "$tmp/info")
if [ -z "$cpus" ]; then
	if [ "$(grep -c '^source ' "$tmp/info")" != 1 ]; then
		echo "FAIL $name: several sources without a CPU number: cannot compare per source"
		exit 1
	fi
	cpus=all
fi
total=0
gaps=0
for c in $cpus; do
	f=
	[ "$c" != all ] && f="--cpu-filter $c"
	# shellcheck disable=SC2086
	flow $f "$dir" >"$tmp/snap.$c"
	# shellcheck disable=SC2086
	flow $f $sp "$tmp/perf.data" >"$tmp/perf.$c"
	if ! cmp -s "$tmp/snap.$c" "$tmp/perf.$c"; then
		echo "FAIL $name cpu $c: snapshot $(grep -c '^0x' "$tmp/snap.$c") insns/$(grep -c '^GAP' "$tmp/snap.$c") gaps, perf.data $(grep -c '^0x' "$tmp/perf.$c")/$(grep -c '^GAP' "$tmp/perf.$c"); first differences:"
		diff "$tmp/snap.$c" "$tmp/perf.$c" | head -10
		cat "$tmp/err"
		exit 1
	fi
	total=$((total + $(grep -c '^0x' "$tmp/snap.$c")))
	gaps=$((gaps + $(grep -c '^GAP' "$tmp/snap.$c")))
done
# and nothing more: the per-CPU pieces add up to the whole perf.data flow
# shellcheck disable=SC2086
all=$(flow $sp "$tmp/perf.data" | wc -l)
if [ "$all" != $((total + gaps)) ]; then
	echo "FAIL $name: the perf.data holds $all insns+gaps, its sources $((total + gaps))"
	exit 1
fi
echo "OK $name$([ $# -gt 0 ] && echo " ($*)"): $(echo "$cpus" | wc -w) source(s) compared, $total instructions and $gaps gaps identical in snapshot and perf.data"
exit 0
