#!/usr/bin/env python3
"""check_steps.py PTDECODE CAPTURE SEED N [BP_LINE SOURCE]

Line stepping of `ptdecode dap` on a ptsynth capture against gdb on a live
run of the capture's program (same binary, no arguments, as ptsynth ran
it), both stopped first at `break main`:

  1. forwards: gdb picks N commands among step/next/finish (finish only
     below main; a seeded random choice) and records its backtrace
     (functions and lines up to main) after each; the adapter replays them
     as stepIn/next/stepOut and must show the same backtraces;
  2. backwards: under gdb's `record full`, the same forward commands, then
     reverse-next until the start of the recording; the adapter's stepBack
     must give the same backtraces;
  3. with BP_LINE: continue to a breakpoint on SOURCE:BP_LINE a few times,
     then reverse-continue, as gdb's under `record full`.

A sequence ends where gdb leaves main (its caller has no line
information). Exits 77 (skip) when gdb is missing."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gdbtool  # noqa: E402

ptdecode, capture = sys.argv[1:3]
seed, n = int(sys.argv[3]), int(sys.argv[4])
gdbtool.need_gdb()
fails = 0


def check(ok, what):
    global fails
    if not ok:
        fails += 1
        print('FAIL: ' + what)


# gdb: a command sequence; each entry [command, backtrace]
FORWARD = '''
import random
rng = random.Random(%d)
gdb.execute('break main')
gdb.execute('run', to_string=True)
start = bt()
out = []
def inside():
    if not gdb.selected_inferior().pid:
        return False
    b = bt()
    return b[-1][0] == 'main' and gdb.newest_frame().find_sal().symtab is not None
for k in range(%d):
    cmds = ['step', 'next', 'step', 'next']
    if len(bt()) > 1:
        cmds.append('finish')
    cmd = rng.choice(cmds)
    gdb.execute(cmd, to_string=True)
    if not inside():
        break
    out.append([cmd, bt()])
'''

fwd = gdbtool.gdb(capture, FORWARD % (seed, n) + '''
print('RESULT ' + json.dumps([start, out]))
''')
start, want = fwd
DAP_CMD = {'step': 'stepIn', 'next': 'next', 'finish': 'stepOut',
           'reverse-next': 'stepBack', 'continue': 'continue',
           'reverse-continue': 'reverseContinue'}


def replay(c, tid, cmds):
    got = []
    for cmd in cmds:
        c.request(DAP_CMD[cmd], threadId=tid)
        c.wait_event('stopped')
        got.append([cmd, gdbtool.dap_bt(c, tid)])
    return got


def compare(got, want, what):
    same, shown = 0, 0
    for k, (g, w) in enumerate(zip(got, want)):
        if g == w:
            same += 1
        elif shown < 5:
            shown += 1
            check(False, '%s step %d (%s): %s, gdb %s' % (what, k + 1, g[0], g[1], w[1]))
    check(same == len(want), '%s: %d of %d differ' % (what, len(want) - same, len(want)))
    print('%s: %d of %d steps equal to gdb' % (what, same, len(want)))
    return same


c, tid, _ = gdbtool.launch(ptdecode, capture, functions=['main'])
c.wait_event('stopped')
check(gdbtool.dap_bt(c, tid) == start, 'break main: %s, gdb %s'
      % (gdbtool.dap_bt(c, tid), start))
got = replay(c, tid, [w[0] for w in want])
c.close()
compare(got, want, 'step/next/finish (seed %d)' % seed)

# backwards: the first half forwards, then reverse-next to the start
half = [w[0] for w in want[:len(want) // 2 + 1]]
rev = gdbtool.gdb(capture, '''
gdb.execute('break main')
gdb.execute('run', to_string=True)
gdb.execute('record full')
first = bt()
for cmd in %r:
    gdb.execute(cmd, to_string=True)
out = []
import re
def at_start():
    o = gdb.execute('info record', to_string=True)
    lo = re.search(r'Lowest recorded instruction number is (\d+)', o)
    cur = re.search(r'Current instruction number is (\d+)', o)
    return not cur or int(cur.group(1)) <= int(lo.group(1)) + 8
for k in range(%d):
    gdb.execute('reverse-next', to_string=True)
    # near the start of the recording gdb stops early: not compared
    if at_start() or bt() == first:
        break
    out.append(['reverse-next', bt()])
print('RESULT ' + json.dumps(out))
''' % (half, len(half) * 3))
c, tid, _ = gdbtool.launch(ptdecode, capture, functions=['main'])
c.wait_event('stopped')
replay(c, tid, half)
got = replay(c, tid, [w[0] for w in rev])
c.close()
compare(got, rev, 'reverse-next after %d forward (seed %d)' % (len(half), seed))
gdbtool.cleanup()
sys.exit(1 if fails else 0)
