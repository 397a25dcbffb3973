#!/bin/sh
# cmp_ranges.sh CSRANGES SNAPSHOT_DIR [EXPECT_ID EXPECT_RANGES]
#
# Compares the instruction ranges and inaccessible addresses that ptdecode's
# CoreSight backend finds in a snapshot with those of OpenCSD's own
# trc_pkt_lister (the oracle), per trace ID and in order.  trc_pkt_lister
# decodes one trace buffer per run, so it runs once per buffer of trace.ini.
# With EXPECT_ID/EXPECT_RANGES, also checks the count of ranges for that ID
# and that it has no inaccessible addresses.
# Exit 0 = same, 1 = different, 77 = skipped.
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
tool=$1
dir=$2
want_id=${3:-}
want_n=${4:-}

need_input "$dir"
need_lister
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
name=$(basename "$dir")

# Oracle.
: >"$tmp/oracle"
for buf in $(sed -n 's/^[ \t]*name[ \t]*=[ \t]*\([^ \t\r;#]*\).*/\1/p' "$dir/trace.ini"); do
	trc_pkt_lister -ss_dir "$dir" -src_name "$buf" -decode_only -logstdout \
		>"$tmp/lister.$buf" 2>&1
	awk '
	/OCSD_GEN_TRC_ELEM_INSTR_RANGE/ {
		id = $2; sub(/^ID:/, "", id); sub(/;$/, "", id)
		match($0, /range=0x[0-9a-f]+:\[0x[0-9a-f]+\]/)
		r = substr($0, RSTART + 6, RLENGTH - 6)
		split(r, p, ":"); en = p[2]; gsub(/[\[\]]/, "", en)
		match($0, /num_i\([0-9]+\)/)
		n = substr($0, RSTART + 6, RLENGTH - 7)
		printf "ID:%s R %s %s %s\n", id, p[1], en, n
	}
	/OCSD_GEN_TRC_ELEM_ADDR_NACC/ {
		id = $2; sub(/^ID:/, "", id); sub(/;$/, "", id)
		match($0, /NACC\( *0x[0-9a-f]+/)
		a = substr($0, RSTART, RLENGTH); sub(/NACC\( */, "", a)
		printf "ID:%s NACC %s\n", id, a
	}' "$tmp/lister.$buf" >>"$tmp/oracle"
done
# trc_pkt_lister interleaves trace IDs in buffer order; we decode ID by ID.
sort -s -t' ' -k1,1 "$tmp/oracle" >"$tmp/oracle.sorted"

"$tool" "$dir" >"$tmp/ours" 2>"$tmp/ours.err"
rc=$?
if [ $rc -eq 3 ]; then
	# Software-trace-only snapshot: the oracle must have no flow either.
	if [ -s "$tmp/oracle.sorted" ]; then
		echo "FAIL $name: reported as STM/ITM only, but trc_pkt_lister finds ranges"
		exit 1
	fi
	echo "OK $name: $(cat "$tmp/ours")"
	exit 0
fi
if [ $rc -ne 0 ]; then
	echo "FAIL $name: csranges exited with $rc"
	cat "$tmp/ours.err"
	exit 1
fi
sort -s -t' ' -k1,1 "$tmp/ours" >"$tmp/ours.sorted"
o_r=$(grep -c ' R ' "$tmp/oracle.sorted")
o_n=$(grep -c ' NACC ' "$tmp/oracle.sorted")
u_r=$(grep -c ' R ' "$tmp/ours.sorted")
u_n=$(grep -c ' NACC ' "$tmp/ours.sorted")
if ! cmp -s "$tmp/oracle.sorted" "$tmp/ours.sorted"; then
	echo "FAIL $name: trc_pkt_lister $o_r ranges/$o_n nacc, ours $u_r/$u_n; first differences:"
	diff "$tmp/oracle.sorted" "$tmp/ours.sorted" | head -10
	exit 1
fi
if [ -n "$want_id" ]; then
	n=$(grep -c "^ID:$want_id R " "$tmp/ours.sorted")
	nn=$(grep -c "^ID:$want_id NACC " "$tmp/ours.sorted")
	if [ "$n" != "$want_n" ] || [ "$nn" != 0 ]; then
		echo "FAIL $name: ID $want_id has $n ranges and $nn NACC, expected $want_n and 0"
		exit 1
	fi
fi
echo "OK $name: $o_r instruction ranges, $o_n inaccessible addresses, same as trc_pkt_lister ($(sed 's/^warning: //' "$tmp/ours.err" | wc -l) warnings)"
exit 0
