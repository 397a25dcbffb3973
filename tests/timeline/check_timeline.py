#!/usr/bin/env python3
"""check_timeline.py PTSYNTH PTDECODE OUTDIR NCPUS [--insn-only] [ptsynth options] -- CMD [ARGS]

PTSYNTH copy:DIR checks a recording kept before (DIR, copied to OUTDIR;
the ground truth where it has one) instead of making one.

One timeline across CPUs (ptdecode's default for several per-CPU queues)
against two oracles, on a `ptsynth record --cpus NCPUS` recording of CMD
(its threads run on NCPUS simulated CPUs at the same time, one AUX queue
per CPU):

 1. perf script (Linux perf's own Intel PT decoder, --itrace=i0ns and
    --itrace=be with cpu, tid and time): ptdecode --insn and --branches,
    with both decoders and -j1/-j2, list the same instructions (address,
    CPU, thread, time) in the same order: the interleaving across CPUs by
    time; --branches the same taken branches (kind, from, to) per thread
    (each a step of the ground truth, below),
    the same trace starts and stops per thread (with CPU and time; an
    overflow's: the branch before it, a trace start where the trace
    resumes), the trace starts and stops of all CPUs in perf's order,
    and, across CPUs, every line in perf's order with its CPU,
    thread and time (but
    for branches right before a trace stop without an IP, which ptdecode
    lists when their thread runs again); --calls the calls of perf script
    --itrace=c (CPU, thread, time, target) in perf's order (the same
    exception);
 2. ptrace's ground truth: per thread, the instructions are expected.insn's
    (split by expected.threads, "CPU TID" per line), each on its CPU; each
    branch --branches lists goes from an instruction to the one after it
    there, in its order.

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
--no-fallback: also ptdecode --stats with both decoders at -j1 and -j2
counts no clock fallback (perf's timing followed through every packet)
and warns of none; with ptsynth's --overflows the stats count overflows
(the OVF packets were there to follow), and with --overflow-psb ptsynth's
info counts overflows that resolve at a PSB.
Event lines (--insn's and JSON's): the same with both decoders, at -j1 and
-j2, merged and --per-queue; the exec-mode ones, per CPU, one for each
MODE.Exec packet outside PSB+ that changes the mode in perf script -D's
dump of that CPU's AUX data, at the IP of the TIP or TIP.PGE it binds to (docs/FORMATS.md).
A failure prints the first differing entries with context and the
commands whose output was compared, and keeps the recording as
OUTDIR-without-.ptd.failed-N.ptd beside OUTDIR.
Exit 0 = pass, 1 = fail, 77 = skipped (reason printed).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from perf_home import perf_home  # noqa: E402

CAP = None        # the recording, kept aside on a failure
RAN = []          # the commands whose output was compared last


def keep_recording():
    """A failure keeps what it was found on: the recording is copied
    beside it (NAME.failed-N.ptd, N counting up, so a loop keeps each)."""
    if not CAP or not os.path.isdir(CAP):
        return None
    base = CAP[:-4] if CAP.endswith('.ptd') else CAP
    n = 1
    while os.path.exists('%s.failed-%d.ptd' % (base, n)):
        n += 1
    dest = '%s.failed-%d.ptd' % (base, n)
    shutil.copytree(CAP, dest, symlinks=True)
    return dest


def fail(msg):
    print('FAIL: ' + msg)
    if RAN:
        print('the output compared came from:\n  ' + '\n  '.join(RAN[-3:]))
    dest = keep_recording()
    if dest:
        print('recording kept in %s (perf needs HOME=%s.home)' % (dest, CAP))
    sys.exit(1)


T0 = time.monotonic()


def step(what):
    """Where the check is, and since when: a check stopped by the test's
    timeout (a busy machine) shows how far it came."""
    print('[%6.1f s] %s' % (time.monotonic() - T0, what), flush=True)


def run(cmd):
    RAN.append(' '.join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode or 'Sanitizer' in r.stderr or 'runtime error:' in r.stderr:
        fail('%s exited %d: %s' % (' '.join(cmd), r.returncode, r.stderr[-2000:]))
    return r.stdout


def ns(text):
    """perf's and ptdecode's 'S.NNNNNNNNN' as integer ns."""
    s, f = text.rstrip(':').split('.')
    return int(s) * 1000000000 + int(f)


def show(e, hexpos):
    """An entry as it is printed: the fields at hexpos (addresses) in hex."""
    if not isinstance(e, (tuple, list)):
        return str(e)
    return '(' + ', '.join(hex(x) if i in hexpos and isinstance(x, int) else str(x)
                           for i, x in enumerate(e)) + ')'


def first_diff(a, b, what, names=('ptdecode', 'perf'), hexpos=(0,)):
    """Fails with the first entry where a and b differ, and three entries
    of context on each side of it, side by side."""
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    lines = []
    for i in range(max(0, n - 3), min(max(len(a), len(b)), n + 4)):
        x = show(a[i], hexpos) if i < len(a) else '-'
        y = show(b[i], hexpos) if i < len(b) else '-'
        lines.append('%s %6d  %s\n         %s' % ('>' if i == n else ' ', i, x,
                                                   y if y != x else '(same)'))
    fail('%s: entry %d differs (%d vs %d entries); per entry %s, then %s:\n%s'
         % (what, n, len(a), len(b), names[0], names[1], '\n'.join(lines)))


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


OVERFLOWS = []    # perf script's "Overflow packet" errors (--itrace=be)


def perf_branches(cap):
    """(flags, from, to, cpu, tid, ns) of perf script --itrace=be (its
    overflows kept in OVERFLOWS)."""
    seq = []
    for p in perf_script(cap, 'be', 'cpu,tid,time,flags,ip,addr'):
        line = ' '.join(p)
        if 'Overflow packet' in line:
            OVERFLOWS.append(line)
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
    """The entries of seq, each branch with (its thread, its thread's
    count of branches so far), each trace start/stop with None, and the
    (tid, k) of the branches listed right after a trace stop of their
    thread (ptdecode's branches retired before a stop without an IP,
    listed when the thread runs again)."""
    k, out, late, prev = {}, [], set(), {}
    for e in seq:
        tid = e[4]
        if e[0].startswith('tr '):
            out.append((None, e))
        else:
            k[tid] = k.get(tid, 0) + 1
            out.append(((tid, k[tid]), e))
            if prev.get(tid) == 'tr end async':
                late.add((tid, k[tid]))
        prev[tid] = e[0]
    return out, late


def compare_branches(ours, theirs, what):
    """Per thread: perf's branches in perf's order, and its trace starts
    and stops (those after an overflow included) with their CPUs and
    times.  Across CPUs: the branches and trace starts in perf's
    interleaving with its times, but for branches right before a trace
    stop without an IP: ptdecode lists those when their thread runs again
    (docs/ARCHITECTURE.md), perf at once.  Trace stops are not in that
    interleaving: ptdecode lists a stop that says where the branch before
    it went with that branch, at the branch's place in the timeline; the
    trace starts and stops of all CPUs together are in perf's order."""
    o, parked = numbered(ours)
    t, _ = numbered(theirs)
    for tid in set(e[4] for _, e in t) | set(e[4] for _, e in o):
        a = [e[:3] for n, e in o if e[4] == tid and n]
        b = [e[:3] for n, e in t if e[4] == tid and n]
        if a != b:
            first_diff(a, b, what + ' --branches of thread %d' % tid, hexpos=(1, 2))
        a = [e for n, e in o if e[4] == tid and not n]
        b = [e for n, e in t if e[4] == tid and not n]
        if a != b:
            first_diff(a, b, what + ' --branches: trace starts/stops of thread %d' % tid,
                       hexpos=(1, 2))
    a = [e for n, e in o if n not in parked and not e[0].startswith('tr end')]
    b = [e for n, e in t if n not in parked and not e[0].startswith('tr end')]
    if a != b:
        first_diff(a, b, what + ' --branches across CPUs', hexpos=(1, 2))
    a = [e for n, e in o if not n]
    b = [e for n, e in t if not n]
    if a != b:
        first_diff(a, b, what + ' --branches: trace starts and stops across CPUs',
                   hexpos=(1, 2))
    late = set((e[4], e[5], e[2]) for n, e in o if n in parked and e[0] == 'call')
    return (sum(1 for n, _ in t if n), sum(1 for n, _ in t if not n), len(parked),
            late, sum(1 for n, e in t if not n and e[0] == 'tr strt'))


