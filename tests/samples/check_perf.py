#!/usr/bin/env python3
"""check_perf.py PTDECODE WORKDIR PERF_HOME_SH WORKLOAD PERIOD [PROG] [--reversed]

Records `perf record -g -e cpu-clock` samples of a workload at test time
(`cpu-clock:u`, user-mode samples only, at periods under 20 us)
and checks, sample by sample, that `ptdecode --samples` lists what
perf script lists for the same file:

  WORKLOAD  ls: `ls /`; threads: PROG (a multithreaded fixture);
            forkexec: a shell that loops, then forks a subshell that
            loops (in code mapped by its parent only: frames the FORK
            gives it) and execs `ls`, then forks and execs `ls` again;
            strayframes: PROG spinning with the frame pointer at made-up
            frames whose return address is -304 (a context marker naming
            no context: perf script shows none of such a callchain), then
            0 (a frame 0): both must occur
  PERIOD    cpu-clock period in ns (-c), or "default" for perf's
            default frequency
  --reversed  the recording's records rewritten in reverse order (all
            after perf's FINISHED_INIT, its FINISHED_ROUNDs made
            FINISHED_INITs so that perf sorts the whole file at once):
            perf record writes one CPU's ring after another's, so a FORK
            can come before the parent's MMAP2s that another CPU wrote;
            perf uses records in time order, and so must ptdecode

The JSON view (--format=json) must list the same samples in the same
order with the same event, tid and time, and every sample the same
callchain: the same number of frames and each frame the same address.
perf script prints a frame inside a mapped file as its offset in that
mapping's file (map-relative); such a frame must be the address that the
mapping (perf's own PERF_RECORD_MMAP2 lines, of the process or those it
was forked from) puts at that offset.  The text view must list the same
frames per sample, each naming the same image and, where perf names a
symbol in a file, one at the same offset (the same name, or an alias of
the same address: glibc has many; perf's made-up NAME@plt symbols are
left out).  The recording is made twice if the first one has too few
samples (a busy machine); nothing depends on timing otherwise.
Exit 0 pass, 1 fail, 77 skip (reason printed).
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys


def skip(msg):
    print("SKIP:", msg)
    sys.exit(77)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


args = [a for a in sys.argv[1:] if a != "--reversed"]
reverse = len(args) < len(sys.argv) - 1
ptdecode, work, perf_home, workload, period = args[:5]
prog = args[5] if len(args) > 5 else None
if not shutil.which("perf"):
    skip("perf is not installed")
cmds = {
    "ls": ["ls", "/"],
    "threads": [prog],
    "strayframes": [prog],
    "forkexec": ["sh", "-c", "i=0; while [ $i -lt 200 ]; do i=$((i+1)); done; "
                 "(i=0; while [ $i -lt 300 ]; do i=$((i+1)); done; exec ls /) >/dev/null; "
                 "ls /usr >/dev/null; true"],
}
if workload not in cmds or (workload in ("threads", "strayframes") and not prog):
    fail("unknown workload " + workload)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
home = os.path.join(work, "home")
data = os.path.join(work, "perf.data")
env = dict(os.environ, HOME=home)
subprocess.run(["sh", perf_home, home], check=True)
rate = ["-c", period] if period != "default" else []

mmap_re = re.compile(r"PERF_RECORD_MMAP2? (-?\d+)/\d+: \[0x([0-9a-f]+)\((0x[0-9a-f]+)\) "
                     r"@ (0x[0-9a-f]+|\d+)[^\]]*\]: \S+ (.*)$")
head_re = re.compile(r"^\s*(\d+)\s+(\d+)\.(\d{6}):\s+(\S+):\s*$")
frame_re = re.compile(r"^\t\s*([0-9a-f]+) (.*) \((.*)\)$")
fork_re = re.compile(r"PERF_RECORD_FORK\((\d+):\d+\):\((\d+):\d+\)")


def perf_script():
    """perf script's samples [(tid, sec, usec, event, [(addr, dso, sym)])],
    mappings [(pid, start, len, pgoff, name)] and fork parents."""
    scr = subprocess.run(["perf", "script", "-i", data, "--show-mmap-events",
                          "--show-task-events", "-F", "tid,time,event,ip,sym,symoff,dso"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if scr.returncode != 0:
        fail("perf script: " + scr.stderr[-500:])
    parent, maps, samples = {}, [], []
    for line in scr.stdout.splitlines():
        m = mmap_re.search(line)
        if m:
            maps.append((int(m.group(1)), int(m.group(2), 16), int(m.group(3), 16),
                         int(m.group(4), 0), m.group(5)))
            continue
        m = fork_re.search(line)
        if m:
            parent.setdefault(int(m.group(1)), int(m.group(2)))
            continue
        m = head_re.match(line)
        if m:
            samples.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4), []))
            continue
        m = frame_re.match(line)
        if m and samples:
            samples[-1][4].append((int(m.group(1), 16), m.group(3), m.group(2)))
        elif line.strip() and "PERF_RECORD" not in line:
            fail("perf script line not understood: " + line)
    return samples, maps, parent


def ptdecode_text():
    """The text view's samples: [(header line, [(addr, sym, image)])]."""
    r = subprocess.run([ptdecode, "--samples", "-q", data], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        fail("ptdecode --samples: " + r.stderr[-500:])
    out = []
    for line in r.stdout.splitlines():
        m = frame_re.match(line)
        if m and out:
            out[-1][1].append((int(m.group(1), 16), m.group(2), m.group(3)))
        elif line.strip() and not line.startswith("\t"):
            out.append((line, []))
    return out


def reverse_records(path):
    """Rewrites the data section of path: the records after the first
    FINISHED_INIT in reverse order, FINISHED_ROUND (68) made FINISHED_INIT
    (82, which perf ignores)."""
    with open(path, "rb") as f:
        b = bytearray(f.read())
    off, size = struct.unpack_from("<QQ", b, 40)
    recs, pos, start = [], off, None
    while pos + 8 <= off + size:
        typ, misc, sz = struct.unpack_from("<IHH", b, pos)
        if sz < 8:
            fail("record of size %d at %d" % (sz, pos))
        r = bytes(b[pos:pos + sz])
        if typ == 68:
            r = struct.pack("<IHH", 82, misc, sz) + r[8:]
        if typ == 82 and start is None:
            start = len(recs) + 1
        recs.append(r)
        pos += sz
    if start is None:
        skip("perf wrote no FINISHED_INIT record: cannot tell its synthesized records")
    body = b"".join(recs[:start] + recs[start:][::-1])
    b[off:off + len(body)] = body
    with open(path, "wb") as f:
        f.write(b)


# The cap bounds the test's time: on a virtual machine a sample's own cost
# can approach a 10 us period, and the same workload then gives 1,000 or
# 90,000 samples.  forkexec's cap leaves room for the subshell's samples.
# At a 10 us (or 5 us) period the kernel's part of exec and thread creation
# can fill the cap before the program's own code runs: those recordings take
# user-mode samples only (cpu-clock:u); forkexec (20 us) and perf's default
# frequency keep the kernel's samples and callchains.
cap = "4M" if workload == "forkexec" else "1M"
event = "cpu-clock" if workload == "forkexec" or period == "default" else "cpu-clock:u"
for attempt in range(2):
    rec = subprocess.run(["perf", "record", "-q", "-g", "-e", event, "--max-size", cap] +
                         rate + ["-o", data, "--"] + cmds[workload], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    capped = "size limit reached" in rec.stderr
    if (rec.returncode != 0 and not capped) or not os.path.exists(data):
        skip("perf record -g -e %s failed here: " % event + rec.stderr.strip()[-300:])
    if reverse:
        reverse_records(data)
    perf, maps, parent = perf_script()
    # perf's default frequency takes few samples of a short program
    if len(perf) >= (3 if period == "default" else 10):
        break
else:
    skip("only %d samples recorded" % len(perf))

got = subprocess.run([ptdecode, "--samples", "--format=json", "-q", data],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
if got.returncode != 0:
    fail("ptdecode: " + got.stderr[-500:])
ours = [json.loads(l) for l in got.stdout.splitlines()]
text = ptdecode_text()
if len(ours) != len(perf) or len(text) != len(perf):
    fail("%d samples (%d in the text view), perf script lists %d"
         % (len(ours), len(text), len(perf)))


def same(addr, paddr, dso, pid):
    """(addr is what perf script lists as paddr, the mapping is one the
    process got from its parent)"""
    # map-relative: the newest mapping of that file covering addr, in the
    # process or the ones it was forked from
    pids, p = {-1}, pid
    while p not in pids:
        pids.add(p)
        p = parent.get(p, p)
    for mpid, start, ln, pgoff, name in reversed(maps):
        if name == dso and mpid in pids and start <= addr < start + ln:
            return addr - start + pgoff == paddr, mpid not in (pid, -1)
    return addr == paddr, False


frames = relative = named = alias = plt = unknown = empty = zero = inherited = 0
for i, (o, (hdr, tf), (tid, sec, usec, event, pf)) in enumerate(zip(ours, text, perf)):
    where = "sample %d (tid %d at %d.%06d)" % (i, tid, sec, usec)
    if o.get("event") != event:
        fail("%s: event %s, perf script %s" % (where, o.get("event"), event))
    if o["tid"] != tid or (o["time"] // 10**9, o["time"] % 10**9 // 1000) != (sec, usec):
        fail("%s: ptdecode has tid %d time %d" % (where, o["tid"], o["time"]))
    cc = [int(a, 16) for a in o["callchain"]]
    if len(cc) != len(pf) or len(tf) != len(pf):
        fail("%s: %d frames (%d in the text view), perf script %d: %s, perf script %s"
             % (where, len(cc), len(tf), len(pf), o["callchain"],
                ["%#x" % f[0] for f in pf]))
    empty += not pf
    for a, (ta, sym, img), (pa, dso, psym) in zip(cc, tf, pf):
        if ta != a:
            fail("%s: text view frame %#x, JSON %#x" % (where, ta, a))
        ok, inh = same(a, pa, dso, o["pid"])
        if not ok:
            fail("%s: frame %#x, perf script %#x (%s)" % (where, a, pa, dso))
        inherited += inh
        frames += 1
        relative += a != pa
        zero += a == 0
        if img != dso:
            fail("%s: frame %#x: image %s, perf script %s" % (where, a, img, dso))
        unknown += dso == "[unknown]"
        if dso.startswith("/") and psym.partition("+")[0].endswith("@plt"):
            plt += 1          # perf makes up names for PLT entries
        elif dso.startswith("/") and psym != "[unknown]":
            if sym == psym:
                named += 1
            elif sym.rpartition("+")[2] == psym.rpartition("+")[2] and sym != "[unknown]":
                alias += 1
            else:
                fail("%s: frame %#x in %s: symbol %s, perf script %s"
                     % (where, a, dso, sym, psym))
if workload == "strayframes" and (not empty or not zero):
    fail("strayframes: %d samples without frames and %d frames 0 in perf script's "
         "listing; both cases must occur" % (empty, zero))
if workload == "forkexec" and period != "default" and not inherited:
    fail("forkexec: no frame in a mapping inherited over FORK")
print("ok: %s -c %s%s: %d samples equal perf script's (%d without frames), %d frames "
      "(%d of them 0, %d in mappings inherited over FORK, %d map-relative there, %d in "
      "no known image); images equal; %d symbols equal, %d aliases at the same offset, "
      "%d in PLTs"
      % (workload, period, " (records reversed)" if reverse else "", len(ours), empty,
         frames, zero, inherited, relative, unknown, named, alias, plt)
      + (" (perf record stopped at its %s size cap)" % cap if capped else ""))
