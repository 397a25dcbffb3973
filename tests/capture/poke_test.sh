#!/bin/sh
# poke_test.sh PTCAPTURE POKELOAD PTSYNTH PTDECODE WORKDIR [PTCAPTURE OPTIONS]
# ptcapture records ptcap_pokeload changing a prog array three times (each
# change re-patches the caller's JIT image in place; no TEXT_POKE here);
# poke_check.py checks the text store against the loader's own reads, then
# decodes a walk through the caller with ptcapture's text store.  Exit 77
# (skip) without root or BPF.
set -u
ptcap=$1 load=$2 synth=$3 ptdecode=$4 work=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (CAP_BPF and CAP_PERFMON) to load BPF and open system-wide perf events"
	exit 77
fi
command -v python3 >/dev/null || { echo "SKIP: needs python3"; exit 77; }
rm -rf "$work" && mkdir -p "$work" || exit 1
"$ptcap" record --poke-interval 10 "$@" -o "$work/cap.ptd" -- "$load" "$work/loader"
rc=$?
if [ $rc = 77 ]; then
	echo "SKIP: BPF program loading not permitted here"
	exit 77
fi
[ $rc = 0 ] || { echo "FAIL: ptcapture/loader exit $rc"; exit 1; }
grep '^jit_' "$work/cap.ptd/info"
exec python3 "$here/poke_check.py" "$work/cap.ptd" "$work/loader" "$synth" "$ptdecode" "$work"
