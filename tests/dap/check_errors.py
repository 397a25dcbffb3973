#!/usr/bin/env python3
"""check_errors.py PTDECODE CAPTURE CORRUPT_TOOL

Bad input to `ptdecode dap` gets DAP error responses or stop reasons,
never a crash or a hang (every read has a timeout): bad launch arguments,
a missing trace, requests before launch, unknown requests, a body that is
not JSON, bad arguments to readMemory/disassemble/evaluate/variables/gotoTargets/
goto/setVariable, a breakpoint on a line without code (unverified, with
a message);
stepping back (stepBack, the debug console's reverse-finish) at the start
and continuing at the end stop there with a description saying so; a trace with decode errors (bytes flipped in its
AUX data) stops at each error with reason "exception" and the decoder's
message, in both directions; disconnect ends the adapter with status 0."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dapclient import Client  # noqa: E402

ptdecode, capture, tool = sys.argv[1:4]
fails = 0


def check(ok, what):
    global fails
    if not ok:
        fails += 1
        print('FAIL: ' + what)


def error(resp, words, what):
    check(not resp['success'] and words in resp.get('message', ''),
          '%s: want an error saying "%s", got %s' % (what, words, resp))


c = Client(ptdecode, timeout=60)
c.request('initialize', adapterID='ptdecode')
error(c.request('threads'), 'before a successful launch', 'threads before launch')
error(c.request('launch'), "needs 'trace'", 'launch without trace')
error(c.request('launch', trace='/nonexistent/x.ptd'), 'cannot open trace',
      'missing trace')
error(c.request('launch', trace=capture, searchPath='notalist'),
      "'searchPath' must be a list", 'searchPath not a list')
error(c.request('launch', trace=capture, sourceMap=[1]),
      "'sourceMap' must be an object", 'sourceMap not an object')
c.send_raw(b'{not json')
m = c.read()
check(m['type'] == 'response' and not m['success'] and 'not JSON' in m['message'],
      'a body that is not JSON: %s' % m)

r = c.request('launch', trace=capture, stopOnEntry=True)
check(r['success'], 'launch: %s' % r)
c.request('configurationDone')
ev = c.wait_event('stopped')['body']
check(ev['reason'] == 'entry', 'stopOnEntry: %s' % ev)
tid = ev['threadId']
error(c.request('stackTrace', threadId=123456789), 'no such thread', 'bad threadId')
error(c.request('frobnicate'), 'not supported', 'unknown request')
error(c.request('readMemory', threadId=tid), 'needs memoryReference', 'readMemory')
error(c.request('disassemble', threadId=tid, memoryReference='0x0'),
      'needs memoryReference', 'disassemble without count')
error(c.request('evaluate', threadId=tid, expression='x + 1'), 'no values',
      'evaluate an expression')
error(c.request('evaluate', threadId=tid, expression='insn 999999999999'),
      'past the thread', 'goto past the end')
error(c.request('variables', variablesReference=99), 'no such variables', 'variables')
error(c.request('gotoTargets', threadId=tid), 'needs source.path and line',
      'gotoTargets without a source')
error(c.request('gotoTargets', threadId=tid, source={'path': 'calls.c'}, line=9999),
      'no code for calls.c:9999', 'gotoTargets on a line without code')
error(c.request('goto', threadId=tid, targetId=77), 'no such goto target',
      'goto without gotoTargets')
error(c.request('setVariable', variablesReference=1, name='rax', value='1'),
      'only instruction, time and position', 'setVariable of a register')
error(c.request('setVariable', variablesReference=1, name='instruction',
                value='soon'), 'not a number', 'setVariable not a number')
r = c.request('setBreakpoints', source={'path': 'calls.c'},
              breakpoints=[{'line': 9999}, {'line': 5}])
bps = r['body']['breakpoints'] if r['success'] else []
check(len(bps) == 2 and not bps[0]['verified'] and 'no code for' in
      bps[0].get('message', '') and bps[1]['verified'],
      'setBreakpoints on a line without code: unverified with a message: %s' % r)
c.request('setBreakpoints', source={'path': 'calls.c'}, breakpoints=[])
r = c.request('readMemory', threadId=tid, memoryReference='0x10', count=16)
check(r['success'] and r['body']['unreadableBytes'] == 16 and 'data' not in r['body'],
      'readMemory where no code is: %s' % r)
c.request('stepBack', threadId=tid)
ev = c.wait_event('stopped')['body']
check('start of the trace' in ev.get('description', ''), 'stepBack at the start: %s' % ev)
r = c.request('evaluate', threadId=tid, expression='rf', context='repl')
check(r['success'] and r['body']['result'] == 'reverse-finish', 'evaluate rf: %s' % r)
ev = c.wait_event('stopped')['body']
check(ev['reason'] == 'entry' and 'start of the trace' in ev.get('description', ''),
      'reverse-finish at the start: %s' % ev)
error(c.request('evaluate', threadId=tid, expression='rf 2'), 'unknown command',
      'reverse-finish with a number')
c.request('continue', threadId=tid)
ev = c.wait_event('stopped')['body']
check('end of the trace' in ev.get('description', ''), 'continue to the end: %s' % ev)
c.request('next', threadId=tid)
ev = c.wait_event('stopped')['body']
check('end of the trace' in ev.get('description', ''), 'next at the end: %s' % ev)
check(c.close() == 0, 'disconnect: exit status 0')

# a trace with decode errors
tmp = tempfile.mkdtemp()
try:
    t = os.path.join(tmp, 't.ptd')
    shutil.copytree(capture, t)
    perf = os.path.join(t, 'perf.data')
    spans = subprocess.run([tool, 'auxspan', perf], check=True,
                           stdout=subprocess.PIPE).stdout.decode().split('\n')
    data = bytearray(open(perf, 'rb').read())
    for line in spans:
        if line.strip():
            off, size = map(int, line.split())
            for frac in (0.3, 0.55, 0.8):
                p = off + int(size * frac)
                for k in range(4):
                    data[p + k] ^= 0x5a
    open(perf, 'wb').write(data)
    c = Client(ptdecode, timeout=60)
    c.request('initialize', adapterID='ptdecode')
    r = c.request('launch', trace=t)
    check(r['success'], 'launch on a damaged trace: %s' % r)
    c.request('configurationDone')
    stops = 0
    while True:
        ev = c.wait_event('stopped')['body']
        if ev['reason'] != 'exception':
            break
        check('decode error' in ev.get('description', '') or
              'gap' in ev.get('description', ''), 'error stop: %s' % ev)
        stops += 1
        c.request('continue', threadId=ev['threadId'])
    # the end: the last position may be the error itself
    at_end_error = 'ends at a decode error' in ev.get('description', '')
    check(ev['reason'] == 'pause' and 'end of the trace' in ev.get('description', ''),
          'the end after the errors: %s' % ev)
    check(stops + at_end_error > 0, 'the damaged trace reported no decode error')
    c.request('reverseContinue', threadId=ev['threadId'])
    back = c.wait_event('stopped')['body']
    check(back['reason'] == 'exception' if stops - at_end_error > 0 else
          'start of the trace' in back.get('description', ''),
          'reverseContinue from the end: %s' % back)
    check(c.close() == 0, 'disconnect: exit status 0')
    print('damaged trace: %d decode-error stops, %s' % (
        stops, 'ends at one' if at_end_error else 'ends after them'))
finally:
    shutil.rmtree(tmp)
print('check_errors: %d failures' % fails)
sys.exit(1 if fails else 0)
