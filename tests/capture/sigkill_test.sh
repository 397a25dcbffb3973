#!/bin/sh
# sigkill_test.sh PTCAPTURE LOADGEN CHECK WORKDIR
# Streaming: ptcapture is SIGKILLed while ptcap_loadgen loads programs at a
# steady pace.  What it wrote so far must be readable: perf.data (header
# with data size 0, records to the end of the file) with the KSYMBOLs, and
# the text store's provisional rows with the right JIT bytes.
set -u
ptcap=$1 loadgen=$2 check=$3 work=$4
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (CAP_BPF and CAP_PERFMON)"
	exit 77
fi
rm -rf "$work" && mkdir -p "$work" || exit 1
"$ptcap" record -o "$work/cap.ptd" --duration 20 &
pid=$!
sleep 1
"$loadgen" 400 "$work/oracle.tsv" 400 || { kill -9 $pid; exit 1; }
sleep 0.5
kill -9 $pid
wait $pid 2>/dev/null
[ -f "$work/cap.ptd/info" ] && { echo "info exists: ptcapture was not killed in time"; exit 1; }
ls "$work/cap.ptd" "$work/cap.ptd/text" | head -5
"$check" --killed "$work/cap.ptd" "$work/oracle.tsv"
