#!/usr/bin/env python3
"""clock_mutate.py IN.perf.data OUT.perf.data MODE CPU

Damages one CPU's Intel PT trace in a per-CPU perf.data (ptsynth record
--cpus N), in place (no size changes), so that perf's own decoder and
ptdecode's both still decode it but perf's timing rules can no longer be
followed packet by packet from the queue's start.  Prints what it did.
  nopsb   the PSB that begins CPU's first AUXTRACE buffer becomes 16 PAD
          bytes: the queue begins with a PSB+'s body without its PSB
          (decoders skip to the next PSB)
  badpkt  the byte right after the PSBEND of a PSB+ in the middle of
          CPU's trace becomes a TIP with reserved IP compression (0xad):
          a decode error there
  badoff  a MODE.Exec right after a TIP.PGD (tracing off) in the middle
          of CPU's trace becomes a TIP with reserved IP compression and a
          PAD: a decode error while tracing is off (the mode is the one
          the PSB+ gave, so the flow stays the same)
  ovfpgd  an asynchronous trace stop with an overflow while tracing is
          off after it (FUP, TIP.PGD, OVF, TIP.PGE with a full IP:
          ptsynth --interrupts with --overflows) in the middle of CPU's
          trace: the FUP becomes the OVF (and PADs), the OVF PADs: an
          overflow that resolves as tracing stops, the OVF directly
          followed by the TIP.PGD (the instructions from the last branch
          to the interrupt are lost; the TIP.PGE's IP needs no last IP)
"""
import struct
import sys

AUXTRACE = 71
PSB = bytes([0x02, 0x82]) * 8
PSBEND = bytes([0x02, 0x23])


def auxtraces(data, cpu):
    off, size = struct.unpack_from("<QQ", data, 40)   # data section
    pos, end = off, off + size
    while pos + 8 <= end:
        typ, _, sz = struct.unpack_from("<IHH", data, pos)
        if sz < 8:
            sys.exit("bad record at %#x" % pos)
        extra = 0
        if typ == AUXTRACE:
            extra = struct.unpack_from("<Q", data, pos + 8)[0]
            if struct.unpack_from("<I", data, pos + 40)[0] == cpu:
                yield pos + sz, extra
        pos += sz + extra


EXT_SIZES = {0x82: 16, 0x23: 2, 0xf3: 2, 0x03: 4, 0x73: 7, 0x43: 8, 0xc8: 7,
             0xa3: 8, 0x83: 2, 0x62: 2, 0xe2: 2, 0xc2: 10, 0x22: 4, 0xa2: 7,
             0x33: 2, 0xb3: 2}
IP_SIZES = {0: 0, 1: 2, 2: 4, 3: 6, 4: 6, 6: 8}


def packets(data, start, end):
    """(offset, size, kind) of the packets from start (a packet's first
    byte) to end, kind 'fup', 'pgd', 'psb' or '' for the others; stops at
    a packet it does not know or that end cuts."""
    pos = start
    while pos < end:
        b = data[pos]
        kind = ''
        if b == 0:
            n = 1
        elif b & 3 == 3:                         # CYC
            n = 1
            if b & 4:
                while pos + n < end and data[pos + n] & 1:
                    n += 1
                n += 1
        elif b & 0x1f in (0x01, 0x0d, 0x11, 0x1d):
            if b >> 5 not in IP_SIZES:
                return
            n = 1 + IP_SIZES[b >> 5]
            kind = {0x01: 'pgd', 0x1d: 'fup'}.get(b & 0x1f, '')
        elif b == 0x19:
            n = 8
        elif b in (0x59, 0x99):
            n = 2
        elif b == 0x02 and pos + 1 < end and data[pos + 1] in EXT_SIZES:
            n = EXT_SIZES[data[pos + 1]]
            kind = {0x82: 'psb', 0xf3: 'ovf'}.get(data[pos + 1], '')
        elif b & 1 == 0:                         # TNT8
            n = 1
        else:
            return
        if pos + n > end:
            return
        yield pos, n, kind
        pos += n


