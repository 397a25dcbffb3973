#!/bin/sh
# snapshot_test.sh PTCAPTURE TARGET SNAPCHECK WORKDIR
# Flight recorder with a breakpoint trigger: ptcap_trigger_target calls
# ptcap_trigger_here() 5 times; --trigger-every 3 makes the in-kernel
# program ask for a snapshot at hit 3 only.  Exactly one snapshot must
# exist, made by that trigger, holding the target's COMM and the MMAP2 of
# the marker it mapped right before hit 3 (checked with the project's
# reader and with `perf script -D`).  Exit 77 (skip) without root.
set -u
ptcap=$1 target=$2 check=$3 work=$4
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (CAP_BPF, CAP_PERFMON) for BPF and system-wide perf events"
	exit 77
fi
if [ ! -d /sys/bus/event_source/devices/breakpoint ]; then
	echo "SKIP: no breakpoint PMU"
	exit 77
fi
rm -rf "$work" && mkdir -p "$work" || exit 1
marker="$work/marker.bin"
"$ptcap" record --snapshot --trigger "bp:$target:ptcap_trigger_here" --trigger-every 3 \
	--linger 100 -o "$work/fr.ptd" -- "$target" "$marker" 5 3
rc=$?
[ $rc = 0 ] || { echo "ptcapture failed ($rc)"; exit 1; }
n=$(ls -d "$work"/fr.ptd/snap-* 2>/dev/null | wc -l)
ls "$work/fr.ptd"
if [ "$n" != 1 ]; then
	echo "expected exactly one snapshot, found $n"
	exit 1
fi
snap="$work/fr.ptd/snap-1"
grep -E '^(snapshot|trigger)_' "$snap/info"
"$check" "$snap" "$(cat "$marker.pid")" "$marker" || exit 1
if command -v perf >/dev/null 2>&1; then
	# the independent reader: perf's own parse of the snapshot, with
	# its own HOME (nothing from this machine)
	sh "$(dirname "$0")/../perf_home.sh" "$work/home" "$snap" || exit 1
	export HOME="$work/home"
	if ! perf script -D -i "$snap/perf.data" 2>/dev/null > "$work/perf-D.txt"; then
		echo "perf script -D failed on the snapshot"
		exit 1
	fi
	pid=$(cat "$marker.pid")
	if ! grep "PERF_RECORD_MMAP2 $pid/" "$work/perf-D.txt" | grep -q "$marker"; then
		echo "perf script -D: no MMAP2 of $marker by $pid"
		exit 1
	fi
	echo "perf script -D: MMAP2 of the marker found"
else
	echo "(perf not installed: perf script check skipped)"
fi
exit 0
