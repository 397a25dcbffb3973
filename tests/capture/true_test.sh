#!/bin/sh
# true_test.sh PTCAPTURE: `ptcapture record -- /bin/true` writes a perf.data
# whose sideband shows true's COMM and the MMAP2 of its executable, and
# that perf script -D and perf report accept.  Skips (77) without root.
set -u
ptcap=$1
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (system-wide sideband)"; exit 77; }
command -v perf >/dev/null || { echo "SKIP: perf not installed"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$ptcap" record -o "$work/t.ptd" -- /bin/true >"$work/out" 2>&1 || {
	echo "FAIL: ptcapture record failed:"; cat "$work/out"; exit 1; }
# perf's own HOME: the capture's vDSO, nothing from this machine
sh "$(dirname "$0")/../perf_home.sh" "$work/home" "$work/t.ptd" || exit 1
export HOME="$work/home"
perf script -D -i "$work/t.ptd/perf.data" >"$work/dump" 2>"$work/dump.err" || {
	echo "FAIL: perf script -D rejects the file:"; head -5 "$work/dump.err"; exit 1; }
perf report -i "$work/t.ptd/perf.data" --stats >"$work/report" 2>&1 || {
	echo "FAIL: perf report rejects the file:"; head -5 "$work/report"; exit 1; }
exe=$(readlink -f /bin/true)
grep -E "PERF_RECORD_COMM( exec)?: true:" "$work/dump" | head -1 >"$work/comm"
grep -E "PERF_RECORD_MMAP2 .*r-xp $exe\$" "$work/dump" | head -1 >"$work/mmap"
[ -s "$work/comm" ] || { echo "FAIL: no COMM of true"; exit 1; }
[ -s "$work/mmap" ] || { echo "FAIL: no MMAP2 of $exe"; exit 1; }
echo "OK: $(cat "$work/comm")"
echo "OK: $(cat "$work/mmap")"
echo "OK: perf script -D and perf report accept $(grep -c PERF_RECORD "$work/dump") records"