def branches_in_truth(ours, truth, what):
    """Per thread, each branch (from, to) ptdecode lists is a step from
    one instruction to the next in the ground truth, in the truth's order
    (those around overflows included)."""
    for tid, seq in truth.items():
        steps = iter(zip(seq, seq[1:]))
        for e in ours:
            if e[4] != tid or e[0].startswith('tr '):
                continue
            if not any(a[0] == e[1] and b[0] == e[2] for a, b in steps):
                fail('%s --branches: thread %d\'s branch %s is no step of the ground '
                     'truth (expected.insn) after the branches before it'
                     % (what, tid, show(e, (1, 2))))


def compare_calls(ours, theirs, late, what):
    """Per thread perf's calls in order; across CPUs too, but for calls
    listed late (compare_branches)."""
    for tid in set(e[1] for e in theirs) | set(e[1] for e in ours):
        a = [e[1:] for e in ours if e[1] == tid]   # a late one: its CPU is where
        b = [e[1:] for e in theirs if e[1] == tid]  # its thread ran next
        if a != b:
            first_diff(a, b, what + ' --calls of thread %d vs perf script --itrace=c' % tid,
                       hexpos=(2,))
    a = [e for e in ours if e[1:] not in late]
    b = [e for e in theirs if e[1:] not in late]
    if a != b:
        first_diff(a, b, what + ' --calls vs perf script --itrace=c', hexpos=(3,))


