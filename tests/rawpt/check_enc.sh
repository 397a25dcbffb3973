#!/bin/sh
# check_enc.sh PTDECODE PTENC PTLOOP CASE: a raw trace of a few packets
# that libipt's encoder writes (ptenc) over a small code image at
# 0x400000, decoded by both decoders, in full output (-j1 and -j2) and in
# the --stats counts.  Each case states what libipt 2.0.5's instruction
# decoder gives, as ptxed prints it: pt_insn_next may return an
# instruction together with an error or end-of-trace status (the
# instruction ran, then the decoder failed or the trace ended), and ptxed
# lists it.  ptloop (libipt's decoder run as ptxed runs it) is the oracle:
# on libipt 2.0.x it must agree with the case, and every decoder must give
# its instructions, paging events and errors (trace offset and IP).  On
# other libipt versions the oracle alone is the expectation.
# Cases marked newer hold packets of newer CPUs (Event Trace's CFE and
# EVD, TRIG) that libipt 2.0.x does not decode: ptdecode skips those that
# carry no IP (a [lost] line says so) and decodes on, or reports the
# packet by name; there the case, not libipt's "unknown opcode", is the
# expectation.
# Cases marked resync are decoded with --resync-on-error: after the first
# error the flow resumes at the next TIP, TIP.PGE or OVF; libipt 2.0 and
# 2.1 cannot, so ptloop must agree with the case up to that error and
# the case states the rest (the flow the packets after it give).  Without
# the option every decoder must still give ptloop's flow, and in every
# case without errors the option must change nothing.
set -u
ptdecode=$1 ptenc=$2 ptloop=$3 case=$4
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
libipt=$("$ptenc" --libipt-version)
newer= opts= resync=

# Code A:
#   0x400000 call 0x400010      0x400005 jmp *%rax
#   0x400010 ret                0x400020 je 0x400030
#   0x400030 jmp *%rax          0x400038 syscall       0x40003a ret
# (nop elsewhere)
code_a=e80b000000ffe0909090909090909090c3909090909090909090909090909090
code_a=${code_a}740e9090909090909090909090909090ffe09090909090900f05c39090909090
# Code B: 0x400000 mov %rax,%cr3; 0x400003 jmp 0x500000 (nothing there)
code_b=0f22d8e9f8ff0f0090909090909090909090909090909090
# Code D: 0x400000 jmp 0x400010; nops; 0x400020 syscall
code_d=eb0e909090909090909090909090909090909090909090909090909090909090
code_d=${code_d}0f05c3
# Code C: 0x400000 vmptrld (%rax); 0x400003 jmp 0x500000
code_c=0fc730e9f8ff0f0090909090909090909090909090909090

# c CODE PACKETS WANT...: the case's code, packets and expected flow lines
c() { code=$1 packets=$2; shift 2; want=$(printf '%s\n' "$@"); }
err() { echo "[error ip=$1: $2]"; }
# an error after which decoding resumes at trace offset $2
rerr() { echo "[error ip=$1 resync=$2: $3]"; }
# a newer packet: skipped (N of them in the queue) or reported
lost() { echo "[lost: $1 not supported by libipt V; $2: $3 libipt does not decode skipped in this trace queue; the control flow around them decodes on]"; }
unsup() { err 0 "$1 not supported by libipt V; $2 (an IP packet belongs to it: decoding resumes at the next sync point)"; }
need21="newer CPUs need libipt >= 2.1" none="no libipt release decodes it yet"
case $case in
# -- an instruction returned with the status that ends the decode --------
# call, then the function's ret leaves tracing (TIP.PGD, IP suppressed)
# and the trace ends: libipt returns the ret with -pte_eos
insn_eos_ret) c $code_a "psb psbend mode64 pge:0x400000 pgd" 0x400000 0x400010 ;;
# call, a compressed ret, then the indirect jump meets TIP.PGD: the jump
# comes with -pte_eos
insn_eos_jmp) c $code_a "psb psbend mode64 pge:0x400000 tnt:1 pgd" \
    0x400000 0x400010 0x400005 ;;
# a conditional branch finds a TIP instead of a TNT: -pte_bad_query
insn_bad_query) c $code_a "psb psbend mode64 pge:0x400020 tip:0x400000" \
    0x400020 "$(err 0x400020 'trace stream does not match query')" ;;
