#!/usr/bin/env python3
"""check_steps.py PTDECODE CAPTURE SEED N MIX [REVMIX]

Line stepping of `ptdecode dap` on a ptsynth capture against gdb on a live
run of the capture's program (same binary, no arguments, as ptsynth ran
it), both stopped first at `break main`:

  1. forwards: gdb runs sequences of commands among step/next/finish (a
     seeded random choice from MIX, e.g. "ssnf": step twice as often as
     next or finish; finish only below main) and records its backtrace
     (functions and lines up to main) after each; a sequence ends where gdb
     leaves main, then the program is run again, until N steps are done.
     The adapter replays each sequence as stepIn/next/stepOut, each from
     the start of the trace (goto instruction 0, continue to main), and
     must show the same backtraces;
  2. backwards: under gdb's `record full`, the first half of each
     sequence, then reverse-next (or a seeded random choice from REVMIX:
     "b" reverse-next, "r" reverse-step) until near the start of the
     recording (where gdb stops early: not compared); the adapter's
     stepBack (reverse-step: the debug console's `reverse-step`) must give
     the same backtraces.

Exits 77 (skip) when gdb is missing."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gdbtool  # noqa: E402

ptdecode, capture = sys.argv[1:3]
seed, n, mix = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
revmix = sys.argv[6] if len(sys.argv) > 6 else 'b'
gdbtool.need_gdb(capture)
fails = 0


def check(ok, what):
    global fails
    if not ok:
        fails += 1
        print('FAIL: ' + what)


# gdb: sequences of [command, backtrace]
FORWARD = '''
import random
rng = random.Random(%d)
gdb.execute('break main')
names = {'s': 'step', 'n': 'next', 'f': 'finish'}
def inside():
    if not gdb.selected_inferior().pid:
        return False
    b = bt()
    return b[-1][0] == 'main' and gdb.newest_frame().find_sal().symtab is not None
seqs, total = [], 0
while total < %d and len(seqs) < 40:
    gdb.execute('run', to_string=True)
    start, out = bt(), []
    while total < %d:
        cmds = [names[x] for x in %r if x != 'f' or len(bt()) > 1]
        cmd = rng.choice(cmds)
        gdb.execute(cmd, to_string=True)
        if not inside():
            break
        out.append([cmd, bt()])
        total += 1
    seqs.append([start, out])
print('RESULT ' + json.dumps(seqs))
'''

seqs = gdbtool.gdb(capture, FORWARD % (seed, n, n, mix))
DAP_CMD = {'step': 'stepIn', 'next': 'next', 'finish': 'stepOut',
           'reverse-next': 'stepBack'}


C = None


def session():
    """The session at main: from the start of the trace on to main."""
    global C
    if C is None:
        C = gdbtool.launch(ptdecode, capture, functions=['main'])[:2]
    else:
        r = C[0].request('evaluate', expression='insn 0', context='repl')
        check(r['success'], 'evaluate insn 0: %s' % r)
        C[0].wait_event('stopped')
        C[0].request('continue', threadId=C[1])
    C[0].wait_event('stopped')
    return C


def replay(c, tid, cmds):
    got = []
    for cmd in cmds:
        if cmd == 'reverse-step':
            r = c.request('evaluate', expression='reverse-step', context='repl')
            check(r['success'], 'evaluate reverse-step: %s' % r)
        else:
            c.request(DAP_CMD[cmd], threadId=tid)
        c.wait_event('stopped')
        got.append([cmd, gdbtool.dap_bt(c, tid)])
    return got


shown = 0


def compare(got, want, what):
    global shown
    same = 0
    for k, (g, w) in enumerate(zip(got, want)):
        if g == w:
            same += 1
        elif shown < 8:
            shown += 1
            check(False, '%s step %d (%s): %s, gdb %s' % (what, k + 1, g[0], g[1], w[1]))
    check(same == len(want) == len(got), '%s: %d of %d differ'
          % (what, len(want) - same, len(want)))
    return same


same = total = 0
for k, (start, want) in enumerate(seqs):
    c, tid = session()
    check(gdbtool.dap_bt(c, tid) == start, 'break main: %s, gdb %s'
          % (gdbtool.dap_bt(c, tid), start))
    got = replay(c, tid, [w[0] for w in want])
    same += compare(got, want, 'sequence %d' % (k + 1))
    total += len(want)
print('step/next/finish (seed %d, mix %s): %d sequences, %d of %d steps equal to gdb'
      % (seed, mix, len(seqs), same, total))

# backwards: the first half of each sequence forwards, then reverse-next
halves = [[w[0] for w in want[:len(want) // 2 + 1]] for _, want in seqs]
rev = gdbtool.gdb(capture, '''
import re, random
rng = random.Random(%d)
rnames = {'b': 'reverse-next', 'r': 'reverse-step'}
def at_start():
    o = gdb.execute('info record', to_string=True)
    lo = re.search(r'Lowest recorded instruction number is (\\d+)', o)
    cur = re.search(r'Current instruction number is (\\d+)', o)
    return not cur or int(cur.group(1)) <= int(lo.group(1)) + 8
gdb.execute('break main')
res = []
for half in %r:
    gdb.execute('run', to_string=True)
    gdb.execute('record full')
    first = bt()
    for cmd in half:
        gdb.execute(cmd, to_string=True)
    out = []
    for k in range(3 * len(half)):
        cmd = rnames[rng.choice(%r)]
        gdb.execute(cmd, to_string=True)
        # near the start of the recording gdb stops early: not compared
        if at_start() or bt() == first:
            break
        out.append([cmd, bt()])
    gdb.execute('record stop', to_string=True)
    res.append(out)
print('RESULT ' + json.dumps(res))
''' % (seed, halves, revmix))
same = total = 0
for k, (half, want) in enumerate(zip(halves, rev)):
    c, tid = session()
    replay(c, tid, half)
    got = replay(c, tid, [w[0] for w in want])
    same += compare(got, want, 'reverse sequence %d' % (k + 1))
    total += len(want)
print('%s after the first half of each sequence: %d of %d steps equal to gdb'
      % ('/'.join(sorted(set(w[0] for want in rev for w in want))) or 'reverse-next',
         same, total))
C[0].close()
gdbtool.cleanup()
sys.exit(1 if fails else 0)
