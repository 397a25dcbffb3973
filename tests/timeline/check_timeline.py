#!/usr/bin/env python3
"""check_timeline.py PTSYNTH PTDECODE OUTDIR NCPUS [--insn-only] [ptsynth options] -- CMD [ARGS]

One timeline across CPUs (ptdecode's default for several per-CPU queues)
against two oracles, on a `ptsynth record --cpus NCPUS` recording of CMD
(its threads run on NCPUS simulated CPUs at the same time, one AUX queue
per CPU):

 1. perf script (Linux perf's own Intel PT decoder, --itrace=i0ns and
    --itrace=b with cpu, tid and time): ptdecode --insn and --branches,
    with both decoders and -j1/-j2, list the same instructions (address,
    CPU, thread, time) in the same order: the interleaving across CPUs by
    time; --branches the same taken branches (kind, from, to) per thread
    and, across CPUs, in perf's order with its CPU, thread and time (but
    for branches right before a trace stop without an IP, which ptdecode
    lists when their thread runs again); --calls the calls of perf script
    --itrace=c (CPU, thread, time, target) in perf's order (the same
    exception);
 2. ptrace's ground truth: per thread, the instructions are expected.insn's
    (split by expected.threads, "CPU TID" per line), each on its CPU.

Also: -j2 prints the same instruction lines as -j1 (with disassembly); the timeline
really interleaves (the CPU changes many times), times
never go back; --per-queue gives each queue whole, one after another
(each equal to the timeline's instructions of that CPU; their times, and
so the thread at a switch, are perf's in the timeline, the decoder's own
per queue); JSON lines carry
cpu, pid, tid and time and list the same instructions.
With ptsynth's --guest-code (guest code, no guest sideband: each thread
a vcpu thread) perf script and ptdecode run with --guest-code.
--insn-only: only --insn against perf script and the ground truth.
Exit 0 = pass, 1 = fail, 77 = skipped (reason printed).
"""
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from perf_home import perf_home  # noqa: E402

def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode or 'Sanitizer' in r.stderr or 'runtime error:' in r.stderr:
        fail('%s exited %d: %s' % (' '.join(cmd), r.returncode, r.stderr[-2000:]))
    return r.stdout


def ns(text):
    """perf's and ptdecode's 'S.NNNNNNNNN' as integer ns."""
    s, f = text.rstrip(':').split('.')
    return int(s) * 1000000000 + int(f)


def first_diff(a, b, what):
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    fail('%s: entry %d differs (%d vs %d entries): ptdecode %s, perf %s'
         % (what, n, len(a), len(b), a[n:n + 3], b[n:n + 3]))


GUEST_CODE = []   # ['--guest-code'] for both tools with ptsynth --guest-code


def perf_script(cap, itrace, fields):
    """perf script's lines, split into fields."""
    out = run(['perf', 'script'] + GUEST_CODE + ['-i', os.path.join(cap, 'perf.data'),
               '--itrace=' + itrace, '-F', fields, '--ns'])
    return [line.split() for line in out.splitlines()]


def perf_insns(cap):
    # TID [CPU] TIME: IP
    return [(int(p[3], 16), int(p[1].strip('[]')), int(p[0]), ns(p[2]))
            for p in perf_script(cap, 'i0ns', 'cpu,tid,time,ip') if len(p) == 4]


def ours_insns(out):
    seq = []
    for line in out.splitlines():
        p = line.split()
        if line.startswith('0x') and len(p) >= 4:   # IP [CPU] PID/TID TIME
            seq.append((int(p[0], 16), int(p[1].strip('[]')),
                        int(p[2].split('/')[1]), ns(p[3])))
    return seq


# ptdecode --branches kind -> perf's flags (check_branches.py's table)
KIND = {'cond': 'jcc', 'jump': 'jmp', 'indirect': 'jmp', 'call': 'call',
        'indirect-call': 'call', 'return': 'return', 'syscall': 'tr end syscall',
        'trace-end': 'tr end async', 'trace-begin': 'tr strt'}


def perf_branches(cap):
    """(flags, from, to, cpu, tid, ns) of perf script --itrace=b."""
    seq = []
    for p in perf_script(cap, 'b', 'cpu,tid,time,flags,ip,addr'):
        line = ' '.join(p)
        if '=>' not in line:
            continue
        left, right = line.split('=>')
        lp = left.split()    # TID [CPU] TIME: FLAGS... FROM
        flags = ' '.join(lp[3:-1])
        if flags == 'tr end':      # perf prints no reason for some stops
            flags = 'tr end async'
        seq.append((flags, int(lp[-1], 16), int(right, 16), int(lp[1].strip('[]')),
                    int(lp[0]), ns(lp[2])))
    return seq


