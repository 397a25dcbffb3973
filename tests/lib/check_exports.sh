#!/bin/sh
# Every dynamic symbol libptdecode.so defines must start with ptd_, and the
# SONAME must carry the ABI version.
set -eu
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDBRW]/ {print $3}' | grep -v '^ptd_' || true)
if [ -n "$bad" ]; then
    echo "symbols exported without the ptd_ prefix:"; echo "$bad"; exit 1
fi
n=$(nm -D --defined-only "$lib" | grep -c ' ptd_')
soname=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
echo "exported: $n ptd_ symbols, SONAME $soname"
[ "$n" -gt 10 ] && [ "$soname" = "libptdecode.so.0" ]
