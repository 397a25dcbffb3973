#!/bin/sh
# check_jit.sh PTDECODE CAPTURE WORKDIR
#
# A ptsynth capture of minijit (a JIT that re-JITs jf_step in place between
# two runs of jf_loop) decodes through the JIT code exactly:
#  1. ptdecode --insn (fast and libipt decoders) lists exactly the ground
#     truth (expected.insn[.xz], recorded by ptrace single-step);
#  2. the JIT instructions (addresses in the capture's jit/perf-PID.map)
#     form two runs, before and after the re-JIT, and ptdecode names them by
#     their jitdump names at their time: jf_loop and jf_step[v1] in the
#     first, jf_loop and jf_step[v2] in the second;
#  3. the JIT code comes from the jitdump only: no text store row covers
#     it, and without jit/ ptdecode does not reproduce the ground truth and
#     reports gaps or errors in the JIT range (nothing stands in silently).
# Exit 0 = all good, 1 = failure.
set -u
ptdecode=$1 cap=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
rc=0
fail() { echo "FAIL: $*"; rc=1; }

if [ -f "$cap/expected.insn.xz" ]; then
	xz -dc "$cap/expected.insn.xz" >"$work/expected"
else
	cp "$cap/expected.insn" "$work/expected"
fi
map=$(ls "$cap"/jit/perf-*.map 2>/dev/null | head -n 1)
[ -n "$map" ] && ls "$cap"/jit/jit-*.dump >/dev/null 2>&1 ||
	{ echo "FAIL: $cap/jit/ lacks jit-PID.dump or perf-PID.map"; exit 1; }

# hex without 0x -> number (mawk has no strtonum; addresses < 2^53)
AWKHEX='function hex(s,  i, c, v) { sub(/^0x/, "", s); v = 0
	for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", tolower(substr(s, i, 1)))
		if (!c) return -1; v = v * 16 + c - 1 } return v }'
# the JIT area: the perf map's ranges, as "lo hi" pairs
ranges=$(awk "$AWKHEX"' { lo = hex($1); printf "%.0f %.0f ", lo, lo + hex($2) }' "$map")
INJIT="$AWKHEX"' function injit(a,  i, n, r) { n = split(ranges, r, " ")
	for (i = 1; i < n; i += 2) if (a >= r[i] + 0 && a < r[i + 1] + 0) return 1; return 0 }'

# 1. exact decode, both decoders
for d in fast libipt; do
	"$ptdecode" -q --decoder=$d --insn --no-sym --no-disasm --stats "$cap" \
		>"$work/$d.out" 2>"$work/$d.err"
	grep '^0x' "$work/$d.out" >"$work/$d.got"
	errors=$(sed -n 's/^errors: //p' "$work/$d.out")
	gaps=$(sed -n 's/^gaps: //p' "$work/$d.out")
	if cmp -s "$work/$d.got" "$work/expected" && [ "$errors" = 0 ] && [ "$gaps" = 0 ]; then
		echo "OK: --decoder=$d: $(wc -l <"$work/$d.got") instructions, ground truth exactly"
	else
		fail "--decoder=$d: $(wc -l <"$work/$d.got") of $(wc -l <"$work/expected")" \
			"instructions, errors $errors, gaps $gaps"
		diff "$work/expected" "$work/$d.got" | head -n 5; head -n 3 "$work/$d.err"
	fi
done

# 2. JIT instructions before/after the re-JIT, and their names
"$ptdecode" -q --insn --no-disasm "$cap" 2>/dev/null | grep '^0x' >"$work/named"
if [ "$(wc -l <"$work/named")" != "$(wc -l <"$work/expected")" ]; then
	fail "ptdecode --insn with symbols lists $(wc -l <"$work/named") instructions"
else
	awk -v ranges="$ranges" "$INJIT"'
	{ a = hex($1); j = injit(a)
	  if (j && !prev) runs++
	  prev = j
	  if (!j) next
	  sym = $2; sub(/\+0x[0-9a-f]+$/, "", sym)
	  n[runs]++; c[runs, sym]++; seen[runs] = seen[runs] " " sym }
	END {
	  bad = 0
	  if (runs != 2) { print "FAIL: JIT code ran in " runs + 0 " stretches, want 2"; exit 1 }
	  want[1] = "jf_step[v1]"; other[1] = "jf_step[v2]"
	  want[2] = "jf_step[v2]"; other[2] = "jf_step[v1]"
	  for (r = 1; r <= 2; r++) {
	    printf "JIT instructions %s the re-JIT: %d (jf_loop %d, %s %d)\n",
	      r == 1 ? "before" : "after", n[r], c[r, "jf_loop"], want[r], c[r, want[r]]
	    if (!c[r, "jf_loop"] || !c[r, want[r]] || c[r, other[r]] ||
	        c[r, "jf_loop"] + c[r, want[r]] != n[r]) {
	      print "FAIL: run " r " has names" seen[r]; bad = 1 }
	  }
	  exit bad }' "$work/named" || rc=1
fi

# 3. the JIT code comes from jit/ only
awk -v ranges="$ranges" "$INJIT"' !/^#/ { lo = hex($2); hi = lo + $3
	  if (injit(lo) || injit(hi - 1)) { print "FAIL: text store row covers JIT code: " $0; bad = 1 } }
	END { exit bad }' "$cap/text/index.tsv" || rc=1
cp -r "$cap" "$work/nojit.ptd"
rm -rf "$work/nojit.ptd/jit"
for d in fast libipt; do
	"$ptdecode" --decoder=$d --insn --no-sym --no-disasm --stats "$work/nojit.ptd" \
		>"$work/nojit.$d.out" 2>"$work/nojit.$d.err"
	grep '^0x' "$work/nojit.$d.out" >"$work/nojit.$d.got"
	problems=$(sed -n 's/^\(errors\|gaps\): //p' "$work/nojit.$d.out" | awk '{ s += $1 } END { print s + 0 }')
	# a gap/error line naming an address in the JIT area
	named=$(grep -E '^\[(gap|error)' "$work/nojit.$d.out" | awk -v ranges="$ranges" "$INJIT"'
		{ for (i = 1; i <= NF; i++) { s = $i; while (match(s, /0x[0-9a-fA-F]+/)) {
			if (injit(hex(substr(s, RSTART, RLENGTH)))) { print; next }
			s = substr(s, RSTART + RLENGTH) } } }' | head -n 1)
	if cmp -s "$work/nojit.$d.got" "$work/expected"; then
		fail "--decoder=$d without jit/ still lists the ground truth: the JIT code came from elsewhere"
	elif [ "$problems" -gt 0 ] && [ -n "$named" ]; then
		echo "OK: --decoder=$d without jit/: $(wc -l <"$work/nojit.$d.got") instructions," \
			"$problems gaps+errors, e.g. $(echo "$named" | cut -c1-100)"
	else
		fail "--decoder=$d without jit/ decodes differently without reporting a gap or error in the JIT code"
	fi
done
exit $rc
