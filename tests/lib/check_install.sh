#!/bin/sh
# cmake --install into a temporary prefix, then build the README's example
# against it with pkg-config (static and shared) and run it.
set -eu
build=$1 example=$2
prefix=$(mktemp -d); trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(find "$prefix" -name libptdecode.pc)
[ -n "$pc" ] || { echo "no libptdecode.pc installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
cc -o "$prefix/count" "$example" $(pkg-config --cflags --libs libptdecode)
# (the libraries it needs may themselves be found through LD_LIBRARY_PATH)
libdir=$(pkg-config --variable=libdir libptdecode)
out=$(LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$prefix/count" /nonexistent 2>&1 || true)
echo "$out"
echo "$out" | grep -q 'cannot open /nonexistent'
cc -o "$prefix/count_static" "$example" $(pkg-config --cflags libptdecode) \
    "$(pkg-config --variable=libdir libptdecode)/libptdecode.a" \
    $(pkg-config --libs --static libptdecode)
"$prefix/count_static" /nonexistent 2>&1 | grep -q 'cannot open /nonexistent'
echo PASS
