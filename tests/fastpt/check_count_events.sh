#!/bin/sh
# check_count_events.sh PTSYNTH COUNT_EVENTS [ptsynth options] -- CMD
# [ARGS]: records CMD with ptsynth, then count_events compares the fast
# decoder's count-only events with libipt's, times included.  Exit 77:
# ptsynth cannot trace here.
set -u
ptsynth=$1 count=$2
shift 2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/ptsynth_record.sh"
ptsynth_record "$ptsynth" "$tmp/t.ptd" "$@"
"$count" "$tmp/t.ptd"
