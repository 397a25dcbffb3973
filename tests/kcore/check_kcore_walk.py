#!/usr/bin/env python3
"""check_kcore_walk.py PTSYNTH PTDECODE FIXTURE.ptd WORKDIR

A `perf record --kcore` directory from `ptsynth walk --kcore` through the
real BPF JIT images of fixtures/bpf/walk.ptd and a kernel text range (the
bytes of a JIT image placed at a kernel text address): segments in walk_a
(held by the kcore copy), in walk_b (loaded later at walk_a's address:
the copy holds walk_a's bytes there, which would be a guess) and in the
kernel range.  ptdecode reads the directory alone (no text store, no
--vmlinux) and must print:

  - exactly the ground truth (expected.insn) of the segments whose code the
    copy holds, with both decoders, at -j1 and -j2;
  - a gap or error at each other segment's start and time, and none of its
    instructions;
  - the same instructions as `perf script --itrace=i0ns -F ip` (Debian's
    perf reads kcore_dir/ itself), when perf is installed;
  - with the kernel range dropped from the copy: a gap there naming the
    module kcore_dir/modules puts there, or, with --vmlinux (an ELF made
    here with as/ld holding the range), the ground truth again; a
    --vmlinux with other bytes where the copy holds the range changes
    nothing.

The kcore file's segments are read here with Python's struct (an
independent ELF reader) and must hold the fixture's bytes.  A truncated or
non-ELF kcore must be refused with a message naming the problem.
"""
import os
import re
import shutil
import struct
import subprocess
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from kcoretest import kcore_segments, text_rows  # noqa: E402
KTEXT = 0xffffffff81200000


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, **kw)


def spec_segments(fix):
    segs = []
    with open(os.path.join(fix, "walk.spec")) as f:
        for line in f:
            w = line.split()
            if len(w) == 4 and w[0] == "segment":
                segs.append((int(w[1]), w[2], int(w[3])))
    return segs


def walk_log(out):
    segs, used, ktime = [], [], None
    with open(os.path.join(out, "walk.log")) as f:
        for line in f:
            m = re.match(r"segment time=(\d+) start=(\S+) insns=(\d+) first_line=(\d+)", line)
            if m:
                segs.append((int(m[1]), int(m[2], 16), int(m[3]), int(m[4])))
            m = re.match(r"used \S+ (0x[0-9a-f]+) len (\d+) \[(\d+), (\d+)\)", line)
            if m:
                used.append((int(m[1], 16), int(m[2]), int(m[3]), int(m[4])))
            m = re.match(r"kcore time=(\d+)", line)
            if m:
                ktime = int(m[1])
    return segs, used, ktime


def held(seg, used, ktime):
    """The copy holds the segment's code: a row at its start that was valid
    at the copy time and still is at the segment's time, or one that
    follows such a row at the same range (patched in place: TEXT_POKE)."""
    t, a = seg[0], seg[1]
    for s, n, f, to in used:
        if not (s <= a < s + n and f <= t < to):
            continue
        if f <= ktime < to:
            return True
        if any(s2 == s and n2 == n and f2 <= ktime < to2 == f
               for s2, n2, f2, to2 in used):
            return True
    return False


def decode(ptdecode, out, dec, jobs, extra=()):
    p = run([ptdecode, "--decoder=" + dec, "-j", str(jobs), "--insn", "--no-sym",
             "--no-disasm", *extra, out])
    if p.returncode:
        fail("ptdecode --decoder=%s -j%d exit %d: %s" % (dec, jobs, p.returncode,
                                                      p.stderr.strip()))
    insns = [l.split()[0] for l in p.stdout.splitlines() if l.startswith("0x")]
    other = [l for l in p.stdout.splitlines() if l.startswith("[")]
    return insns, other


