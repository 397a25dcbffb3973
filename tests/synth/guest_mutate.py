#!/usr/bin/env python3
"""guest_mutate.py IN.perf.data OUT.perf.data MODE

Damages the guest sideband of a ptsynth --guest perf.data (tests of
ptdecode's bad-input handling) and prints the number of guest sideband
records (cpumode PERF_RECORD_MISC_GUEST_KERNEL/_GUEST_USER) in the file,
counted here from the records themselves:
  unknown-id  the ID_INDEX entry names another sample id, so no guest
              record's id names a machine
  plain       the ID_INDEX loses its machine_pid/vcpu fields (the 16 bytes
              become a FINISHED_ROUND record of their own)
"""
import struct
import sys

ID_INDEX, FINISHED_ROUND = 69, 68


def records(data):
    off, size = struct.unpack_from("<QQ", data, 40)   # data section
    pos, end = off, off + size
    while pos + 8 <= end:
        typ, misc, sz = struct.unpack_from("<IHH", data, pos)
        if sz < 8:
            sys.exit("bad record at %#x" % pos)
        yield pos, typ, misc, sz
        # AUXTRACE (71): its payload follows the record
        pos += sz + (struct.unpack_from("<Q", data, pos + 8)[0] if typ == 71 else 0)


def main():
    src, dst, mode = sys.argv[1:4]
    data = bytearray(open(src, "rb").read())
    found = False
    nguest = 0
    for pos, typ, misc, sz in records(data):
        if typ < 64 and (misc & 7) in (4, 5):
            nguest += 1
        if typ != ID_INDEX:
            continue
        found = True
        if mode == "unknown-id":
            struct.pack_into("<Q", data, pos + 16, 999)
        elif mode == "plain":
            nr = struct.unpack_from("<Q", data, pos + 8)[0]
            keep = 16 + 32 * nr
            struct.pack_into("<H", data, pos + 6, keep)
            struct.pack_into("<IHH", data, pos + keep, FINISHED_ROUND, 0, sz - keep)
        else:
            sys.exit("unknown mode " + mode)
    if not found:
        sys.exit("no ID_INDEX record in " + src)
    open(dst, "wb").write(data)
    print(nguest)


main()
