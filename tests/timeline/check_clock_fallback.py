#!/usr/bin/env python3
"""check_clock_fallback.py PTSYNTH PTDECODE OUT NCPUS [ptsynth options] -- CMD

The merged timeline's clock fallback (backend/perfclock.h): a queue whose
packets perf's timing rules cannot be followed is timed and ordered by
the decoder's own timestamps from there.  On a `ptsynth record --cpus
NCPUS` recording of CMD:

 1. as recorded: ptdecode --stats counts no fallback (clock fallback
    queues: 0, events: 0) and warns of none;
 2. a TIP with reserved IP compression in CPU 1's trace right after a
    PSB+ in its middle (clock_mutate.py badpkt: a decode error there, in
    perf too), with both decoders at -j1 and -j2:
    a. as ptdecode decodes a perf.data by default (after an error on from
       the next IP, past a bad packet where the flow was, as perf's
       decoder does): each CPU's instruction addresses are perf
       script's; --stats counts the errors and resyncs; the error lines
       come where perf script --itrace=e lists its errors (among CPU 1's
       instructions, with perf's IP: the bad TIP's error before the
       instructions that lead to the branch that needed it, as perf
       reads a packet as soon as the one before it is used); where
       --stats counts no clock fallback (perf's clock followed over the
       bad packet) every line (address, CPU, thread, time) is perf
       script's, in perf's order, and the error lines are where perf's
       are among all lines, at their times, else one warning says so (a
       later mismatch error the clock does not follow);
    b. with --resync-at-psb (libipt's restart at the next PSB): --stats
       counts the error and exactly one fallback queue, with at least as
       many fallback events as ptdecode lists instructions on CPU 1 after
       its first error line; one warning names CPU 1; CPU 0's
       instructions (address, thread, time) are perf script's; CPU 1
       lacks those up to the next PSB (the lines that differ are counted
       and printed);
 3. no fallback where perf's decoder has none: CPU 1's first PSB padded
    out (clock_mutate.py nopsb: its queue begins with a PSB+'s body
    without the PSB; perf walks to the next PSB through those packets,
    keeping their timing, and so does the clock): both decoders at -j1
    list every line (address, CPU, thread, time) as perf script does,
    with no clock fallback;
 4. no fallback where a bad packet comes while tracing is off (clock_mutate.py
    badoff: between a trace stop and the TIP.PGE after it; the decoders
    resume at that TIP.PGE, perf's decoder steps over the bad packet and
    reads on to it): both decoders at -j1 and -j2 list one error, at
    perf's time for it, and every line (address, CPU, thread, time) as
    perf script does, with no clock fallback; --branches' trace begins
    (CPU, thread, time, address) are perf script --itrace=b's.
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


def perf_insns(cap, errors=None):
    """perf script's instructions (ip, cpu, tid, ns); its error lines
    appended to errors as error_at() gives them."""
    out = run(['perf', 'script', '-i', os.path.join(cap, 'perf.data'),
               '--itrace=i0nse', '-F', 'cpu,tid,time,ip', '--ns']).stdout
    seq = []
    for line in out.splitlines():
        p = line.split()   # TID [CPU] TIME: IP
        if len(p) == 4:
            seq.append((int(p[3], 16), int(p[1].strip('[]')), int(p[0]), ns(p[2])))
        m = re.search(r'instruction trace error .* time (\d+\.\d+) cpu (\d+) .* ip (0x[0-9a-f]+) ',
                      line)
        if m and errors is not None:
            errors.append(error_at(seq, int(m.group(2)), int(m.group(3), 16),
                                   ns(m.group(1))))
    return seq


def error_at(seq, cpu, ip, t):
    """An error line's place: (lines before it, CPU cpu's instructions
    before it, its IP, its time)."""
    return (len(seq), sum(1 for e in seq if e[1] == cpu), ip, t)


def ours(ptdecode, cap, dec, j, opts=(), errors=None, cpu=1):
    """ptdecode --insn's instructions (ip, cpu, tid, ns), --stats, the
    merged timeline's warnings and the first error line's place (lines
    before it); its error lines appended to errors as error_at() gives
    them for CPU cpu (the one clock_mutate.py damaged)."""
    r = run([ptdecode, '--decoder=' + dec, '-j', j, '--stats', '-t', '--no-sym',
             '--insn', '--no-disasm'] + list(opts) + [cap])
    seq, err = [], None
    for line in r.stdout.splitlines():
        p = line.split()   # IP [CPU] PID/TID TIME
        if line.startswith('0x') and len(p) >= 4:
            seq.append((int(p[0], 16), int(p[1].strip('[]')),
                        int(p[2].split('/')[1]), ns(p[3])))
        elif line.startswith('[error '):
            if err is None:
                err = len(seq)
            m = re.search(r' ip=(0x[0-9a-f]+) .*time=(\d+\.\d+)', line)
            if m and errors is not None:
                errors.append(error_at(seq, cpu, int(m.group(1), 16), ns(m.group(2))))
    st = dict(re.findall(r'^([a-z ]+): (\d+)$', r.stdout, re.M))
    warns = [l for l in r.stderr.splitlines() if 'merged timeline:' in l]
    return seq, st, warns, err


def perf_begins(cap):
    """perf script's trace begins (cpu, tid, ns, to) and its error times."""
    out = run(['perf', 'script', '-i', os.path.join(cap, 'perf.data'), '--itrace=be',
               '-F', 'cpu,tid,time,flags,ip,addr', '--ns']).stdout
    begins, errs = [], []
    for line in out.splitlines():
        p = line.split()   # TID [CPU] TIME: tr strt FROM => TO
        if len(p) >= 7 and p[3:5] == ['tr', 'strt']:
            begins.append((int(p[1].strip('[]')), int(p[0]), ns(p[2]), int(p[-1], 16)))
        m = re.search(r'instruction trace error .* time (\d+\.\d+) ', line)
        if m:
            errs.append(ns(m.group(1)))
    return begins, errs