def ours_branches(out):
    seq = []
    for line in out.splitlines():
        p = line.split()   # FROM -> TO KIND [CPU] PID/TID TIME
        if len(p) < 7 or p[1] != '->':
            continue
        if p[3] not in KIND:
            fail('unknown branch kind: ' + line)
        seq.append((KIND[p[3]], int(p[0], 16), int(p[2], 16), int(p[4].strip('[]')),
                    int(p[5].split('/')[1]), ns(p[6])))
    return seq


def perf_calls(cap):
    """(cpu, tid, ns, target) of perf script --itrace=c's calls."""
    # TID [CPU] TIME: call FROM => TO
    return [(int(p[1].strip('[]')), int(p[0]), ns(p[2]), int(p[6], 16))
            for p in perf_script(cap, 'c', 'cpu,tid,time,flags,ip,addr')
            if len(p) == 7 and p[3] == 'call']


def ours_calls(out):
    seq = []
    for line in out.splitlines():
        p = line.split()   # TIME [CPU] PID/TID -> SYM (0xTO)
        if '->' in p:
            seq.append((int(p[1].strip('[]')), int(p[2].split('/')[1]), ns(p[0]),
                        int(p[-1].strip('()'), 16)))
    return seq


def numbered(seq):
    """The branches (not trace starts/stops) of seq, each with its thread's
    count so far, and the (tid, k) of those listed right after a trace stop
    of their thread (ptdecode's branches retired before a stop without an
    IP, listed when the thread runs again)."""
    k, out, late, prev = {}, [], set(), {}
    for e in seq:
        tid = e[4]
        if not e[0].startswith('tr '):
            k[tid] = k.get(tid, 0) + 1
            out.append(((tid, k[tid]), e))
            if prev.get(tid) == 'tr end async':
                late.add((tid, k[tid]))
        prev[tid] = e[0]
    return out, late


def compare_branches(ours, theirs, what):
    """Per thread: perf's branches in perf's order.  Across CPUs: perf's
    interleaving and times, but for branches right before a trace stop
    without an IP: ptdecode lists those when their thread runs again
    (docs/ARCHITECTURE.md), perf at once."""
    o, parked = numbered(ours)
    t, _ = numbered(theirs)
    for tid in set(e[4] for _, e in t) | set(e[4] for _, e in o):
        a = [e[:3] for _, e in o if e[4] == tid]
        b = [e[:3] for _, e in t if e[4] == tid]
        if a != b:
            first_diff(a, b, what + ' --branches of thread %d' % tid)
    a = [e for n, e in o if n not in parked]
    b = [e for n, e in t if n not in parked]
    if a != b:
        first_diff(a, b, what + ' --branches across CPUs')
    late = set((e[4], e[5], e[2]) for n, e in o if n in parked and e[0] == 'call')
    return len(t), len(parked), late


def compare_calls(ours, theirs, late, what):
    """Per thread perf's calls in order; across CPUs too, but for calls
    listed late (compare_branches)."""
    for tid in set(e[1] for e in theirs) | set(e[1] for e in ours):
        a = [e[1:] for e in ours if e[1] == tid]   # a late one: its CPU is where
        b = [e[1:] for e in theirs if e[1] == tid]  # its thread ran next
        if a != b:
            first_diff(a, b, what + ' --calls of thread %d vs perf script --itrace=c' % tid)
    a = [e for e in ours if e[1:] not in late]
    b = [e for e in theirs if e[1:] not in late]
    if a != b:
        first_diff(a, b, what + ' --calls vs perf script --itrace=c')


def ground_truth(cap):
    with open(os.path.join(cap, 'expected.insn')) as f:
        ips = [int(l, 16) for l in f]
    with open(os.path.join(cap, 'expected.threads')) as f:
        where = [tuple(int(x) for x in l.split()) for l in f]
    if len(ips) != len(where):
        fail('expected.insn has %d lines, expected.threads %d' % (len(ips), len(where)))
    per = {}
    for ip, (cpu, tid) in zip(ips, where):
        per.setdefault(tid, []).append((ip, cpu))
    return per


