#!/bin/sh
# check_debugfile.sh SRC TEST_DEBUGFILE WORK
# Builds SRC (debugprog.c) as a PIE with the system gcc, splits it into a
# stripped binary and a separate debug file (objcopy --only-keep-debug,
# strip --strip-all), and checks that ptd_symbolize names its static
# functions (nm of the unstripped binary is the oracle) when the debug file
# is found by build id (WORK/dbg/.build-id/xx/rest.debug, a search-path
# directory) or by .gnu_debuglink (next to the binary, in .debug/, next to
# the file a symlink leads to), and names nothing when it is absent, of
# another build, or fails the CRC.
set -eu
src=$1 helper=$2 work=$3
for t in gcc objcopy strip nm readelf; do
	command -v $t >/dev/null 2>&1 || { echo "SKIP: $t not installed"; exit 77; }
done
rm -rf "$work"
mkdir -p "$work"
cd "$work"
head -c 16 /dev/zero >pad.pt   # a trace is needed to open a session
cc="gcc -O0 -g -fPIE -pie -Wl,--build-id"
$cc -o prog.full "$src"
$cc -DOTHER -o other.full "$src"
nm -S --defined-only prog.full | awk '$3 ~ /^[tT]$/ && $4 ~ /^dbg_fn_/ {print $1, $2, $4}' >expect
cat expect
[ "$(wc -l <expect)" -eq 3 ] || { echo "FAIL: nm found $(wc -l <expect) dbg_fn_* functions, want 3"; exit 1; }
objcopy --only-keep-debug prog.full prog.debug
objcopy --only-keep-debug other.full other.debug
bid=$(readelf -n prog.full | sed -n 's/.*Build ID: *//p')
[ -n "$bid" ] || { echo "FAIL: no build id in prog.full"; exit 1; }
rest=${bid#??}
xx=${bid%"$rest"}

run() {   # DESCRIPTION ELF names|none [SEARCHDIR]
	what=$1 elf=$2 want=$3
	shift 3
	echo "== $what"
	"$helper" elf pad.pt "$elf" expect "$want" "$@" || { echo "FAIL: $what"; exit 1; }
}

# By build id.
mkdir -p bin dbg/.build-id/"$xx"
cp prog.full bin/prog
strip --strip-all bin/prog
run "stripped, no debug file" bin/prog none
run "stripped, no debug file, search path" bin/prog none "$work/dbg"
cp prog.debug dbg/.build-id/"$xx"/"$rest".debug
run "debug file by build id" bin/prog names "$work/dbg"
cp other.debug dbg/.build-id/"$xx"/"$rest".debug
run "debug file of another build under the build id" bin/prog none "$work/dbg"

# By .gnu_debuglink (objcopy computes the CRC from the file it names).
mkdir -p link
cp prog.full link/prog
strip --strip-all link/prog
cp prog.debug link/prog.debug
objcopy --add-gnu-debuglink=link/prog.debug link/prog
run "debuglink next to the binary" link/prog names
mkdir -p link/.debug
mv link/prog.debug link/.debug/prog.debug
run "debuglink in .debug/" link/prog names
mkdir -p alias
ln -s ../link/prog alias/prog
run "debuglink, binary named through a symlink" alias/prog names
cp link/prog dbg/.build-id/"$xx"/"$rest"   # like perf's build-id cache
run "build id finds only a copy of the binary, debuglink still used" link/prog names "$work/dbg"
printf x >>link/.debug/prog.debug
run "debuglink, wrong CRC" link/prog none
rm link/.debug/prog.debug
run "debuglink, debug file missing" link/prog none
echo PASS
