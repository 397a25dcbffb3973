#!/bin/sh
# check_timing.sh CAPTURE PTDECODE TOL_NS
#
# Timing of a ptsynth recording (made by check_fixture.sh, with MTC/CYC
# packets) against its sideband and between two independent decoders:
#  1. every instruction time from ptdecode (libipt and fast decoders) and
#     from perf is non-decreasing within its thread and lies inside one of
#     the thread's scheduled intervals from the sideband (SWITCH IN .. OUT,
#     the last one closed by its EXIT or the last sideband record);
#  2. perf's and ptdecode-libipt's times for the same instruction (both
#     lists equal expected.insn, so line i is the same instruction) agree:
#     decoders time instructions at packet granularity and may take up a
#     timing packet one flow packet apart, so perf's time must lie within
#     TOL_NS (the MTC period) of the span from libipt's previous distinct
#     time to its next one (wrong MTC scaling or wraps land far outside);
#  3. timing is finer than the TSC packets alone: ptdecode-libipt shows
#     more distinct times than the recording has TSC packets.
# Exit 0 = consistent, 1 = not, 77 = skipped (reason printed).
set -u
[ $# -eq 3 ] || { echo "usage: $0 CAPTURE PTDECODE TOL_NS"; exit 1; }
cap=$1; ptdecode=$2; tol=$3
command -v perf >/dev/null 2>&1 || { echo "SKIP: perf not installed"; exit 77; }
[ -f "$cap/expected.insn" ] || { echo "FAIL: no recording in $cap"; exit 1; }
# perf's own HOME: the recording's vDSO, nothing from this machine
sh "$(dirname "$0")/../perf_home.sh" "$cap.timing.home" "$cap" || exit 1
export HOME="$cap.timing.home"

# times become integer ns (awk's doubles hold them exactly)
perf script -i "$cap/perf.data" --show-switch-events --show-task-events \
	--itrace= -F tid,time --ns 2>/dev/null |
	awk '/PERF_RECORD/ { t = $2; sub(":", "", t); split(t, a, ".")
		ev = "X"
		if (/SWITCH.* IN /) ev = "IN"
		if (/SWITCH.* OUT / || /PERF_RECORD_EXIT/) ev = "OUT"
		printf "%s %s %d%09d\n", $1, ev, a[1], a[2] }' >"$cap.sched"
[ -s "$cap.sched" ] || { echo "FAIL: no sideband records"; exit 1; }
# .t_DEC: "IP TID NS" per instruction; .e_DEC: every timed line, events
# (enable, disable, ...) as "- - NS"
for d in libipt fast; do
	"$ptdecode" -q --decoder=$d --insn -t --no-sym --no-disasm "$cap" |
		awk '/^0x/ { split($3, p, "/"); split($4, a, ".")
			printf "%s %s %d%09d\n", $1, p[2], a[1], a[2]; next }
		match($0, /time=[0-9]+\.[0-9]+/) {
			split(substr($0, RSTART + 5, RLENGTH - 5), a, ".")
			printf "- - %d%09d\n", a[1], a[2] }' >"$cap.e_$d"
	grep -v '^- ' "$cap.e_$d" >"$cap.t_$d"
done
perf script -i "$cap/perf.data" --itrace=i0ns -F tid,time,ip --ns 2>/dev/null |
	awk 'NF { t = $2; sub(":", "", t); split(t, a, ".")
		printf "0x%s %s %d%09d\n", $3, $1, a[1], a[2] }' >"$cap.t_perf"

rc=0
for d in libipt fast perf; do
	f="$cap.t_$d"
	if ! awk '{ print $1 }' "$f" | cmp -s - "$cap/expected.insn"; then
		echo "FAIL: $d: instruction list differs from expected.insn"; rc=1; continue
	fi
	# the sched file first (intervals per tid), then the instructions
	msg=$(awk -v D="$d" '
		NR == FNR { if (NR == 1 || $3 > last) last = $3
			if ($2 == "IN") { n[$1]++; lo[$1, n[$1]] = $3; hi[$1, n[$1]] = -1 }
			else if ($2 == "OUT" && n[$1] && hi[$1, n[$1]] < 0) hi[$1, n[$1]] = $3
			next }
		FNR == 1 { for (k in hi) if (hi[k] < 0) hi[k] = last }
		{ tid = $2; t = $3 + 0
		  if (tid in prev && t < prev[tid]) {
			printf "%s: time goes back in thread %s at insn %d (%s): %d < %d\n",
				D, tid, FNR, $1, t, prev[tid]; bad = 1; exit }
		  prev[tid] = t
		  i = cur[tid] ? cur[tid] : 1
		  while (i <= n[tid] && t > hi[tid, i]) i++
		  cur[tid] = i
		  if (i > n[tid] || t < lo[tid, i]) {
			printf "%s: insn %d (%s) of thread %s at %d ns is outside the times the sideband schedules it\n",
				D, FNR, $1, tid, t; bad = 1; exit }
		  seen[t] = 1 }
		END { if (!bad) { m = 0; for (k in seen) m++; printf "OK %d", m } }' \
		"$cap.sched" "$f")
	case "$msg" in
	OK*) echo "OK: $d: $(wc -l <"$f") instruction times monotonic per thread and inside the sideband schedule (${msg#OK } distinct)"
	     [ $d = libipt ] && distinct=${msg#OK } ;;
	*) echo "FAIL: $msg"; rc=1 ;;
	esac
done
[ $rc = 0 ] || exit 1

tscs=$(sed -n 's/^tscs=//p' "$cap/info")
if [ -z "$tscs" ] || [ "$distinct" -le "$tscs" ]; then
	echo "FAIL: ptdecode-libipt shows $distinct distinct times for ${tscs:-?} TSC packets: MTC/CYC not used"
	rc=1
else
	echo "OK: $distinct distinct times from $tscs TSC packets"
fi
# run[k]: the distinct times libipt reports (instructions and events), in
# order; instruction i is in run r[i].  perf may time it anywhere from the
# start of the run before to the start of the run after: the decoders take
# up a timing packet at different flow packets (libipt reads ahead to the
# next one, perf keeps the previous time until it has used the packet).
awk -v TOL="$tol" '
	NR == FNR { if (!k || $3 != run[k]) run[++k] = $3
		    if ($1 != "-") { n++; ip[n] = $1; lt[n] = $3; r[n] = k }
		    next }
	{ i = FNR; pt = $3
	  d = pt - lt[i]; if (d < 0) d = -d; if (d > TOL) over++; if (d > max) max = d
	  lo = run[r[i] > 1 ? r[i] - 1 : 1] - TOL
	  hi = r[i] < k ? run[r[i] + 1] + TOL : -1
	  if (pt < lo || (hi >= 0 && pt > hi)) {
		printf "FAIL: perf times insn %d (%s) at %d ns, libipt at %d, outside [%d, %d]\n",
			i, ip[i], pt, lt[i], lo, hi; bad = 1; exit 1 } }
	END { if (bad) exit 1
	      printf "OK: perf vs ptdecode-libipt: %d instructions within a run of each other; %d (%.2f%%) differ by more than %d ns, max %d ns\n",
		n, over, over * 100.0 / n, TOL, max }' "$cap.e_libipt" "$cap.t_perf" || rc=1
exit $rc
