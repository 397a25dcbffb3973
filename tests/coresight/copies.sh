# copies.sh - sourced by the CoreSight comparison scripts.
#
# make_copies SNAP2PERF SNAPSHOT COPIES DIR: writes DIR/one.data (the
# snapshot as a perf.data), DIR/many.data (its buffer as COPIES AUXTRACE
# records) and DIR/bad.data (the same with every third copy garbled).
# Returns 0, 3 when the snapshot has no instruction trace for a perf.data
# (nothing written), or 1 when snap2perf failed.
make_copies() {
	"$1" "$2" "$4/one.data" >/dev/null 2>&1
	mc_rc=$?
	[ $mc_rc = 3 ] && return 3
	if [ $mc_rc != 0 ] ||
	   ! "$1" --repeat "$3" "$2" "$4/many.data" >/dev/null 2>&1 ||
	   ! "$1" --repeat "$3" --garble 3 "$2" "$4/bad.data" >/dev/null 2>&1; then
		return 1
	fi
	return 0
}
