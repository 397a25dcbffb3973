#!/usr/bin/env python3
"""check_gdb.py PTDECODE CAPTURE SOURCE BP_LINES FUNCTION [PARTS]

`ptdecode dap` on a ptsynth capture against gdb on a live run of the same
binary (the capture's archived ELF file, run without arguments as ptsynth
ran it):

  1. source breakpoints on BP_LINES (comma-separated): every hit, in order,
     with its backtrace (function and line of each frame up to main), the
     same as gdb's breakpoints with `bt`;
  2. a function breakpoint on FUNCTION: every hit with its backtrace, as
     gdb's `break FUNCTION` (stopOnEntry, then continue);
  3. an instruction breakpoint at its first instruction, as gdb's
     `break *ADDR`, also with hitCondition "%2" (every second of gdb's hits)
     (FUNCTION "*SYM": at the program's ELF symbol SYM);
  4. reverse: under gdb's `record full`, continue (up to 10 times, fewer
     when the program ends first) then reverse-continue up to 8 times
     (back to the first hit at most) on the
     first of BP_LINES stop at the same hits (backtraces) as continue then
     reverseContinue;
  5. goto: gotoTargets on the first of BP_LINES offers its first, next,
     previous and last executions; going there shows gdb's backtraces of
     the first, second, ... and last hits of that line; setting the Trace
     scope's "instruction" to the first hit's number goes back there.

PARTS (comma-separated, default all): hits (1), func (2), insn (3),
reverse (4), goto (5), so that each test stays short.

Line stepping is compared by check_steps.py, breakpoint placement on
every line by check_lines.py.

Exits 77 (skip) when gdb is missing."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gdbtool  # noqa: E402
from gdbtool import dap_bt  # noqa: E402

ptdecode, capture, source, bp_lines = sys.argv[1:5]
bp_lines = [int(x) for x in bp_lines.split(',')]
gdbtool.need_gdb(capture)


def gdb(script):
    return gdbtool.gdb(capture, script)


GDB_BT = ''


failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print('FAIL: ' + what)


def gdb_hits(breaks):
    """Every hit of gdb's breakpoints (break commands) with its backtrace."""
    return gdb(GDB_BT + '''
breaks = %r
for b in breaks:
    gdb.execute('break ' + b)
hits = []
try:
    gdb.execute('run', to_string=True)
except gdb.error:
    # an address in a shared library: set once main runs
    gdb.execute('delete')
    gdb.execute('tbreak main')
    gdb.execute('run', to_string=True)
    for b in breaks:
        gdb.execute('break ' + b)
    gdb.execute('continue', to_string=True)
while gdb.selected_inferior().pid:
    hits.append(bt())
    gdb.execute('continue', to_string=True)
print('RESULT ' + json.dumps(hits))
''' % (breaks,))


def launch(lines, stop_on_entry=False):
    c, tid, r = gdbtool.launch(ptdecode, capture, source, lines, stop_on_entry)
    for b in r['body']['breakpoints']:
        # where it moves to is compared with gdb by check_lines.py
        check(b['verified'], 'setBreakpoints: %s verified' % b)
    return c, tid


def compare_hits(c, tid, reason, want, what):
    """Continues to the end, collecting the backtrace of every stop with
    reason; compares them with gdb's hits."""
    got = []
    while True:
        ev = c.wait_event('stopped')['body']
        if ev['reason'] != reason:
            break
        got.append(dap_bt(c, tid))
        c.request('continue', threadId=tid)
    check(ev['reason'] == 'pause' and 'end of the trace' in ev.get('description', ''),
          'continuing past the last breakpoint stops at the end: %s' % ev)
    c.close()
    check(len(got) == len(want), '%s hit %d times, gdb %d' % (what, len(got), len(want)))
    for i, (g, w) in enumerate(zip(got, want)):
        check(g == w, '%s hit %d: backtrace %s, gdb %s' % (what, i + 1, g, w))
    print('%s: %d hits, gdb %d; %d backtraces equal'
          % (what, len(got), len(want), sum(g == w for g, w in zip(got, want))))


parts = (sys.argv[6] if len(sys.argv) > 6 else 'hits,func,insn,reverse,goto').split(',')

# 1. source breakpoints
if 'hits' in parts:
    want = gdb_hits(['%s:%d' % (source, x) for x in bp_lines])
    c, tid = launch(bp_lines)
    compare_hits(c, tid, 'breakpoint', want, 'breakpoints %s:%s' % (source, bp_lines))

# 2. function breakpoints
func = sys.argv[5]
def func_stop():
    """A session stopped at the first hit of a function breakpoint on
    func, and the address there."""
    c, tid = launch([], True)
    c.wait_event('stopped')
    r = c.request('setFunctionBreakpoints', breakpoints=[{'name': func}])
    check(r['success'] and r['body']['breakpoints'][0]['verified'],
          'setFunctionBreakpoints: %s' % r)
    c.request('continue', threadId=tid)
    ev = c.wait_event('stopped')['body']
    check(ev['reason'] == 'function breakpoint', 'function breakpoint: %s' % ev)
    addr = c.request('stackTrace', threadId=tid)['body']['stackFrames'][0][
        'instructionPointerReference']
    c.events.insert(0, {'type': 'event', 'event': 'stopped', 'body': ev})
    return c, tid, addr


