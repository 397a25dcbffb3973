#!/bin/sh
# bench/capture/bench.sh BUILD_DIR [SECONDS]
# Capture overhead and fence cost of ptcapture (not part of ctest; root).
#  1. fence cost: unpaced ptcap_loadgen (load + get info + close per
#     program) with and without ptcapture recording: programs/s.
#  2. sustained rate: paced ptcap_loadgen at rising rates for SECONDS each
#     (default 3) under ptcapture; a rate passes when ptcap_check finds every
#     JIT image in the text store with the right bytes (0 text lost);
#     reports the highest passing rate and ptcapture's CPU use (user+sys
#     over wall time, from /proc/PID/stat at its exit via /usr/bin/time).
set -u
b=${1:?usage: bench.sh BUILD_DIR [SECONDS]}
secs=${2:-3}
w=$(mktemp -d /tmp/ptcap-bench.XXXXXX)
ptcap=$b/ptcapture gen=$b/tests/capture/ptcap_loadgen check=$b/tests/capture/ptcap_check
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 1; }
now() { date +%s.%N; }

echo "machine: $(uname -r) $(uname -m), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
n=3000
t0=$(now); "$gen" $n "$w/o0.tsv" >/dev/null || exit 1; t1=$(now)
base=$(echo "$n / ($t1 - $t0)" | bc -l)
"$ptcap" record -o "$w/c0.ptd" --linger 300 -- sh -c "t0=\$(date +%s.%N); $gen $n $w/o1.tsv; t1=\$(date +%s.%N); echo \"\$t0 \$t1\" > $w/t1" 2>/dev/null
read a z < "$w/t1"
with=$(echo "$n / ($z - $a)" | bc -l)
printf "fence cost: unpaced load+close %.0f progs/s without ptcapture, %.0f with (%.1f%% slower)\n" \
	"$base" "$with" "$(echo "100 * (1 - $with / $base)" | bc -l)"
"$check" "$w/c0.ptd" "$w/o1.tsv" | sed 's/^/  unpaced run: /'

best=0
for rate in 250 500 1000 2000 4000 8000 16000; do
	n=$((rate * secs))
	rm -rf "$w/c.ptd"
	/usr/bin/time -f "%U %S %e" -o "$w/time" \
		"$ptcap" record -o "$w/c.ptd" --linger 300 -- "$gen" $n "$w/o.tsv" $rate 2>"$w/err" >/dev/null
	read u s e < "$w/time"
	out=$("$check" "$w/c.ptd" "$w/o.tsv"); ok=$?
	missed=$(echo "$out" | sed -n 's/.*no fence copy \([0-9]*\).*/\1/p')
	drops=$(sed -n 's/^fence_drops=//p' "$w/c.ptd/info")
	lost=$(sed -n 's/^lost_events=//p' "$w/c.ptd/info")
	printf "rate %5d/s x %ss: %s (images without fence copy %s, fence drops %s, sideband lost %s); ptcapture cpu %.2fs user + %.2fs sys over %.2fs = %.1f%% of one CPU\n" \
		$rate $secs "$([ $ok = 0 ] && echo PASS || echo FAIL)" "$missed" "$drops" "$lost" "$u" "$s" "$e" \
		"$(echo "100 * ($u + $s) / $e" | bc -l)"
	[ $ok = 0 ] && best=$rate || break
done
echo "max sustained rate with 0 text lost: $best programs/s (loaded and unloaded)"
rm -rf "$w"
