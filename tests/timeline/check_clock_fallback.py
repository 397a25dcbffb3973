#!/usr/bin/env python3
"""check_clock_fallback.py PTSYNTH PTDECODE OUT NCPUS same|reported [ptsynth options] -- CMD

The merged timeline's clock fallback (backend/perfclock.h): a queue whose
packets perf's timing rules cannot be followed is timed and ordered by
the decoder's own timestamps from there.  On a `ptsynth record --cpus
NCPUS` recording of CMD:

 1. as recorded: ptdecode --stats counts no fallback (clock fallback
    queues: 0, events: 0) and warns of none;
 2. CPU 1's trace made to begin without its PSB (clock_mutate.py nopsb:
    16 PAD bytes in its place; every decoder skips to the next PSB), with
    both decoders at -j1 and -j2: --stats counts exactly one fallback
    queue, and at least as many fallback events as perf script lists
    instructions on CPU 1 (the fallback is taken at the queue's first
    event); one warning names CPU 1 and the reason; per CPU the
    instructions (address, thread) are perf script's; and across CPUs:
      same      the merged lines (address, CPU, thread, time) equal perf
                script's (TSC-only timing: the decoder's times are perf's)
      reported  they may differ (MTC/CYC timing: perf's times are not the
                decoder's), which the warning says; the differences are
                counted and printed.
Exit 0 = pass, 1 = fail, 77 = skipped (reason printed).
"""
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, '..'))
from perf_home import perf_home  # noqa: E402

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print('FAIL: ' + msg)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, errors='replace')
    if r.returncode or 'Sanitizer' in r.stderr or 'runtime error:' in r.stderr:
        fail('%s exited %d: %s' % (' '.join(cmd), r.returncode, r.stderr[-2000:]))
    return r


def ns(text):
    s, f = text.rstrip(':').split('.')
    return int(s) * 1000000000 + int(f)


def perf_insns(cap):
    out = run(['perf', 'script', '-i', os.path.join(cap, 'perf.data'),
               '--itrace=i0ns', '-F', 'cpu,tid,time,ip', '--ns']).stdout
    # TID [CPU] TIME: IP
    return [(int(p[3], 16), int(p[1].strip('[]')), int(p[0]), ns(p[2]))
            for p in (l.split() for l in out.splitlines()) if len(p) == 4]


def ours(ptdecode, cap, dec, j):
    r = run([ptdecode, '--decoder=' + dec, '-j', j, '--stats', '-t', '--no-sym',
             '--insn', '--no-disasm', cap])
    seq = []
    for line in r.stdout.splitlines():
        p = line.split()   # IP [CPU] PID/TID TIME
        if line.startswith('0x') and len(p) >= 4:
            seq.append((int(p[0], 16), int(p[1].strip('[]')),
                        int(p[2].split('/')[1]), ns(p[3])))
    st = dict(re.findall(r'^([a-z ]+): (\d+)$', r.stdout, re.M))
    warns = [l for l in r.stderr.splitlines() if 'merged timeline:' in l]
    return seq, st, warns


def main():
    if len(sys.argv) < 8 or '--' not in sys.argv:
        sys.exit(__doc__)
    ptsynth, ptdecode, cap, ncpus, expect = sys.argv[1:6]
    rest = sys.argv[6:]
    if not shutil.which('perf'):
        print('SKIP: perf is not installed (linux-perf)')
        return 77
    shutil.rmtree(cap, ignore_errors=True)
    r = subprocess.run([ptsynth, 'record', '-o', cap, '--cpus', ncpus] + rest,
                       capture_output=True, text=True)
    if r.returncode:
        if 'single-step trap' in r.stderr:
            print('SKIP: ' + r.stderr.strip())
            return 77
        fail('ptsynth exited %d: %s' % (r.returncode, r.stderr))
        return 1
    perf_home(cap + '.home', cap)

    # 1. as recorded: nothing to fall back from
    _, st, warns = ours(ptdecode, cap, 'fast', '1')
    if st.get('clock fallback queues') != '0' or st.get('clock fallback events') != '0' \
            or warns:
        fail('as recorded: clock fallback queues %s, events %s, warnings %s'
             % (st.get('clock fallback queues'), st.get('clock fallback events'), warns))

    # 2. CPU 1's first PSB padded out
    bad = cap + '.nopsb'
    shutil.rmtree(bad, ignore_errors=True)
    shutil.copytree(cap, bad, symlinks=True)
    m = run([sys.executable, os.path.join(here, 'clock_mutate.py'),
             os.path.join(cap, 'perf.data'), os.path.join(bad, 'perf.data'), 'nopsb', '1'])
    print(m.stdout.strip())
    theirs = perf_insns(bad)
    cpu1 = sum(1 for e in theirs if e[1] == 1)
    cpus = sorted(set(e[1] for e in theirs))
    if not cpu1 or len(cpus) < 2:
        fail('perf script lists %d instructions on CPU 1, CPUs %s' % (cpu1, cpus))
        return 1
    for dec in ('fast', 'libipt'):
        for j in ('1', '2'):
            what = '--decoder=%s -j%s' % (dec, j)
            seq, st, warns = ours(ptdecode, bad, dec, j)
            q = int(st.get('clock fallback queues', -1))
            n = int(st.get('clock fallback events', -1))
            if q != 1 or n < cpu1:
                fail('%s: clock fallback queues %d, events %d; want 1 queue and at '
                     'least the %d instructions perf lists on CPU 1' % (what, q, n, cpu1))
            if len(warns) != 1 or '(cpu 1)' not in warns[0] or \
                    'does not begin with a PSB' not in warns[0]:
                fail('%s: want one warning naming cpu 1 and the missing PSB: %s'
                     % (what, warns))
            for c in cpus:
                a = [e[:3:2] for e in seq if e[1] == c]
                b = [e[:3:2] for e in theirs if e[1] == c]
                if a != b:
                    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                             min(len(a), len(b)))
                    fail('%s: CPU %d: %d instructions, perf %d; first difference at %d'
                         % (what, c, len(a), len(b), k))
            diff = sum(1 for x, y in zip(seq, theirs) if x != y) + abs(len(seq) - len(theirs))
            if expect == 'same' and diff:
                k = next((i for i, (x, y) in enumerate(zip(seq, theirs)) if x != y), None)
                fail('%s: merged timeline differs from perf script\'s in %d lines '
                     '(first at %s)' % (what, diff, k))
            print('%s %s: %d instructions (%d on CPU 1) = perf script per CPU; '
                  'clock fallback: %d queue, %d events; merged lines differing from '
                  'perf script\'s: %d (%s)'
                  % ('FAIL' if FAILS else 'OK', what, len(seq), cpu1, q, n, diff,
                     'reported' if warns else 'not reported'))
    return 1 if FAILS else 0


if __name__ == '__main__':
    sys.exit(main())