def main():
    src, dst, mode, cpu = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    data = bytearray(open(src, "rb").read())
    bufs = list(auxtraces(data, cpu))
    if not bufs:
        sys.exit("no AUXTRACE data of CPU %d" % cpu)
    if mode == "nopsb":
        start = bufs[0][0]
        if data[start:start + 16] != PSB:
            sys.exit("CPU %d's trace does not begin with a PSB" % cpu)
        data[start:start + 16] = bytes(16)
        print("CPU %d: first PSB padded out at file offset %#x" % (cpu, start))
    elif mode == "badpkt":
        # the PSBENDs of the CPU's trace, in order
        ends = []
        for start, n in bufs:
            i = data.find(PSB, start, start + n)
            while i >= 0:
                e = data.find(PSBEND, i, start + n)
                if e < 0 or e + 2 >= start + n:
                    break   # the byte after it is in the next record
                ends.append(e + 2)
                i = data.find(PSB, e, start + n)
        if len(ends) < 3:
            sys.exit("CPU %d's trace has only %d PSB+" % (cpu, len(ends)))
        at = ends[len(ends) // 2]
        data[at] = 0xad
        print("CPU %d: bad TIP after PSB+ %d of %d at file offset %#x"
              % (cpu, len(ends) // 2, len(ends), at))
    elif mode == "badoff":
        # TSC (and TMA with MTC), MODE.Exec, TIP.PGE: the trace resuming
        # after a stop (the TSC's opcode before, the TIP.PGE's after: no
        # TNT payload looks like that)
        offs = []
        for start, n in bufs:
            i = data.find(bytes([0x99, 0x01]), start + 15, start + n - 2)
            while i >= 0:
                tsc = data[i - 8] == 0x19 or \
                    (data[i - 7:i - 5] == bytes([0x02, 0x73]) and data[i - 15] == 0x19)
                if tsc and data[i + 2] & 0x1f == 0x11:
                    offs.append(i)
                i = data.find(bytes([0x99, 0x01]), i + 1, start + n - 2)
        if len(offs) < 3:
            sys.exit("CPU %d's trace resumes only %d times" % (cpu, len(offs)))
        at = offs[len(offs) // 2]
        data[at:at + 2] = bytes([0xad, 0x00])
        print("CPU %d: bad TIP while tracing is off, before resume %d of %d at file "
              "offset %#x" % (cpu, len(offs) // 2, len(offs), at))
    elif mode == "ovfpgd":
        # FUP, TIP.PGD, then (timing packets between) OVF, from each
        # buffer's first PSB on
        cases = []
        for start, n in bufs:
            i = data.find(PSB, start, start + n)
            pk = list(packets(data, i, start + n)) if i >= 0 else []
            for k in range(len(pk) - 2):
                if pk[k][2] != 'fup' or pk[k + 1][2] != 'pgd':
                    continue
                for pos, size, kind in pk[k + 2:]:
                    if kind == 'ovf':
                        cases.append((pk[k][0], pk[k][1], pos))
                    if kind or data[pos] in (0x99,) or data[pos] & 0x1f in (0x0d, 0x11):
                        break
        if len(cases) < 3:
            sys.exit("CPU %d's trace overflows after an interrupt only %d times"
                     % (cpu, len(cases)))
        at, size, ovf = cases[len(cases) // 2]
        data[at:at + size] = bytes([0x02, 0xf3]) + bytes(size - 2)
        data[ovf:ovf + 2] = bytes(2)
        print("CPU %d: OVF before the TIP.PGD of interrupt %d of %d at file offset %#x"
              % (cpu, len(cases) // 2, len(cases), at))
    else:
        sys.exit("unknown mode " + mode)
    open(dst, "wb").write(data)


main()
