#!/bin/sh
# snapshot_test.sh PTCAPTURE TARGET SNAPCHECK WORKDIR [bp|uprobe]
# Flight recorder with a trigger: ptcap_trigger_target calls
# ptcap_trigger_here() 5 times; --trigger-every 3 makes the in-kernel
# program ask for a snapshot at hit 3 only.  Exactly one snapshot must
# exist, made by that trigger, holding the target's COMM and the MMAP2 of
# the marker it mapped right before hit 3 (checked with the project's
# reader and with `perf script -D`), its trigger_ip the function's address
# in the target.  With bp: (default) ptcapture takes a hardware breakpoint
# where they fire, else a uprobe; with uprobe: a uprobe.  The mechanism
# must be named on stderr and in info.  Exit 77 (skip) without root.
set -u
ptcap=$1 target=$2 check=$3 work=$4 kind=${5:-bp}
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (CAP_BPF, CAP_PERFMON) for BPF and system-wide perf events"
	exit 77
fi
pmus=/sys/bus/event_source/devices
if [ ! -d $pmus/uprobe ] && { [ "$kind" = uprobe ] || [ ! -d $pmus/breakpoint ]; }; then
	echo "SKIP: this kernel has no uprobe PMU (CONFIG_UPROBE_EVENTS)" \
		"$([ "$kind" = bp ] && echo "and no breakpoint PMU")"
	exit 77
fi
rm -rf "$work" && mkdir -p "$work" || exit 1
marker="$work/marker.bin"
"$ptcap" record --snapshot --trigger "$kind:$target:ptcap_trigger_here" --trigger-every 3 \
	--linger 100 -o "$work/fr.ptd" -- "$target" "$marker" 5 3 2> "$work/stderr"
rc=$?
cat "$work/stderr"
[ $rc = 0 ] || { echo "ptcapture failed ($rc)"; exit 1; }
n=$(ls -d "$work"/fr.ptd/snap-* 2>/dev/null | wc -l)
ls "$work/fr.ptd"
if [ "$n" != 1 ]; then
	echo "expected exactly one snapshot, found $n"
	exit 1
fi
snap="$work/fr.ptd/snap-1"
grep -E '^(snapshot|trigger)_' "$snap/info"
mech=$(sed -n 's/^trigger_mechanism=//p' "$snap/info")
case "$kind:$mech" in
bp:breakpoint|bp:uprobe|uprobe:uprobe) echo "trigger path tested: $mech" ;;
*) echo "$kind: trigger: trigger_mechanism is '$mech'"; exit 1 ;;
esac
if ! grep -q "^ptcapture: trigger: $mech at .*(ptcap_trigger_here) in process $(cat "$marker.pid")," \
	"$work/stderr"; then
	echo "stderr does not name the $mech in info"
	exit 1
fi
# the load bias is page aligned: the hit's ip and the symbol share the page offset
sym=$(nm "$target" | awk '$3 == "ptcap_trigger_here" { print $1 }')
ip=$(sed -n 's/^trigger_ip=//p' "$snap/info")
if [ -z "$sym" ] || [ $(( (ip - 0x$sym) % 4096 )) != 0 ]; then
	echo "trigger_ip $ip is not ptcap_trigger_here (0x$sym + a load bias)"
	exit 1
fi
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
