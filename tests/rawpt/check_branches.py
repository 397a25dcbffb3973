#!/usr/bin/env python3
"""check_branches.py PTDECODE PTLOOP DIR TRACE PAGES

`ptdecode --branches` on a raw Intel PT trace against the instruction
flow itself: libipt's instruction decoder run directly (ptloop, as ptxed
runs it) gives the addresses; ptdecode --decoder=libipt --insn, checked
to give the same addresses, the events between them and which
instructions are calls, returns and jumps.  Every such
branch whose target instruction follows it (only PSB+ status updates in
between: exec-mode, paging, tsx) must be listed, in order, by both
decoders' branch views, which must be equal; the views may list only the
branches that tracing interrupted besides (after trace-begin).
Exit 0 = pass, 1 = fail, 77 = skipped (reason printed).
"""
import os
import subprocess
import sys

BRANCH = {'call', 'ret', 'jmp'}
PREFIX = {'bnd', 'notrack', 'rep', 'repz', 'repe'}
STATUS = ('[exec-mode', '[paging', '[tsx')
KINDS = {'call', 'indirect-call', 'return', 'jump', 'indirect'}


def run(args):
    return subprocess.run(args, check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True).stdout.splitlines()


def mnemonic(text):
    for tok in text.split():
        if tok not in PREFIX:
            return tok
    return ''


def main():
    ptdecode, ptloop, d, trace, pages = sys.argv[1:6]
    if not os.path.isdir(d):
        print(f'SKIP: {d} not found (the shared real traces are not beside this checkout)')
        return 77
    src = ['--pt', f'{d}/{trace}', '--pages', f'{d}/{pages}.addr:{d}/{pages}.dump']
    oracle = [int(ln.split()[0], 16) for ln in
              run([ptloop, f'{d}/{trace}', f'pages:{d}/{pages}.addr:{d}/{pages}.dump'])
              if ln.startswith('0x')]
    # the flow with its events and the mnemonic at each address (code
    # does not change in these traces); its addresses must be ptloop's
    flow = [ln for ln in run([ptdecode, '-q', '--decoder=libipt', '--insn', '--no-sym'] + src)
            if ln.startswith(('0x', '['))]
    mn = {}
    for ln in flow:
        if ln.startswith('0x'):
            a, _, text = ln.partition(' ')
            mn[int(a, 16)] = mnemonic(text)
    if [int(ln.split()[0], 16) for ln in flow if ln.startswith('0x')] != oracle:
        print('FAIL: --decoder=libipt --insn gives other instructions than ptloop')
        return 1
    want, broken, pend = [], 0, None
    for ln in flow:
        if ln.startswith('0x'):
            a = int(ln.split()[0], 16)
            if pend is not None:
                want.append((pend, a))
            pend = a if mn.get(a) in BRANCH else None
        elif not ln.startswith(STATUS):
            broken += pend is not None
            pend = None
    if len(want) < 100:
        print(f'FAIL: only {len(want)} calls, returns and jumps in the flow')
        return 1
    views = {}
    for dec in ('libipt', 'fast'):
        got = []
        for ln in run([ptdecode, '-q', f'--decoder={dec}', '--branches', '--no-sym'] + src):
            f = ln.split()
            if len(f) >= 4 and f[1] == '->' and f[3] in KINDS:
                got.append((int(f[0], 16), int(f[2], 16)))
        views[dec] = got
    rc = 0
    if views['libipt'] != views['fast']:
        print('FAIL: the fast and libipt branch views differ')
        rc = 1
    for dec, got in views.items():
        i = 0
        for g in got:
            if i < len(want) and g == want[i]:
                i += 1
        extra = len(got) - i
        if i < len(want):
            print(f'FAIL: {dec}: branch {want[i][0]:#x} -> {want[i][1]:#x} of the flow '
                  f'(the {i + 1}th of {len(want)}) is not listed in order')
            rc = 1
        elif extra > broken:
            print(f'FAIL: {dec}: {extra} branches beyond the flow\'s, '
                  f'only {broken} interrupted')
            rc = 1
        else:
            print(f'{dec}: {len(want)} branches of the flow listed in order, '
                  f'{extra} interrupted ones ({broken} interrupted)')
    if rc == 0:
        print('PASS')
    return rc


if __name__ == '__main__':
    sys.exit(main())
