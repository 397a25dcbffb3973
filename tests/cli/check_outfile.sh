#!/bin/sh
# check_outfile.sh PTDECODE CAPTURE: -o FILE writes what stdout gets, however
# FILE existed before: a big file of ours is replaced (its old pages are
# released on a helper thread, see decoder/cli/outfile.h) keeping its mode,
# a reader of the old file keeps the old bytes; symlinks are written
# through, hard-linked files are truncated in place (both names see the
# output), small files are truncated.
set -u
ptd=$1 cap=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
rc=0
fail() { echo "FAIL: $*"; rc=1; }
"$ptd" -q --insn "$cap" >"$tmp/ref" || { echo "FAIL: decode to stdout"; exit 1; }
big() { head -c 3000000 /dev/urandom >"$1"; }   # above the 1 MiB threshold
same() { cmp -s "$tmp/ref" "$1" || fail "$2: output differs from stdout's"; }

mkdir "$tmp/d"
# a new file
"$ptd" -q --insn -o "$tmp/d/new" "$cap" && same "$tmp/d/new" "new file"
# a big file of ours, mode 0640, read by someone while it is replaced
big "$tmp/d/out"; chmod 0640 "$tmp/d/out"; cp "$tmp/d/out" "$tmp/old"
exec 3<"$tmp/d/out"
"$ptd" -q --insn -o "$tmp/d/out" "$cap" && same "$tmp/d/out" "big file"
[ "$(stat -c %a "$tmp/d/out")" = 640 ] || fail "mode $(stat -c %a "$tmp/d/out"), was 640"
cat <&3 | cmp -s - "$tmp/old" || fail "a reader of the old file lost its bytes"
exec 3<&-
ls -A "$tmp/d" | grep -qvxE 'new|out' && fail "left behind: $(ls -A "$tmp/d" | tr '\n' ' ')"
# a small file
echo small >"$tmp/d/small"
"$ptd" -q --insn -o "$tmp/d/small" "$cap" && same "$tmp/d/small" "small file"
# a symlink to a big file: written through
big "$tmp/target"; ln -s "$tmp/target" "$tmp/d/link"
"$ptd" -q --insn -o "$tmp/d/link" "$cap" && same "$tmp/target" "symlink target"
[ -L "$tmp/d/link" ] || fail "the symlink was replaced"
# a big file with two names: one file, both see the output
big "$tmp/d/h1"; ln "$tmp/d/h1" "$tmp/d/h2"
"$ptd" -q --insn -o "$tmp/d/h1" "$cap" && same "$tmp/d/h2" "hard link"
[ "$(stat -c %i "$tmp/d/h1")" = "$(stat -c %i "$tmp/d/h2")" ] || fail "hard link broken"
# --write-thread: the same bytes (the output is over 1 MiB: the thread
# runs), to a file and to a pipe; a write error still exits 1
[ "$(wc -c <"$tmp/ref")" -gt 2000000 ] || fail "output too small to start the writer thread"
"$ptd" -q --insn --write-thread -o "$tmp/d/wt" "$cap" && same "$tmp/d/wt" "--write-thread to a file"
"$ptd" -q --insn --write-thread "$cap" | cat >"$tmp/wtpipe"; same "$tmp/wtpipe" "--write-thread to a pipe"
"$ptd" -q --insn --write-thread -o /dev/full "$cap" 2>"$tmp/err"; st=$?
[ $st = 1 ] && grep -q "error writing" "$tmp/err" || fail "--write-thread to /dev/full: exit $st"
rm -f "$tmp/d/wt"
# a path that cannot be created: a clear error, exit 1
"$ptd" -q --insn -o "$tmp/no/such/dir/x" "$cap" 2>"$tmp/err"; st=$?
[ $st = 1 ] && grep -q "cannot write" "$tmp/err" || fail "unwritable output: exit $st, $(cat "$tmp/err")"
[ $rc = 0 ] && echo "OK: -o FILE for new, big, small, symlinked, hard-linked and uncreatable files; --write-thread"
exit $rc
