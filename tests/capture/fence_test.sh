#!/bin/sh
# fence_test.sh PTCAPTURE LOADGEN CHECK WORKDIR N PAGES [--lossy]
# Records ptcap_loadgen loading N short-lived BPF programs with ptcapture
# (sideband rings of PAGES pages), then checks the capture against the
# loader's own oracle.  Exit 77 (skip) without root or BPF.
# --lossy: the loader stops ptcapture (SIGSTOP) for a sixth of its
# programs, so the rings overflow whatever the timing: records must be
# LOST (and reported), every missing KSYMBOL covered by a reported loss of
# its CPU's ring (the loader is pinned: --pin).
set -u
ptcap=$1 loadgen=$2 check=$3 work=$4 n=$5 pages=$6
lossy=${7:-}
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (CAP_BPF and CAP_PERFMON) to load BPF and open system-wide perf events"
	exit 77
fi
if [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "SKIP: no kernel BTF (/sys/kernel/btf/vmlinux)"
	exit 77
fi
rm -rf "$work" && mkdir -p "$work" || exit 1
"$loadgen" 1 "$work/probe.tsv"
rc=$?
if [ $rc = 77 ]; then
	echo "SKIP: BPF program loading not permitted here"
	exit 77
fi
[ $rc = 0 ] || exit 1
stall= rate=
# Paced (3000 programs/s) so that the recorder gets CPU time between loads
# even on a busy machine; the stall makes the losses, not starvation.
[ -n "$lossy" ] && stall="--pin --stall-parent $((n / 2)):$n" rate=3000
# A lossy run must also have exercised the paths it is about (a record split
# at the ring end, a LOST record) and kept something to check (ptcap_check
# exit 3: on a busy machine the tiny rings can lose every KSYMBOL): both
# are chance, so a run that missed them is repeated (up to 3 runs, 6 when
# nothing was left to check), each checked.  The recorder runs at a higher priority there (root is needed
# anyway), so that the losses come from the stall, not from starvation.
attempt=1
while :; do
	# shellcheck disable=SC2086
	${lossy:+nice -n -10} "$ptcap" record -m "$pages" -o "$work/cap.ptd" -- \
		"$loadgen" $stall "$n" "$work/oracle.tsv" $rate || exit 1
	cat "$work/cap.ptd/info"
	"$check" $lossy "$work/cap.ptd" "$work/oracle.tsv"
	rc=$?
	if [ $rc = 3 ] && [ $attempt -lt 6 ]; then
		echo "run $attempt: every KSYMBOL lost (all reported): nothing to check, again"
		attempt=$((attempt + 1))
		rm -rf "$work/cap.ptd"
		continue
	fi
	[ $rc = 0 ] || exit $rc
	[ -n "$lossy" ] || break
	if ! grep -q '^lost_events=[1-9]' "$work/cap.ptd/info"; then
		echo "no LOST record although the reader was stopped: losses not reported"
		exit 1
	fi
	grep -q '^sideband_records_split=[1-9]' "$work/cap.ptd/info" && break
	echo "run $attempt: no record was split at a ring end: the wrap-around path was not exercised"
	[ $attempt -lt 3 ] || exit 1
	attempt=$((attempt + 1))
	rm -rf "$work/cap.ptd"
done
if grep -q '^sideband_corrupt_bytes=[1-9]' "$work/cap.ptd/info"; then
	echo "a sideband ring held a corrupt record"
	exit 1
fi
exit $rc