def drop_segment(path, vaddr):
    """Turns the PT_LOAD at vaddr into PT_NULL: the copy no longer holds it."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        phoff, = struct.unpack_from("<Q", data, 32)
        phentsize, phnum = struct.unpack_from("<HH", data, 54)
        for i in range(phnum):
            o = phoff + i * phentsize
            if struct.unpack_from("<I", data, o)[0] == 1 and \
               struct.unpack_from("<Q", data, o + 16)[0] == vaddr:
                struct.pack_into("<I", data, o, 0)
        f.seek(0)
        f.write(data)


def vmlinux(work, name, body):
    """An ELF executable whose text at KTEXT is body (assembler source)."""
    src, obj, elf = (os.path.join(work, name + x) for x in (".s", ".o", ".elf"))
    with open(src, "w") as f:
        f.write('.section .text,"ax"\n.globl ktext_func\nktext_func:\n%s\n' % body)
    for cmd in (["as", "-o", obj, src],
                ["ld", "-o", elf, "-Ttext=%#x" % KTEXT, "-e", "ktext_func", obj]):
        p = run(cmd)
        if p.returncode:
            fail("%s: %s" % (" ".join(cmd), p.stderr.strip()))
    return elf


def fallback(ptdecode, out, work, ktext, want, wsegs, held_flags, exp, t1):
    """Text the copy does not hold comes from --vmlinux, or is a gap that
    names the module /proc/modules put there (after t1 the TEXT_POKE's 5
    bytes still decode, up to the gap); where both hold it, the copy is
    what ran."""
    if not shutil.which("as") or not shutil.which("ld"):
        print("note: no as/ld: --vmlinux fallback not checked")
        return
    other, k = [], []
    for (t, a, n, first), is_held in zip(wsegs, held_flags):
        lines = exp[first - 1:first - 1 + n]
        if a != KTEXT:
            other += lines if is_held else []
            continue
        # the copy lost the range: after t1 the poked bytes still decode
        lead = []
        for x in lines if t > t1 else []:
            if int(x, 16) >= KTEXT + 5:
                break
            lead.append(x)
        other += lead
        k.append((t, KTEXT + 5 if lead else KTEXT))
    good = vmlinux(work, "vmlinux", '.incbin "%s"' % ktext)
    bad = vmlinux(work, "vmlinux-int3", ".fill %d, 1, 0xcc" % os.path.getsize(ktext))
    got, _ = decode(ptdecode, out, "fast", 1, ["--vmlinux", bad])
    if got != want:
        fail("--vmlinux with other bytes at %#x changed the decode: the copy must win"
             % KTEXT)
    out2 = out + ".nokernel"
    shutil.rmtree(out2, ignore_errors=True)
    shutil.copytree(out, out2)
    drop_segment(os.path.join(out2, "kcore_dir", "kcore"), KTEXT)
    with open(os.path.join(out2, "kcore_dir", "modules"), "w") as f:
        f.write("ktextmod 4096 0 - Live %#x\n" % KTEXT)
    for dec in ("fast", "libipt"):
        got, ev = decode(ptdecode, out2, dec, 1)
        if got != other:
            fail("%s, kernel range not in the copy: %d instructions, want %d" %
                 (dec, len(got), len(other)))
        for t, a in k:
            stamp = "time=%d.%09d" % (t // 10**9, t % 10**9)
            if not any(stamp in l and "module ktextmod" in l and
                       ("ip=%#x " % a in l or "needed at %#x" % a in l) for l in ev):
                fail("%s: no gap naming module ktextmod at %#x %s" % (dec, a, stamp))
        got, _ = decode(ptdecode, out2, dec, 1, ["--vmlinux", good])
        if got != want:
            fail("%s: --vmlinux does not supply the range the copy lacks (%d "
                 "instructions, want %d)" % (dec, len(got), len(want)))
    print("ok: a range the copy lacks is a gap naming its module, or comes from "
          "--vmlinux; where both hold it the copy wins")


def main():
    ptsynth, ptdecode, fix, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    segs = spec_segments(fix)[:16]          # 8 in walk_a, 8 in walk_b
    walk_a = [r for r in text_rows(os.path.join(fix, "text"))
              if r["name"].endswith("_walk_a") and r["start"] == int(segs[0][1], 16)][0]
    ktext = os.path.join(work, "ktext.bin")
    shutil.copy(os.path.join(fix, "text", walk_a["hash"] + ".bin"), ktext)
    # the kernel range patched in place at t1: its 5-byte nop becomes five
    # 1-byte nops (other instruction addresses, if the poke were ignored)
    with open(ktext, "rb") as f:
        v1 = f.read()
    if v1[:5] != bytes.fromhex("0f1f440000"):
        fail("walk_a's image does not start with a 5-byte nop")
    ktext2 = os.path.join(work, "ktext2.bin")
    with open(ktext2, "wb") as f:
        f.write(b"\x90" * 5 + v1[5:])
    t0 = segs[0][0]
    with open(os.path.join(work, "walk.spec"), "w") as f:
        f.write("segment %d %#x 60\n" % (t0 - 500000, KTEXT))
        for t, a, n in segs:
            f.write("segment %d %s %d\n" % (t, a, n))
        f.write("segment %d %#x 60\n" % (segs[9][0] + 400000, KTEXT))
    out = os.path.join(work, "kcore.perf")
    t1 = segs[9][0]
    p = run([ptsynth, "walk", "-o", out, "--from", fix, "--kcore",
             "--code", "%s:%#x:0:%d" % (ktext, KTEXT, t1),
             "--code", "%s:%#x:%d:-" % (ktext2, KTEXT, t1),
             "--seed", "1", os.path.join(work, "walk.spec")])
    if p.returncode:
        fail("ptsynth walk --kcore: " + p.stderr.strip())

    # the layout, and what the copy holds
    for f in ("data", "kcore_dir/kcore", "kcore_dir/kallsyms", "kcore_dir/modules"):
        if not os.path.isfile(os.path.join(out, f)):
            fail("no %s in the --kcore layout" % f)
    for f in ("text", "perf.data", "bpf"):
        if os.path.exists(os.path.join(out, f)):
            fail("%s must not be there: the copy alone is the code" % f)
    kseg = kcore_segments(os.path.join(out, "kcore_dir", "kcore"))
    if kseg is None:
        fail("kcore_dir/kcore is no ELF core file")
    with open(ktext, "rb") as f:
        if kseg.get(KTEXT) != f.read():
            fail("kcore lacks the kernel range's bytes at %#x" % KTEXT)
    with open(os.path.join(fix, "text", walk_a["hash"] + ".bin"), "rb") as f:
        if kseg.get(walk_a["start"]) != f.read():
            fail("kcore lacks walk_a's JIT image at %#x" % walk_a["start"])

    # ground truth: the segments the copy holds
    wsegs, used, ktime = walk_log(out)
    with open(os.path.join(out, "expected.insn")) as f:
        exp = [l.strip() for l in f if l.strip()]
    want, gaps = [], []
    for s in wsegs:
        if held(s, used, ktime):
            want += exp[s[3] - 1:s[3] - 1 + s[2]]
        else:
            gaps.append(s)
    nk = sum(1 for s in wsegs if s[1] == KTEXT and held(s, used, ktime))
    patched = [s for s in wsegs if s[1] == KTEXT and s[0] > t1]
    if len(patched) != 1 or exp[patched[0][3] - 1:patched[0][3] + 1] != \
       ["%#x" % KTEXT, "%#x" % (KTEXT + 1)]:
        fail("the walk did not run the patched kernel range after %d" % t1)
    if nk != 2 or len(gaps) != 8 or len(want) == len(exp):
        fail("walk: %d kernel-range segments held (want 2), %d not held (want 8)"
             % (nk, len(gaps)))
    for dec, jobs in (("fast", 1), ("fast", 2), ("libipt", 1)):
        got, other = decode(ptdecode, out, dec, jobs)
        if got != want:
            diff = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y),
                        min(len(got), len(want)))
            fail("%s -j%d: %d instructions, ground truth %d; first difference at "
                 "%d" % (dec, jobs, len(got), len(want), diff))
        for t, a, _, _ in gaps:
            stamp = "ip=%#x time=%d.%09d" % (a, t // 10**9, t % 10**9)
            if not any(("[gap" in l or "[error" in l) and stamp in l for l in other):
                fail("%s -j%d: no gap reported at %s (code the copy does not "
                     "hold)" % (dec, jobs, stamp))
    got, _ = decode(ptdecode, os.path.join(out, "data"), "fast", 1)
    if got != want:
        fail("DIR/data given directly: %d instructions, want %d (kcore_dir beside "
             "it is the copy)" % (len(got), len(want)))
    print("ok: %d instructions from the kcore copy alone (%d of them kernel "
          "text), %d segments reported as gaps, both decoders" %
          (len(want), sum(1 for x in want if int(x, 16) >= KTEXT and
                          int(x, 16) < KTEXT + 4096), len(gaps)))

    # perf's own decoder on the same directory
    if shutil.which("perf"):
        home = os.path.join(work, "home")
        p = run(["sh", os.path.join(HERE, "..", "perf_home.sh"), home, "--",
                 "perf", "script", "-i", out, "--itrace=i0ns", "-F", "ip"])
        perf = ["0x" + l.split()[0] for l in p.stdout.splitlines() if l.strip()]
        if p.returncode or perf != want:
            fail("perf script -i DIR: %d instructions (exit %d), ptdecode %d: %s" %
                 (len(perf), p.returncode, len(want), p.stderr.strip()[:300]))
        print("ok: perf script on the directory prints the same %d" % len(perf))
        # symbols: the copy's kallsyms names its code (walk_a, not walk_b,
        # which a later KSYMBOL puts at the same address)
        p = run(["sh", os.path.join(HERE, "..", "perf_home.sh"), home, "--",
                 "perf", "script", "-i", out, "--itrace=i0ns", "-F", "ip,sym"])
        psym = [l.split()[1] if len(l.split()) > 1 else "?" for l in p.stdout.splitlines()
                if l.strip()]
        q = run([ptdecode, "--insn", "--no-disasm", out])
        qsym = [l.split()[1].split("+")[0] if len(l.split()) > 1 else "?"
                for l in q.stdout.splitlines() if l.startswith("0x")]
        if psym != qsym:
            diff = next((i for i, (x, y) in enumerate(zip(psym, qsym)) if x != y), 0)
            fail("symbols differ from perf's at instruction %d: perf %s, ptdecode %s" %
                 (diff, psym[diff] if diff < len(psym) else "-",
                  qsym[diff] if diff < len(qsym) else "-"))
        print("ok: and names every instruction's symbol as perf does (%s)" %
              ", ".join(sorted(set(qsym))))
    else:
        print("note: perf not installed; ground truth only")

    fallback(ptdecode, out, work, ktext, want, wsegs,
             [held(x, used, ktime) for x in wsegs], exp, t1)

    # perf could not copy kcore: a warning, and what needs it is a gap
    kc = os.path.join(out, "kcore_dir", "kcore")
    os.rename(kc, kc + ".away")
    p = run([ptdecode, "--insn", "--no-sym", "--no-disasm", out])
    n = sum(1 for l in p.stdout.splitlines() if l.startswith("0x"))
    if p.returncode or "kcore" not in p.stderr or n >= len(want):
        fail("kcore_dir without kcore: exit %d, %d instructions, %s" %
             (p.returncode, n, p.stderr.strip()[:300]))
    os.rename(kc + ".away", kc)
    print("ok: kcore_dir without kcore: warned, %d instructions (TEXT_POKE bytes)" % n)

    # a copy that is cut short or no ELF file: refused, naming the problem
    size = os.path.getsize(kc)
    with open(kc, "r+b") as f:
        f.truncate(size - 10)
    p = run([ptdecode, "--insn", out])
    if p.returncode == 0 or "truncated" not in p.stderr:
        fail("a truncated kcore: exit %d, %s" % (p.returncode, p.stderr.strip()))
    with open(kc, "w") as f:
        f.write("ffffffff81000000 T _text\n")
    p = run([ptdecode, "--insn", out])
    if p.returncode == 0 or "not an ELF file" not in p.stderr:
        fail("a kcore that is no ELF file: exit %d, %s" % (p.returncode, p.stderr.strip()))
    print("ok: truncated and non-ELF kcore refused")


main()