PKT = re.compile(r'^\.\s+[0-9a-f]{8}:\s+((?:[0-9a-f]{2} )+)\s*(\S+)\s*(.*)$')
IPLEN = {1: 2, 2: 4, 3: 6, 4: 6, 6: 8}   # IPBytes -> payload bytes


def perf_modes(cap):
    """{cpu: [(ip, mode)]}: each MODE.Exec packet outside PSB+ in perf
    script -D's packet dump of that CPU's AUX data that changes the mode
    (the last MODE.Exec's, PSB+'s included), with the IP of the TIP or
    TIP.PGE it binds to (Intel SDM: the mode from that IP on)."""
    out = run(['perf', 'script', '-D', '-i', os.path.join(cap, 'perf.data')])
    modes, cpu, last, psb, pending, known = {}, None, {}, False, {}, {}
    for line in out.splitlines():
        if 'PERF_RECORD_AUXTRACE ' in line:
            cpu = int(line.split('cpu:')[1].split()[0])
            continue
        m = PKT.match(line)
        if not m or cpu is None:
            continue
        raw = bytes.fromhex(m.group(1).replace(' ', ''))
        name = m.group(2)
        if name == 'PSB':
            psb, last[cpu] = True, 0
        elif name == 'PSBEND':
            psb = False
        elif name == 'MODE.Exec' and psb:
            known[cpu] = m.group(3).split()[-1]
        elif name == 'MODE.Exec':
            pending[cpu] = m.group(3).split()[-1]
        elif name in ('TIP', 'TIP.PGE', 'TIP.PGD', 'FUP'):
            n = IPLEN.get(raw[0] >> 5, 0)
            ip = last.get(cpu, 0)
            if n:
                part = int.from_bytes(raw[1:1 + n], 'little')
                if raw[0] >> 5 == 3:     # sign-extended 48 bits
                    ip = part | (0xffff << 48 if part >> 47 else 0)
                else:
                    ip = (ip & ~((1 << 8 * n) - 1)) | part
                last[cpu] = ip
            if name in ('TIP', 'TIP.PGE') and cpu in pending:
                mode = pending.pop(cpu)
                if known.get(cpu) != mode:
                    modes.setdefault(cpu, []).append((ip, mode))
                known[cpu] = mode
    return modes