def ours_begins(ptdecode, cap, dec, j):
    """ptdecode --branches' trace begins (cpu, tid, ns, to) and its error
    lines' times."""
    out = run([ptdecode, '-q', '--decoder=' + dec, '-j', j, '-t', '--no-sym',
               '--branches', cap]).stdout
    begins, errs = [], []
    for line in out.splitlines():
        p = line.split()   # 0 -> TO trace-begin [CPU] PID/TID TIME
        if len(p) >= 7 and p[3] == 'trace-begin':
            begins.append((int(p[4].strip('[]')), int(p[5].split('/')[1]), ns(p[6]),
                           int(p[2], 16)))
        m = re.match(r'\[error .* time=(\d+\.\d+)', line)
        if m:
            errs.append(ns(m.group(1)))
    return begins, errs


def mutated(cap, mode):
    """A copy of the capture, CPU 1's trace damaged by clock_mutate.py."""
    out = cap + '.' + mode
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(cap, out, symlinks=True)
    m = run([sys.executable, os.path.join(here, 'clock_mutate.py'),
             os.path.join(cap, 'perf.data'), os.path.join(out, 'perf.data'), mode, '1'])
    print(m.stdout.strip())
    return out


def record(doc):
    """Makes the recording the command line asks for (PTSYNTH PTDECODE OUT
    NCPUS [ptsynth options] -- CMD); returns (ptdecode, out), or the exit
    code (77: skipped, 1: failed)."""
    if len(sys.argv) < 7 or '--' not in sys.argv:
        sys.exit(doc)
    ptsynth, ptdecode, cap, ncpus = sys.argv[1:5]
    rest = sys.argv[5:]
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
    return ptdecode, cap


