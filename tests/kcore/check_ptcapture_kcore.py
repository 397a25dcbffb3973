#!/usr/bin/env python3
"""check_ptcapture_kcore.py MKKCORE PTCAPTURE WORKDIR

`ptcapture record --kcore=DIR` with DIR made by mkkcore: a kcore file whose
PT_LOADs hold the real JIT images of the programs mkkcore keeps loaded
(kc_keep1, kc_keep2: read by program id), at their real addresses, not
kc_omit's nor other programs' (other tests free and load programs
meanwhile: a copy of theirs could be stale, a real kcore never is); kallsyms copied
from /proc; no modules.  Checks, with perf script -D (Linux perf's own
perf.data reader) naming the KSYMBOL records ptcapture synthesized at its
start:

  - the text store's kcore rows are exactly the start ranges the file
    holds, each with the bytes of the file at that address (read here with
    struct) and those of the prog-info copy of the same image;
  - every start range the file lacks (kc_omit, ptcapture's own programs
    loaded after the file was made) and the kernel text (_stext.._etext,
    not in the file) is counted in info's kcore_ranges_not_copied, and
    kc_omit's range is named on stderr;
  - info says kcore=copied and how many ranges were copied;
  - the same in the snapshot of a flight recorder (--snapshot --kcore=DIR,
    asked for on its control fifo), whose copy is taken at the snapshot.
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from kcoretest import kcore_segments, text_rows  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(77)


def start_ksymbols(cap, work):
    """(addr, len, name) of the KSYMBOL REGISTER records at time 0, and how
    many later records ask for a copy: KSYMBOL REGISTERs other than
    bpf_prog_* (trampolines; other sessions may make some) and TEXT_POKEs."""
    p = subprocess.run(["sh", os.path.join(HERE, "..", "perf_home.sh"),
                        os.path.join(work, "home"), "--", "perf", "script", "-D", "-i",
                        os.path.join(cap, "perf.data")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        fail("perf script -D: " + p.stderr.strip()[:300])
    out, later = [], 0
    for line in p.stdout.splitlines():
        if re.search(r": PERF_RECORD_TEXT_POKE ", line):
            later += 1
        m = re.search(r"^(?:\S+ )?(\d+) 0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_KSYMBOL "
                      r"addr ([0-9a-f]+) len (\d+) type \d+ flags (0x[0-9a-f]+) name (\S+)",
                      line)
        if m and int(m[4], 16) == 0:
            if m[1] == "0":
                out.append((int(m[2], 16), int(m[3]), m[5]))
            elif not m[5].startswith("bpf_prog_"):
                later += 1
    return out, later


def main():
    mkkcore, ptcapture, work = sys.argv[1:4]
    if not shutil.which("perf"):
        skip("perf (the oracle for the records ptcapture wrote) is not installed")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    kdir, cap = os.path.join(work, "kcore_dir"), os.path.join(work, "cap.ptd")
    mk = subprocess.Popen([mkkcore, kdir], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)
    line = mk.stdout.readline()
    if not line.startswith("ready"):
        mk.wait()
        if mk.returncode == 77:
            skip(line.strip()[6:] if line.startswith("SKIP") else "mkkcore skipped")
        fail("mkkcore: " + line.strip())
    try:
        p = subprocess.run([ptcapture, "record", "--kcore=" + kdir, "-o", cap, "--linger",
                            "0", "--", "true"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=90)
        if p.returncode and "not permitted" in p.stderr:
            skip("ptcapture needs root: " + p.stderr.strip()[:200])
        if p.returncode:
            fail("ptcapture --kcore: exit %d: %s" % (p.returncode, p.stderr.strip()))
        snap, serr = flight_recorder(ptcapture, kdir, work)
    finally:
        mk.stdin.close()
        mk.wait()
    check_capture(cap, p.stderr, kdir, work, "capture")
    check_capture(snap, serr, kdir, work, "snapshot")


def flight_recorder(ptcapture, kdir, work):
    """ptcapture --snapshot --kcore=DIR, one snapshot asked for on its
    control fifo, then stop: snap-1 and ptcapture's stderr."""
    out, ctl = os.path.join(work, "fr.ptd"), os.path.join(work, "ctl")
    fr = subprocess.Popen([ptcapture, "record", "--snapshot", "--kcore=" + kdir,
                           "--control", "fifo:" + ctl, "--linger", "0", "-o", out],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(600):                # ptcapture makes the fifo
        if os.path.exists(ctl) or fr.poll() is not None:
            break
        time.sleep(0.1)
    if fr.poll() is None and os.path.exists(ctl):
        with open(ctl, "w") as f:       # opens once ptcapture reads it
            f.write("snapshot\nstop\n")
    try:
        _, err = fr.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        fr.kill()
        fail("ptcapture --snapshot --kcore did not stop")
    if fr.returncode or not os.path.isdir(os.path.join(out, "snap-1")):
        fail("ptcapture --snapshot --kcore: exit %d, no snap-1: %s" %
             (fr.returncode, err.strip()[:500]))
    return os.path.join(out, "snap-1"), err


def check_capture(cap, stderr, kdir, work, label):
    """The kcore rows and counts of one capture directory."""
    keep, omit = {}, {}
    with open(os.path.join(kdir, "expect.tsv")) as f:
        for l in f:
            what, addr, n, name = l.split()
            (keep if what == "keep" else omit)[int(addr, 16)] = (int(n), name)
    if len(omit) != 1:
        fail("mkkcore omitted %d images, expected kc_omit's one" % len(omit))
    segs = kcore_segments(os.path.join(kdir, "kcore"))
    starts, later = start_ksymbols(cap, os.path.join(work, label))
    held = {(a, n) for a, n, _ in starts if keep.get(a, (None,))[0] == n}
    lacking = [(a, n, name) for a, n, name in starts if (a, n) not in held]
    oa = next(iter(omit))
    if not any(a == oa for a, _, _ in lacking):
        fail("no KSYMBOL at start names kc_omit's image %#x" % oa)

    rows = text_rows(os.path.join(cap, "text"))
    kc = [r for r in rows if r["source"] == "kcore"]
    got = {(r["start"], r["len"]) for r in kc}
    if got != held:
        fail(label + ": kcore rows %s, the file holds %s of the start ranges" %
             (sorted(got - held), sorted(held - got)))
    info = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(cap, "info")))
    for r in kc:
        if r["bytes"] != segs.get(r["start"]):
            fail("kcore row %#x: bytes differ from the kcore file's" % r["start"])
        same = [x for x in rows if x["source"] == "prog-info" and x["start"] == r["start"]
                and x["len"] == r["len"]]
        if same and same[0]["bytes"] != r["bytes"]:
            fail("kcore row %#x: bytes differ from the prog-info copy" % r["start"])
        if r["from"] != "0":
            fail("kcore row %#x: valid from %s, not the start (0)" % (r["start"], r["from"]))
    if info.get("kcore") != "copied" or int(info.get("kcore_ranges_copied", -1)) != len(kc):
        fail(label + ": info: kcore=%s kcore_ranges_copied=%s, %d rows" %
             (info.get("kcore"), info.get("kcore_ranges_copied"), len(kc)))
    # the kernel text, the start ranges lacking, and later ranges (made
    # after the file was)
    want_missed = 1 + len(lacking) + later
    if int(info.get("kcore_ranges_not_copied", -1)) != want_missed:
        fail(label + ": kcore_ranges_not_copied=%s, expected %d (kernel text + %d start ranges "
             "not in the file + %d later)" % (info.get("kcore_ranges_not_copied"),
                                              want_missed, len(lacking), later))
    if "%#x" % oa not in stderr:
        fail("%s: stderr does not name kc_omit's range %#x: %s" % (label, oa, stderr.strip()))
    print("ok: %s: %d kcore rows equal to the file's JIT images (%d also by prog info), "
          "%d ranges counted as not copied (kc_omit named)" %
          (label, len(kc), sum(1 for r in kc if any(x["source"] == "prog-info" and
                                             x["start"] == r["start"] for x in rows)),
           want_missed))


main()