if 'func' in parts:
    want = gdb_hits([func])
    c, tid, addr = func_stop()
    compare_hits(c, tid, 'function breakpoint', want, 'function breakpoint ' + func)

if 'insn' in parts:
    # 3. an instruction breakpoint at the function's first instruction,
    # as gdb's `break *ADDR` (and, with hitCondition %2, every second hit);
    # FUNCTION "*SYM": at ELF symbol SYM of the program (code without
    # DWARF, such as the signal trampoline)
    if func.startswith('*'):
        addr = gdbtool.symbol_addr(capture, func[1:])
    else:
        c, tid, addr = func_stop()
        c.close()
    want = gdb_hits(['*' + addr])
    for cond, exp in ((None, want), ('%2', want[1::2])):
        c, tid = launch([], True)
        c.wait_event('stopped')
        bp = {'instructionReference': addr}
        if cond:
            bp['hitCondition'] = cond
        c.request('setInstructionBreakpoints', breakpoints=[bp])
        c.request('continue', threadId=tid)
        compare_hits(c, tid, 'instruction breakpoint', exp,
                     'instruction breakpoint %s%s' % (addr, ' hitCondition ' + cond if cond else ''))

if 'reverse' in parts:
    # reverse-continue: back to the previous breakpoint hits, with backtraces
    N_FWD, N_BACK = 10, 8
    want = gdb(GDB_BT + '''
gdb.execute('break %s:%d')
gdb.execute('run', to_string=True)
gdb.execute('record full')
out = []
for cmd in ['continue'] * %d:
    try:
        gdb.execute(cmd, to_string=True)
    except gdb.error:
        pass
    if bt()[-1][0] != 'main' or gdb.newest_frame().find_sal().line != %d:
        # the program's end under record full (or the end of its log):
        # back to the last hit
        gdb.execute('reverse-continue', to_string=True)
        break
    out.append([cmd] + bt())
# back to the first hit at most: gdb's recording starts there
for cmd in ['reverse-continue'] * min(%d, len(out)):
    gdb.execute(cmd, to_string=True)
    out.append([cmd] + bt())
print('RESULT ' + json.dumps(out))
''' % (source, bp_lines[0], N_FWD, bp_lines[0], N_BACK))
    n_fwd = sum(1 for w in want if w[0] == 'continue')
    n_back = len(want) - n_fwd
    c, tid = launch([bp_lines[0]])
    c.wait_event('stopped')
    got = []
    for cmd in ['continue'] * n_fwd + ['reverse-continue'] * n_back:
        c.request('continue' if cmd == 'continue' else 'reverseContinue', threadId=tid)
        c.wait_event('stopped')
        got.append([cmd] + dap_bt(c, tid))
    c.close()
    same = sum(g == w for g, w in zip(got, want))
    for g, w in zip(got, want):
        check(g == w, '%s: backtrace %s, gdb %s' % (g[0], g[1:], w[1:]))
    check(len(got) == len(want), 'reverse: %d stops, gdb %d' % (len(got), len(want)))
    print('continue x%d then reverse-continue x%d on %s:%d: %d of %d equal to gdb'
          % (n_fwd, n_back, source, bp_lines[0], same, len(got)))

# 5. goto: the executions of a line, and back to an instruction number
def goto(c, which):
    r = c.request('gotoTargets', source={'path': source}, line=bp_lines[0])
    check(r['success'], 'gotoTargets: %s' % r)
    for t in r['body']['targets'] if r['success'] else []:
        if t['label'].startswith(which + ' '):
            r = c.request('goto', threadId=tid, targetId=t['id'])
            check(r['success'], 'goto %s: %s' % (which, r))
            c.wait_event('stopped')
            return dap_bt(c, tid)
    check(False, 'gotoTargets: no %s target in %s' % (which, r['body']))
    return None


if 'goto' in parts:
    want = gdb_hits(['%s:%d' % (source, bp_lines[0])])
    c, tid = launch([], True)
    c.wait_event('stopped')
    got, exp = [], []
    got.append(goto(c, 'first'))
    exp.append(want[0])
    trace_scope = c.request('scopes', frameId=0)['body']['scopes'][0]
    ref = trace_scope['variablesReference']
    insn = [v['value'] for v in c.request('variables', variablesReference=ref)[
        'body']['variables'] if v['name'] == 'instruction'][0]
    for which, k in (('next', 1), ('next', 2), ('previous', 1), ('last', -1),
                     ('previous', -2), ('first', 0)):
        if len(want) > max(k, -k - 1):
            got.append(goto(c, which))
            exp.append(want[k])
    c.request('continue', threadId=tid)
    c.wait_event('stopped')
    r = c.request('setVariable', variablesReference=ref, name='instruction', value=insn)
    check(r['success'] and r['body']['value'] == insn, 'setVariable instruction: %s' % r)
    c.wait_event('stopped')
    got.append(dap_bt(c, tid))
    exp.append(want[0])
    c.close()
    same = sum(g == w for g, w in zip(got, exp))
    for g, w in zip(got, exp):
        check(g == w, 'goto: backtrace %s, gdb %s' % (g, w))
    print('goto first/next/previous/last executions of %s:%d and setVariable '
          'instruction: %d of %d backtraces equal to gdb\'s hits'
          % (source, bp_lines[0], same, len(exp)))
gdbtool.cleanup()
sys.exit(1 if failures else 0)
