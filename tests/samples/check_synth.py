#!/usr/bin/env python3
"""check_synth.py PTSYNTH PTDECODE OUT.ptd fp|nofp|mixed|dwarf|threads|cpus2 PROG

Records PROG with `ptsynth record --sample-every N` and checks ptdecode's
samples against ptsynth's ground truth (OUT.ptd/samples.truth, from ptrace):

- every sample's stitched callchain is its kernel frames followed by the
  frame-pointer unwinding of the deferred record of its thread and cookie
  (the first at or after the sample), or the kernel frames alone, flagged,
  when that thread never returned to user space;
- every sample's trace stack (from the decoded Intel PT flow) is the call
  stack single-stepping knew at the sample;
- --check-callchains lists exactly the samples whose unwinding differs
  from the true stack when it was unwound, and ends with
  `callchains checked: N, disagree: M` with those counts;
- fp (frame pointers, program built with them) and dwarf (libdw's CFI
  unwinder, `--unwind dwarf`, program built without them): the frames up
  to main's are always right; nofp (frame pointers, program built without
  them): the unwinder goes wrong inside the program's own frames, and the
  check catches it (truncated stacks); mixed (outer functions with frame
  pointers, inner ones without): frames missing; threads: samples of every thread of a threaded
  program (frame pointers on libc code without them: wrong frames), each
  stitched and stacked in its own thread; cpus2: the same on two
  simulated CPUs (`--cpus 2`, one timeline of two queues), with threads
  that ran on both: their trace stacks are exact too (none flagged
  partial), and each sample names the CPU its thread ran its next
  instruction on (expected.threads).
Every listed disagreement's kind (truncated, missing frames, wrong
frames) must be the one the ground truth's two stacks show.
Exit 0 pass, 1 fail, 77 skip.
"""
import bisect
import json
import os
import re
import shutil
import subprocess
import sys

EVERY = "211"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (cmd, p.returncode, p.stderr[-2000:]))
    return p.stdout


def addrs(s):
    return [int(x, 16) for x in s.split()]


def truth(cap):
    samples, deferred = [], []
    for line in open(os.path.join(cap, "samples.truth")):
        head, _, rest = line.partition(":")
        kind, t, tid, cookie = head.split()[:4]
        if kind == "sample":
            samples.append((int(t), int(tid), int(cookie), addrs(rest),
                            int(head.split()[4])))
        else:
            unwound, _, true = rest.partition("| true")
            deferred.append((int(t), int(tid), int(cookie),
                             addrs(unwound.replace("unwound", "")), addrs(true)))
    return samples, deferred


def main_range(prog):
    out = run(["nm", "-S", prog])
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == "main":
            a = int(f[0], 16)
            return a, a + int(f[1], 16)
    fail("no main in %s" % prog)


def how_wrong(rec, true):
    """truncated: a prefix of the true stack; missing frames: the true
    stack with frames left out; wrong frames: anything else."""
    if true[:len(rec)] == rec:
        return "truncated"
    it = iter(true)
    if rec[0] == true[0] and all(a in it for a in rec):
        return "missing frames"
    return "wrong frames"


def deferred_of(deferred, t, tid, cookie):
    for d in sorted(deferred):
        if d[1] == tid and d[2] == cookie and d[0] >= t:
            return d
    return None


def cpu_check(cap, samples, got):
    """Each sample names the CPU that ran its thread's next instruction
    (expected.threads' line after the sample's INSNS, whose address in
    expected.insn is the interrupted one); some threads are sampled on
    both CPUs.  Returns how many samples those threads have."""
    lines = [l.split() for l in open(os.path.join(cap, "expected.threads"))]
    ips = [int(l, 16) for l in open(os.path.join(cap, "expected.insn"))]
    if len(lines) != len(ips):
        fail("expected.threads has %d lines, expected.insn %d" % (len(lines), len(ips)))
    at = {}
    for i, (cpu, tid) in enumerate(lines):
        at.setdefault(int(tid), []).append(i)
    cpus_of = {}
    for (t, tid, cookie, stack, insns), g in zip(samples, got):
        idx = at.get(tid, [])
        k = bisect.bisect_left(idx, insns)
        if k == len(idx):
            continue    # the thread never ran again (--max-insns, exit)
        j = idx[k]
        if ips[j] != stack[0]:
            fail("sample at %d: its thread's next instruction is %#x (line %d of "
                 "expected.insn), its stack begins %#x" % (t, ips[j], j + 1, stack[0]))
        if g["cpu"] != int(lines[j][0]):
            fail("sample at %d of tid %d: cpu %d, its thread ran on CPU %s"
                 % (t, tid, g["cpu"], lines[j][0]))
        cpus_of.setdefault(tid, set()).add(g["cpu"])
    both = [tid for tid, c in cpus_of.items() if c == {0, 1}]
    if not both:
        fail("cpus2: no thread sampled on both CPUs (%s)" % cpus_of)
    return sum(1 for s in samples if s[1] in both)