# a compressed ret given a not-taken bit
insn_bad_retcomp) c $code_a "psb psbend mode64 pge:0x400000 tnt:0" \
    0x400000 0x400010 "$(err 0x400010 'bad compressed return')" ;;
# syscall whose TIP has its IP suppressed
insn_no_ip) c $code_a "psb psbend mode64 pge:0x400038 tip" \
    0x400038 "$(err 0x400038 'no ip')" ;;
# tracing off after the ret, then a TNT: ptxed lists the two instructions,
# then the error (pt_insn_next returns no instruction with it here)
no_enable) c $code_a "psb psbend mode64 pge:0x400000 pgd:0x400005 tnt:1" \
    0x400000 0x400010 "$(err 0x400010 'expected tracing enabled event')" ;;
# -- packets libipt binds to an instruction: PIP, VMCS, MODE.Exec --------
# the PIP of the MOV CR3 at the code's start (PSB+'s: no event), then a
# PSB: libipt decodes on to the MOV CR3 and the jump into unmapped code
pip_psb) c $code_b "psb pip:0x1000 mode64 fup:0x400000 psbend pip:0x2000 psb pip:0x2000 mode64 fup:0x400000 psbend" \
    0x400000 "[paging cr3=0x2000]" 0x400003 \
    "$(err 0x500000 'no code at 0x500000: 0x500000: no code mapped there (pid -1)')" ;;
# the trace ends with the PIP: libipt binds it to the MOV CR3
pip_end) c $code_b "psb psbend mode64 pge:0x400000 pip:0x1000" \
    0x400000 "[paging cr3=0x1000]" ;;
# ... followed by a MODE.Exec: the trace ends inside the event's packets,
# which ends the decode quietly
pip_mode_end) c $code_b "psb psbend mode64 pge:0x400000 pip:0x1000 mode64" \
    0x400000 ;;
# the trace ends with a VMCS packet: libipt binds it to the VMPTRLD (and
# reports no event for it)
vmcs_end) c $code_c "psb psbend mode64 pge:0x400000 vmcs:0x1000" 0x400000 ;;
# a MODE.Exec with no IP packet after it
mode_end) c $code_a "psb psbend mode64 pge:0x400020 mode64" ;;
# MODE.Exec before TIPs: 32-bit from the indirect jump's target on, 64-bit
# again from the next one's; each an exec-mode event there (as after the
# enable), none for the mode in PSB+
mode_tip) c $code_a "psb mode64 psbend mode64 pge:0x400000 tnt:1 mode32 tip:0x400020 tnt:1 mode64 tip:0x400038 pgd" \
    0x400000 0x400010 0x400005 0x400020 0x400030 0x400038 ;;
# a MODE.Exec before a TNT: libipt refuses the TNT
mode_tnt) c $code_a "psb psbend mode64 pge:0x400020 mode64 tnt:1 tip:0x400000" \
    "$(err 0 'trace stream does not match query')" ;;
# -- packets of newer CPUs -----------------------------------------------
# a CFE (type 3, no IP) after the TIP.PGE, another later
cfe_skip) newer=21; c $code_a "psb psbend mode64 pge:0x400000 raw:02130300 tnt:1 raw:02130300 pgd" \
    "$(lost 'CFE packet (Event Trace)' "$need21" '2 packets')" 0x400000 0x400010 0x400005 ;;
# a CFE with its IP bit set: an IP packet belongs to it
cfe_ip) newer=21; c $code_a "psb psbend mode64 pge:0x400000 raw:02138300 fup:0x400000 tnt:1 pgd" \
    "$(unsup 'CFE packet (Event Trace)' "$need21")" ;;
# an EVD in one PSB segment, the flow resumes in the next
evd_skip) newer=21; c $code_a "psb psbend mode64 pge:0x400000 raw:0253010000000000000000 tnt:1 pgd" \
    "$(lost 'EVD packet (Event Trace)' "$need21" '1 packet')" 0x400000 0x400010 0x400005 ;;
# TRIG without and with its IP bit; the second segment decodes on
trig_skip) newer=any; c $code_a "psb psbend mode64 pge:0x400000 raw:d90000 tnt:1 pgd" \
    "$(lost 'TRIG packet' "$none" '1 packet')" 0x400000 0x400010 0x400005 ;;
