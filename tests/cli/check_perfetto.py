#!/usr/bin/env python3
"""check_perfetto.py PTDECODE CAPTURE time|insns [PTDECODE-OPTION...]
   check_perfetto.py PTDECODE --structure INPUT_ARGS...

Checks `ptdecode --perfetto` on a ptsynth recording of a static program
against two independent oracles:
  1. protoc (Debian's protobuf compiler) decodes the file with
     perfetto_subset.proto, and the packets are well formed: one sequence, the first packet clearing
     the incremental state, every interned name defined before its use,
     every event on a track described before it, slices properly nested;
  2. Linux perf's own Intel PT decoder (perf script --itrace=b) gives the
     calls and returns: per thread run, the slices must begin at the same
     call targets (our slice names resolved to addresses with nm of the
     program) and end at the same returns, in the same order.  Times: a
     slice begins at its callee's first instruction and ends at the one
     after the return; "time": at that instruction's time in ptdecode's
     --insn -t timeline (checked against perf's by the synth timing tests);
     "insns" (a recording without timing): at its position in
     expected.insn, the recorded execution, counting from 1.
With --structure (any input, e.g. a trace with decode errors) only the
first check runs, plus: every error, gap and overflow that --stats counts
is an instant event, and no slice stays open.
Exit 0 = pass, 1 = fail, 77 = skipped (reason printed).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from perf_home import perf_home  # noqa: E402


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def skip(msg):
    print('SKIP: ' + msg)
    sys.exit(77)


def parse_text_format(text):
    """protoc --decode output -> list of (field, value); a nested message
    is a list of the same form."""
    root = []
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == '}':
            stack.pop()
            continue
        m = re.match(r'^(\w+) \{$', line)
        if m:
            sub = []
            stack[-1].append((m.group(1), sub))
            stack.append(sub)
            continue
        m = re.match(r'^(\w+): (.*)$', line)
        if not m:
            fail('cannot read protoc line: ' + line)
        if m.group(1).isdigit():
            fail('field %s is not in Perfetto\'s trace format' % m.group(1))
        val = m.group(2)
        if val.startswith('"'):
            val = val[1:-1].encode().decode('unicode_escape')
        else:
            val = int(val, 0)
        stack[-1].append((m.group(1), val))
    if len(stack) != 1:
        fail('protoc output is not balanced')
    return root


def get(msg, field, default=None):
    for f, v in msg:
        if f == field:
            return v
    return default


def get_all(msg, field):
    return [v for f, v in msg if f == field]


def main():
    structure = len(sys.argv) > 3 and sys.argv[2] == '--structure'
    if len(sys.argv) < 4 and not structure:
        print(__doc__)
        sys.exit(2)
    ptdecode = sys.argv[1]
    opts = [] if structure else sys.argv[4:]   # e.g. --decoder=libipt
    args = sys.argv[3:] if structure else opts + [sys.argv[2]]
    for tool in ('protoc', 'perf', 'nm'):
        if not shutil.which(tool):
            skip(tool + ' is not installed (protobuf-compiler, linux-perf, binutils)')
    if not structure:
        cap, clock = sys.argv[2:4]
        if not os.path.exists(os.path.join(cap, 'expected.insn')):
            fail('no recording in ' + cap)
        cmd = open(os.path.join(cap, 'cmd')).read().split()
        prog = cmd[cmd.index('--') + 1]
        # perf's own HOME: the recording's vDSO, nothing from this machine
        # (a home per option set: the tests of both decoders may run at once)
        perf_home(cap + '.perfetto%s.home'
                  % ''.join(o.strip('-').replace('=', '-') for o in opts), cap)

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'trace.pftrace')
        r = subprocess.run([ptdecode, '-q', '--perfetto', '--stats', '-o', out] + args,
                           capture_output=True, text=True)
        if (r.returncode and not structure) or 'Sanitizer' in r.stderr or \
                'runtime error:' in r.stderr or r.returncode > 1:
            fail('ptdecode --perfetto exited %d: %s' % (r.returncode, r.stderr))
        stats = {}
        for line in r.stderr.splitlines():   # --stats go to stderr
            k, _, v = line.partition(': ')
            if v.isdigit():
                stats[k] = int(v)
        here = os.path.dirname(os.path.abspath(__file__))
        with open(out, 'rb') as f:
            r = subprocess.run(['protoc', '-I', here, '--decode=ptdtest.Trace',
                                'perfetto_subset.proto'], stdin=f,
                               capture_output=True, text=True)
        if r.returncode:
            fail('protoc cannot decode the trace: ' + r.stderr.strip())
        trace = parse_text_format(r.stdout)

    # 1. the packets
    names, tracks, opened = {}, {}, {}
    thread_names = {}
    instants = 0
    got = {}  # tid -> list of runs; a run is a list of (kind, name, ts)
    last_uuid = None
    for i, (field, pkt) in enumerate(trace):
        if field != 'packet' or not isinstance(pkt, list):
            fail('top-level field %d is not Trace.packet' % field)
        if get(pkt, 'trusted_packet_sequence_id') != 1:
            fail('packet %d: trusted_packet_sequence_id is not 1' % i)
        flags = get(pkt, 'sequence_flags', 0)
        if i == 0 and flags != 3:
            fail('the first packet does not clear the incremental state')
        interned = get(pkt, 'interned_data')
        if interned:
            for en in get_all(interned, 'event_names'):
                names[get(en, 'iid')] = get(en, 'name')
        td = get(pkt, 'track_descriptor')
        if td:
            uuid = get(td, 'uuid')
            thr = get(td, 'thread')
            proc = get(td, 'process')
            if thr:
                tracks[uuid] = ('thread', get(thr, 'pid'), get(thr, 'tid'))
                thread_names[get(thr, 'tid')] = get(thr, 'thread_name')
            elif proc:
                tracks[uuid] = ('process', get(proc, 'pid'), None)
            else:
                tracks[uuid] = ('track', None, None)
        te = get(pkt, 'track_event')
        if not te:
            continue
        if not flags & 2:
            fail('packet %d: a track event without SEQ_NEEDS_INCREMENTAL_STATE' % i)
        uuid, typ, ts = get(te, 'track_uuid'), get(te, 'type'), get(pkt, 'timestamp')
        if uuid not in tracks or tracks[uuid][0] == 'process':
            fail('packet %d: event on an undescribed or process track %s' % (i, uuid))
        name = None
        if typ in (1, 3):
            iid = get(te, 'name_iid')
            if iid not in names:
                fail('packet %d: name iid %s used before it is interned' % (i, iid))
            name = names[iid]
        if typ == 3:
            instants += 1
        depth = opened.get(uuid, 0)
        if typ == 1:
            opened[uuid] = depth + 1
        elif typ == 2:
            if depth == 0:
                fail('packet %d: slice end with no slice open' % i)
            opened[uuid] = depth - 1
        tid = tracks[uuid][2]
        runs = got.setdefault(tid, [])
        if uuid != last_uuid or not runs:
            runs.append([])
        last_uuid = uuid
        if typ in (1, 2):
            runs[-1].append(('B' if typ == 1 else 'E', name, ts))
    if any(opened.values()):
        fail('slices left open at the end: %s' % opened)
    for tid, runs in got.items():
        last = -1
        for run in runs:
            for _, _, ts in run:
                if ts < last:
                    fail('thread %d: time goes back (%d < %d)' % (tid, ts, last))
                last = ts
        got[tid] = [r for r in runs if r]

    if structure:
        if 'instructions' not in stats:
            fail('no --stats on standard error')
        want_instants = stats['errors'] + stats['gaps'] + stats['overflows']
        if instants < want_instants:
            fail('%d instant events for %d errors, gaps and overflows'
                 % (instants, want_instants))
        nslices = sum(1 for runs in got.values() for run in runs
                      for k, _, _ in run if k == 'B')
        print('OK: well formed, %d slices, %d instants for %d errors, gaps and '
              'overflows' % (nslices, instants, want_instants))
        return

    # 2. against perf's calls and returns
    addr_of = {}
    for line in subprocess.run(['nm', prog], capture_output=True,
                               text=True).stdout.splitlines():
        p = line.split()
        if len(p) == 3:
            addr_of.setdefault(p[2], int(p[0], 16))

    def resolve(name):
        m = re.match(r'^(.*)\+0x([0-9a-f]+)$', name)
        if name.startswith('0x'):
            return int(name, 16)
        if m:
            return addr_of.get(m.group(1), -1) + int(m.group(2), 16)
        return addr_of.get(name, -1)

    # perf's instructions ("tid [flags] addr ip") and branches ("tid flags
    # from => to") interleaved: a call's slice begins at the next instruction, the callee's
    # first; a return's ends at the next one.  The instructions are those
    # of expected.insn, in order (the synth tests check that), so the
    # index of that next instruction finds its time in ptdecode's timeline.
    r = subprocess.run(['perf', 'script', '-i', os.path.join(cap, 'perf.data'),
                        '--itrace=bi0ns', '-F', 'tid,flags,ip,addr'],
                       capture_output=True, text=True)
    want = {}
    cur, depth, idx, pend = None, 0, 0, []
    for line in r.stdout.splitlines():
        p = line.split()
        if len(p) < 3:
            continue
        tid = int(p[0])
        if tid != cur:
            if cur is not None:
                want[cur][-1] += [('E', None, None)] * depth
            cur, depth = tid, 0
            want.setdefault(tid, []).append([])
            # the instruction after those branches runs in another run of
            # their thread: their slice events come at the switch (no time
            # to compare)
            pend = []
        if '=>' not in p:            # an instruction: tid [flags] addr ip
            for ev in pend:
                ev[2] = idx
            pend = []
            idx += 1
            continue
        flags, to = ' '.join(p[1:p.index('=>') - 1]), int(p[-1], 16)
        if flags == 'call':
            want[tid][-1].append(['B', to, None])
            pend.append(want[tid][-1][-1])
            depth += 1
        elif flags == 'return' and depth:
            want[tid][-1].append(['E', None, None])
            pend.append(want[tid][-1][-1])
            depth -= 1
    if cur is not None:
        want[cur][-1] += [('E', None, None)] * depth
    for tid in want:
        want[tid] = [run for run in want[tid] if run]
    expected = [int(x, 16) for x in open(os.path.join(cap, 'expected.insn'))]
    if idx != len(expected):
        fail('perf lists %d instructions, expected.insn %d' % (idx, len(expected)))

    if clock == 'insns':
        times = list(range(1, len(expected) + 1))
    else:
        # ptdecode's instruction times (checked against perf's by the
        # synth timing tests)
        r = subprocess.run([ptdecode, '-q', '--insn', '-t', '--no-sym',
                            '--no-disasm'] + opts + [cap], capture_output=True, text=True)
        times = []
        for line in r.stdout.splitlines():
            if line.startswith('0x'):
                sec, ns = line.split()[3].split('.')
                times.append(int(sec) * 10**9 + int(ns))
        if len(times) != len(expected):
            fail('ptdecode --insn -t lists %d instructions, expected.insn %d'
                 % (len(times), len(expected)))

    # thread names: the COMM perf gives each thread's samples
    r = subprocess.run(['perf', 'script', '-i', os.path.join(cap, 'perf.data'),
                        '--itrace=b', '-F', 'comm,tid'], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        p = line.rsplit(None, 1)
        if len(p) == 2 and p[1].isdigit() and int(p[1]) in thread_names:
            if thread_names[int(p[1])] != p[0].strip():
                fail('thread %s is named "%s", perf says "%s"'
                     % (p[1], thread_names[int(p[1])], p[0].strip()))

    nslices = 0
    if set(got) != set(want):
        fail('threads differ: perfetto %s, perf %s' % (sorted(got), sorted(want)))
    for tid in want:
        g = [e for run in got[tid] for e in run]
        w = [e for run in want[tid] for e in run]
        if [k for k, _, _ in g] != [k for k, _, _ in w]:
            n = next((n for n, (a, b) in enumerate(zip(g, w)) if a[0] != b[0]),
                     min(len(g), len(w)))
            print('perfetto: %s' % [(k, x) for k, x, _ in g[max(0, n - 4):n + 3]])
            print('perf:     %s' % [(k, x and hex(x)) for k, x, _ in w[max(0, n - 4):n + 3]])
            fail('thread %d: slice begin/end sequence differs from perf\'s calls '
                 'and returns at event %d' % (tid, n))
        for n, ((k, name, ts), (_, to, i)) in enumerate(zip(g, w)):
            if k == 'B':
                nslices += 1
                if resolve(name) != to:
                    fail('thread %d, event %d: slice "%s" (%#x), perf calls %#x'
                         % (tid, n, name, resolve(name), to))
                if i is not None and expected[i] != to:
                    fail('thread %d, event %d: perf\'s next instruction is not '
                         'the call target' % (tid, n))
            if i is not None and ts != times[i]:
                fail('thread %d, event %d (%s): time %d, instruction %d ran at %d'
                     % (tid, n, k, ts, i, times[i]))
    print('OK: %d slices on %d threads match perf\'s calls and returns, '
          'timed by %s' % (nslices, len(want), clock))


main()
