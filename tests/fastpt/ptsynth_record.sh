# Sourced by the fastpt checks that record a program: ptsynth_record
# PTSYNTH OUT.ptd [ptsynth options] -- CMD [ARGS] records it, or exits 77
# (skip) where ptsynth cannot trace here, 1 when it fails otherwise.
ptsynth_record() {
    _ps=$1 _out=$2
    shift 2
    "$_ps" record -o "$_out" "$@" >"$_out.log" 2>&1 && return 0
    if grep -qi "ptrace\|permission\|not permitted" "$_out.log"; then
        echo "SKIP: ptsynth cannot trace here:"; cat "$_out.log"; exit 77
    fi
    echo "FAIL: ptsynth failed:"; cat "$_out.log"; exit 1
}
