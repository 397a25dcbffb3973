#!/usr/bin/env python3
"""cs_merge_order.py LISTER_OUTPUT SNAP2PERF_INFO PTDECODE_JSONL

The oracle for ptdecode's merged timeline of per-CPU CoreSight queues:
from OpenCSD's own element listing (trc_pkt_lister -decode_only on the
snapshot the perf.data was made from), the order perf script 6.1 gives
the CPUs' instructions, worked out here from perf's rules
(tools/perf/util/cs-etm-decoder/cs-etm-decoder.c and cs-etm.c of Linux
6.1, its auxtrace heap in auxtrace.c):

- per trace ID, an instruction range is a block keyed by an estimate in
  timestamp units: after a discontinuity (NO_SYNC, TRACE_ON, a buffer's
  end) or a PE context naming a thread, ranges wait for the next
  timestamp T and get T minus their instruction count; after that each
  range gets the previous estimate plus the instructions since, a later
  timestamp setting the next estimate to itself; a packet queue of 1023
  full before a timestamp, or the buffer's end, processes what waits at
  once (in the queue's current place);
- the queues' blocks are merged with a binary min-heap: the smallest key
  is taken out, its block processed, the queue's next block added with
  its key (an entry equal to its parent stays below it; a pop moves the
  smaller child up, the right one when equal).

It prints nothing and exits 0 when the CPUs' runs (CPU, number of
instructions in a row) of ptdecode's JSON lines equal the oracle's, else
shows the first difference and exits 1.
"""
import json
import re
import sys

PACKETS = 1023
LINE = re.compile(r'^Idx:(\d+); ID:([0-9a-fA-F]+); OCSD_GEN_TRC_ELEM_([A-Z_]+)\((.*)$')


def elements(path):
    per_id = {}
    with open(path, errors='replace') as f:
        for line in f:
            m = LINE.match(line)
            if m:
                per_id.setdefault(int(m.group(2), 16), []).append(
                    (m.group(3), m.group(4)))
    return per_id


def blocks(elems, ctx_names_thread):
    """[(key or None, instructions)] of one trace ID, None = at once."""
    out = []
    ts = nxt = cnt = 0
    waiting = 0      # instructions of ranges waiting for a key
    npk = 0

    def flush(key):
        nonlocal waiting, npk
        out.append((key, waiting))
        waiting = 0
        npk = 0

    def packet():
        nonlocal npk
        npk += 1
        if npk >= PACKETS:
            flush(None)
            return True
        return False

    for kind, rest in elems:
        if kind == 'INSTR_RANGE':
            n = int(re.search(r'num_i\((\d+)\)', rest).group(1))
            waiting += n
            if packet():
                continue
            cnt += n
            if ts:
                ts = nxt
                nxt += cnt
                cnt = 0
                flush(ts)
        elif kind in ('EXCEPTION', 'EXCEPTION_RET'):
            packet()
        elif kind in ('NO_SYNC', 'TRACE_ON'):
            ts = nxt = cnt = 0
            packet()
        elif kind == 'EO_TRACE':
            ts = nxt = cnt = 0
            flush(None)
        elif kind == 'TIMESTAMP':
            t = int(re.search(r'TS=(0x[0-9a-fA-F]+)', rest).group(1), 16)
            if ts:
                nxt = t
                continue
            ts = 0 if not t or cnt > t else t - cnt
            nxt = t
            cnt = 0
            flush(ts if ts else None)
        elif kind == 'PE_CONTEXT':
            if ((ctx_names_thread == 'ctxid' and 'CID=' in rest.replace('VMID=', '')) or
                    (ctx_names_thread == 'vmid' and 'VMID=' in rest)):
                ts = nxt = cnt = 0
    if waiting:
        flush(None)
    return [b for b in out if b[1] or b[0] is not None]