trig_ip) newer=any; c $code_a "psb psbend mode64 pge:0x400000 raw:d98000 tnt:1 pgd psb psbend mode64 pge:0x400000 tnt:1 pgd" \
    "$(unsup 'TRIG packet' "$none")" 0x400000 0x400010 0x400005 ;;
# -- IP filters (ptxed's --filter:addrN_*) --------------------------------
# a Skylake (SKL014): a TIP.PGD without IP after a direct jump out of the
# filtered range [0x400000, 0x40000f] belongs to the jump
skl014_filter) opts="--cpu 6/78/3 --filter:addr0_cfg 1 --filter:addr0_a 0x400000 --filter:addr0_b 0x40000f"
    c $code_d "psb psbend mode64 pge:0x400000 pgd" 0x400000 ;;
# without the filter configuration libipt binds it to the syscall
skl014_nofilter) opts="--cpu 6/78/3"
    c $code_d "psb psbend mode64 pge:0x400000 pgd" 0x400000 $(seq 4194320 4194336 | xargs printf '0x%x\n') ;;
# -- --resync-on-error ------------------------------------------------------
# the conditional branch meets a TIP: decoding resumes at its target
# (call, compressed ret, the indirect jump that meets TIP.PGD)
resync_tip) resync=1; c $code_a "psb psbend mode64 pge:0x400020 tip:0x400000 tnt:1 pgd" \
    0x400020 "$(rerr 0x400020 0x1d 'trace stream does not match query')" \
    0x400000 0x400010 0x400005 ;;
# a bad compressed return; tracing goes off and on again: resumes at the
# TIP.PGE
resync_pge) resync=1; c $code_a "psb psbend mode64 pge:0x400000 tnt:0 pgd pge:0x400000 tnt:1 pgd" \
    0x400000 0x400010 "$(rerr 0x400010 0x1f 'bad compressed return')" \
    0x400000 0x400010 0x400005 ;;
# ... an overflow after it: resumes at the OVF's FUP
resync_ovf) resync=1; c $code_a "psb psbend mode64 pge:0x400000 tnt:0 ovf fup:0x400000 tnt:1 pgd" \
    0x400000 0x400010 "$(rerr 0x400010 0x1e 'bad compressed return')" \
    0x400000 0x400010 0x400005 ;;
# ... a TIP with a 16-bit compressed IP (last IP: the TIP.PGE's)
resync_ip16) resync=1; c $code_a "psb psbend mode64 pge:0x400000 tnt:0 tip:0x0020:16 tnt:1 pgd" \
    0x400000 0x400010 "$(rerr 0x400010 0x1e 'bad compressed return')" \
    0x400020 0x400030 ;;
# the resumed flow reaches the next PSB: it runs without trace up to the
# PSB's FUP (the ret's target, 0x400005), decoded on from the PSB
resync_psb) resync=1; c $code_a "psb psbend mode64 pge:0x400020 tip:0x400000 tnt:1 psb mode64 fup:0x400005 psbend pgd" \
    0x400020 "$(rerr 0x400020 0x1d 'trace stream does not match query')" \
    0x400000 0x400010 0x400005 ;;
# a second error in the resumed flow resumes again
resync_twice) resync=1; c $code_a "psb psbend mode64 pge:0x400000 tnt:0 tip:0x400000 tnt:0 tip:0x400020 tnt:1 pgd" \
    0x400000 0x400010 "$(rerr 0x400010 0x1e 'bad compressed return')" \
    0x400000 0x400010 "$(rerr 0x400010 0x28 'bad compressed return')" 0x400020 0x400030 ;;
# the TIP resumed at leads nowhere: the next one after it
resync_nomap) resync=1; c $code_a "psb psbend mode64 pge:0x400000 tnt:0 tip:0x500000 tip:0x400020 tnt:1 pgd" \
    0x400000 0x400010 "$(rerr 0x400010 0x1e 'bad compressed return')" \
    "$(rerr 0x500000 0x27 'no code at 0x500000: 0x500000: no code mapped there (pid -1)')" \
    0x400020 0x400030 ;;
