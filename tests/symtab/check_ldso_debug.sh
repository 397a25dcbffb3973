#!/bin/sh
# check_ldso_debug.sh PTSYNTH TEST_DEBUGFILE WORK
# On this machine: a ptsynth recording of /bin/true (mostly ld.so) names ld.so's code from
# ld.so's separate debug file (/usr/lib/debug/.build-id/xx/rest.debug, from
# libc6-dbg), as perf does: do_lookup_x and the other static functions
# that ld.so's .dynsym lacks.  nm of the debug file is the oracle.
set -eu
ptsynth=$1 helper=$2 work=$3
ldso=/lib64/ld-linux-x86-64.so.2
[ -e "$ldso" ] || { echo "SKIP: $ldso not found (not x86-64 glibc)"; exit 77; }
for t in nm readelf; do
	command -v $t >/dev/null 2>&1 || { echo "SKIP: $t not installed"; exit 77; }
done
bid=$(readelf -n "$ldso" | sed -n 's/.*Build ID: *//p')
[ -n "$bid" ] || { echo "SKIP: $ldso has no build id"; exit 77; }
rest=${bid#??}
dbg=/usr/lib/debug/.build-id/${bid%"$rest"}/$rest.debug
[ -f "$dbg" ] || { echo "SKIP: $dbg absent (install libc6-dbg)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
"$ptsynth" record -o "$work/ls.ptd" -- /bin/true >"$work/ls.stdout" 2>"$work/ls.stderr" || {
	echo "FAIL: ptsynth failed:"; cat "$work/ls.stderr"; exit 1; }
nm --defined-only "$dbg" | awk '$2 ~ /^[tTwWi]$/ {print $1, $3}' >"$work/nm"
nm -D --defined-only "$ldso" | awk '{sub(/@.*/, "", $3); print $3}' >"$work/dyn"
"$helper" trace "$work/ls.ptd" "/$(basename "$(readlink -f "$ldso")")" "$work/nm" "$work/dyn"