def main():
    if len(sys.argv) < 7 or '--' not in sys.argv:
        print(__doc__)
        sys.exit(2)
    ptsynth, ptdecode, cap, ncpus = sys.argv[1:5]
    rest = sys.argv[5:]
    insn_only = rest[0] == '--insn-only'
    if insn_only:
        rest = rest[1:]
    if '--guest-code' in rest[:rest.index('--')]:
        GUEST_CODE.append('--guest-code')
    if not shutil.which('perf'):
        print('SKIP: perf is not installed (linux-perf)')
        sys.exit(77)
    shutil.rmtree(cap, ignore_errors=True)
    r = subprocess.run([ptsynth, 'record', '-o', cap, '--cpus', ncpus] + rest,
                       capture_output=True, text=True)
    if r.returncode:
        if 'single-step trap' in r.stderr:
            print('SKIP: ' + r.stderr.strip())
            sys.exit(77)
        fail('ptsynth exited %d: %s' % (r.returncode, r.stderr))
    perf_home(cap + '.home', cap)
    truth = ground_truth(cap)
    theirs = perf_insns(cap)
    cpus = set(c for _, c, _, _ in theirs)
    if len(cpus) != min(int(ncpus), len(truth)):   # a CPU per thread at most
        fail('perf saw CPUs %s of %s for %d threads' % (sorted(cpus), ncpus, len(truth)))
    changes = sum(1 for a, b in zip(theirs, theirs[1:]) if a[1] != b[1])
    if changes < 2 * int(ncpus):
        fail('only %d CPU changes in perf\'s timeline: not interleaved' % changes)
    if any(b[3] < a[3] for a, b in zip(theirs, theirs[1:])):
        fail('perf\'s times go back')
    pbr = [] if insn_only else perf_branches(cap)
    pcalls = [] if insn_only else perf_calls(cap)
    # the oracles agree with each other first
    for tid, seq in truth.items():
        got = [(ip, cpu) for ip, cpu, t, _ in theirs if t == tid]
        if got != seq:
            first_diff(got, seq, 'perf vs ground truth, thread %d' % tid)
    timeline = None
    for dec in ('fast', 'libipt'):
        for j in ('1', '2'):
            what = '--decoder=%s -j%s' % (dec, j)
            base = [ptdecode, '-q', '--decoder=' + dec, '-j', j, '-t', '--no-sym'] + GUEST_CODE
            ours = ours_insns(run(base + ['--insn', '--no-disasm', cap]))
            if ours != theirs:
                first_diff(ours, theirs, what + ' --insn vs perf script')
            timeline = ours
            if insn_only:
                continue
            nbr, nparked, late = compare_branches(
                ours_branches(run(base + ['--branches', cap])), pbr, what)
            compare_calls(ours_calls(run(base + ['--calls', cap])), pcalls, late, what)
        if insn_only:
            continue
        # -j2 decodes the queues ahead on threads of their own: the same
        # bytes as -j1, disassembly (the decoder's text) included
        # (its instruction lines: with CYC and no MTC the fast decoder's own
        # event lines, exec-mode and switch, depend on the thread that
        # walked a segment before; ARCHITECTURE.md)
        full = [[l for l in run([ptdecode, '-q', '--decoder=' + dec, '-j', j, '-t',
                                 '--insn', cap]).splitlines()
                 if not l.startswith('[')] for j in ('1', '2')]
        if full[0] != full[1]:
            first_diff(full[1], full[0], '--decoder=%s --insn -j2 vs -j1' % dec)
        # queue after queue: each CPU's instructions whole
        pq = ours_insns(run([ptdecode, '-q', '--decoder=' + dec, '--per-queue', '-t',
                             '--no-sym', '--insn', '--no-disasm', cap]))
        order = [c for i, (_, c, _, _) in enumerate(pq) if i == 0 or pq[i - 1][1] != c]
        if order != sorted(cpus):
            fail('--decoder=%s --per-queue: CPUs come in the order %s' % (dec, order))
        for c in cpus:   # times (and so threads at a switch): the decoder's
            if [e[:2] for e in pq if e[1] == c] != [e[:2] for e in timeline if e[1] == c]:
                fail('--per-queue: CPU %d\'s instructions differ from the timeline\'s' % c)
        # JSON: every line says where and when
        js = run([ptdecode, '-q', '--decoder=' + dec, '--format=json', '--no-sym',
                  '--insn', cap])
        import json
        jseq = []
        for line in js.splitlines():
            o = json.loads(line)
            if not all(k in o for k in ('cpu', 'pid', 'tid')):
                fail('JSON line without cpu/pid/tid: ' + line)
            if o['type'] == 'insn':
                if 'time' not in o:
                    fail('JSON insn line without time: ' + line)
                jseq.append((int(o['ip'], 16), o['cpu'], o['tid'], o['time']))
        if jseq != theirs:
            first_diff(jseq, theirs, '--decoder=%s JSON vs perf script' % dec)
    if insn_only:
        print('OK: %d instructions on %s CPUs (%d CPU changes) equal perf script%s\'s '
              'timeline with both decoders at -j1 and -j2; %d threads equal expected.insn'
              % (len(theirs), ncpus, changes, ' --guest-code' * bool(GUEST_CODE), len(truth)))
        return
    print('OK: %d instructions, %d branches (%d listed late, after a trace '
          'stop) and %d calls on %s CPUs (%d CPU changes) equal perf script\'s timeline with '
          'both decoders at -j1 and -j2; %d threads equal expected.insn; '
          '--per-queue and JSON checked'
          % (len(theirs), nbr, nparked, len(pcalls), ncpus, changes, len(truth)))


main()
