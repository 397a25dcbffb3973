#!/usr/bin/env python3
"""check_ovf_pgd.py PTSYNTH PTDECODE OUT NCPUS [ptsynth options] -- CMD

An overflow directly followed by a trace stop (OVF, TIP.PGD) against perf
script.  A `ptsynth record --cpus NCPUS` recording of CMD with
--interrupts and --overflows (asynchronous stops, half of them with an
OVF while tracing is off) has CPU 1's trace changed by clock_mutate.py
ovfpgd: the FUP of one such stop becomes the OVF, so that the OVF comes
right before the TIP.PGD.  perf's decoder has no IP after the OVF: it
reports the overflow, then "Failed to get instruction" at IP 0 (walking
to the TIP.PGD), forgets its last IP and resumes at an IP packet with a
full or sign-extended IP, an OVF or a PSB+ (its trace begin there).
With both decoders at -j1 and -j2:
 1. each CPU's instruction addresses are perf script's, and CPU 0's
    lines (address, thread, time) too;
 2. the error lines of CPU 1's queue (--per-queue) are perf script
    --itrace=e's errors that are not overflows: each after as many of
    CPU 1's instructions, at the same IP (0) and time; --stats counts
    them;
 3. --branches' trace begins on CPU 1 (thread, target) are perf script
    --itrace=b's, in order.
Where the clock cannot follow the packets after the error, CPU 1's times
are the decoder's (a warning says so); they are not compared.
Exit 0 = pass, 1 = fail, 77 = skipped (reason printed).
"""
import os
import re
import sys

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import check_clock_fallback as ccf  # noqa: E402


def perf_lines(cap):
    """perf script's instructions (ip, cpu, tid, ns) and its errors that
    are not overflows (cpu, place among that CPU's instructions, ip, ns)."""
    out = ccf.run(['perf', 'script', '-i', os.path.join(cap, 'perf.data'),
                   '--itrace=i0nse', '-F', 'cpu,tid,time,ip', '--ns']).stdout
    seq, errs, per = [], [], {}
    for line in out.splitlines():
        p = line.split()   # TID [CPU] TIME: IP
        if len(p) == 4 and p[1].startswith('['):
            cpu = int(p[1].strip('[]'))
            seq.append((int(p[3], 16), cpu, int(p[0]), ccf.ns(p[2])))
            per[cpu] = per.get(cpu, 0) + 1
            continue
        m = re.search(r'instruction trace error .* time (\d+\.\d+) cpu (\d+) .* '
                      r'ip (0x[0-9a-f]+|0) code (\d+)', line)
        if m and m.group(4) != '7':   # 7: Overflow packet
            cpu = int(m.group(2))
            errs.append((cpu, per.get(cpu, 0), int(m.group(3), 16), ccf.ns(m.group(1))))
    return seq, errs


def our_errors(ptdecode, cap, dec, j, cpu):
    """The error lines of CPU cpu's queue (--per-queue): (cpu, place among
    its instructions, ip, ns)."""
    out = ccf.run([ptdecode, '-q', '--decoder=' + dec, '-j', j, '--per-queue', '-t',
                   '--no-sym', '--insn', '--no-disasm', cap]).stdout
    errs, n, cur = [], 0, None
    for line in out.splitlines():
        p = line.split()
        if line.startswith('0x') and len(p) >= 4:
            cur = int(p[1].strip('[]'))
            n += cur == cpu
        elif line.startswith('[error ') and cur in (cpu, None):
            m = re.search(r' ip=(0x[0-9a-f]+|0) .*time=(\d+\.\d+)', line)
            if m:
                errs.append((cpu, n, int(m.group(1), 16), ccf.ns(m.group(2))))
    return errs


def main():
    rec = ccf.record(__doc__)
    if not isinstance(rec, tuple):
        return rec
    ptdecode, cap = rec
    bad = ccf.mutated(cap, 'ovfpgd')
    theirs, perrs = perf_lines(bad)
    cpus = sorted(set(e[1] for e in theirs))
    pbegins = [b for b in ccf.perf_begins(bad)[0] if b[0] == 1]
    if not any(e[0] == 1 and e[2] == 0 for e in perrs):
        ccf.fail('perf script reports no error at IP 0 on CPU 1: %s' % perrs)
    for dec in ('fast', 'libipt'):
        for j in ('1', '2'):
            what = '--decoder=%s -j%s' % (dec, j)
            seq, st, warns, _ = ccf.ours(ptdecode, bad, dec, j)
            flows = all([e[0] for e in seq if e[1] == c] == [e[0] for e in theirs if e[1] == c]
                        for c in cpus)
            cpu0 = [e for e in seq if e[1] == 0] == [e for e in theirs if e[1] == 0]
            oerrs = our_errors(ptdecode, bad, dec, j, 1)
            begins = [b for b in ccf.ours_begins(ptdecode, bad, dec, j)[0] if b[0] == 1]
            nb = [b[1:4:2] for b in begins] == [b[1:4:2] for b in pbegins]
            if not flows or not cpu0 or oerrs != [e for e in perrs if e[0] == 1] or \
                    int(st.get('errors', -1)) != len(perrs) or not nb:
                ccf.fail('%s: addresses per CPU perf\'s: %s; CPU 0\'s lines perf\'s: %s; '
                         'CPU 1\'s error lines (cpu, instructions before, ip, ns) %s, '
                         'perf script\'s %s; --stats errors %s; CPU 1\'s trace begins '
                         '(thread, to) perf\'s: %s (%d, perf %d)'
                         % (what, flows, cpu0, oerrs, perrs, st.get('errors'), nb,
                            len(begins), len(pbegins)))
            else:
                print('OK %s: %d lines, every CPU\'s addresses perf script\'s, CPU 0\'s '
                      'lines too; %d error line(s) on CPU 1 where perf has them; %d '
                      'trace begins on CPU 1 = perf\'s; clock fallback queues %s'
                      % (what, len(seq), len(oerrs), len(begins),
                         st.get('clock fallback queues')))
    return 1 if ccf.FAILS else 0


if __name__ == '__main__':
    sys.exit(main())
