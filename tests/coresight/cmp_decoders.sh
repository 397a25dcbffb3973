#!/bin/sh
# cmp_decoders.sh SNAP2PERF PTDECODE CSRANGES INPUT [OPTION...]
#
# The fast ETMv4 path must print exactly what OpenCSD's full decoder
# prints: `ptdecode --decoder=fast` against `--decoder=opencsd` (the
# oracle: OpenCSD decodes every unit itself there), with --insn,
# --branches, --calls, --stats and --insn --format=json, at -j1 and -j2,
# on
#   - INPUT, a snapshot directory or a perf.data,
#   - a snapshot INPUT as a perf.data whose buffer is repeated as 8
#     AUXTRACE records, clean and with every third garbled
#     (units the fast path must leave to OpenCSD).
# At -j2 the fast path runs again with PTD_CS_PIECE_TEST=1: every unit of
# more than a few hundred packets cut into pieces, each walked ahead from
# reset and joined where the states match (csfast.c), which must not
# change a byte either.  The "pieces decoded ahead" line of --stats is left
# out of the comparisons (it counts work, and differs with -j).  With
# PIECES_KEPT_MIN=N in the environment, that run must keep at least N
# pieces walked ahead (joined, not redone) on INPUT.
# It also prints how many units the fast path decoded (csranges -u), so
# that a run where it decoded none is seen.
# Exit 0 = same, 1 = different, 77 = skipped (shared traces absent).
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
s2p=$1
ptd=$2
csr=$3
in=$4
shift 4
copies=4
views_all="--insn --branches --calls --stats --insn:--format=json"
views_copies="--insn:--no-disasm --branches --stats"
need_input "$in"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

# same NAME FILE VIEWS [OPTION...]: both decoders agree on FILE in every
# view of VIEWS (words, options joined by ':')
same() {
	name=$1
	file=$2
	views=$3
	shift 3
	n=0
	for v in $views; do
		view=$(echo "$v" | tr ':' ' ')
		for j in 1 2; do
			ds="opencsd fast"
			[ $j = 2 ] && ds="$ds pieces"
			for d in $ds; do
				dec=$d
				[ $d = pieces ] && dec=fast
				# shellcheck disable=SC2086
				if [ $d = pieces ]; then
					PTD_CS_PIECE_TEST=1 "$ptd" -j$j --decoder=$dec $view "$@" "$file" >"$tmp/out.$d" 2>"$tmp/err.$d"
				else
					"$ptd" -j$j --decoder=$dec $view "$@" "$file" >"$tmp/out.$d" 2>"$tmp/err.$d"
				fi
				echo "exit $?" >>"$tmp/out.$d"
				sed -i '/^pieces decoded ahead: /d' "$tmp/out.$d"
			done
			for d in ${ds#opencsd }; do
				if ! cmp -s "$tmp/out.opencsd" "$tmp/out.$d" ||
				   ! cmp -s "$tmp/err.opencsd" "$tmp/err.$d"; then
					echo "FAIL $name $view -j$j: $d differs from opencsd:"
					diff "$tmp/out.opencsd" "$tmp/out.$d" | head -6
					diff "$tmp/err.opencsd" "$tmp/err.$d" | head -4
					fail=1
				fi
				n=$((n + 1))
			done
		done
	done
	insns=$("$ptd" -j1 --decoder=opencsd --stats "$@" "$file" 2>/dev/null | sed -n 's/^instructions: //p')
	echo "$name: $n comparisons, ${insns:-0} instructions each"
}

s=$(basename "$in")
same "$s" "$in" "$views_all" "$@"
pieces=$(PTD_CS_PIECE_TEST=1 "$ptd" -j1 --stats "$@" "$in" 2>/dev/null | sed -n 's/^pieces decoded ahead: //p')
echo "$s: pieces decoded ahead (PTD_CS_PIECE_TEST=1 -j1): ${pieces:-none}"
if [ -n "${PIECES_KEPT_MIN:-}" ]; then
	ahead=${pieces%% *}
	redone=$(echo "$pieces" | sed -n 's/.*(\([0-9]*\) redone)/\1/p')
	if [ $((${ahead:-0} - ${redone:-0})) -lt "$PIECES_KEPT_MIN" ]; then
		echo "FAIL $s: fewer than $PIECES_KEPT_MIN pieces joined (${pieces:-none})"
		fail=1
	fi
fi
if [ -d "$in" ]; then
	"$csr" -u "$in" 2>/dev/null | sed "s/^/$s: /"
	if copies_made "$s2p" "$in" "$copies" "$tmp" "$s"; then
		same "$s x$copies" "$tmp/many.data" "$views_copies"
		same "$s x$copies garbled" "$tmp/bad.data" "$views_copies"
		# one queue per CPU: merged into one timeline by perf's keys
		if "$s2p" --per-cpu "$in" "$tmp/percpu.data" >/dev/null 2>&1; then
			same "$s per-cpu" "$tmp/percpu.data" "$views_copies"
		fi
	fi
fi
[ $fail = 0 ] && echo "OK $s: --decoder=fast prints what --decoder=opencsd prints"
exit $fail
