#!/usr/bin/env python3
"""check_perf.py PTDECODE WORKDIR PERF_HOME_SH

Records `perf record -g -e cpu-clock` samples of a small shell workload at
test time and checks that `ptdecode --samples --format=json` lists the
samples perf script lists, in the same order, with the same tid, time and
callchain.  perf script prints a frame inside a mapped file as its offset
in that mapping's file (map-relative); such a frame must be the address
that the mapping (perf's own PERF_RECORD_MMAP2 lines) puts at that
offset.  The text view must name the same image for every frame and,
where perf names a symbol in a file, one at the same offset (the same
name, or an alias of the same address: glibc has many; perf's made-up
NAME@plt symbols are left out).
Exit 0 pass, 1 fail, 77 skip (reason printed).
"""
import json
import os
import re
import shutil
import subprocess
import sys


def skip(msg):
    print("SKIP:", msg)
    sys.exit(77)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


ptdecode, work, perf_home = sys.argv[1:4]
if not shutil.which("perf"):
    skip("perf is not installed")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
home = os.path.join(work, "home")
data = os.path.join(work, "perf.data")
env = dict(os.environ, HOME=home)
subprocess.run(["sh", perf_home, home], check=True)
rec = subprocess.run(["perf", "record", "-q", "-g", "-e", "cpu-clock", "-c", "50000",
                      "-o", data, "--", "sh", "-c",
                      "i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done; ls / >/dev/null"],
                     env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
if rec.returncode != 0 or not os.path.exists(data):
    skip("perf record -g -e cpu-clock failed here: " + rec.stderr.strip()[-300:])

scr = subprocess.run(["perf", "script", "-i", data, "--show-mmap-events", "--show-task-events",
                      "-F", "tid,time,event,ip,sym,symoff,dso"], env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
if scr.returncode != 0:
    fail("perf script: " + scr.stderr[-500:])

mmap_re = re.compile(r"PERF_RECORD_MMAP2? (-?\d+)/\d+: \[0x([0-9a-f]+)\((0x[0-9a-f]+)\) "
                     r"@ (0x[0-9a-f]+|\d+)[^\]]*\]: \S+ (.*)$")
head_re = re.compile(r"^\s*(\d+)\s+(\d+)\.(\d{6}):\s+(\S+):\s*$")
frame_re = re.compile(r"^\t\s*([0-9a-f]+) (.*) \((.*)\)$")
fork_re = re.compile(r"PERF_RECORD_FORK\((\d+):\d+\):\((\d+):\d+\)")
parent = {}        # pid -> parent pid (a child has its parent's mappings)
maps = []          # (pid, start, len, pgoff, name)
perf = []          # (tid, sec, usec, [(addr, dso)])
cur = None
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
        cur = (int(m.group(1)), int(m.group(2)), int(m.group(3)), [], m.group(4))
        perf.append(cur)
        continue
    m = frame_re.match(line)
    if m and cur:
        cur[3].append((int(m.group(1), 16), m.group(3), m.group(2)))

got = subprocess.run([ptdecode, "--samples", "--format=json", "-q", data],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
if got.returncode != 0:
    fail("ptdecode: " + got.stderr[-500:])
ours = [json.loads(l) for l in got.stdout.splitlines()]
if len(perf) < 10:
    skip("only %d samples recorded" % len(perf))
if len(ours) != len(perf):
    fail("%d samples, perf script lists %d" % (len(ours), len(perf)))


def same(addr, paddr, dso, pid):
    if addr == paddr:
        return True
    # map-relative: the newest mapping of that file covering addr, in the
    # process or the ones it was forked from
    pids = {-1}
    while pid not in pids:
        pids.add(pid)
        pid = parent.get(pid, pid)
    for mpid, start, ln, pgoff, name in reversed(maps):
        if name == dso and mpid in pids and start <= addr < start + ln:
            return addr - start + pgoff == paddr
    return False


frames = relative = 0
for i, (o, (tid, sec, usec, pf, event)) in enumerate(zip(ours, perf)):
    if o.get("event") != event:
        fail("sample %d: event %s, perf script %s" % (i, o.get("event"), event))
    if o["tid"] != tid or (o["time"] // 10**9, o["time"] % 10**9 // 1000) != (sec, usec):
        fail("sample %d: tid %d time %d, perf script: %d %d.%06d" % (i, o["tid"], o["time"],
                                                                     tid, sec, usec))
    cc = [int(a, 16) for a in o["callchain"]]
    if len(cc) != len(pf):
        fail("sample %d: %d frames, perf script %d" % (i, len(cc), len(pf)))
    for a, (pa, dso, _) in zip(cc, pf):
        if not same(a, pa, dso, o["pid"]):
            fail("sample %d: frame %#x, perf script %#x (%s)" % (i, a, pa, dso))
        frames += 1
        relative += a != pa
text = subprocess.run([ptdecode, "--samples", "-q", data], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True).stdout
tf = [(m.group(2), m.group(3)) for m in
      (frame_re.match(l) for l in text.splitlines()) if m]
pfl = [f for _, _, _, pf, _ in perf for f in pf]
if len(tf) != len(pfl):
    fail("text view: %d frames, perf script %d" % (len(tf), len(pfl)))
named = alias = plt = 0
for (sym, img), (pa, dso, psym) in zip(tf, pfl):
    if img != dso:
        fail("frame %#x: image %s, perf script %s" % (pa, img, dso))
    if dso.startswith("/") and psym.partition("+")[0].endswith("@plt"):
        plt += 1          # perf makes up names for PLT entries
    elif dso.startswith("/") and psym != "[unknown]":
        if sym == psym:
            named += 1
        elif sym.rpartition("+")[2] == psym.rpartition("+")[2] and sym != "[unknown]":
            alias += 1
        else:
            fail("frame %#x in %s: symbol %s, perf script %s" % (pa, dso, sym, psym))
print("ok: %d samples, %d frames equal perf script's (%d of them map-relative there); "
      "images equal; %d symbols equal, %d aliases at the same offset, %d in PLTs"
      % (len(ours), frames, relative, named, alias, plt))