# a PSB before any IP packet: decoding resumes there, as without it
# (resync=same: the flow is ptloop's, on every libipt)
resync_none) resync=same; c $code_a "psb psbend mode64 pge:0x400000 tnt:0 tnt:1 psb psbend mode64 pge:0x400020 tnt:1 pgd" \
    0x400000 0x400010 "$(err 0x400010 'bad compressed return')" 0x400020 0x400030 ;;
*) echo "unknown case $case"; exit 2 ;;
esac

"$ptenc" "$tmp/code.bin" "raw:$code" && "$ptenc" "$tmp/trace" $packets || exit 1
# shellcheck disable=SC2086
args="$opts --pt $tmp/trace --raw $tmp/code.bin:0x400000 --no-sym --no-disasm"
# the flow: instructions, paging, errors, skipped packets; the version
# in messages as V
flow() { grep -E '^(0x|\[error|\[paging|\[lost)' "$1" | sed 's/libipt [0-9][0-9.]*/libipt V/'; }
nooff() { sed 's/^\[error offset=0x[0-9a-f]* /[error /'; }
# the instructions and the exec-mode events between them
modes() { grep -E '^(0x|\[exec-mode)' "$1" | sed 's/ time=[0-9.]*//'; }
nomsg() { sed 's/^\(\[error [^:]*\):.*/\1]/'; }
# shellcheck disable=SC2086
"$ptloop" $opts "$tmp/trace" "raw:$tmp/code.bin:0x400000" >"$tmp/oracle"
flow "$tmp/oracle" | nomsg >"$tmp/oracle.flow"
modes "$tmp/oracle" >"$tmp/oracle.modes"
printf '%s\n' "$want" | grep . >"$tmp/want"
by=case
[ -n "$resync" ] && newer=resync
case $libipt-$newer in
2.0.*-) # the case must be libipt's
    nooff <"$tmp/oracle.flow" >"$tmp/oracle.nooff"
    nomsg <"$tmp/want" | cmp -s - "$tmp/oracle.nooff" || {
        echo "FAIL: ptloop (libipt $libipt) differs from the case:"
        nomsg <"$tmp/want" | diff - "$tmp/oracle.nooff"; exit 1; } ;;
*-any) # no libipt decodes the packet
    grep -q 'unknown opcode' "$tmp/oracle" ||
        { echo "FAIL: libipt $libipt decodes the case's packet now"; exit 1; } ;;
2.0.*-21) ;;
*-resync) [ "$resync" = same ] && { by="ptloop (libipt $libipt)"; nooff <"$tmp/oracle.flow" >"$tmp/want"; }
    # ptloop (no resync) agrees up to the first error
    first=$(grep -n '^\[error' "$tmp/want" | head -n 1 | cut -d: -f1)
    nooff <"$tmp/oracle.flow" | head -n "$first" >"$tmp/oracle.nooff"
    nomsg <"$tmp/want" | sed 's/ resync=[^]:]*//' | head -n "$first" >"$tmp/want.head"
    cmp -s "$tmp/want.head" "$tmp/oracle.nooff" || {
        echo "FAIL: ptloop (libipt $libipt) differs from the case up to its first error:"
        diff "$tmp/want.head" "$tmp/oracle.nooff"; exit 1; } ;;
