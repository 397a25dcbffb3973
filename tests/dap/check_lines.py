#!/usr/bin/env python3
"""check_lines.py PTDECODE CAPTURE SOURCE_PATH

Where `ptdecode dap` places source breakpoints against gdb on the
capture's program: a breakpoint on every line of SOURCE_PATH (the fixture
program's source, 1 to its last line + 2): gdb's `break FILE:LINE` gives
the line it moved to and the addresses of its locations (none: no code
there, pending); setBreakpoints must answer the same line with verified
true and the lowest of those addresses as instructionReference, or
verified false where gdb has no location.  Exits 77 (skip) without gdb."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gdbtool  # noqa: E402

ptdecode, capture, path = sys.argv[1:4]
gdbtool.need_gdb(capture)
name = os.path.basename(path)


def pie_base():
    """Where a PIE program is loaded without address randomization (as
    gdb and ptsynth run it): gdb gives its addresses as linked before the
    run, and running it makes setting breakpoints slow."""
    exe = gdbtool.program(capture)
    out = subprocess.run(['readelf', '-h', exe], stdout=subprocess.PIPE).stdout
    os.unlink(exe)
    return 0x555555554000 if b'DYN (' in out else 0

nlines = sum(1 for _ in open(path)) + 2
want = gdbtool.gdb(capture, '''
bias = %d
out = []
for l in range(1, %d + 1):
    try:
        b = gdb.Breakpoint('%s:%%d' %% l)
    except gdb.error:
        out.append(None)
        continue
    locs = sorted(x.address + bias for x in b.locations)
    out.append([b.locations[0].source[1], hex(locs[0])] if locs else None)
    b.delete()
print('RESULT ' + json.dumps(out))
''' % (pie_base(), nlines, name))
c, tid, r = gdbtool.launch(ptdecode, capture, name, range(1, nlines + 1), True)
got = []
for b in r['body']['breakpoints']:
    got.append([b['line'], b.get('instructionReference')] if b['verified'] else None)
c.close()
same = 0
for line, (g, w) in enumerate(zip(got, want), 1):
    if g == w:
        same += 1
    else:
        print('FAIL: %s:%d: line, address %s; gdb %s' % (name, line, g, w))
print('%s: breakpoints on %d lines, %d placed as gdb places them (%d with code)'
      % (name, len(want), same, sum(1 for w in want if w)))
gdbtool.cleanup()
sys.exit(0 if same == len(want) == len(got) else 1)
