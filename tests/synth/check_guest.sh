#!/bin/sh
# check_guest.sh PTSYNTH PTDECODE OUTDIR MODE -- CMD [ARGS]
#
# Traces of virtual machines (guest code: PIP.NR=1), recorded by ptsynth
# from a real execution of CMD, against the ptrace ground truth
# (expected.insn) and perf's own decoder (perf script) on the same file.
#   MODE sideband  ptsynth record --guest: the program is a guest's, with
#                  guest sideband as perf inject --guest-data writes it;
#                  the host's hypervisor process maps no code, so only
#                  the guest's images can decode it.  perf script, and
#                  ptdecode's two decoders at -j1 and -j2, must list
#                  exactly expected.insn, and ptdecode --branches (both
#                  decoders) perf's branches, thread by guest thread (perf names
#                  guest samples by the guest's pid/tid, and so does
#                  ptdecode in guest code).  Then the guest sideband is
#                  damaged (an ID_INDEX naming another id; an ID_INDEX
#                  without machine fields): nothing decodes, and ptdecode
#                  counts the guest records it could not use (counted
#                  independently by guest_mutate.py) and names the problem.
#   MODE exits     the same with VM exits and entries (ptsynth --vm-exits:
#                  tracing stops at an exit, resumes with PIP and VMCS at
#                  the entry) in the middle of PSB segments (a PSB every
#                  4 KiB of trace).
#   MODE code      ptsynth record --guest-code: no guest sideband, the
#                  guest's code is the traced process's memory: without
#                  --guest-code nothing decodes (an error that says why);
#                  with it, ptdecode (both decoders, -j1 and -j2) and
#                  perf script --guest-code list exactly expected.insn.
# Exit 0 = pass, 1 = fail, 77 = skipped (reason printed).
set -u
[ $# -ge 6 ] && [ "$5" = -- ] || { echo "usage: $0 PTSYNTH PTDECODE OUTDIR MODE -- CMD [ARGS]"; exit 1; }
ptsynth=$1; ptdecode=$2; out=$3; mode=$4; shift 5
here=$(dirname "$0")
command -v perf >/dev/null 2>&1 || { echo "SKIP: perf not installed"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit 77; }

psb=256
case $mode in
sideband) opt=--guest; gc= ;;
exits) opt="--guest --vm-exits 0.002"; gc=; psb=4096; mode=sideband ;;
code) opt=--guest-code; gc=--guest-code ;;
*) echo "FAIL: unknown mode $mode"; exit 1 ;;
esac
rm -rf "$out"
"$ptsynth" record -o "$out" $opt --psb-period $psb --quantum 300 "$@" \
	>"$out.stdout" 2>"$out.stderr" || { echo "FAIL: ptsynth failed:"; cat "$out.stderr"; exit 1; }
n=$(wc -l <"$out/expected.insn")
[ "$n" -gt 0 ] || { echo "FAIL: no instructions recorded"; exit 1; }
sh "$here/../perf_home.sh" "$out.home" "$out" || exit 1
export HOME="$out.home"
rc=0

# same NAME FILE: FILE lists exactly expected.insn
same() {
	m=$(wc -l <"$2")
	if cmp -s "$2" "$out/expected.insn"; then
		echo "OK: $1 decodes $m of $n instructions exactly"
	else
		echo "FAIL: $1: $m instructions decoded, $n expected; first difference:"
		diff "$out/expected.insn" "$2" | head -n 6
		head -n 5 "$2.stderr"
		rc=1
	fi
}

perf script $gc -i "$out/perf.data" --itrace=i0ns -F ip 2>"$out.perf.stderr" |
	awk 'NF { print "0x" $1 }' >"$out.perf"
same "perf script $gc" "$out.perf"
for d in fast libipt; do
	for j in 1 2; do
		got="$out.$d.j$j"
		"$ptdecode" -q $gc -j$j --decoder=$d --insn --no-sym --no-disasm "$out" \
			2>"$got.stderr" | grep '^0x' >"$got"
		same "ptdecode $gc --decoder=$d -j$j" "$got"
	done
done

# expect_none NAME STATS_FILE WORDS: 0 instructions, an error whose text
# has WORDS
expect_none() {
	if grep -q '^instructions: 0$' "$2" && grep -q "$3" "$2"; then
		echo "OK: $1: nothing decoded, reported: $(grep -m1 -o "$3.\{0,60\}" "$2")"
	else
		echo "FAIL: $1: expected 0 instructions and \"$3\":"; head -n 12 "$2"; rc=1
	fi
}

if [ "$mode" = code ]; then
	"$ptdecode" --stats --insn --no-sym --no-disasm "$out" >"$out.nogc" 2>&1
	expect_none "ptdecode without --guest-code" "$out.nogc" \
		"no guest sideband names it as a machine"
	exit $rc
fi

# --branches (per guest thread, as perf names guest samples) against perf,
# both decoders (libipt reports each PSB+'s PIP, which is no break in the
# flow)
python3 "$here/../cli/check_branches.py" "$ptdecode" "$out" || rc=1
python3 "$here/../cli/check_branches.py" "$ptdecode" "$out" --decoder=libipt || rc=1

for damage in unknown-id plain; do
	bad="$out.$damage.data"
	k=$(python3 "$here/guest_mutate.py" "$out/perf.data" "$bad" "$damage") ||
		{ echo "FAIL: guest_mutate.py $damage"; rc=1; continue; }
	"$ptdecode" --stats --insn --no-sym --no-disasm "$bad" >"$bad.out" 2>&1
	case $damage in
	unknown-id) why="before any guest context switch says" ;;
	*) why="no guest sideband names it" ;;
	esac
	expect_none "ID_INDEX $damage" "$bad.out" "$why"
	if grep -q "warning: $k guest sideband records (guest cpumode) name no guest machine" "$bad.out"; then
		echo "OK: ID_INDEX $damage: all $k guest records counted as naming no machine"
	else
		echo "FAIL: ID_INDEX $damage: expected $k guest records reported:"
		grep warning "$bad.out"; rc=1
	fi
done
case $(grep -c "ID_INDEX has no machine_pid/vcpu" "$out.plain.data.out") in
0) echo "FAIL: the plain ID_INDEX is not named in the warning"; rc=1 ;;
esac
exit $rc
