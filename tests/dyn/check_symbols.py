#!/usr/bin/env python3
"""check_symbols.py PTDECODE CAPTURE: every BPF instruction in --insn output
carries the bpf_prog_<tag>_<name> symbol of the program the text store index
(KSYMBOL names and windows) says was at that address at that instruction's
time, and a BPF source line; both programs sharing a reused address appear."""
import subprocess, sys

ptdecode, cap = sys.argv[1], sys.argv[2]
rows = []
for line in open(cap + '/text/index.tsv'):
    if line.startswith('#'):
        continue
    f = line.rstrip('\n').split('\t')
    if not f[0].startswith('bpf'):
        continue
    start, length = int(f[1], 16), int(f[2])
    frm = int(f[3]) if f[3] != '-' else 0
    to = int(f[4]) if f[4] != '-' else 1 << 64
    rows.append((start, start + length, frm, to, f[12]))

out = subprocess.run([ptdecode, '-q', '--insn', '--no-disasm', '-t', cap],
                     capture_output=True, text=True).stdout
bad = nosrc = total = 0
names_at = {}
for line in out.splitlines():
    if not line.startswith('0x'):
        continue
    total += 1
    # 0xADDR [cpu] pid/tid SECS.NSECS  symbol+off  # file:line
    parts = line.split()
    addr = int(parts[0], 16)
    secs, ns = parts[3].split('.')
    t = int(secs) * 1000000000 + int(ns)
    sym = parts[4].split('+')[0]
    want = sorted({r[4] for r in rows if r[0] <= addr < r[1] and r[2] <= t < r[3]})
    if len(want) != 1 or sym != want[0]:
        bad += 1
        if bad <= 5:
            print('FAIL: %#x at %d named %s, index says %s' % (addr, t, sym, want))
    if not (' # ' in line and '.bpf.c:' in line):
        nosrc += 1
    names_at.setdefault(addr, set()).add(sym)
reused = {a: n for a, n in names_at.items() if len(n) > 1}
for a, n in sorted(reused.items()):
    print('OK: %#x named %s, each in its own time window' % (a, ' then '.join(sorted(n))))
print('%d instructions: %d named unlike the index, %d without a BPF source line'
      % (total, bad, nosrc))
sys.exit(0 if total and not bad and nosrc < total // 20 and reused else 1)
