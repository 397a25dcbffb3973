#!/bin/sh
# live_walk.sh BUILD_DIR PTDECODE WORKDIR
# The whole pipeline on this machine: ptcapture records walk_loader (fresh
# JIT addresses, reuse, a re-patched tail call), ptsynth walk generates the
# trace, and both decoders must reproduce the walk exactly.  Skips (77)
# without root or BPF.
set -u
build=$1 ptdecode=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root to load BPF programs and record sideband"
	exit 77
fi
[ -x "$build/fixtures/bpf/walk_loader" ] || { echo "SKIP: walk_loader not built (libbpf, clang)"; exit 77; }
rm -rf "$work" && mkdir -p "$work" || exit 1
"$here/../../fixtures/bpf/regen.sh" "$build" "$work/walk.ptd" >"$work/regen.log" 2>&1 || {
	tail -5 "$work/regen.log"
	if grep -q "Operation not permitted\|EPERM" "$work/regen.log"; then
		echo "SKIP: BPF refused"; exit 77
	fi
	echo "FAIL: regen.sh"; exit 1
}
tail -1 "$work/regen.log"
for d in libipt fast; do
	python3 "$here/check_walk.py" exact "$ptdecode" "$work/walk.ptd" $d || exit 1
done
