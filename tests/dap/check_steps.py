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
     "b" reverse-next, "r" reverse-step, "f" reverse-finish, only below
     main) until near the start of the recording (where gdb stops early:
     not compared); the adapter's stepBack (reverse-step and
     reverse-finish: the debug console's `reverse-step`, `reverse-finish`)
     must give the same backtraces.  Where gdb 13's reverse-finish stops in
     a later call of a recursive function (its breakpoint at the
     function's entry has no frame), gdb's own steps are redone with the
     frame's stack pointer as the breakpoint's condition, and counted.

Exits 77 (skip) when gdb is missing."""
import os
import random
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


def replay(c, tid, cmds, bts=True):
    got = []
    for cmd in cmds:
        if cmd in ('reverse-step', 'reverse-finish'):
            r = c.request('evaluate', expression=cmd, context='repl')
            check(r['success'], 'evaluate %s: %s' % (cmd, r))
        else:
            c.request(DAP_CMD[cmd], threadId=tid)
        c.wait_event('stopped')
        if bts:
            got.append([cmd, gdbtool.dap_bt(c, tid)])
        if bts and cmd == 'reverse-finish':
            # where it stopped: the instruction's bytes
            pc = c.request('stackTrace', threadId=tid)['body']['stackFrames'][0][
                'instructionPointerReference']
            got[-1].append(c.request('disassemble', memoryReference=pc,
                                     instructionCount=1)['body']['instructions'][0].get(
                                         'instructionBytes'))
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
            check(False, '%s step %d (%s): %s, gdb %s' % (what, k + 1, g[0], g[1:], w[1:]))
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

# gdb under record full: the start of the recording, reverse-finish
REVERSE = '''
import re, random
def record_pos():
    """The lowest recorded instruction's number (None: nothing recorded)
    and the current one's (None: at the end, not replaying)."""
    o = gdb.execute('info record', to_string=True)
    lo = re.search(r'Lowest recorded instruction number is (\\d+)', o)
    cur = re.search(r'Current instruction number is (\\d+)', o)
    return int(lo.group(1)) if lo else None, int(cur.group(1)) if cur else None
def insn():
    """The bytes of the instruction at the stop."""
    pc = gdb.newest_frame().pc()
    n = gdb.newest_frame().architecture().disassemble(pc)[0]['length']
    return ' '.join('%02x' % b for b in
                    gdb.selected_inferior().read_memory(pc, n).tobytes())
def at_start():
    lo, cur = record_pos()
    return cur is None or lo is None or cur <= lo + 8
redone = 0
# gdb's reverse-finish: back to the function's entry, then one instruction
# back.  gdb 13 stops at the entry in any frame, so in a recursive function
# whose later calls have returned it stops in the last of them (as
# reverse-next did before the fix of PR gdb/16678); there the same two
# steps again, with the frame's stack pointer at the entry as the
# breakpoint's condition.  False: gdb stopped at the start of the
# recording (at its first instruction, and not at the frame's call).
def reverse_finish():
    global redone
    f = gdb.newest_frame()
    if f.type() != gdb.NORMAL_FRAME or f.older() is None:
        gdb.execute('reverse-finish', to_string=True)
        lo, cur = record_pos()
        return lo is not None and cur != lo
    sp = int(f.older().read_register('sp'))   # at the call, as pushed
    ret = f.older().pc()
    entry = int(f.function().value().address)
    arch = f.architecture()
    lo, cur = record_pos()
    gdb.execute('reverse-finish', to_string=True)
    if int(gdb.newest_frame().read_register('sp')) < sp:
        redone += 1
        gdb.execute('record goto %s' % (cur or 'end'), to_string=True)
        b = gdb.Breakpoint('*%#x' % entry, internal=True)
        b.condition = '$sp == %d' % (sp - 8)
        gdb.execute('reverse-continue', to_string=True)
        b.delete()
        gdb.execute('reverse-stepi', to_string=True)
    lo, cur = record_pos()
    pc = gdb.newest_frame().pc()
    return lo is not None and (cur != lo or
                               pc + arch.disassemble(pc)[0]['length'] == ret)
gdb.execute('break main')
'''


def summary(what, res, same, total, redone):
    kinds = sorted(set(w[0] for want in res for w in want))
    print('%s %s: %d of %d steps equal to gdb%s'
          % (', '.join('%s %d' % (x, sum(w[0] == x for want in res for w in want))
                       for x in kinds) or 'no step', what, same, total,
             ' (%d reverse-finish in a later recursive call of the function:'
             ' redone with its frame)' % redone if redone else ''))


# 2. backwards: the first half of each sequence forwards, then reverse-next
halves = [[w[0] for w in want[:len(want) // 2 + 1]] for _, want in seqs]
rev, redone = gdbtool.gdb(capture, REVERSE + '''
rng = random.Random(%d)
rnames = {'b': 'reverse-next', 'r': 'reverse-step', 'f': 'reverse-finish'}
res = []
for half in %r:
    gdb.execute('run', to_string=True)
    gdb.execute('record full')
    first = bt()
    for cmd in half:
        gdb.execute(cmd, to_string=True)
    out = []
    for k in range(3 * len(half)):
        # reverse-finish only below main
        cmd = rnames[rng.choice([x for x in %r if x != 'f' or len(bt()) > 1])]
        if cmd == 'reverse-finish':
            reverse_finish()
        else:
            gdb.execute(cmd, to_string=True)
        # near the start of the recording gdb stops early: not compared
        if at_start() or bt() == first:
            break
        out.append([cmd, bt()] + ([insn()] if cmd == 'reverse-finish' else []))
    gdb.execute('record stop', to_string=True)
    res.append(out)
print('RESULT ' + json.dumps([res, redone]))
''' % (seed, halves, revmix))
same = total = 0
for k, (half, want) in enumerate(zip(halves, rev)):
    c, tid = session()
    replay(c, tid, half)
    got = replay(c, tid, [w[0] for w in want])
    same += compare(got, want, 'reverse sequence %d' % (k + 1))
    total += len(want)
summary('after the first half of each sequence', rev, same, total, redone)

# 3. reverse-finish ("f" in REVMIX) from stops of the forward sequences
# below main (up to FINISH_FROM of them, a seeded choice), again while
# below main, up to three times
FINISH_FROM = 30
points = [(k, j) for k, (_, want) in enumerate(seqs)
          for j in range(len(want)) if len(want[j][1]) > 1]
if 'f' in revmix and points:
    points = sorted(random.Random(seed).sample(points, min(len(points), FINISH_FROM)))
    prefixes = [[w[0] for w in seqs[k][1][:j + 1]] for k, j in points]
    fin, redone = gdbtool.gdb(capture, REVERSE + '''
res = []
for prefix in %r:
    gdb.execute('run', to_string=True)
    gdb.execute('record full')
    for cmd in prefix:
        gdb.execute(cmd, to_string=True)
    out = []
    for k in range(3):
        if len(bt()) < 2 or not reverse_finish():
            break
        out.append(['reverse-finish', bt(), insn()])
    gdb.execute('record stop', to_string=True)
    res.append(out)
print('RESULT ' + json.dumps([res, redone]))
''' % (prefixes,))
    same = total = 0
    for (k, j), prefix, want in zip(points, prefixes, fin):
        c, tid = session()
        replay(c, tid, prefix, bts=False)
        got = replay(c, tid, [w[0] for w in want])
        same += compare(got, want, 'sequence %d after step %d' % (k + 1, j + 1))
        total += len(want)
    summary('from %d stops of the sequences' % len(points), fin, same, total, redone)
C[0].close()
gdbtool.cleanup()
sys.exit(1 if fails else 0)
