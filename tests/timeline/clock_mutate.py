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
    else:
        sys.exit("unknown mode " + mode)
    open(dst, "wb").write(data)


main()
