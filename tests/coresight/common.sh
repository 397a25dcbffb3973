# common.sh - sourced by the CoreSight comparison scripts.

# need_input PATH: skips the test (exit 77) when the shared trace PATH is
# absent.
need_input() {
	[ -e "$1" ] && return 0
	echo "SKIP: $1 absent (shared traces not beside the checkout)"
	exit 77
}

# need_lister: skips the test when OpenCSD's trc_pkt_lister is missing.
need_lister() {
	command -v trc_pkt_lister >/dev/null 2>&1 && return 0
	echo "SKIP: trc_pkt_lister (libopencsd-bin) not installed"
	exit 77
}

# copies_made SNAP2PERF SNAPSHOT COPIES DIR NAME: writes DIR/one.data (the
# snapshot as a perf.data), DIR/many.data (its buffer as COPIES AUXTRACE
# records) and DIR/bad.data (the same with every third copy garbled).
# Returns 0 when they are there; otherwise says why (the snapshot has no
# instruction trace for a perf.data, or snap2perf failed: then also
# fail=1) and returns 1.
copies_made() {
	"$1" "$2" "$4/one.data" >/dev/null 2>&1
	cm_rc=$?
	if [ $cm_rc = 3 ]; then
		echo "note: $5 has no instruction trace for a perf.data"
		return 1
	fi
	if [ $cm_rc != 0 ] ||
	   ! "$1" --repeat "$3" "$2" "$4/many.data" >/dev/null 2>&1 ||
	   ! "$1" --repeat "$3" --garble 3 "$2" "$4/bad.data" >/dev/null 2>&1; then
		echo "FAIL $5: snap2perf failed"
		fail=1
		return 1
	fi
	return 0
}
