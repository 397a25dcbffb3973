#!/usr/bin/env python3
"""check_branches.py PTDECODE CAPTURE [PTDECODE-OPTION...]

`ptdecode --branches` against Linux perf's own Intel PT decoder
(perf script --itrace=b) on a recording: per thread, the taken branches
(from, to, kind) must be perf's, in perf's order, and so must the trace
starts and stops (from, to; with TSC also their times, in ns: a stop
has its thread's last time, before a switch).  Branches and starts/stops, and threads, are
compared apart because a branch retired just before tracing stopped
without an IP is listed by ptdecode when its thread runs again (after the
trace-begin line, and after what other threads ran meanwhile); perf lists
a conditional one at once (it has the TNT bit).
Kinds: cond = jcc; jump and indirect = jmp; call and indirect-call = call;
return; syscall = "tr end syscall"; trace-end = "tr end" (async);
trace-begin = "tr strt".
Options after CAPTURE go to ptdecode (--decoder=libipt: the other decoder).
Exit 0 = pass, 1 = fail, 77 = skipped (reason printed).
"""
import shutil
import subprocess
import sys
import os

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from perf_home import perf_home  # noqa: E402

KIND = {'cond': 'jcc', 'jump': 'jmp', 'indirect': 'jmp', 'call': 'call',
        'indirect-call': 'call', 'return': 'return'}
TRACE = {'syscall': 'tr end syscall', 'trace-end': 'tr end async',
         'trace-begin': 'tr strt'}


def ns(sec):
    """'S.NNNNNNNNN' -> nanoseconds"""
    s, n = sec.split('.')
    return int(s) * 10**9 + int(n)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    ptdecode, cap = sys.argv[1:3]
    opts = sys.argv[3:]
    if not shutil.which('perf'):
        print('SKIP: perf is not installed (linux-perf)')
        sys.exit(77)
    # perf's own HOME: the recording's vDSO, nothing from this machine
    # a home per option set: the tests of both decoders may run at once
    perf_home(cap + '.branches%s.home' % ''.join(o.strip('-').replace('=', '-') for o in opts), cap)
    r = subprocess.run([ptdecode, '-q', '--branches', '--no-sym', '-t'] + opts + [cap],
                       capture_output=True, text=True)
    if r.returncode or 'Sanitizer' in r.stderr or 'runtime error:' in r.stderr:
        print('FAIL: ptdecode --branches exited %d: %s' % (r.returncode, r.stderr))
        sys.exit(1)
    ours = {}
    timed = False   # a recording with TSC: trace starts/stops have perf's times
    for line in r.stdout.splitlines():
        p = line.split()
        if len(p) < 6 or p[1] != '->':
            continue
        frm, to, kind = int(p[0], 16), int(p[2], 16), p[3]
        tid = int(p[5].split('/')[1])
        t = ns(p[6]) if len(p) > 6 else None
        timed = timed or t is not None
        if kind in KIND:
            ours.setdefault(('branch', tid), []).append((KIND[kind], frm, to))
        elif kind in TRACE:
            ours.setdefault(('trace', tid), []).append((TRACE[kind], frm, to, t))
        else:
            print('FAIL: unknown branch kind: ' + line)
            sys.exit(1)
    r = subprocess.run(['perf', 'script', '-i', os.path.join(cap, 'perf.data'),
                        '--itrace=b', '--ns', '-F',
                        'tid,time,flags,ip,addr' if timed else 'tid,flags,ip,addr'],
                       capture_output=True, text=True)
    theirs = {}
    for line in r.stdout.splitlines():
        if '=>' not in line:
            continue
        left, right = line.split('=>')
        lp = left.split()
        t = ns(lp.pop(1).rstrip(':')) if timed else None
        tid, flags = int(lp[0]), ' '.join(lp[1:-1])
        frm, to = int(lp[-1], 16), int(right, 16)
        if flags == 'tr end':      # perf prints no reason for some stops
            flags = 'tr end async'
        if flags.startswith('tr '):
            theirs.setdefault(('trace', tid), []).append((flags, frm, to, t))
        else:
            theirs.setdefault(('branch', tid), []).append((flags, frm, to))
    if set(ours) != set(theirs):
        print('FAIL: threads differ: ptdecode %s, perf %s'
              % (sorted(ours), sorted(theirs)))
        sys.exit(1)
    for what in sorted(theirs):
        a, b = ours[what], theirs[what]
        if a != b:
            n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                     min(len(a), len(b)))
            show = lambda l: [(e[0], hex(e[1]), hex(e[2])) + tuple(e[3:])
                              for e in l[max(0, n - 2):n + 3]]
            print('ptdecode: %s' % show(a))
            print('perf:     %s' % show(b))
            print('FAIL: %s list of thread %d differs from perf at entry %d '
                  '(%d vs %d entries)' % (what[0], what[1], n, len(a), len(b)))
            sys.exit(1)
    print('OK: %d branches and %d trace starts/stops%s on %d threads equal perf\'s'
          % (sum(len(v) for k, v in ours.items() if k[0] == 'branch'),
             sum(len(v) for k, v in ours.items() if k[0] == 'trace'),
             ' (with their times)' if timed else '',
             len(set(k[1] for k in ours))))


main()