def build_id_cache(cap, home):
    """The program's ELF file in perf's build-id cache under home, from
    the recording's .build-id copy: perf finds it there when the path the
    recording names is gone (a recording made elsewhere)."""
    top = os.path.join(cap, '.build-id')
    if not os.path.isdir(top):
        return
    paths = dict(l.split(None, 1) for l in
                 run(['perf', 'buildid-list', '-i', os.path.join(cap, 'perf.data')]).splitlines()
                 if len(l.split(None, 1)) == 2)
    for d in os.listdir(top):
        for rest in os.listdir(os.path.join(top, d)):
            bid = d + rest
            path = paths.get(bid, '').strip()
            if not path.startswith('/'):
                continue
            dst = os.path.join(home, '.debug', path.lstrip('/'), bid)
            os.makedirs(dst, exist_ok=True)
            shutil.copyfile(os.path.join(top, d, rest), os.path.join(dst, 'elf'))
            link = os.path.join(home, '.debug', '.build-id', d)
            os.makedirs(link, exist_ok=True)
            os.symlink(os.path.relpath(dst, link), os.path.join(link, rest))


def ground_truth(cap):
    """Per thread, the ground truth's (ip, cpu) list; None without it."""
    if not os.path.exists(os.path.join(cap, 'expected.insn')):
        return None
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


