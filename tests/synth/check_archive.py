#!/usr/bin/env python3
"""check_archive.py PTSYNTH PTDECODE PROGDIR WORKDIR

A capture carries its program's own ELF files (NAME.ptd/.build-id/xx/rest):
fx_plt and libptfix.so (copied from PROGDIR) are recorded, then deleted or
replaced by a file with another build id, and ptdecode still names their
functions and source lines.  The oracles are nm and addr2line of the
archived files: every symbol ptdecode prints in their mappings is one of
nm's, at nm's address plus one load bias per file, and main's and
fixlib_mix's first lines are addr2line's.  ld.so and libc (system files) are not archived, a --no-archive
capture archives nothing, and then the program's code shows as ??.
Exit 0 = pass, 1 = fail, 77 = skipped."""
import os
import re
import shutil
import subprocess
import sys

ptsynth, ptdecode, progdir, work = sys.argv[1:5]
fails = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        fails.append(what)


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True,
                         text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def nm(path):
    """name -> address of the defined functions of an ELF file."""
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TtWi":
            syms.setdefault(f[2], int(f[0], 16))
    return syms


def record(name, *opts):
    cap = os.path.join(work, name)
    env = dict(os.environ, LD_LIBRARY_PATH=bindir)
    r = subprocess.run([ptsynth, "record", "-o", cap, *opts, "--",
                        os.path.join(bindir, "fx_plt")], env=env,
                       capture_output=True, text=True)
    if r.returncode:
        if "PTRACE" in r.stderr or "ptrace" in r.stderr:
            print("SKIP: ptrace unavailable: " + r.stderr.strip())
            sys.exit(77)
        print("FAIL: ptsynth: " + r.stderr.strip())
        sys.exit(1)
    return cap


def mappings(cap):
    """recorded path -> (start, end) ranges of its text store rows."""
    maps = {}
    with open(os.path.join(cap, "text", "index.tsv")) as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            if c[0] == "file":
                start = int(c[1], 16)
                maps.setdefault(c[12], []).append((start, start + int(c[2])))
    return maps


def decode(cap):
    """(address, symbol, offset, source line) of every instruction."""
    r = subprocess.run([ptdecode, "-q", "--insn", "--no-disasm", "--src", cap],
                       capture_output=True, text=True)
    check(r.returncode == 0, "ptdecode %s exits 0%s" %
          (cap, r.returncode and ": " + r.stderr.strip() or ""))
    out = []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0].startswith("0x"):
            sym, _, off = f[1].partition("+0x")
            src = line.split("# ", 1)[1].strip() if "# " in line else ""
            out.append((int(f[0], 16), sym, int(off or "0", 16), src))
    return out


def check_names(insns, cap, path, archived, want):
    """ptdecode's names and source lines in path's mappings against nm and
    addr2line of its archived copy."""
    syms = nm(archived)
    ranges = mappings(cap)[path]
    biases, unknown, seen, srcs = set(), set(), set(), {}
    for addr, sym, off, src in insns:
        if not any(a <= addr < b for a, b in ranges) or sym.endswith("@plt"):
            continue
        if sym in syms:
            seen.add(sym)
            biases.add(addr - off - syms[sym])
            if sym in want and off == 0:
                srcs[sym] = src
        else:
            unknown.add(sym)
    base = os.path.basename(path)
    check(not unknown, "%s: every name is one of nm's (not: %s)" %
          (base, " ".join(sorted(unknown))))
    check(want <= seen, "%s: %s named (named: %s)" %
          (base, " ".join(sorted(want)), " ".join(sorted(seen))))
    check(len(biases) == 1, "%s: names at nm's addresses plus one load "
          "bias (%s)" % (base, " ".join(hex(b) for b in sorted(biases))))
    for sym in sorted(want):
        a2l = subprocess.run(["addr2line", "-e", archived, hex(syms[sym])],
                             capture_output=True, text=True).stdout.split()
        check(a2l and srcs.get(sym) == a2l[0], "%s: %s's source line %s is "
              "addr2line's %s" % (base, sym, srcs.get(sym), a2l))


shutil.rmtree(work, ignore_errors=True)
bindir = os.path.join(work, "bin")
os.makedirs(bindir)
files = {}
for f in ("fx_plt", "libptfix.so"):
    shutil.copy2(os.path.join(progdir, f), bindir)
    files[f] = os.path.join(bindir, f)
bids = {f: build_id(p) for f, p in files.items()}
cap = record("archive.ptd")
bare = record("bare.ptd", "--no-archive")

# What was archived: the program's own two files, by build id, verbatim.
arch = {f: os.path.join(cap, ".build-id", b[:2], b[2:]) for f, b in bids.items()}
for f, a in arch.items():
    ok = os.path.isfile(a)
    with open(files[f], "rb") as x, open(a, "rb") as y:
        ok = ok and x.read() == y.read()
    check(ok, "%s archived as .build-id/%s/%s" % (f, bids[f][:2], bids[f][2:]))
n = sum(len(fs) for _, _, fs in os.walk(os.path.join(cap, ".build-id")))
check(n == 2, "only the program's own files archived (%d files; not ld.so "
      "and libc)" % n)
check(not os.path.exists(os.path.join(bare, ".build-id")),
      "--no-archive: no .build-id/")

want = {"fx_plt": {"main"}, "libptfix.so": {"fixlib_mix"}}
# The program gone, then another file (another build id) in its place.
for f in files.values():
    os.unlink(f)
for case in ("deleted", "replaced"):
    print("# program files %s" % case)
    insns = decode(cap)
    for f, p in files.items():
        check_names(insns, cap, p, arch[f], want[f])
    ranges = mappings(bare)[files["fx_plt"]]
    names = {s for a, s, _, _ in decode(bare)
             if any(x <= a < y for x, y in ranges)}
    check(names == {"??"}, "--no-archive capture: fx_plt's code is ?? (%s)" %
          " ".join(sorted(names)))
    shutil.copy2(ptdecode, files["fx_plt"])
    shutil.copy2(ptdecode, files["libptfix.so"])

sys.exit(1 if fails else 0)
