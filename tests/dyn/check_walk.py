#!/usr/bin/env python3
"""check_walk.py MODE PTDECODE FIXTURE.ptd DECODER [WORKDIR [ROW]]

Checks ptdecode on the BPF dynamic-text fixture (fixtures/bpf/walk.ptd,
made by `ptsynth walk`) against its ground truth, expected.insn.xz:

  exact         --insn equals expected.insn exactly.
  noversioning  with --no-versioning (every address decoded with its last
                version) the output is NOT expected.insn: the fixture needs
                versioned text to decode, so `exact` can fail.
  missing       a copy of the fixture with the blob of one walked text row
                deleted (ROW: walk_b = the program that reused walk_a's
                address; tail_patched = walk_tail while its tail-call site
                was patched): the decoder must report the missing code with
                errors or gaps that name the row's address range, at that
                address range and inside its time window, and decode all other
                segments of the walk exactly.
  ksymbol       perf (an independent perf.data parser, its HOME in
                WORKDIR) shows walk_b's KSYMBOL REGISTER at walk_a's address
                after walk_a's UNREGISTER: the fixture really has address
                reuse.
"""
import lzma
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from perf_home import perf_home  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def expected(fix):
    with lzma.open(os.path.join(fix, "expected.insn.xz"), "rt") as f:
        return [l.strip() for l in f if l.strip()]


