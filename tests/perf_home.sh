#!/bin/sh
# perf_home.sh HOMEDIR [CAPDIR] [-- CMD [ARGS]]
#
# (Re)creates HOMEDIR as a private HOME for perf, so that tests never see
# this machine's ~/.perfconfig or build-id cache (~/.debug) and never write
# into the real one.  Given a capture directory, puts the vDSO bytes of its
# text store (rows of kind vdso) into perf's build-id cache there, laid out
# as `perf record` does: perf reads the vDSO's code only from that cache.
# With -- CMD: runs CMD with HOME=HOMEDIR.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 HOMEDIR [CAPDIR] [-- CMD [ARGS]]" >&2; exit 2; }
home=$1; shift
case $home in ""|/|"${HOME:-/}") echo "$0: refusing HOME $home" >&2; exit 2 ;; esac
rm -rf "$home"
mkdir -p "$home"
if [ $# -gt 0 ] && [ "$1" != -- ]; then
	cap=$1; shift
	if [ -f "$cap/text/index.tsv" ]; then
		awk -F '\t' '$1 == "vdso" && $8 != "-" && $12 != "-" { print $12, $11, $8 }' \
			"$cap/text/index.tsv" |
		while read -r bid pgoff hash; do
			d="$home/.debug/[vdso]/$bid"
			l="$home/.debug/.build-id/$(printf %.2s "$bid")"
			mkdir -p "$d" "$l"
			# the blob holds the pages that ran, at their offset in
			# the vDSO image; perf reads code by that offset
			dd if="$cap/text/$hash.bin" of="$d/vdso" bs=1 \
				seek=$((pgoff)) conv=notrunc 2>/dev/null
			ln -sfn "../../[vdso]/$bid" "$l/${bid#??}"
		done
	fi
fi
if [ $# -gt 0 ]; then
	shift
	HOME=$home exec "$@"
fi