class Heap:
    def __init__(self):
        self.a = []

    def _place(self, pos, q, key):
        while pos:
            parent = (pos - 1) // 2
            if self.a[parent][0] <= key:
                break
            self.a[pos] = self.a[parent]
            pos = parent
        self.a[pos] = (key, q)

    def add(self, q, key):
        self.a.append(None)
        self._place(len(self.a) - 1, q, key)

    def pop(self):
        # the hole sinks along the smaller child (the right one on equal
        # keys); the last entry fills it
        a = self.a
        cnt = len(a)
        pos = 0
        while True:
            left = 2 * pos + 1
            if left >= cnt:
                break
            right = left + 1
            if right >= cnt:
                a[pos] = a[left]
                a.pop()
                return
            pos = left if a[left][0] < a[right][0] else right
            a[(pos - 1) // 2] = a[pos]
        last = a.pop()
        if pos < cnt - 1:
            self._place(pos, last[1], last[0])


def merge(per_queue):
    """perf's order of the queues' blocks: [(queue, instructions)]."""
    out = []
    pos = [0] * len(per_queue)
    heap = Heap()

    def advance(q):
        # blocks processed at once follow; the next keyed one waits
        bl = per_queue[q]
        while pos[q] < len(bl) and bl[pos[q]][0] is None:
            out.append((q, bl[pos[q]][1]))
            pos[q] += 1
        if pos[q] < len(bl):
            heap.add(q, bl[pos[q]][0])

    for q, bl in enumerate(per_queue):
        if bl:   # what comes before a queue's first key goes first
            heap.add(q, 0 if bl[0][0] is None else bl[0][0])
    while heap.a:
        q = heap.a[0][1]
        heap.pop()
        bl = per_queue[q]
        if bl[pos[q]][0] is not None:
            out.append((q, bl[pos[q]][1]))
            pos[q] += 1
        advance(q)
    return out


def runs(seq):
    r = []
    for who, n in seq:
        if not n:
            continue
        if r and r[-1][0] == who:
            r[-1][1] += n
        else:
            r.append([who, n])
    return r


def main():
    lister, info, jsonl = sys.argv[1:4]
    cpu_of = {}
    names_thread = {}
    with open(info) as f:
        for line in f:
            m = re.match(r'source ID (0x[0-9a-f]+) cpu (\d+) (\S+)', line)
            if m:
                cpu_of[int(m.group(1), 16)] = int(m.group(2))
            m = re.match(r'pidfmt (0x[0-9a-f]+) (\S+)', line)
            if m:
                names_thread[int(m.group(1), 16)] = m.group(2)
    got = []
    with open(jsonl) as f:
        for line in f:
            o = json.loads(line)
            if o.get('type') == 'insn':
                got.append((o['cpu'], 1))
    have = {}
    for c, _ in got:
        have[c] = have.get(c, 0) + 1
    got = runs(got)
    per_id = elements(lister)
    ids = sorted(cpu_of, key=lambda i: cpu_of[i])
    per_queue = []
    for i in ids:
        bl = blocks(per_id.get(i, []), names_thread.get(i, 'none'))
        # OpenCSD ends a source's raw stream (the perf.data) with an error
        # where the formatted buffer (the listing) still gives a last
        # range: the trailing instructions beyond ptdecode's are left out
        # (at most 2 per CPU, or the check fails)
        over = sum(n for _, n in bl) - have.get(cpu_of[i], 0)
        if over < 0 or over > 2:
            print(f'cpu {cpu_of[i]}: ptdecode has {have.get(cpu_of[i], 0)} '
                  f'instructions, the listing {over + have.get(cpu_of[i], 0)}')
            return 1
        while over:
            k, n = bl[-1]
            cut = min(n, over)
            bl[-1] = (k, n - cut)
            over -= cut
            if not bl[-1][1]:
                bl.pop()
        per_queue.append(bl)
    want = runs((cpu_of[ids[q]], n) for q, n in merge(per_queue))
    ninsn = sum(n for _, n in want)
    if got == want:
        print(f'same order: {len(want)} runs of one CPU, {ninsn} instructions,'
              f' {len(ids)} CPUs')
        return 0
    for i, (g, w) in enumerate(zip(got + [None] * len(want), want + [None] * len(got))):
        if g != w:
            print(f'run {i} differs: ptdecode {g}, perf 6.1 rule {w} '
                  f'(of {len(got)} / {len(want)} runs)')
            print('ptdecode around it:', got[max(0, i - 3):i + 3])
            print('oracle around it:  ', want[max(0, i - 3):i + 3])
            break
    return 1


if __name__ == '__main__':
    sys.exit(main())
