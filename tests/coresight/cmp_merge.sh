#!/bin/sh
# cmp_merge.sh SNAP2PERF PTDECODE SNAPSHOT_DIR
#
# Per-CPU CoreSight queues as one timeline: the snapshot's formatted
# buffer split by trace ID into one queue per CPU (snap2perf --per-cpu, as
# `perf record -e cs_etm// -a` writes them), decoded by ptdecode (JSON
# Lines), must give the CPUs' instructions in the order perf script 6.1
# gives them, which cs_merge_order.py works out from OpenCSD's own
# element listing of the snapshot (trc_pkt_lister) and perf's rules.
# Debian's perf is built without OpenCSD and cannot decode cs_etm itself.
# Also: -j1 and -j2 print the same, and --per-queue keeps queue order.
# Exit 0 = same, 1 = different, 77 = skipped.
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
s2p=$1
ptd=$2
dir=$3
here=$(dirname "$0")
need_input "$dir"
need_lister
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
name=$(basename "$dir")

if ! "$s2p" --per-cpu "$dir" "$tmp/perf.data" >"$tmp/info" 2>"$tmp/s2p.err"; then
	echo "FAIL $name: snap2perf --per-cpu failed"
	cat "$tmp/info" "$tmp/s2p.err"
	exit 1
fi
trc_pkt_lister -ss_dir "$dir" -decode_only -logstdout >"$tmp/lister" 2>&1
for j in 1 2; do
	"$ptd" --insn --format=json --no-sym --no-disasm -j$j "$tmp/perf.data" \
		>"$tmp/merged.$j" 2>"$tmp/err" || {
		[ $? -eq 1 ] || { echo "FAIL $name: ptdecode failed"; cat "$tmp/err"; exit 1; }
	}
done
if ! cmp -s "$tmp/merged.1" "$tmp/merged.2"; then
	echo "FAIL $name: -j1 and -j2 differ"
	exit 1
fi
if ! python3 "$here/cs_merge_order.py" "$tmp/lister" "$tmp/info" "$tmp/merged.1"; then
	echo "FAIL $name: the merged order is not perf's"
	exit 1
fi
# --per-queue: one run per queue with instructions, in queue order
"$ptd" --insn --format=json --no-sym --no-disasm --per-queue "$tmp/perf.data" \
	2>/dev/null | sed -n 's/.*"type":"insn".*"cpu":\([0-9-]*\).*/\1/p' | uniq >"$tmp/pq"
sed -n 's/^queue [0-9]* ID [0-9a-fx]* cpu \([0-9]*\) .*/\1/p' "$tmp/info" |
	grep -Fx -f "$tmp/pq" >"$tmp/qorder"
if ! cmp -s "$tmp/pq" "$tmp/qorder"; then
	echo "FAIL $name: --per-queue does not give queue order:"
	paste "$tmp/pq" "$tmp/qorder" | head
	exit 1
fi
echo "OK $name: merged = perf 6.1's order; --per-queue = queue order ($(wc -l <"$tmp/pq") queues)"
exit 0
