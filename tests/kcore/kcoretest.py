"""Helpers of the kcore tests: an ELF core file's PT_LOADs and a text
store's rows, read without the project's code."""
import os
import struct


def kcore_segments(path):
    """{vaddr: bytes} of the PT_LOAD segments of an ELF64 core file, or None
    when it is no ELF core file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or struct.unpack_from("<H", data, 16)[0] != 4:
        return None
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    segs = {}
    for i in range(phnum):
        p_type, _, off, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", data,
                                                              phoff + i * phentsize)
        if p_type == 1:
            segs[vaddr] = data[off:off + filesz]
    return segs


def text_rows(store):
    """The rows of STORE/index.tsv, each with its blob's bytes (None: '-')."""
    rows = []
    with open(os.path.join(store, "index.tsv")) as f:
        for line in f:
            if line.startswith("#"):
                continue
            c = line.rstrip("\n").split("\t")
            blob = None
            if c[7] != "-":
                with open(os.path.join(store, c[7] + ".bin"), "rb") as b:
                    blob = b.read()
            rows.append({"kind": c[0], "start": int(c[1], 16), "len": int(c[2]),
                         "from": c[3], "to": c[4], "source": c[6], "hash": c[7],
                         "name": c[12], "bytes": blob})
    return rows