def main():
    rec = record(__doc__)
    if not isinstance(rec, tuple):
        return rec
    ptdecode, cap = rec

    # 1. as recorded: nothing to fall back from
    _, st, warns, _ = ours(ptdecode, cap, 'fast', '1')
    if st.get('clock fallback queues') != '0' or st.get('clock fallback events') != '0' \
            or warns:
        fail('as recorded: clock fallback queues %s, events %s, warnings %s'
             % (st.get('clock fallback queues'), st.get('clock fallback events'), warns))

    # 2. a decode error in CPU 1's trace
    bad = mutated(cap, 'badpkt')
    perr = []
    theirs = perf_insns(bad, perr)
    cpu1 = sum(1 for e in theirs if e[1] == 1)
    cpus = sorted(set(e[1] for e in theirs))
    if not cpu1 or len(cpus) < 2:
        fail('perf script lists %d instructions on CPU 1, CPUs %s' % (cpu1, cpus))
        return 1
    for dec in ('fast', 'libipt'):
        for j in ('1', '2'):
            what = '--decoder=%s -j%s' % (dec, j)
            oerr = []
            seq, st, warns, err = ours(ptdecode, bad, dec, j, errors=oerr)
            fb = st.get('clock fallback queues')
            flows = all([e[0] for e in seq if e[1] == c] == [e[0] for e in theirs if e[1] == c]
                        for c in cpus)
            # the error lines where perf has them: among CPU 1's
            # instructions with perf's IP; where all lines are compared,
            # among all lines and at perf's time too
            errs_at = oerr == perr if fb == '0' else \
                [e[1:3] for e in oerr] == [e[1:3] for e in perr]
            same = sum(1 for x, y in zip(seq, theirs) if x == y)
            k = next((i for i, (x, y) in enumerate(zip(seq, theirs)) if x != y),
                     min(len(seq), len(theirs)))
            # every CPU's instructions are perf's; all lines (thread,
            # time, order) too where perf's clock could be followed
            if not flows or (fb == '0' and seq != theirs) or err is None or \
                    int(st.get('errors', 0)) < 1 or \
                    int(st.get('resyncs after errors', 0)) < 1 or \
                    (fb == '0') != (not warns) or not errs_at:
                fail('%s: %d lines, perf script %d, %d equal, first difference at %d; '
                     'addresses per CPU equal: %s; error line %s, errors %s, resyncs '
                     '%s, clock fallback queues %s, warnings %s; error lines (lines '
                     'before, CPU 1 instructions before, ip, ns) %s, perf script\'s %s'
                     % (what, len(seq), len(theirs), same, k, flows, err,
                        st.get('errors'), st.get('resyncs after errors'), fb, warns,
                        oerr, perr))
            else:
                print('OK %s: %d lines, perf script %d: every CPU\'s addresses perf\'s, '
                      '%d lines equal (error line at %d, %s resync(s)), clock fallback '
                      'queues %s; %d error line(s) where perf script has them%s'
                      % (what, len(seq), len(theirs), same, err,
                         st.get('resyncs after errors'), fb, len(oerr),
                         ' (all lines)' if fb == '0' else ' (among CPU 1\'s)'))
            what += ' --resync-at-psb'
            seq, st, warns, err = ours(ptdecode, bad, dec, j, ['--resync-at-psb'])
            q = int(st.get('clock fallback queues', -1))
            n = int(st.get('clock fallback events', -1))
            after = sum(1 for e in seq[err or 0:] if e[1] == 1)
            if err is None or q != 1 or n < after:
                fail('%s: error line %s, clock fallback queues %d, events %d; want 1 '
                     'queue and at least the %d instructions on CPU 1 after the error'
                     % (what, err, q, n, after))
            if len(warns) != 1 or '(cpu 1)' not in warns[0] or int(st.get('errors', 0)) < 1:
                fail('%s: want one warning naming cpu 1 and an error: %s, errors %s'
                     % (what, warns, st.get('errors')))
            a = [e for e in seq if e[1] == 0]
            b = [e for e in theirs if e[1] == 0]
            if a != b:
                k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                         min(len(a), len(b)))
                fail('%s: CPU 0: %d instructions, perf %d; first difference at %d'
                     % (what, len(a), len(b), k))
            a = [e[:3:2] for e in seq if e[1] == 1]
            b = [e[:3:2] for e in theirs if e[1] == 1]
            same1 = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                         min(len(a), len(b)))
            diff = sum(1 for x, y in zip(seq, theirs) if x != y) + abs(len(seq) - len(theirs))
            print('%s %s: %d instructions (perf %d); CPU 0 = perf script; CPU 1: %d '
                  '(perf %d), the first %d equal; clock fallback: %d queue, %d events; '
                  'merged lines differing from perf script\'s: %d (reported)'
                  % ('FAIL' if FAILS else 'OK', what, len(seq), len(theirs), len(a),
                     len(b), same1, q, n, diff))
    # 3. a queue that begins without its PSB
    nopsb = mutated(cap, 'nopsb')
    theirs = perf_insns(nopsb)
    for dec in ('fast', 'libipt'):
        seq, st, warns, _ = ours(ptdecode, nopsb, dec, '1')
        k = next((i for i, (x, y) in enumerate(zip(seq, theirs)) if x != y),
                 min(len(seq), len(theirs)))
        if seq != theirs or st.get('clock fallback queues') != '0' or warns:
            fail('--decoder=%s, CPU 1 without its first PSB: %d lines, perf script %d, '
                 'first difference at %d; clock fallback queues %s, warnings %s'
                 % (dec, len(seq), len(theirs), k, st.get('clock fallback queues'), warns))
        else:
            print('OK --decoder=%s, CPU 1 without its first PSB: %d lines = perf '
                  'script\'s, no clock fallback' % (dec, len(seq)))
    # 4. a bad packet while tracing is off
    off = mutated(cap, 'badoff')
    theirs = perf_insns(off)
    pbegins, perr = perf_begins(off)
    for dec in ('fast', 'libipt'):
        for j in ('1', '2'):
            seq, st, warns, err = ours(ptdecode, off, dec, j)
            k = next((i for i, (x, y) in enumerate(zip(seq, theirs)) if x != y),
                     min(len(seq), len(theirs)))
            begins, errs = ours_begins(ptdecode, off, dec, j)
            if seq != theirs or st.get('clock fallback queues') != '0' or warns or \
                    err is None or int(st.get('errors', 0)) != 1 or \
                    begins != pbegins or errs != perr:
                kb = next((i for i, (x, y) in enumerate(zip(begins, pbegins)) if x != y),
                          min(len(begins), len(pbegins)))
                fail('--decoder=%s -j%s, a bad packet on CPU 1 while tracing is off: %d '
                     'lines, perf script %d, first difference at %d; error line %s, errors '
                     '%s, clock fallback queues %s, warnings %s; trace begins %d, perf %d, '
                     'first difference at %d %s; error times %s, perf %s'
                     % (dec, j, len(seq), len(theirs), k, err, st.get('errors'),
                        st.get('clock fallback queues'), warns, len(begins), len(pbegins),
                        kb, begins[kb:kb + 1] + pbegins[kb:kb + 1], errs, perr))
            else:
                print('OK --decoder=%s -j%s, a bad packet on CPU 1 while tracing is off: '
                      '%d lines and %d trace begins = perf script\'s (error line at %d, at '
                      'perf\'s time), no clock fallback' % (dec, j, len(seq), len(begins), err))
    return 1 if FAILS else 0


if __name__ == '__main__':
    sys.exit(main())
