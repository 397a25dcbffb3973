#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_snapshot.py PTSYNTH PTDECODE OUT SIZE PSB_PERIOD [OPTS] -- CMD [ARGS]

Records CMD with `ptsynth record --snapshot SIZE` (and ptsynth OPTS; snapshot-mode
AUX as perf record -S writes it: each AUXTRACE record the last SIZE bytes of the
ring, consecutive ones overlapping, and once in three trace lost between
them) and checks ptdecode against two oracles:
- perf script (perf's own Intel PT decoder, which removes the overlap as
  intel_pt_find_overlap does): ptdecode, both decoders at -j1 and -j2,
  lists exactly its instructions, and with TSC `--branches` lists perf
  script --itrace=be's branches, trace starts and stops
  (check_timeline.py's compare_branches: per thread, and across CPUs in
  perf's order with CPU and time); of a --perf-layout threads directory
  perf reads the same records joined into one file (perfdir_join.py);
- the ground truth (expected.insn): what is decoded is a subsequence of
  it, so no instruction is decoded twice, and it is shorter (trace lost);
- the snapshots' places in the trace (the AUX records' offsets and sizes
  that perf script -D prints, written by ptsynth from its ring) and their
  bytes (perf's AUXTRACE records): where a snapshot
  holds the last complete PSB+ of the one before it, the bytes the two
  share are overlap (--stats' overlap bytes sum them); otherwise (the
  ring wrapped between them, or they share less than that, which perf's
  rule cannot tell from trace lost) it is a reported gap (a warning line
  and snapshot gaps).
With --cpus N in OPTS (a snapshot ring per simulated CPU, one AUX queue
each, all snapshotted at the same moments as perf record -S does):
overlaps and gaps are per CPU (the AUX records' CPUs), each gap is
a gap event of its CPU's queue (JSON "cpu"), ptdecode's merged timeline
lists perf script's lines (address, CPU, thread, time) in its order with
both decoders at -j1 and -j2, needing no clock fallback (--stats), and
each thread's instructions are a subsequence of its ground truth
(expected.insn split by expected.threads).
With --pre-psb in OPTS (this script's, not ptsynth's): each queue's first
snapshot gets, before its first PSB, packets perf's decoder never reads
(pre_psb: a TSC past the PSB+'s); perf's times, and so ptdecode's, start
at that PSB+ all the same.
Exit 0 = pass, 1 = fail, 77 = skip."""
import os
import re
import shutil
import struct
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from perf_home import perf_home  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'timeline'))
import check_timeline  # noqa: E402  (its --branches comparison with perf script)

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL:", msg)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, errors="replace", **kw)


def insns(text, multi=False):
    """Addresses, or with multi (-t) (address, CPU, TID, time)."""
    if not multi:
        return [ln.split()[0] for ln in text.splitlines() if ln.startswith("0x")]
    return [(int(p[0], 16), int(p[1].strip("[]")), int(p[2].split("/")[1]), p[3])
            for p in (ln.split() for ln in text.splitlines() if ln.startswith("0x"))]


def perf_lines(pd):
    """perf script's (address, CPU, TID, time) lines."""
    p = run(["perf", "script", "-i", pd, "--itrace=i0ns", "-F", "cpu,tid,time,ip", "--ns"])
    return [(int(q[3], 16), int(q[1].strip("[]")), int(q[0]), q[2].rstrip(":"))
            for q in (ln.split() for ln in p.stdout.splitlines()) if len(q) == 4]


def per_thread_truth(out):
    """expected.insn split by expected.threads ("CPU TID" per line)."""
    per = {}
    with open(os.path.join(out, "expected.insn")) as f, \
            open(os.path.join(out, "expected.threads")) as g:
        for ip, where in zip(f, g):
            per.setdefault(int(where.split()[1]), []).append(int(ip, 16))
    return per


def is_subsequence(got, truth):
    """Each decoded instruction matched to a later ground-truth one: no
    instruction decoded twice, none made up, order kept."""
    it = iter(truth)
    return all(any(x == t for t in it) for x in got)


PSB = bytes([2, 0x82] * 8)
PSBEND = bytes([2, 0x23])


def auxtrace_places(path):
    """A perf.data file's AUXTRACE records: [(CPU, AUX offset, size, file
    offset of the data)]."""
    with open(path, "rb") as f:
        b = f.read()
    off, size = struct.unpack_from("<QQ", b, 40)
    out, pos = [], off
    while pos + 8 <= off + size:
        typ, _, sz = struct.unpack_from("<IHH", b, pos)
        if sz < 8:
            break
        if typ == 71:   # PERF_RECORD_AUXTRACE: its data follows it
            dsz, doff, _, _, _, cpu = struct.unpack_from("<QQQIIi", b, pos + 8)
            out.append((cpu, doff, dsz, pos + sz))
            pos += dsz
        pos += sz
    return out


def auxtrace_records(path):
    """A perf.data file's AUXTRACE records: [(CPU, offset, size, data)]."""
    with open(path, "rb") as f:
        b = f.read()
    return [(cpu, doff, dsz, b[at:at + dsz])
            for cpu, doff, dsz, at in auxtrace_places(path)]


def pre_psb(path):
    """Writes packets perf's decoder never reads into each queue's first
    AUXTRACE buffer, before its first PSB (the bytes a snapshot holds of
    the trace before that PSB+): PADs, a TSC 0x8000 ticks past the PSB+'s
    and a CBR of the PSB+'s ratio.  perf finds the PSB by its bytes
    (intel_pt_scan_for_psb), so its times start at the PSB+'s TSC; a clock
    that took the packets before it would keep the later TSC there (perf's
    TSC slip rule).  Returns the CPUs whose buffer had room."""
    done, seen = [], set()
    with open(path, "r+b") as f:
        for cpu, _, size, at in auxtrace_places(path):
            if cpu in seen:
                continue
            seen.add(cpu)
            f.seek(at)
            data = f.read(size)
            p = first_psb(data)
            if p is None or p < 12 or data[p + 16] != 0x19:
                continue
            q = p + 24
            if data[q:q + 2] == bytes([2, 0x73]):     # TMA
                q += 7
            if data[q:q + 2] != bytes([2, 3]):          # CBR
                continue
            tsc = int.from_bytes(data[p + 17:p + 24], "little") + 0x8000
            f.seek(at)
            f.write(bytes(p - 12) + bytes([0x19]) + tsc.to_bytes(7, "little")
                    + bytes([2, 3, data[q + 2], 0]))
            done.append(cpu)
    return done


def first_psb(data):
    i = data.find(PSB)
    return i if i >= 0 else None


def last_psb(data):
    """Where the last PSB+ that ends (PSBEND) inside data starts."""
    i = len(data)
    while True:
        i = data.rfind(PSB, 0, i)
        if i < 0:
            return None
        if data.find(PSBEND, i + len(PSB)) >= 0:
            return i


def main():
    if len(sys.argv) < 7:
        sys.exit(__doc__)
    ptsynth, ptdecode, out, size, psb = sys.argv[1:6]
    rest = sys.argv[6:]
    if "--" not in rest:
        sys.exit(__doc__)
    opts, cmd = rest[:rest.index("--")], rest[rest.index("--") + 1:]
    multi = "--cpus" in opts
    prepsb = "--pre-psb" in opts     # this script's, not ptsynth's
    opts = [o for o in opts if o != "--pre-psb"]
    if not shutil.which("perf"):
        print("SKIP: perf not installed")
        return 77
    shutil.rmtree(out, ignore_errors=True)
    p = run([ptsynth, "record", "-o", out, "--snapshot", size, "--psb-period", psb]
            + opts + ["--"] + cmd)
    if p.returncode:
        fail("ptsynth: %s" % p.stderr)
        return 1
    perf_home(out + ".home", out)
    if prepsb:
        cpus = pre_psb(os.path.join(out, "perf.data"))
        if not cpus:
            fail("no queue's first AUXTRACE buffer has 12 bytes before its first "
                 "PSB+ (PSB, TSC, [TMA], CBR)")
            return 1
        print("packets before the first PSB of CPUs %s (a TSC past the PSB+'s, "
              "a CBR)" % cpus)
    truth = [ln.strip() for ln in open(os.path.join(out, "expected.insn"))]
    pd = os.path.join(out, "perf.data")
    perfcap = out   # the directory whose perf.data perf script reads
    if os.path.isdir(pd):
        # --perf-layout threads: perf 6.1 reads no AUX data out of data.N
        # files (check_threads_layout.sh), so it reads them joined into
        # one file, features kept (HEADER_AUXTRACE with no index entries,
        # as perf record --threads writes it: perf script prints -F addr
        # and the other fields of the branches it synthesizes only with it)
        perfcap = out + ".joined"
        shutil.rmtree(perfcap, ignore_errors=True)
        os.mkdir(perfcap)
        subprocess.run([sys.executable, os.path.join(os.path.dirname(
            os.path.abspath(__file__)), "perfdir_join.py"), pd,
            os.path.join(perfcap, "perf.data")], check=True)
        pd = os.path.join(perfcap, "perf.data")

    # perf's decode
    p = run(["perf", "script", "-i", pd, "--itrace=i0ns", "-F", "ip"])
    perf = ["0x" + ln.split()[0] for ln in p.stdout.splitlines() if ln.strip()]
    if not perf:
        fail("perf script decodes nothing: %s" % p.stderr[-300:])
    # the snapshots: the kernel's AUX records (CPU, offset, size) that perf
    # script -D lists, each with its bytes from perf's AUXTRACE record
    data = {(c, o): d for c, o, _, d in auxtrace_records(pd)}
    p = run(["perf", "script", "-D", "-i", pd])
    allsnaps = [(int(c), int(o, 16), int(s, 16)) for c, o, s, f in re.findall(
        r"^\s*(-?\d+) \d+ 0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_AUX offset: "
        r"(0x[0-9a-f]+|0) size: (0x[0-9a-f]+|0) flags: (0x[0-9a-f]+)", p.stdout, re.M)
        if int(f, 16) & 2]
    if any((c, o) not in data for c, o, _ in allsnaps):
        fail("an AUX record names a snapshot no AUXTRACE record holds")
        return 1
    snaps, overlap, gaps, cpugaps = [], 0, 0, {}
    for cpu in sorted(set(c for c, _, _ in allsnaps)):
        mine = [(o, sz, data[c, o][:sz]) for c, o, sz in allsnaps if c == cpu]
        snaps += mine
        cpugaps[cpu] = 0
        for (ao, asz, adata), (bo, bsz, bdata) in zip(mine, mine[1:]):
            # perf's rule (intel_pt_find_overlap): b continues a where b
            # holds a's last complete PSB+; where b starts past it (the
            # ring wrapped, or the two overlap by less than that), b is
            # decoded from its first PSB and that is a gap
            last = last_psb(adata)
            if last is not None and bo <= ao + last and first_psb(bdata) is not None:
                overlap += ao + asz - bo
            elif first_psb(bdata) is not None:
                cpugaps[cpu] += 1
        gaps += cpugaps[cpu]
    if multi and len(cpugaps) < 2:
        fail("snapshots of CPUs %s only" % sorted(cpugaps))
    if len(snaps) < 3 or not overlap or not gaps:
        fail("the recording has %d snapshots, %d overlap bytes, %d gaps: "
             "the test needs all three" % (len(snaps), overlap, gaps))

    if multi:
        perf = perf_lines(pd)
        truth = per_thread_truth(out)
    for dec in ("fast", "libipt"):
        for j in ("1", "2"):
            ctx = "ptdecode --decoder=%s -j%s" % (dec, j)
            p = run([ptdecode, "-q", "-j" + j, "--decoder=" + dec, "--insn",
                     "--no-sym", "--no-disasm"] + (["-t", "--stats"] if multi else [])
                    + [out])
            got = insns(p.stdout, multi)
            if multi:
                st = dict(re.findall(r"^([a-z ]+): (\d+)$", p.stdout, re.M))
                k = next((i for i, (x, y) in enumerate(zip(got, perf)) if x != y),
                         min(len(got), len(perf)))
                bad = [t for t in truth if not is_subsequence(
                    [e[0] for e in got if e[2] == t], truth[t])]
                if got != perf:
                    fail("%s: %d lines, perf script %d; first difference at %d: %s vs %s"
                         % (ctx, len(got), len(perf), k, got[k:k + 2], perf[k:k + 2]))
                elif bad or sum(len(v) for v in truth.values()) <= len(got):
                    fail("%s: threads %s not a subsequence of their ground truth, or "
                         "nothing lost" % (ctx, bad))
                elif st.get("clock fallback queues") != "0":
                    fail("%s: clock fallback queues %s" % (ctx, st.get("clock fallback queues")))
                else:
                    print("OK: %s: %d lines = perf script's merged timeline (address, "
                          "CPU, thread, time) on CPUs %s; per thread a subsequence of the "
                          "ground truth (%d); no clock fallback" % (
                              ctx, len(got), sorted(set(e[1] for e in got)),
                              sum(len(v) for v in truth.values())))
                continue
            if got != perf:
                fail("%s: %d instructions, perf script %d" % (ctx, len(got), len(perf)))
            elif not is_subsequence(got, truth) or len(got) >= len(truth):
                fail("%s: not a proper subsequence of the ground truth (%d of %d)"
                     % (ctx, len(got), len(truth)))
            else:
                print("OK: %s: %d instructions = perf script, a subsequence of the "
                      "%d of the ground truth" % (ctx, len(got), len(truth)))
    # --branches: perf script --itrace=be's branches, trace starts and stops
    # (check_timeline.py's comparison: per thread, and across CPUs in
    # perf's order with its CPUs and times); for a directory, ptdecode
    # reads the directory and perf the same records joined.  Not without
    # TSC (perf has no time field then; check_branches.py below compares
    # those without times).
    timed = "--no-tsc" not in opts
    pbr = check_timeline.perf_branches(perfcap) if timed else []
    if timed and not pbr:
        fail("perf script --itrace=be lists no branch")
    for dec in ("fast", "libipt") if timed else ():
        for j in ("1", "2"):
            ctx = "ptdecode --decoder=%s -j%s" % (dec, j)
            try:
                obr = check_timeline.ours_branches(check_timeline.run(
                    [ptdecode, "-q", "--decoder=" + dec, "-j", j, "-t", "--no-sym",
                     "--branches", out]))
                nbr, ntrace, nparked, _, _ = check_timeline.compare_branches(obr, pbr, ctx)
                print("OK: %s --branches: %d branches, %d trace starts/stops = perf "
                      "script --itrace=be (%d listed after a trace stop)"
                      % (ctx, nbr, ntrace, nparked))
            except SystemExit:   # check_timeline.fail printed what differs
                fail("%s --branches differ from perf script's" % ctx)
    p = run([ptdecode, "--stats", out])
    st = dict(re.findall(r"^([a-z ]+): (\d+)$", p.stdout, re.M))
    warned = len(re.findall(r"warning: snapshot gap: ", p.stderr))
    want = {"snapshots": len(snaps), "snapshot overlap bytes": overlap,
            "snapshot gaps": gaps}
    for k, v in want.items():
        if int(st.get(k, -1)) != v:
            fail("--stats %s: %s, the snapshots' places say %d" % (k, st.get(k), v))
    if warned != gaps:
        fail("%d snapshot gap warnings, %d gaps" % (warned, gaps))
    # each gap is an event of the flow: a gap line in --insn and JSON,
    # counted in --stats' gaps, with both decoders
    for dec in ("fast", "libipt"):
        p = run([ptdecode, "-q", "--decoder=" + dec, "--insn", "--no-sym",
                 "--no-disasm", out])
        n = len(re.findall(r"^\[gap .*snapshot gap: ", p.stdout, re.M))
        p = run([ptdecode, "-q", "--decoder=" + dec, "--insn", "--format=json",
                 out])
        nj = len(re.findall(r'^\{"type":"gap".*"msg":"snapshot gap: ', p.stdout, re.M))
        if multi:   # each gap in its CPU's queue
            jc = {}
            for c in re.findall(r'^\{"type":"gap".*"msg":"snapshot gap: .*"cpu":(-?\d+)',
                                p.stdout, re.M):
                jc[int(c)] = jc.get(int(c), 0) + 1
            if any(jc.get(c, 0) != n for c, n in cpugaps.items()):
                fail("--decoder=%s: JSON gap lines per CPU %s, snapshot gaps per CPU %s"
                     % (dec, jc, cpugaps))
        if n != gaps or nj != gaps or int(st.get("gaps", -1)) != gaps:
            fail("--decoder=%s: %d gap lines, %d JSON gap lines, --stats gaps %s; "
                 "%d snapshot gaps" % (dec, n, nj, st.get("gaps"), gaps))
    # the last branch before each gap is listed as perf lists it
    cb = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli",
                      "check_branches.py")
    # (on the capture itself: not on a directory, whose data.N files
    # perf 6.1 reads no AUX data out of; compare_branches above has
    # compared those)
    for opt in ([], ["--decoder=libipt"]) if perfcap == out and not multi else []:
        p = run([sys.executable, cb, ptdecode, out] + opt)
        print(p.stdout.strip())
        if p.returncode:
            fail("--branches %s differ from perf script's" % " ".join(opt))
    if not FAILS:
        print("OK: %d snapshots, %d bytes of overlap skipped, %d gaps reported "
              "(per CPU: %s)" % (len(snaps), overlap, gaps, cpugaps))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
