"""Shared by the gdb comparisons: the capture's program, gdb on it, and
`ptdecode dap` sessions on the capture."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from dapclient import Client

TMP = tempfile.mkdtemp()


def need_gdb(capture=None):
    if not shutil.which('gdb'):
        print('SKIP: gdb is not installed')
        sys.exit(77)
    if capture and not os.path.exists(capture):
        print('SKIP: no capture %s (its recording was skipped)' % capture)
        sys.exit(77)


def libraries(capture):
    """The capture's archived shared libraries of its own (the system's
    are where they were), under their sonames in a directory of TMP for
    LD_LIBRARY_PATH."""
    d = os.path.join(TMP, 'lib')
    os.makedirs(d, exist_ok=True)
    for f in sorted(glob.glob(os.path.join(capture, '.build-id', '*', '*'))):
        out = subprocess.run(['readelf', '-dW', f], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL).stdout.decode()
        m = re.search(r'\(SONAME\)\s+Library soname: \[(.*)\]', out)
        if m and not os.path.exists(os.path.join(d, m.group(1))):
            shutil.copy(f, os.path.join(d, m.group(1)))
    return d


def program(capture):
    """A runnable copy of the capture's archived ELF file that defines main."""
    for f in sorted(glob.glob(os.path.join(capture, '.build-id', '*', '*'))):
        out = subprocess.run(['readelf', '-sW', f], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL).stdout.decode()
        if re.search(r' main$', out, re.M):
            # archived without the execute bit: run a copy
            exe = os.path.join(TMP, os.path.basename(f))
            shutil.copy(f, exe)
            os.chmod(exe, 0o755)
            return exe
    sys.exit('FAIL: no archived program with main in %s' % capture)


def symbol_addr(capture, name):
    """The address of ELF symbol name in the capture's program, as 0x..."""
    elf = program(capture)
    out = subprocess.run(['readelf', '-sW', elf], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL).stdout.decode()
    os.unlink(elf)
    m = re.search(r'^\s*\d+:\s+([0-9a-f]+)\s.*\s%s$' % re.escape(name), out, re.M)
    if not m:
        sys.exit('FAIL: no symbol %s in the program of %s' % (name, capture))
    return hex(int(m.group(1), 16))


# gdb's backtrace as [function, line] from the newest frame up to main
GDB_BT = '''
def bt():
    f, out = gdb.newest_frame(), []
    while f is not None:
        # a signal trampoline's frame has no name: gdb prints this
        name = ('<signal handler called>' if f.type() == gdb.SIGTRAMP_FRAME
                else f.name())
        out.append([name, f.find_sal().line])
        if f.name() == 'main':
            break
        f = f.older()
    return out
'''


def gdb(capture, script):
    """Runs a gdb Python script (with bt() defined) on the capture's
    program, without arguments as ptsynth ran it; returns what the script
    printed as RESULT json."""
    elf = program(capture)
    tmp = os.path.join(TMP, 'script.py')
    with open(tmp, 'w') as f:
        f.write('import gdb, json\n' + GDB_BT + script)
    try:
        out = subprocess.run(['gdb', '-nx', '-batch', '-ex', 'set pagination off',
                              '-ex', 'set confirm off',
                              '-ex', 'set debuginfod enabled off',
                              '-ex', 'set startup-with-shell off',
                              '-ex', 'set breakpoint pending on',
                              # signals go to the program as they did
                              # under ptsynth
                              '-ex', 'handle SIGUSR1 SIGUSR2 SIGALRM nostop noprint pass',
                              '-ex', 'set environment LD_LIBRARY_PATH ' +
                              libraries(capture),
                              '-x', tmp, elf],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=120).stdout.decode(errors='replace')
    finally:
        os.unlink(tmp)
        os.unlink(elf)
    m = re.search(r'^RESULT (.*)$', out, re.M)
    if not m:
        sys.exit('FAIL: gdb gave no result:\n' + out[-3000:])
    return json.loads(m.group(1))


def dap_bt(c, tid):
    """The stack trace as [function, line] up to main."""
    out = []
    for f in c.request('stackTrace', threadId=tid)['body']['stackFrames']:
        out.append([f['name'], f.get('line', 0)])
        if f['name'] == 'main':
            break
    return out


def launch(ptdecode, capture, source=None, lines=(), stop_on_entry=False,
           functions=()):
    """A dap session on capture with breakpoints set; returns the client,
    the first thread's id and the setBreakpoints response."""
    c = Client(ptdecode)
    c.request('initialize', adapterID='ptdecode')
    r = c.request('launch', trace=capture, stopOnEntry=stop_on_entry)
    if not r['success']:
        sys.exit('FAIL: launch: %s' % r.get('message'))
    bps = None
    if source:
        bps = c.request('setBreakpoints', source={'path': source},
                        breakpoints=[{'line': x} for x in lines])
    if functions:
        c.request('setFunctionBreakpoints',
                  breakpoints=[{'name': f} for f in functions])
    c.request('configurationDone')
    tid = c.request('threads')['body']['threads'][0]['id']
    return c, tid, bps


def cleanup():
    shutil.rmtree(TMP, ignore_errors=True)
