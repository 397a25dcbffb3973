#!/bin/sh
# cmp_jobs.sh SNAP2PERF PTDECODE INPUT [COPIES]
#
# Parallel CoreSight decoding must not change a byte of the output:
# `ptdecode --insn` and `ptdecode --stats` at -j2 and -j4 must print
# exactly what -j1 prints (and exit the same way) for
#   - INPUT, a snapshot directory (one unit per queue) or a perf.data,
#   - a snapshot INPUT as a perf.data whose buffer is repeated as COPIES
#     (default 24) AUXTRACE records: many chunks, decoded on a pool; the
#     decoder resets between records, so the copies decode alike and
#     hold COPIES times the instructions of one;
#   - the same with every third copy garbled: decode errors (OpenCSD's
#     texts, the guard's, a fatal one ending a queue) in some chunks.
# --insn is also decoded with PTD_CS_PIECE_TEST=1 at -j1 and -j2 (fast-path
# units cut into pieces of a few hundred packets, each walked ahead from
# reset and joined where the states match, csfast.c): again the same as
# -j1.  The "pieces decoded ahead" line of --stats counts work (it differs
# with -j) and is left out of the comparisons.
# The copies are compared with --no-disasm (every event, address and
# symbol, not capstone's text of each instruction, which is a function of
# the address and takes three quarters of the time).
# Exit 0 = same, 1 = different, 77 = skipped (shared traces absent).
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
s2p=$1
ptd=$2
in=$3
copies=${4:-24}
need_input "$in"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0

# same NAME FILE [OPTION]: -j1, -j2, -j4 agree on FILE
same() {
	for view in --insn --stats; do
		js="1 2 4"
		[ $view = --insn ] && js="$js p1 p2"
		for j in $js; do
			case $j in
			p*) # shellcheck disable=SC2086
			    PTD_CS_PIECE_TEST=1 "$ptd" -j${j#p} $view ${3:-} "$2" >"$tmp/out.$j" 2>"$tmp/err.$j";;
			*) # shellcheck disable=SC2086
			   "$ptd" -j$j $view ${3:-} "$2" >"$tmp/out.$j" 2>"$tmp/err.$j";;
			esac
			echo "exit $?" >>"$tmp/out.$j"
			sed -i '/^pieces decoded ahead: /d' "$tmp/out.$j"
		done
		for j in ${js#1 }; do
			if ! cmp -s "$tmp/out.1" "$tmp/out.$j" ||
			   ! cmp -s "$tmp/err.1" "$tmp/err.$j"; then
				echo "FAIL $1 $view: -j$j differs from -j1:"
				diff "$tmp/out.1" "$tmp/out.$j" | head -6
				diff "$tmp/err.1" "$tmp/err.$j" | head -4
				fail=1
			fi
		done
	done
	n=$((n + 1))
}

insns() {
	"$ptd" -j1 --stats "$1" 2>/dev/null | sed -n 's/^instructions: //p'
}

s=$(basename "$in")
same "$s" "$in"
if [ -d "$in" ]; then
	if copies_made "$s2p" "$in" "$copies" "$tmp" "$s"; then
		same "$s x$copies" "$tmp/many.data" --no-disasm
		same "$s x$copies garbled" "$tmp/bad.data" --no-disasm
		one=$(insns "$tmp/one.data")
		many=$(insns "$tmp/many.data")
		if [ "$many" != $((copies * ${one:-0})) ]; then
			echo "FAIL $s: $copies copies decode to $many instructions, one to $one"
			fail=1
		fi
	fi
fi
[ $fail = 0 ] && echo "OK $s: $n inputs, -j1, -j2, -j4 identical (--insn and --stats), pieces at -j1, -j2 too (--insn)"
exit $fail
