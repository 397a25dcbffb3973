#!/bin/sh
# check_cpu.sh PTDECODE PTENC CAPTURE OPENCSD_VERSION CAPSTONE_VERSION:
# the recording CPU and the libraries' versions.
#  - --cpu naming no processor with Intel PT (0/0, 6/0) is a configuration
#    error (ptxed: "config error: unknown cpu"): no decode, non-zero exit;
#  - a model the linked libipt does not know (pt_cpu_errata refuses it, as
#    ptenc --cpu-known asks: Debian's 2.0.5 knows nothing after ~2019) is
#    said once, naming the model and libipt's version (pt_library_version),
#    and counted in --stats; the flow is the one decoded without errata
#    (--cpu none); a model it knows is not reported;
#  - the same for a perf.data whose CPUID names such a model;
#  - --version names libipt's, OpenCSD's and capstone's versions (the
#    versions pkg-config found for OpenCSD and capstone at configure time;
#    capstone's cs_version has major.minor only).
# Both decoders, which must agree.
set -u
ptdecode=$1 ptenc=$2 capture=$3 ocsd_version=$4 cs_version=$5
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
rc=0
fail() { echo "FAIL: $*"; rc=1; }
libipt=$("$ptenc" --libipt-version)

# a call, a compressed ret, an indirect jump, a not-taken je
code=e80b000000ffe0909090909090909090c3909090909090909090909090909090
code=${code}740e9090909090909090909090909090ffe09090909090900f05c39090909090
"$ptenc" "$tmp/code.bin" "raw:$code" &&
"$ptenc" "$tmp/trace" psb psbend mode64 pge:0x400000 tnt:1 tip:0x400020 tnt:0 || exit 1
raw="--pt $tmp/trace --raw $tmp/code.bin:0x400000 --no-sym --no-disasm"
flow() { grep -E '^(0x|\[)' "$1"; }

for d in libipt fast; do
    # --- not a processor with Intel PT: a configuration error
    for cpu in 0/0 6/0; do
        "$ptdecode" --decoder=$d --cpu $cpu $raw >"$tmp/out" 2>"$tmp/err"
        got=$?
        if [ $got -eq 0 ] || ! grep -q "config error: unknown cpu \"$cpu\"" "$tmp/err" ||
           grep -q '^0x' "$tmp/out"; then
            fail "$d --cpu $cpu: exit $got, $(head -c 200 "$tmp/err")"
        else
            echo "OK: $d --cpu $cpu: $(cat "$tmp/err")"
        fi
    done
    # --- models libipt may or may not know
    "$ptdecode" --decoder=$d --cpu none --insn --stats $raw >"$tmp/none" 2>&1
    for cpu in 6/170/4 18/1/0 19/1/0 6/158/10; do
        f=${cpu%%/*} m=${cpu#*/}; m=${m%%/*}
        "$ptdecode" --decoder=$d --cpu $cpu --insn --stats $raw >"$tmp/out" 2>"$tmp/err" ||
            fail "$d --cpu $cpu: exit $?"
        nwarn=$(grep -c 'unknown to libipt' "$tmp/err")
        if "$ptenc" --cpu-known $cpu; then
            [ "$nwarn" = 0 ] && ! grep -q '^cpu unknown' "$tmp/out" ||
                fail "$d --cpu $cpu: libipt knows it, yet: $(cat "$tmp/err")"
            continue
        fi
        want="ptdecode: warning: --cpu $cpu: CPU family $f model $m is unknown to libipt $libipt "
        if [ "$nwarn" != 1 ] || ! grep -qF "$want" "$tmp/err"; then
            fail "$d --cpu $cpu: want one warning \"$want...\", got: $(cat "$tmp/err")"
        elif ! grep -qx 'cpu unknown to libipt: 1' "$tmp/out"; then
            fail "$d --cpu $cpu: no 'cpu unknown to libipt: 1' in --stats"
        elif [ "$(flow "$tmp/out")" != "$(flow "$tmp/none")" ]; then
            fail "$d --cpu $cpu: the flow differs from --cpu none's"
        else
            echo "OK: $d --cpu $cpu: $(cat "$tmp/err")"
        fi
    done
    # instructions and errors (the fast decoder reports fewer mode events)
    grep -E '^(0x|\[error)' "$tmp/none" >"$tmp/flow.$d"
done
cmp -s "$tmp/flow.libipt" "$tmp/flow.fast" || fail "raw: fast and libipt flows differ"

# --- perf.data whose CPUID names a model libipt does not know
cp -r "$capture" "$tmp/cap.ptd"
grep -q 'GenuineIntel,6,158,10' "$tmp/cap.ptd/perf.data" || { echo "FAIL: no CPUID 6/158/10 in $capture"; exit 1; }
# the first model this libipt does not know; the string keeps its length
# (NUL-padded) in its header section
model=
for m in 6/170/4 18/1/0; do
    "$ptenc" --cpu-known $m || { model=$m; break; }
done
[ -n "$model" ] || { echo "SKIP: this libipt knows 6/170 and 18/1"; exit 77; }
cpuid="GenuineIntel,$(echo $model | tr / ,)"
f=${model%%/*} m=${model#*/}; m=${m%%/*}
CPUID=$cpuid perl -0777 -pi -e \
    's/GenuineIntel,6,158,10/$ENV{CPUID} . "\0" x (21 - length $ENV{CPUID})/e' \
    "$tmp/cap.ptd/perf.data"
[ "$(stat -c %s "$capture/perf.data")" = "$(stat -c %s "$tmp/cap.ptd/perf.data")" ] ||
    { echo "FAIL: patching the CPUID changed perf.data's size"; exit 1; }
for d in libipt fast; do
    "$ptdecode" --decoder=$d --no-sym --insn --stats "$capture" >"$tmp/orig" 2>/dev/null
    "$ptdecode" --decoder=$d --no-sym --insn --stats "$tmp/cap.ptd" >"$tmp/out" 2>"$tmp/err"
    want="ptdecode: warning: the recording CPU (perf.data's CPUID) $model: CPU family $f model $m is unknown to libipt $libipt "
    if [ "$(grep -c 'unknown to libipt' "$tmp/err")" != 1 ] || ! grep -qF "$want" "$tmp/err"; then
        fail "$d perf.data: want one warning \"$want...\", got: $(cat "$tmp/err")"
    elif ! grep -qx 'cpu unknown to libipt: 1' "$tmp/out" || grep -q '^cpu unknown' "$tmp/orig"; then
        fail "$d perf.data: --stats line"
    elif [ "$(flow "$tmp/out")" != "$(flow "$tmp/orig")" ] || ! grep -q '^0x' "$tmp/out"; then
        fail "$d perf.data: the flow differs from the capture's"
    else
        echo "OK: $d perf.data: $(cat "$tmp/err")"
    fi
done

# --- --version
"$ptdecode" --version >"$tmp/v"
ocsd=${ocsd_version:-none}
cs=$(sed -n 's/.*, capstone \([0-9.]*\)$/\1/p' "$tmp/v")
if ! grep -qx "with libipt $libipt, OpenCSD $ocsd, capstone $cs" "$tmp/v" ||
   [ -z "$cs" ] || [ "${cs_version#"$cs"}" = "$cs_version" ]; then
    fail "--version: want libipt $libipt, OpenCSD $ocsd, capstone $cs_version (major.minor): $(cat "$tmp/v")"
else
    echo "OK: $(tr '\n' ' ' <"$tmp/v")"
fi
exit $rc