def check_no_fallback(ptdecode, cap, dec, j, overflows):
    """ptdecode --stats: no clock fallback counted or warned of; with
    overflows in the recording, overflows counted."""
    cmd = [ptdecode, '--decoder=' + dec, '-j', j, '--stats', '-t', '--no-sym', '--insn',
           '--no-disasm', cap] + GUEST_CODE
    RAN.append(' '.join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        fail('%s exited %d: %s' % (' '.join(cmd), r.returncode, r.stderr[-2000:]))
    st = dict(re.findall(r'^([a-z ]+): (\d+)$', r.stdout, re.M))
    for k in ('clock fallback queues', 'clock fallback events'):
        if st.get(k) != '0':
            fail('--decoder=%s -j%s --stats: %s: %s (expected 0)' % (dec, j, k, st.get(k)))
    if 'clock fallback' in r.stderr or 'timing cannot be followed' in r.stderr:
        fail('--decoder=%s -j%s warns of a clock fallback: %s' % (dec, j, r.stderr[-1000:]))
    if overflows and int(st.get('overflows', '0')) == 0:
        fail('--decoder=%s -j%s --stats: no overflows in a recording made with '
             '--overflows' % (dec, j))
    info = os.path.join(cap, 'info')
    if overflows and os.path.exists(info):
        with open(info) as f:
            at_psb = dict(l.strip().split('=', 1) for l in f if '=' in l).get('overflows_at_psb')
        if at_psb == '0':
            fail('ptsynth --overflow-psb planted no overflow that resolves at a PSB')


def main():
    if len(sys.argv) < 7 or '--' not in sys.argv:
        print(__doc__)
        sys.exit(2)
    global CAP
    ptsynth, ptdecode, cap, ncpus = sys.argv[1:5]
    rest = sys.argv[5:]
    insn_only = no_fallback = False
    while rest and rest[0] in ('--insn-only', '--no-fallback'):
        insn_only |= rest[0] == '--insn-only'
        no_fallback |= rest[0] == '--no-fallback'
        rest = rest[1:]
    if '--guest-code' in rest[:rest.index('--')]:
        GUEST_CODE.append('--guest-code')
    if not shutil.which('perf'):
        print('SKIP: perf is not installed (linux-perf)')
        sys.exit(77)
    shutil.rmtree(cap, ignore_errors=True)
    if ptsynth.startswith('copy:'):
        # a recording kept from an earlier run (no ground truth with it)
        shutil.copytree(ptsynth[5:], cap)
    else:
        step('recording with ptsynth')
        r = subprocess.run([ptsynth, 'record', '-o', cap, '--cpus', ncpus] + rest,
                           capture_output=True, text=True)
        if r.returncode:
            if 'single-step trap' in r.stderr:
                print('SKIP: ' + r.stderr.strip())
                sys.exit(77)
            fail('ptsynth exited %d: %s' % (r.returncode, r.stderr))
    CAP = cap
    home = perf_home(cap + '.home', cap)
    build_id_cache(cap, home)
    truth = ground_truth(cap)
    step('perf script')
    theirs = perf_insns(cap)
    cpus = set(c for _, c, _, _ in theirs)
    nthreads = len(truth) if truth else len(set(t for _, _, t, _ in theirs))
    if len(cpus) != min(int(ncpus), nthreads):   # a CPU per thread at most
        fail('perf saw CPUs %s of %s for %d threads' % (sorted(cpus), ncpus, nthreads))
    changes = sum(1 for a, b in zip(theirs, theirs[1:]) if a[1] != b[1])
    if changes < 2 * int(ncpus):
        fail('only %d CPU changes in perf\'s timeline: not interleaved' % changes)
    if any(b[3] < a[3] for a, b in zip(theirs, theirs[1:])):
        fail('perf\'s times go back')
    pbr = [] if insn_only else perf_branches(cap)
    if not insn_only and '--overflows' in rest[:rest.index('--')] and not OVERFLOWS:
        fail('perf script shows no overflow in a recording made with --overflows')
    pcalls = [] if insn_only else perf_calls(cap)
    # the oracles agree with each other first
    for tid, seq in (truth or {}).items():
        got = [(ip, cpu) for ip, cpu, t, _ in theirs if t == tid]
        if got != seq:
            first_diff(got, seq, 'perf vs ground truth, thread %d' % tid,
                       ('perf', 'expected.insn'))
    pmodes = {} if insn_only else perf_modes(cap)
    if not pmodes and not insn_only:
        fail('perf script -D shows no MODE.Exec outside PSB+: nothing to check exec-mode with')
    events, jevents = {}, {}
    timeline = None
    for dec in ('fast', 'libipt'):
        step('ptdecode --decoder=' + dec)
        full = []
        for j in ('1', '2'):
            what = '--decoder=%s -j%s' % (dec, j)
            base = [ptdecode, '-q', '--decoder=' + dec, '-j', j, '-t', '--no-sym'] + GUEST_CODE
            # with symbols and disassembly (the decoder's text)
            full.append(run([ptdecode, '-q', '--decoder=' + dec, '-j', j, '-t',
                             '--insn', cap] + GUEST_CODE).splitlines())
            ours = ours_insns('\n'.join(full[-1]))
            if ours != theirs:
                first_diff(ours, theirs, what + ' --insn vs perf script')
            timeline = ours
            if no_fallback:
                check_no_fallback(ptdecode, cap, dec, j, '--overflows' in rest[:rest.index('--')])
            if insn_only:
                continue
            obr = ours_branches(run(base + ['--branches', cap]))
            nbr, ntrace, nparked, late, nbegin = compare_branches(obr, pbr, what)
            if truth:
                branches_in_truth(obr, truth, what)
            compare_calls(ours_calls(run(base + ['--calls', cap])), pcalls, late, what)
        if insn_only:
            continue
        # -j2 decodes the queues ahead on threads of their own: the same
        # bytes as -j1, disassembly (the decoder's text) and event lines
        # included
        if full[0] != full[1]:
            first_diff(full[1], full[0], '--decoder=%s --insn -j2 vs -j1' % dec,
                       ('-j2', '-j1'))
        for j, out in zip(('1', '2'), full):
            events[('merged', dec, j)] = [l for l in out if l.startswith('[')]
        # queue after queue: each CPU's instructions whole
        for j in ('1', '2'):
            out = run([ptdecode, '-q', '--decoder=' + dec, '--per-queue', '-j', j, '-t',
                       '--no-sym', '--insn', '--no-disasm', cap] + GUEST_CODE)
            events[('per-queue', dec, j)] = [l for l in out.splitlines()
                                             if l.startswith('[')]
            pq = ours_insns(out)
            order = [c for i, (_, c, _, _) in enumerate(pq) if i == 0 or pq[i - 1][1] != c]
            if order != sorted(cpus):
                fail('--decoder=%s --per-queue: CPUs come in the order %s' % (dec, order))
            for c in cpus:   # times (and so threads at a switch): the decoder's
                a = [e[:2] for e in pq if e[1] == c]
                b = [e[:2] for e in timeline if e[1] == c]
                if a != b:
                    first_diff(a, b, '--decoder=%s --per-queue: CPU %d\'s instructions vs '
                               'the timeline\'s' % (dec, c), ('--per-queue', 'timeline'))
        # JSON: every line says where and when
        for order, j in (('merged', '1'), ('merged', '2'), ('per-queue', '1')):
            what = '--decoder=%s -j%s %s JSON' % (dec, j, order)
            js = run([ptdecode, '-q', '--decoder=' + dec, '-j', j, '--format=json',
                      '--no-sym', '--insn', cap] + GUEST_CODE +
                     (['--per-queue'] if order != 'merged' else []))
            jseq, jev = [], []
            for line in js.splitlines():
                # the instructions: those of merged -j1 (the others' are
                # the text's, checked above)
                if (order, j) != ('merged', '1') and line.startswith('{"type":"insn"'):
                    continue
                o = json.loads(line)
                if not all(k in o for k in ('cpu', 'pid', 'tid')):
                    fail('JSON line without cpu/pid/tid: ' + line)
                if o['type'] == 'insn':
                    if 'time' not in o:
                        fail('JSON insn line without time: ' + line)
                    jseq.append((int(o['ip'], 16), o['cpu'], o['tid'], o['time']))
                else:
                    jev.append(line)
            if (order, j) == ('merged', '1') and jseq != theirs:
                first_diff(jseq, theirs, what + ' vs perf script')
            jevents[(order, dec, j)] = jev
            # exec-mode: one per MODE.Exec outside PSB+, at its TIP's IP
            for c in cpus | set(pmodes):
                a = [(int(o['ip'], 16), o['mode']) for o in map(json.loads, jev)
                     if o['type'] == 'exec-mode' and o['cpu'] == c]
                if a != pmodes.get(c, []):
                    first_diff(a, pmodes.get(c, []), what + ': exec-mode events of CPU %d '
                               'vs the MODE.Exec packets of perf script -D' % c)
    if insn_only:
        print('OK: %d instructions on %s CPUs (%d CPU changes) equal perf script%s\'s '
              'timeline with both decoders at -j1 and -j2; %d threads equal expected.insn'
              % (len(theirs), ncpus, changes, ' --guest-code' * bool(GUEST_CODE), len(truth or {})))
        return
    step('event lines')
    # the event lines (exec-mode, enabled, disabled, switch, ...): the
    # same with both decoders at -j1 and -j2, in each order
    for ev, kind in ((events, '--insn'), (jevents, 'JSON')):
        for key, lines in sorted(ev.items()):
            ref = ev[(key[0], 'libipt', '1')]
            if lines != ref:
                first_diff(lines, ref, '%s %s event lines' % (key[0], kind),
                           ('--decoder=%s -j%s' % key[1:], '--decoder=libipt -j1'))
    print('OK: %d instructions, %d branches (%d listed late, after a trace '
          'stop), %d trace starts/stops (%d starts; %d overflows) and %d calls on %s CPUs '
          '(%d CPU changes) equal perf script\'s timeline with '
          'both decoders at -j1 and -j2; %d threads equal expected.insn; '
          '--per-queue and JSON checked; %d exec-mode events (of %d event lines) equal '
          'perf script -D\'s MODE.Exec packets and are the same with both decoders, '
          'merged and per queue, -j1 and -j2'
          % (len(theirs), nbr, nparked, ntrace, nbegin, len(OVERFLOWS), len(pcalls), ncpus,
             changes, nthreads,
             sum(len(v) for v in pmodes.values()), len(events[('merged', 'libipt', '1')]))
          + ('' if truth else ' (a kept recording: no ground truth)'))


if __name__ == '__main__':   # check_snapshot.py imports its branch checks
    main()
