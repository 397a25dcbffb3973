#!/bin/sh
# check_debugfile.sh SRC TEST_DEBUGFILE WORK [LIBDW]
# Builds SRC (debugprog.c) as a PIE with the system gcc and -g, splits it
# into a stripped binary and a separate debug file (objcopy
# --only-keep-debug, strip --strip-all), and checks that ptd_symbolize
# names its static functions (nm of the unstripped binary is the oracle)
# and ptd_source_line gives the file:line of their first and middle bytes
# (addr2line of the unstripped binary is the oracle) when the debug file is
# found by build id (WORK/dbg/.build-id/xx/rest.debug, a search-path
# directory) or by .gnu_debuglink (next to the binary, in .debug/, next to
# the file a symlink leads to), and gives neither when it is absent, of
# another build, or fails the CRC.  The unstripped binary gives its own
# lines, and so does one that keeps .symtab but whose DWARF is only in the
# debug file.  LIBDW=0 (ptdecode built without libdw) skips the lines.
set -eu
src=$1 helper=$2 work=$3 libdw=${4:-1}
for t in gcc objcopy strip nm readelf addr2line; do
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
# addr2line's lines of each function's first and middle byte, and main's.
nm --defined-only prog.full | awk '$2 ~ /^[tT]$/ && $3 == "main" {print $1, 0}' >fns
awk '{print $1, $2}' expect >>fns
while read -r a sz; do
	printf '%x\n%x\n' $((0x$a)) $((0x$a + 0x$sz / 2))
done <fns | sort -u >addrs
addr2line -e prog.full $(cat addrs) | sed 's/ (discriminator [0-9]*)$//' >a2l
paste -d ' ' addrs a2l >srcexpect
cat srcexpect
[ "$(wc -l <srcexpect)" -ge 7 ] || { echo "FAIL: want at least 7 addresses"; exit 1; }
if grep -v ' /[^ ]*/debugprog\.c:[1-9][0-9]*$' srcexpect; then
	echo "FAIL: addr2line has no line for the addresses above"; exit 1
fi
objcopy --only-keep-debug prog.full prog.debug
objcopy --only-keep-debug other.full other.debug
bid=$(readelf -n prog.full | sed -n 's/.*Build ID: *//p')
[ -n "$bid" ] || { echo "FAIL: no build id in prog.full"; exit 1; }
rest=${bid#??}
xx=${bid%"$rest"}

run2() {   # DESCRIPTION ELF names|none lines|none [SEARCHDIR]
	what=$1 elf=$2 names=$3 lines=$4
	shift 4
	echo "== $what"
	"$helper" elf pad.pt "$elf" expect "$names" "$@" || { echo "FAIL: $what"; exit 1; }
	[ "$libdw" = 0 ] && return 0
	"$helper" lines pad.pt "$elf" srcexpect "$lines" "$@" ||
		{ echo "FAIL: $what (source lines)"; exit 1; }
}
run() {   # DESCRIPTION ELF names|none [SEARCHDIR]: symbols and lines alike
	what=$1 elf=$2 want=$3
	shift 3
	run2 "$what" "$elf" "$want" "$([ "$want" = names ] && echo lines || echo none)" "$@"
}
[ "$libdw" = 0 ] && echo "NOTE: built without libdw: source lines not checked"

# The unstripped binary: its own symbols and DWARF.
run "unstripped binary" prog.full names

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
cp prog.debug dbg/.build-id/"$xx"/"$rest".debug
cp prog.full bin/prog.syms
strip --strip-debug bin/prog.syms   # .symtab kept, DWARF only in prog.debug
run "symbols kept, DWARF by build id" bin/prog.syms names "$work/dbg"
rm dbg/.build-id/"$xx"/"$rest".debug
run2 "symbols kept, no debug file" bin/prog.syms names none "$work/dbg"

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
