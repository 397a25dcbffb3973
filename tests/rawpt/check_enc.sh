#!/bin/sh
# check_enc.sh PTDECODE PTENC CASE: a raw trace of a few packets that
# libipt's encoder writes (ptenc) over a small code image at 0x400000,
# decoded by both decoders.  Each case states what libipt 2.0.5's
# instruction decoder gives, as ptxed prints it: pt_insn_next may return an
# instruction together with an error or end-of-trace status (the
# instruction ran, then the decoder failed or the trace ended), and ptxed
# lists it (its iclass is not ptic_error).  Both decoders must give those
# instructions, errors and paging events, in full output (-j1 and -j2) and
# in the --stats counts.
set -u
ptdecode=$1 ptenc=$2 case=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# Code A:
#   0x400000 call 0x400010      0x400005 jmp *%rax
#   0x400010 ret                0x400020 je 0x400030
#   0x400030 jmp *%rax          0x400038 syscall       0x40003a ret
# (nop elsewhere)
code_a=e80b000000ffe0909090909090909090c3909090909090909090909090909090
code_a=${code_a}740e9090909090909090909090909090ffe09090909090900f05c39090909090
# Code B: 0x400000 mov %rax,%cr3; 0x400003 jmp 0x500000 (nothing there)
code_b=0f22d8e9f8ff0f0090909090909090909090909090909090
# Code C: 0x400000 vmptrld (%rax); 0x400003 jmp 0x500000
code_c=0fc730e9f8ff0f0090909090909090909090909090909090

# c CODE PACKETS WANT...: the case's code, packets and expected flow lines
c() { code=$1 packets=$2; shift 2; want=$(printf '%s\n' "$@"); }
err() { echo "[error ip=$1: $2]"; }
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
# the PIP of the MOV CR3 at the code's start, then a PSB: libipt decodes on
# to the MOV CR3 and the jump into unmapped code
pip_psb) c $code_b "psb pip:0x1000 mode64 fup:0x400000 psbend pip:0x2000 psb pip:0x2000 mode64 fup:0x400000 psbend" \
    "[paging cr3=0x1000]" 0x400000 "[paging cr3=0x2000]" 0x400003 \
    "$(err 0x500000 'no code at 0x500000: 0x500000: no code mapped there (pid -1)')" ;;
# the trace ends with the PIP: libipt binds it to the MOV CR3
pip_end) c $code_b "psb psbend mode64 pge:0x400000 pip:0x1000" \
    0x400000 "[paging cr3=0x1000]" ;;
pip_mode_end) c $code_b "psb psbend mode64 pge:0x400000 pip:0x1000 mode64" \
    0x400000 "$(err 0x400000 'reached end of trace stream')" ;;
# the trace ends with a VMCS packet: libipt binds it to the VMPTRLD (and
# reports no event for it)
vmcs_end) c $code_c "psb psbend mode64 pge:0x400000 vmcs:0x1000" 0x400000 ;;
# a MODE.Exec with no IP packet after it
mode_end) c $code_a "psb psbend mode64 pge:0x400020 mode64" \
    "$(err 0 'reached end of trace stream')" ;;
# a MODE.Exec before a TNT: libipt refuses the TNT
mode_tnt) c $code_a "psb psbend mode64 pge:0x400020 mode64 tnt:1 tip:0x400000" \
    "$(err 0 'trace stream does not match query')" ;;
*) echo "unknown case $case"; exit 2 ;;
esac

"$ptenc" "$tmp/code.bin" "raw:$code" && "$ptenc" "$tmp/trace" $packets || exit 1
args="--pt $tmp/trace --raw $tmp/code.bin:0x400000 --no-sym --no-disasm"
printf '%s\n' "$want" >"$tmp/want"
want_insns=$(grep -c '^0x' "$tmp/want")
want_errors=$(grep -c '^\[error' "$tmp/want")
# the flow: instructions, errors (without their trace offset), paging
flow() { grep -E '^(0x|\[error|\[paging)' "$1" | sed 's/^\[error offset=0x[0-9a-f]* /[error /'; }
rc=0
for d in libipt fast:-j1 fast:-j2; do
    dec=${d%%:*} j=${d#*:}; [ "$j" = "$d" ] && j=-j1
    "$ptdecode" -q --decoder=$dec $j --insn $args >"$tmp/out" 2>&1
    flow "$tmp/out" >"$tmp/flow"
    if cmp -s "$tmp/want" "$tmp/flow"; then
        echo "OK: $d: $want_insns instructions, $want_errors errors"
    else
        echo "FAIL: $d: the flow differs from libipt's (ptxed's):"
        diff "$tmp/want" "$tmp/flow"; rc=1
    fi
    # counting only (the fast decoder's count-only walk)
    "$ptdecode" -q --decoder=$dec $j --stats $args >"$tmp/stats" 2>&1
    ni=$(sed -n 's/^instructions: //p' "$tmp/stats")
    ne=$(sed -n 's/^errors: //p' "$tmp/stats")
    if [ "$ni" != "$want_insns" ] || [ "$ne" != "$want_errors" ]; then
        echo "FAIL: $d --stats: $ni instructions, $ne errors (want $want_insns, $want_errors)"
        rc=1
    fi
done
exit $rc