def decode(ptdecode, fix, decoder, extra=()):
    p = subprocess.run([ptdecode, "--decoder=" + decoder, "--insn", *extra, fix],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    insns, other = [], []
    for line in p.stdout.splitlines():
        if line.startswith("0x"):
            insns.append(line.split()[0])
        elif line.strip():
            other.append(line)
    return insns, other, p


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "line %d: got %s, expected %s" % (i + 1, x, y)
    return "got %d lines, expected %d" % (len(a), len(b))


def walk_log(fix):
    """Segments (time, first_line, insns) and used rows of walk.log."""
    segs, used = [], []
    with open(os.path.join(fix, "walk.log")) as f:
        for line in f:
            m = re.match(r"segment time=(\d+) start=\S+ insns=(\d+) first_line=(\d+)", line)
            if m:
                segs.append((int(m[1]), int(m[3]), int(m[2])))
            m = re.match(r"used (\S+) (0x[0-9a-f]+) len (\d+) \[(\d+), (\d+)\) (\S+)", line)
            if m:
                used.append((int(m[2], 16), int(m[3]), int(m[4]), int(m[5]), m[6]))
    return segs, used


def main():
    mode, ptdecode, fix, decoder = sys.argv[1:5]
    exp = expected(fix)
    if mode == "exact":
        got, other, p = decode(ptdecode, fix, decoder)
        if got != exp:
            fail("%s decoder: %s; other lines: %s" % (decoder, first_diff(got, exp),
                                                       other[:3]))
        bad = [l for l in other if l.startswith("[error") or l.startswith("[gap")]
        if bad or p.returncode:
            fail("%s decoder: errors on a complete fixture: %s" % (decoder, bad[:3]))
        print("OK: %s decoder: %d instructions exactly" % (decoder, len(got)))
    elif mode == "noversioning":
        got, other, _ = decode(ptdecode, fix, decoder, ["--no-versioning"])
        if got == exp:
            fail("--no-versioning decodes the walk exactly: the fixture does "
                 "not depend on versioned text")
        print("OK: %s decoder with --no-versioning differs (%s)" % (decoder, first_diff(got, exp)))
    elif mode == "missing":
        work, which = sys.argv[5], sys.argv[6]
        segs, used = walk_log(fix)
        if which == "walk_b":
            rows = [u for u in used if u[4].endswith("_walk_b")]
        else:  # the middle of the three walk_tail versions: the patched one
            rows = [u for u in used if u[4].endswith("_walk_tail")]
            rows = rows[1:2] if len(rows) == 3 else []
        if len(rows) != 1:
            fail("walk.log does not name the %s row" % which)
        start, length, vfrom, vto, name = rows[0]
        copy = os.path.join(work, "missing-%s.ptd" % which)
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(fix, copy)
        idx = os.path.join(copy, "text", "index.tsv")
        hashes = set()
        with open(idx) as f:
            for line in f:
                c = line.rstrip("\n").split("\t")
                if line.startswith("#") or len(c) != 13:
                    continue
                if int(c[1], 16) == start and int(c[3]) == vfrom:
                    hashes.add(c[7])
        if len(hashes) != 1:
            fail("text/index.tsv: %d blobs for the %s row" % (len(hashes), which))
        h = hashes.pop()
        os.unlink(os.path.join(copy, "text", h + ".bin"))
        # other rows with the same bytes (same program at the same address
        # another time) lose them too: their windows are dropped as well
        windows = [(vfrom, vto)]
        with open(idx) as f:
            for line in f:
                c = line.rstrip("\n").split("\t")
                if not line.startswith("#") and len(c) == 13 and c[7] == h:
                    windows.append((int(c[3]), 2**64 if c[4] == "-" else int(c[4])))
        inwin = lambda t: any(a <= t < b for a, b in windows)
        want, dropped = [], 0
        for t, first, n in segs:
            if inwin(t):
                dropped += n
            else:
                want += exp[first - 1:first - 1 + n]
        if not dropped:
            fail("no segment of the walk runs through the %s row" % which)
        got, other, _ = decode(ptdecode, copy, decoder)
        if got != want:
            fail("%s decoder, %s blob deleted: outside the window: %s" %
                 (decoder, which, first_diff(got, want)))
        reports = [l for l in other if l.startswith("[error") or l.startswith("[gap")]
        if not reports:
            fail("%s decoder: no error or gap for the missing %s bytes" % (decoder, which))
        rng = "[%#x, %#x)" % (start, start + length)
        for l in reports:
            m = re.search(r" ip=(0x[0-9a-f]+)", l)
            tm = re.search(r" time=(\d+)\.(\d{9})", l)
            if not m or not (start <= int(m[1], 16) < start + length):
                fail("report outside the missing range %s: %s" % (rng, l))
            if not tm or not inwin(int(tm[1]) * 10**9 + int(tm[2])):
                fail("report outside the time window [%d, %d): %s" % (vfrom, vto, l))
            if rng not in l or "not captured" not in l:
                fail("report does not name the range %s and the reason: %s" % (rng, l))
        kinds = sorted(set(l.split()[0] for l in reports))
        print("OK: %s decoder, %s blob deleted: %d instructions outside its window "
              "exact, %d dropped, %d reports (%s) naming %s" %
              (decoder, which, len(got), dropped, len(reports), " ".join(kinds), rng))
        if "[gap" not in kinds:
            print("NOTE: reported as decode errors, not PTD_EV_GAP events")
    elif mode == "ksymbol":
        perf = shutil.which("perf")
        if not perf:
            print("SKIP: perf not found (the independent perf.data parser)")
            sys.exit(77)
        # perf's own HOME: nothing from this machine
        perf_home(os.path.join(sys.argv[5], "ksymbol.home"), fix)
        p = subprocess.run([perf, "script", "-D", "-i", os.path.join(fix, "perf.data")],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        ev = []
        for line in p.stdout.splitlines():
            m = re.search(r"^\S+ (\d+) .*PERF_RECORD_KSYMBOL addr ([0-9a-f]+) len (\d+) "
                          r"type 1 flags (0x[01]) name (\S+_walk_[ab])$", line)
            if m:
                ev.append((int(m[1]), int(m[2], 16), int(m[4], 16), m[5]))
        segs, used = walk_log(fix)
        a = [u for u in used if u[4].endswith("_walk_a")]
        b = [u for u in used if u[4].endswith("_walk_b")]
        if len(a) != 1 or len(b) != 1 or a[0][0] != b[0][0]:
            fail("walk.log: walk_a and walk_b were not walked at one address")
        addr = a[0][0]
        a_unreg = [t for t, ad, fl, n in ev if ad == addr and fl == 1 and n == a[0][4]]
        b_reg = [t for t, ad, fl, n in ev if ad == addr and fl == 0 and n == b[0][4]]
        a_unreg = [t for t in a_unreg if t == a[0][3]]
        b_reg = [t for t in b_reg if t == b[0][2]]
        if not a_unreg or not b_reg or not a_unreg[0] < b_reg[0]:
            fail("perf shows no KSYMBOL UNREGISTER of walk_a at %#x followed by a "
                 "REGISTER of walk_b there (%d KSYMBOL records of walk_a/b)" % (addr, len(ev)))
        print("OK: perf: walk_a unregistered at %#x at %d, walk_b registered there at %d"
              % (addr, a_unreg[0], b_reg[0]))
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