*) by="ptloop (libipt $libipt)"; nooff <"$tmp/oracle.flow" >"$tmp/want" ;;
esac
want_insns=$(grep -c '^0x' "$tmp/want")
want_errors=$(grep -c '^\[error' "$tmp/want")
rc=0
for d in libipt fast:-j1 fast:-j2; do
    dec=${d%%:*} j=${d#*:}; [ "$j" = "$d" ] && j=-j1
    "$ptdecode" -q --decoder=$dec $j --insn $args ${resync:+--resync-on-error} >"$tmp/out" 2>&1
    flow "$tmp/out" >"$tmp/flow"
    if [ "$by" = case ]; then
        nooff <"$tmp/flow" | cmp -s "$tmp/want" - || {
            echo "FAIL: $d: the flow differs from the case's:"
            nooff <"$tmp/flow" | diff "$tmp/want" -; rc=1; }
    else
        nooff <"$tmp/flow" | nomsg | cmp -s "$tmp/want" - || {
            echo "FAIL: $d: the flow differs from $by:"
            nooff <"$tmp/flow" | nomsg | diff "$tmp/want" -; rc=1; }
    fi
    if [ -z "$newer" ]; then  # errors at libipt's trace offsets
        nomsg <"$tmp/flow" | cmp -s "$tmp/oracle.flow" - || {
            echo "FAIL: $d: errors at other trace offsets than ptloop's:"
            nomsg <"$tmp/flow" | diff "$tmp/oracle.flow" -; rc=1; }
    fi
    # exec-mode events where ptloop (ptxed's rule) has them, as many
    if [ -z "$newer" ] || [ "$newer" = resync ]; then
        "$ptdecode" -q --decoder=$dec $j --insn $args >"$tmp/plain" 2>&1
        modes "$tmp/plain" | cmp -s "$tmp/oracle.modes" - || {
            echo "FAIL: $d: exec-mode events differ from ptloop's:"
            modes "$tmp/plain" | diff "$tmp/oracle.modes" -; rc=1; }
    fi
    [ $rc = 0 ] && echo "OK: $d: $want_insns instructions, $want_errors errors (as $by)$(
        [ -z "$newer" ] || [ "$newer" = resync ] &&
            echo ", $(grep -c '^\[exec-mode' "$tmp/oracle.modes") exec-mode events as ptloop's")"
    # counting only (the fast decoder's count-only walk)
    "$ptdecode" -q --decoder=$dec $j --stats $args ${resync:+--resync-on-error} >"$tmp/stats" 2>&1
    ni=$(sed -n 's/^instructions: //p' "$tmp/stats")
    ne=$(sed -n 's/^errors: //p' "$tmp/stats")
    if [ "$ni" != "$want_insns" ] || [ "$ne" != "$want_errors" ]; then
        echo "FAIL: $d --stats: $ni instructions, $ne errors (want $want_insns, $want_errors)"
        rc=1
    fi
    # stopped early, with the padded copy of the queue in use: a clean
    # exit (the sanitizer pass reports anything left allocated)
    if grep -q '^\[lost' "$tmp/want"; then
        "$ptdecode" -q --decoder=$dec $j --max-insns 1 --insn $args >"$tmp/one" 2>&1
        got=$?
        [ $got = 0 ] || { echo "FAIL: $d --max-insns 1: exit $got: $(tail -3 "$tmp/one")"; rc=1; }
    fi
    if [ -n "$resync" ]; then
        nr=$(sed -n 's/^resyncs after errors: //p' "$tmp/stats")
        wr=$(grep -c ' resync=' "$tmp/want")
        [ "${nr:-0}" = "$wr" ] || { echo "FAIL: $d --stats: ${nr:-0} resyncs (want $wr)"; rc=1; }
        # without the option: ptloop's flow
        "$ptdecode" -q --decoder=$dec $j --insn $args >"$tmp/out" 2>&1
        flow "$tmp/out" | nomsg | cmp -s "$tmp/oracle.flow" - || {
            echo "FAIL: $d: without --resync-on-error the flow differs from ptloop's:"
            flow "$tmp/out" | nomsg | diff "$tmp/oracle.flow" -; rc=1; }
    elif ! grep -q '^\[error' "$tmp/want"; then
        # no error: --resync-on-error changes nothing
        "$ptdecode" -q --decoder=$dec $j --insn $args --resync-on-error >"$tmp/out2" 2>&1
        cmp -s "$tmp/out" "$tmp/out2" || {
            echo "FAIL: $d: --resync-on-error changes the output of a trace without errors:"
            diff "$tmp/out" "$tmp/out2" | head; rc=1; }
    fi
    if [ -n "$newer" ] && [ -z "$resync" ] && [ "$by" = case ]; then
        nu=$(sed -n 's/^packets unsupported by libipt: //p' "$tmp/stats")
        wu=$(grep -o '^\[lost: .*: [0-9]* packet' "$tmp/want" | grep -o '[0-9]* packet$' | cut -d' ' -f1)
        wu=$((${wu:-0} + $(grep -c 'IP packet belongs' "$tmp/want")))
        [ "${nu:-0}" = "$wu" ] || { echo "FAIL: $d --stats: $nu unsupported packets (want $wu)"; rc=1; }
    fi
done
exit $rc
