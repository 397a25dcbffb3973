#!/bin/sh
# check_coverage.sh PTDECODE CAPTURE: --coverage gives, for every address,
# the number of times it appears in the ground truth (expected.insn).
set -eu
ptdecode=$1 cap=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
xz -dc "$cap/expected.insn.xz" | sort | uniq -c | awk '{print $2, $1}' | sort >"$tmp/want"
for d in fast libipt; do
    "$ptdecode" -q --decoder=$d --coverage "$cap" | awk '{print $1, $2}' | sort >"$tmp/got"
    if ! cmp -s "$tmp/want" "$tmp/got"; then
        echo "FAIL: $d coverage differs from the ground truth"; diff "$tmp/want" "$tmp/got" | head -5
        exit 1
    fi
    echo "OK: $d: $(wc -l <"$tmp/got") addresses, counts equal the ground truth"
done
