#!/bin/sh
# trigger_decision_test.sh PTCAPTURE TARGET NOPIE_TARGET WORKDIR
# ptcapture's bp: trigger takes a hardware breakpoint where they fire and a
# uprobe where they do not, and says which.  The judge is perf: `perf stat
# -e mem:ADDR:x` on a non-PIE build of the target (the address known in
# advance) counts the 3 calls where hardware breakpoints fire, 0 where they
# do not.  The mechanism on ptcapture's stderr and in the snapshot's info
# must agree with it.  Exit 77 (skip) without root or perf.
set -u
ptcap=$1 target=$2 nopie=$3 work=$4
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (CAP_BPF, CAP_PERFMON) for BPF and perf events"
	exit 77
fi
if ! command -v perf >/dev/null 2>&1; then
	echo "SKIP: needs perf (linux-perf) to tell independently whether hardware breakpoints fire"
	exit 77
fi
rm -rf "$work" && mkdir -p "$work" || exit 1
addr=$(nm "$nopie" | awk '$3 == "ptcap_trigger_here" { print $1 }')
count=$(perf stat -x, -e "mem:0x$addr:x" -- "$nopie" "$work/m0" 3 2 2>&1 >/dev/null |
	awk -F, '/mem:/ { print $1 }')
case "$count" in
3) want=breakpoint ;;
0|"<not supported>"|"<not counted>") want=uprobe ;;
*) echo "perf stat -e mem:0x$addr:x counted '$count' of 3 calls"; exit 1 ;;
esac
echo "perf: a hardware breakpoint counted '$count' of 3 calls: expecting the $want"
"$ptcap" record --snapshot --trigger "bp:$target:ptcap_trigger_here" --linger 100 \
	-o "$work/fr.ptd" -- "$target" "$work/m1" 1 1 2> "$work/stderr"
rc=$?
cat "$work/stderr"
[ $rc = 0 ] || { echo "ptcapture failed ($rc)"; exit 1; }
line=$(grep '^ptcapture: trigger: ' "$work/stderr")
case "$want:$line" in
breakpoint:*": trigger: breakpoint at "*"(hardware breakpoints fire here)") ;;
uprobe:*": trigger: uprobe at "*"(hardware breakpoints do not fire here: "*) ;;
uprobe:*": trigger: uprobe at "*"(no hardware breakpoints here: "*) ;;
*) echo "stderr does not report the $want and why"; exit 1 ;;
esac
info="$work/fr.ptd/snap-1/info"
if ! grep -qx "trigger_mechanism=$want" "$info"; then
	echo "$info: $(grep trigger_mechanism "$info" || echo 'no trigger_mechanism'), expected $want"
	exit 1
fi
echo "reported: $want (stderr and info)"
exit 0
