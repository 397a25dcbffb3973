#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""perfdir_join.py DIR OUT | --list DIR

DIR OUT: the perf.data file equivalent to the perf.data
directory DIR (perf record --threads layout): DIR/data's header, attrs and
ids, its records followed by every data.N file's records, and its feature
sections less HEADER_DIR_FORMAT.  Written without ptdecode's reader, from
the file layout perf documents (tools/perf/Documentation/perf.data-file-
format.txt), so that perf's own decoder can be run on the same records
where it cannot read AUX data out of data.N files itself.
--list DIR: "FILE TYPE COUNT" for every record type in every file."""
import os
import re
import struct
import sys

DIR_FORMAT = 24
HDR = 104


def records(buf, start, end):
    """(type, offset) of the records in buf[start:end] (AUXTRACE
    payloads skipped)."""
    off = start
    while off + 8 <= end:
        typ, _, size = struct.unpack_from("<IHH", buf, off)
        if size < 8:
            sys.exit("corrupt record at offset %d" % off)
        yield typ, off
        if typ == 71:
            size += struct.unpack_from("<Q", buf, off + 8)[0]
        off += size


def list_types(d):
    for n in sorted(n for n in os.listdir(d) if re.fullmatch(r"data(\.\d+)?", n)):
        with open(os.path.join(d, n), "rb") as f:
            buf = f.read()
        start, end = 0, len(buf)
        if n == "data":
            start, size = struct.unpack_from("<QQ", buf, 40)
            end = start + size
        counts = {}
        for typ, _ in records(buf, start, end):
            counts[typ] = counts.get(typ, 0) + 1
        for typ in sorted(counts):
            print(n, typ, counts[typ])


def main(d, out):
    with open(os.path.join(d, "data"), "rb") as f:
        head = f.read()
    magic, hsize, attr_size = struct.unpack_from("<8sQQ", head, 0)
    if magic != b"PERFILE2" or hsize != HDR:
        sys.exit("%s/data: not a perf.data header" % d)
    data_off, data_size = struct.unpack_from("<QQ", head, 40)
    bits = int.from_bytes(head[72:104], "little")
    feats = []
    table = data_off + data_size
    for i, feat in enumerate(f for f in range(256) if bits >> f & 1):
        off, size = struct.unpack_from("<QQ", head, table + 16 * i)
        feats.append((feat, head[off:off + size]))
    names = sorted((n for n in os.listdir(d) if re.fullmatch(r"data\.\d+", n)),
                   key=lambda n: int(n[5:]))
    body = bytearray(head[data_off:data_off + data_size])
    for n in names:
        with open(os.path.join(d, n), "rb") as f:
            body += f.read()
    feats = [(f, b) for f, b in feats if f != DIR_FORMAT]
    new_bits = sum(1 << f for f, _ in feats)
    out_b = bytearray(head[:data_off])      # header, attrs, ids
    struct.pack_into("<QQ", out_b, 48 - 8, data_off, len(body))
    out_b[72:104] = new_bits.to_bytes(32, "little")
    out_b += body
    off = len(out_b) + 16 * len(feats)
    for _, b in feats:
        out_b += struct.pack("<QQ", off, len(b))
        off += len(b)
    for _, b in feats:
        out_b += b
    with open(out, "wb") as f:
        f.write(out_b)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    if sys.argv[1] == "--list":
        list_types(sys.argv[2])
    else:
        main(sys.argv[1], sys.argv[2])