def main():
    ptsynth, ptdecode, cap, kind, prog = sys.argv[1:6]
    shutil.rmtree(cap, ignore_errors=True)
    unwind = ["--unwind", "dwarf"] if kind == "dwarf" else []
    if kind == "cpus2":
        unwind = ["--cpus", "2"]
    p = subprocess.run([ptsynth, "record", "-o", cap, "--sample-every", EVERY] + unwind +
                       ["--", prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0 and "needs libdw" in p.stderr:
        print("SKIP:", p.stderr.strip())
        sys.exit(77)
    if p.returncode != 0:
        if "delays single-step traps" in p.stderr:
            print("SKIP:", p.stderr.strip())
            sys.exit(77)
        fail("ptsynth: " + p.stderr[-2000:])
    samples, deferred = truth(cap)
    # ptdecode lists samples by time; several CPUs write them out of order
    samples.sort(key=lambda x: x[0])
    shared = len(samples) - len({(s[1], s[2]) for s in samples})
    if len(samples) < 50 or len(deferred) < 5 or shared < 20:
        fail("too few samples (%d), deferred records (%d) or samples sharing one (%d)"
             % (len(samples), len(deferred), shared))

    got = [json.loads(l) for l in run([ptdecode, "--samples", "--format=json", cap]).splitlines()]
    if len(got) != len(samples):
        fail("%d samples listed, ptsynth wrote %d" % (len(got), len(samples)))
    expect_disagree = {}
    checked = stitched = missing = 0
    for (t, tid, cookie, stack, _), g in zip(samples, got):
        if g["time"] != t or g["tid"] != tid:
            fail("sample order: got time %d tid %d, truth %d %d" % (g["time"], g["tid"], t, tid))
        cc = [int(x, 16) for x in g["callchain"]]
        kern = [a for a in cc if a >= 0xffff800000000000]
        if len(kern) != 2 or cc[:2] != kern:
            fail("sample at %d: kernel part %s" % (t, [hex(a) for a in cc[:2]]))
        d = deferred_of(deferred, t, tid, cookie)
        if d is None:
            missing += 1
            if not g.get("deferred_missing") or len(cc) != 2:
                fail("sample at %d: deferred part never written, not flagged: %s" % (t, g))
        else:
            stitched += 1
            if cc[2:] != d[3] or g.get("deferred", {}).get("cookie") != cookie:
                fail("sample at %d: stitched user part %s, the deferred record holds %s"
                     % (t, [hex(a) for a in cc[2:]], [hex(a) for a in d[3]]))
            if d[3]:
                checked += 1
                if d[3] != d[4]:
                    expect_disagree[t] = how_wrong(d[3], d[4])
        if g.get("trace_stack_partial"):
            fail("sample at %d (tid %d, cpu %d): trace stack flagged partial"
                 % (t, tid, g["cpu"]))
        ts = [int(x, 16) for x in g.get("trace_stack", [])]
        if ts != stack:
            fail("sample at %d: trace stack %s, ptrace's %s"
                 % (t, [hex(a) for a in ts], [hex(a) for a in stack]))

    out = run([ptdecode, "--check-callchains", cap]).splitlines()
    listed = {}
    for line in out:
        m = re.match(r"(\d+)\.(\d{9}) \d+/\d+ ip 0x[0-9a-f]+: (truncated|missing frames|wrong frames)", line)
        if m:
            listed[(int(m.group(1)), int(m.group(2)))] = m.group(3)
    want = {(t // 10**9, t % 10**9): k for t, k in expect_disagree.items()}
    if listed != want:
        fail("--check-callchains listed %d samples, the ground truth disagrees at %d (%s)"
             % (len(listed), len(want), sorted(set(listed.items()) ^ set(want.items()))[:5]))
    kinds = {k: list(want.values()).count(k) for k in set(want.values())}
    last = "callchains checked: %d, disagree: %d" % (checked, len(expect_disagree))
    if out[-1] != last:
        fail("last line %r, expected %r" % (out[-1], last))
    # the same listing and last line whichever --format
    out_json = run([ptdecode, "--check-callchains", "--format=json", cap]).splitlines()
    if out_json != out:
        fail("--check-callchains --format=json: %d lines ending %r, the text view %d "
             "ending %r" % (len(out_json), out_json[-1:], len(out), out[-1]))

    lo, hi = main_range(prog)
    own_wrong = 0
    for t, tid, cookie, unwound, true in deferred:
        k = next((i for i, a in enumerate(true) if lo <= a < hi), None)
        if k is not None and unwound[:k + 1] != true[:k + 1]:
            own_wrong += 1
    if kind in ("fp", "dwarf") and own_wrong:
        fail("%s: %d unwindings wrong inside the program's own frames" % (kind, own_wrong))
    if kind == "nofp" and (not own_wrong or not expect_disagree):
        fail("no frame pointers, yet the unwinder was never wrong in the program's frames")
    need = {"nofp": "truncated", "mixed": "missing frames", "threads": "wrong frames",
            "cpus2": "wrong frames"}
    if kind in need and not kinds.get(need[kind]):
        fail("%s: no disagreement of the kind %r (%s)" % (kind, need[kind], kinds))
    if kind == "cpus2":
        on_both = cpu_check(cap, samples, got)
    if kind in ("threads", "cpus2") and len({s[1] for s in samples}) < 3:
        fail("samples of %d threads only" % len({s[1] for s in samples}))
    if kind in ("threads", "cpus2"):
        tid = samples[-1][1]
        sel = run([ptdecode, "--samples", "--format=json", "--tid", str(tid), cap]).splitlines()
        if sorted(json.loads(l)["time"] for l in sel) != [s[0] for s in samples if s[1] == tid]:
            fail("--tid %d does not select that thread's samples" % tid)
    if not missing:
        fail("no sample whose deferred part never came (the fixture ends in a loop "
             "without syscalls for that)")
    print("ok: %d samples (%d stitched, %d never got their deferred part), %d deferred "
          "records; trace stacks equal ptrace's; %s %s; %d unwindings wrong in the "
          "program's own frames" % (len(samples), stitched, missing, len(deferred), last,
                                    kinds, own_wrong))
    if kind == "cpus2":
        print("cpus2: every sample's cpu is its thread's; %d samples of threads "
              "sampled on both CPUs, none partial" % on_both)


main()
