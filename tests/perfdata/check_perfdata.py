#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests for decoder/format/perfdata.c.

usage: check_perfdata.py TEST PDUMP WORKDIR SHARED_TRACES

pdump prints what the reader sees; the oracle is Linux perf itself:
`perf script -D` (every record's file offset, size and type, plus time,
cpu, pids, mmap and comm fields), `perf report --header-only` (header and
features) and `perf buildid-list`.  Input files are recorded at test time
with perf, or come from the shared CoreSight traces.  perf runs with its
own HOME, WORKDIR/home.  Exit 77 = skip.
"""
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from perf_home import perf_home  # noqa: E402

SKIP = 77
FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL:", msg)


def skip(msg):
    print("SKIP:", msg)
    sys.exit(SKIP)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, errors="replace", **kw)


# ---------------------------------------------------------------- pdump --

def pdump(path, *opts):
    """Runs pdump; returns dict with header lines, records, warnings, end."""
    p = run([PDUMP] + list(opts) + [path])
    out = {"recs": [], "warnings": [], "lines": p.stdout.splitlines(),
           "end": None, "open_error": None, "rc": p.returncode}
    if p.returncode not in (0, 1):
        fail("pdump %s exited %d (crash?): %s" % (path, p.returncode, p.stderr))
    for ln in out["lines"]:
        if ln.startswith("rec "):
            f = ln.split()
            rec = {"off": int(f[1], 16), "type": f[2], "line": ln}
            for tok in f[3:]:
                if tok == "|":
                    break
                k, _, v = tok.partition("=")
                rec[k] = v
            rec["size"] = int(rec["size"], 16)
            rec["end_off"] = int(ln.rsplit("end=", 1)[1], 16)
            rec["detail"] = ln.split(" | ", 1)[1].rsplit(" end=", 1)[0] if " | " in ln else ""
            out["recs"].append(rec)
        elif ln.startswith("warning: "):
            out["warnings"].append(ln[9:])
        elif ln == "end" or ln.startswith("error "):
            out["end"] = ln
        elif ln.startswith("open error "):
            out["open_error"] = ln
            out["end"] = ln
    return out


# --------------------------------------------------------- perf oracle --

TYPE_NAMES = {1: "MMAP", 2: "LOST", 3: "COMM", 4: "EXIT", 5: "THROTTLE",
              6: "UNTHROTTLE", 7: "FORK", 8: "READ", 9: "SAMPLE", 10: "MMAP2",
              11: "AUX", 12: "ITRACE_START", 13: "LOST_SAMPLES", 14: "SWITCH",
              15: "SWITCH_CPU_WIDE", 16: "NAMESPACES", 17: "KSYMBOL",
              18: "BPF_EVENT", 19: "CGROUP", 20: "TEXT_POKE",
              21: "AUX_OUTPUT_HW_ID", 64: "HEADER_ATTR",
              65: "HEADER_EVENT_TYPE", 66: "HEADER_TRACING_DATA",
              67: "HEADER_BUILD_ID", 68: "FINISHED_ROUND", 69: "ID_INDEX",
              70: "AUXTRACE_INFO", 71: "AUXTRACE", 72: "AUXTRACE_ERROR",
              73: "THREAD_MAP", 74: "CPU_MAP", 75: "STAT_CONFIG", 76: "STAT",
              77: "STAT_ROUND", 78: "EVENT_UPDATE", 79: "TIME_CONV",
              80: "HEADER_FEATURE", 81: "COMPRESSED", 82: "FINISHED_INIT"}

RAW_RE = re.compile(r"^(0x[0-9a-f]+|0)@(\S+) \[(0x[0-9a-f]+)\]: event: (\d+)")
SUM_RE = re.compile(r"^((?:-?\d+ )+)(0x[0-9a-f]+|0) \[(0x[0-9a-f]+)\]: PERF_RECORD_([A-Z0-9_]+)(.*)$")


def perf_dump(path, pipe):
    """Records as perf script -D reads them: list of (key, size, type) in
    key order, per key the summary line's numbers and text, and the keys of
    the summary lines in the order perf delivered them.  A key is the
    offset, or (file name, offset) in a perf.data directory, where perf
    prints each record's file after its offset."""
    isdir = os.path.isdir(path)
    if pipe:
        with open(path, "rb") as f:
            p = subprocess.run(["perf", "script", "-D", "-i", "-"], stdin=f,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, errors="replace")
    else:
        p = run(["perf", "script", "-D", "-i", path])
    base = 16 if pipe else 0   # pipe offsets count from after the header
    raw, summ, order = {}, {}, []
    cur = None
    for ln in p.stdout.splitlines():
        m = RAW_RE.match(ln)
        if m:
            off = int(m.group(1), 16) + base
            cur = (os.path.basename(m.group(2)), off) if isdir else off
            # file mode: perf script also shows the attrs it synthesizes
            # from the header as HEADER_ATTR events; they are not records
            if pipe or int(m.group(4)) != 64:
                raw[cur] = (int(m.group(3), 16), int(m.group(4)))
            continue
        m = SUM_RE.match(ln)
        if m:
            off = int(m.group(2), 16) + base
            key = cur if isdir and cur and cur[1] == off else off
            summ[key] = (m.group(1).split(), m.group(4), m.group(5))
            order.append(key)
    if not raw:
        fail("perf script -D read no records from %s: %s" % (path, p.stderr[-500:]))
    return sorted((o, s, t) for o, (s, t) in raw.items()), summ, order


def rec_key(r):
    return (r["file"], r["off"]) if "file" in r else r["off"]


def compare_records(path, pipe=False, mine=None):
    mine = mine or pdump(path, "-x")
    if mine["end"] != "end":
        fail("%s: reader ended with %r" % (path, mine["end"]))
    recs = mine["recs"]
    theirs, summ, order = perf_dump(path, pipe)
    got = sorted((rec_key(r), r["size"], r["type"]) for r in recs)
    want = [(o, s, TYPE_NAMES.get(t, "UNKNOWN_%d" % t)) for o, s, t in theirs]
    if got != want:
        gs, ws = set(got), set(want)
        fail("%s: record lists differ: %d vs perf %d; only reader: %s; only perf: %s"
             % (path, len(got), len(want), sorted(gs - ws)[:5], sorted(ws - gs)[:5]))
    nchecked = 0
    for r in recs:
        s = summ.get(rec_key(r))
        if not s or r["type"] in ("HEADER_ATTR", "HEADER_FEATURE"):
            continue
        nums, name, text = s
        ctx = "%s @%s %s" % (path, rec_key(r), r["type"])
        if name != r["type"]:
            fail("%s: perf calls it %s" % (ctx, name))
            continue
        # perf prints "[cpu] time" in front when the record has a sample id
        if "time" in r:
            if int(nums[-1]) != int(r["time"]):
                fail("%s: time %s, perf %s" % (ctx, r["time"], nums[-1]))
            if "cpu" in r and len(nums) == 2 and int(nums[0]) != int(r["cpu"]):
                fail("%s: cpu %s, perf %s" % (ctx, r["cpu"], nums[0]))
        d = r["detail"]
        if r["type"] == "SAMPLE":
            m = re.match(r"\([^)]*\): (-?\d+)/(-?\d+): (0x[0-9a-f]+)", text)
            if not m or (int(m.group(1)), int(m.group(2))) != (int(r["pid"]), int(r["tid"])) \
                    or "ip=" + m.group(3) != d.split()[0]:
                fail("%s: sample %s %s / %s vs perf %r" % (ctx, r.get("pid"), r.get("tid"), d, text))
        elif r["type"] in ("MMAP", "MMAP2"):
            m = re.match(r" (-?\d+)/(-?\d+): \[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|0)[^\]]*\]: \S+ (.*)$", text)
            mm = re.match(r"(-?\d+)/(-?\d+) addr=(\S+) len=(\S+) pgoff=(\S+) file=(.*)$", d)
            if not m or not mm or [int(x, 0) for x in m.groups()[:5]] != [int(x, 0) for x in mm.groups()[:5]] \
                    or m.group(6) != mm.group(6):
                fail("%s: mmap %r vs perf %r" % (ctx, d, text))
        elif r["type"] == "COMM":
            m = re.match(r"( exec)?: (.*):(-?\d+)/(-?\d+)$", text)
            want_d = "%s/%s comm=%s exec=%d" % (m.group(3), m.group(4), m.group(2), 1 if m.group(1) else 0) if m else None
            if d != want_d:
                fail("%s: comm %r vs perf %r" % (ctx, d, text))
        elif r["type"] == "AUXTRACE":
            m = re.search(r"size: (0x[0-9a-f]+|0)\s+offset: (0x[0-9a-f]+|0)\s+ref: (0x[0-9a-f]+|0)\s+idx: (\d+)\s+tid: (-?\d+)\s+cpu: (-?\d+)", text)
            mm = re.match(r"size=(\S+) offset=(\S+) ref=(\S+) idx=(\S+) tid=(\S+) cpu=(\S+)", d)
            if not m or not mm or [int(x, 0) for x in m.groups()] != [int(x, 0) for x in mm.groups()]:
                fail("%s: auxtrace %r vs perf %r" % (ctx, d, text))
        elif r["type"] in ("FORK", "EXIT"):
            m = re.match(r"\((-?\d+):(-?\d+)\):\((-?\d+):(-?\d+)\)", text)
            mm = re.match(r"pid=(\S+) ppid=(\S+) tid=(\S+) ptid=(\S+)", d)
            if not m or not mm or [int(m.group(i)) for i in (1, 2, 3, 4)] != \
                    [int(mm.group(i)) for i in (1, 3, 2, 4)]:
                fail("%s: task %r vs perf %r" % (ctx, d, text))
        elif r["type"] == "SWITCH_CPU_WIDE":
            m = re.match(r" (IN|OUT)(?: preempt)?\s+next(?: |_)?prev pid/tid:\s*(-?\d+)/(-?\d+)", text) or \
                re.match(r" (IN|OUT).*?(-?\d+)/(-?\d+)", text)
            mm = re.match(r"out=(\d) preempt=(\d) next_prev=(-?\d+)/(-?\d+)", d)
            if not m or not mm or (m.group(1) == "OUT") != (mm.group(1) == "1") or \
                    (int(m.group(2)), int(m.group(3))) != (int(mm.group(3)), int(mm.group(4))):
                fail("%s: switch %r vs perf %r" % (ctx, d, text))
        elif r["type"] == "AUX":
            m = re.match(r" offset: (\S+) size: (\S+) flags: (\S+)", text)
            mm = re.match(r"offset=(\S+) size=(\S+) flags=(\S+)", d)
            if not m or not mm or [int(x, 0) for x in m.groups()] != [int(x, 0) for x in mm.groups()]:
                fail("%s: aux %r vs perf %r" % (ctx, d, text))
        elif r["type"] == "ITRACE_START":
            m = re.match(r" pid: (-?\d+) tid: (-?\d+)", text)
            if not m or d != "%s/%s" % m.groups():
                fail("%s: itrace_start %r vs perf %r" % (ctx, d, text))
        nchecked += 1
    norder = check_order(path, recs, summ, order) if os.path.isdir(path) else 0
    print("%s: %d records match perf script -D (%d with fields checked, %d in "
          "perf's time order)" % (os.path.basename(path), len(got), nchecked, norder))
    return mine


def check_order(path, recs, summ, order):
    """A directory's records with a time come in the order perf delivers
    them (by time across the files; records with equal times may come in
    either order)."""
    timed = {rec_key(r): int(r["time"]) for r in recs
             if "time" in r and r["type"] in TYPE_NAMES.values()
             and [k for k, v in TYPE_NAMES.items() if v == r["type"]][0] < 64}
    mine = [rec_key(r) for r in recs if rec_key(r) in timed]
    theirs = [k for k in order if k in timed]
    if [timed[k] for k in mine] != [timed[k] for k in theirs] or \
            sorted(mine) != sorted(theirs):
        i = next((i for i, (a, b) in enumerate(zip(mine, theirs))
                  if timed[a] != timed[b]), min(len(mine), len(theirs)))
        fail("%s: merged order differs from perf's at record %d: %s vs perf %s"
             % (path, i, mine[i:i + 3], theirs[i:i + 3]))
    files = set(k[0] for k in mine)
    if len(files) < 2:
        fail("%s: timed records from %d file(s) only: %s" % (path, len(files), files))
    return len(mine)


def compare_header(path, mine=None, pipe=False):
    """Header fields and features against perf report --header-only and
    build ids against perf buildid-list."""
    mine = mine or pdump(path)
    p = run(["perf", "report", "--header-only", "-i", path])
    hdr = {}
    for ln in p.stdout.splitlines():
        m = re.match(r"^# ([a-z][a-z ]*?)\s*: (.*)$", ln)
        if m:
            hdr.setdefault(m.group(1), m.group(2).rstrip())
    lines = mine["lines"]
    info = dict(re.findall(r"(\w+)=(\S+)", lines[0]))
    checks = 0
    for key, mkey in (("data offset", "data_offset"), ("data size", "data_size")):
        if key in hdr and not pipe:
            checks += 1
            if hdr[key] != info[mkey]:
                fail("%s: %s %s, perf %s" % (path, key, info[mkey], hdr[key]))
    mine_kv = {}
    for ln in lines:
        if ": " in ln and not ln.startswith(("rec ", "warning", "open error")):
            k, _, v = ln.partition(": ")
            mine_kv[k] = v
        m = re.match(r"nrcpus online=(\d+) avail=(\d+)", ln)
        if m:
            mine_kv["nrcpus online"], mine_kv["nrcpus avail"] = m.groups()
    for key in ("hostname", "os release", "perf version", "arch", "cpudesc",
                "cpuid", "cmdline", "nrcpus online", "nrcpus avail"):
        if key in hdr or key in mine_kv:
            checks += 1
            if hdr.get(key) != mine_kv.get(key, "").rstrip():
                fail("%s: %s %r, perf %r" % (path, key, mine_kv.get(key), hdr.get(key)))
    # event ids
    perf_ids = [re.findall(r"\d+", m) for m in re.findall(r"id = \{ ([0-9, ]+) \}", p.stdout)]
    my_ids = [l.split("ids=")[1].split(",") if l.split("ids=")[1] else []
              for l in lines if l.startswith("attr ")]
    if perf_ids:
        checks += 1
        if sorted(perf_ids) != sorted(my_ids):
            fail("%s: attr ids %s, perf %s" % (path, my_ids, perf_ids))
    # features: perf lists the missing ones
    m = re.search(r"^# missing features: (.*)$", p.stdout, re.M)
    if m:
        checks += 1
        missing = set(m.group(1).lower().split())
        allf = ["tracing_data", "build_id", "hostname", "osrelease", "version",
                "arch", "nrcpus", "cpudesc", "cpuid", "total_mem", "cmdline",
                "event_desc", "cpu_topology", "numa_topology", "branch_stack",
                "pmu_mappings", "group_desc", "auxtrace", "stat", "cache",
                "sample_time", "mem_topology", "clockid", "dir_format",
                "bpf_prog_info", "bpf_btf", "compressed", "cpu_pmu_caps",
                "clock_data", "hybrid_topology", "pmu_caps"]
        want = set(allf) - missing
        got = set(l.split()[1] for l in lines if l.startswith("feature ")) & set(allf)
        if want != got:
            fail("%s: features %s, perf %s" % (path, sorted(got), sorted(want)))
    if "clockid frequency" in hdr:
        checks += 1
        mhz = int(hdr["clockid frequency"].split()[0])
        res = int(mine_kv.get("clockid_res_ns", "0"))
        if not res or 1000 // res != mhz:
            fail("%s: clockid res %s ns, perf %s" % (path, res, hdr["clockid frequency"]))
    if "clockid" in hdr and "clock_data" in mine_kv:
        checks += 1
        cid = re.search(r"\((\d+)\)", hdr["clockid"])
        if not cid or "clockid=%s " % cid.group(1) not in mine_kv["clock_data"] + " ":
            fail("%s: clock data %s, perf clockid %s" % (path, mine_kv["clock_data"], hdr["clockid"]))
    # build ids (perf buildid-list on a pipe file reads the DSOs instead)
    if pipe:
        print("%s: %d header checks against perf report --header-only"
              % (os.path.basename(path), checks))
        return mine
    b = run(["perf", "buildid-list", "-i", path])
    want = sorted(l.split(None, 1) for l in b.stdout.splitlines() if l.strip())
    got = sorted(l.split()[1:3] for l in lines if l.startswith("build_id "))
    if want or got:
        checks += 1
        if [tuple(x) for x in want] != [tuple(x) for x in got]:
            fail("%s: build ids %s, perf %s" % (path, got, want))
    print("%s: %d header checks against perf report --header-only / buildid-list"
          % (os.path.basename(path), checks))
    return mine


# ------------------------------------------------------------ recording --

def need_perf():
    if not shutil.which("perf"):
        skip("perf not installed")
    if os.geteuid() != 0:
        skip("recording with perf here needs root")


def record(out, args, pipe=False):
    cmd = ["perf", "record", "-q", "-o", "-" if pipe else out] + args
    if pipe:
        with open(out, "wb") as f:
            p = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE)
    else:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0 or not os.path.exists(out) or os.path.getsize(out) == 0:
        skip("cannot record with %s: %s" % (" ".join(cmd), p.stderr.decode(errors="replace")[-300:]))
    return out


def basic_recording(name, pipe=False):
    return record(os.path.join(WORK, name),
                  ["-e", "cpu-clock", "-c", "100000", "--", "/bin/ls", "/"], pipe)


# ---------------------------------------------------------------- tests --

def t_record():
    need_perf()
    f = basic_recording("record.data")
    mine = compare_records(f)
    compare_header(f, mine)


def t_pipe():
    need_perf()
    f = basic_recording("pipe.data", pipe=True)
    mine = compare_records(f, pipe=True)
    if "pipe=1" not in mine["lines"][0]:
        fail("pipe.data not read as pipe mode: %s" % mine["lines"][0])
    # features come from HEADER_FEATURE records
    compare_header(f, mine, pipe=True)
    if sum(1 for l in mine["lines"] if l.startswith("feature ")) < 10:
        fail("pipe.data: too few features read")
    odd = [l for l in mine["lines"] if re.match(r"feature \d+$", l)]
    if odd:   # e.g. perf's end-of-features marker taken for a feature
        fail("pipe.data: unknown features %s" % odd)


def t_cpuwide():
    need_perf()
    f = record(os.path.join(WORK, "cpuwide.data"),
               ["-a", "--switch-events", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock",
                "-c", "200000", "-e", "dummy", "--", "sleep", "0.05"])
    mine = compare_records(f)
    compare_header(f, mine)
    types = set(r["type"] for r in mine["recs"])
    if "SWITCH_CPU_WIDE" not in types:
        fail("cpuwide.data has no SWITCH_CPU_WIDE records (types %s)" % sorted(types))
    if not any("clockid_res_ns" in l for l in mine["lines"]):
        fail("cpuwide.data: no CLOCKID feature read")
    attrs = [l for l in mine["lines"] if l.startswith("attr ")]
    if len(attrs) < 2:
        fail("cpuwide.data: expected 2 attrs, got %s" % attrs)
    # every kernel record found its attr by id (sample_id_all trailer)
    # (perf's synthesized records have an all-zero trailer: id 0)
    n = sum(1 for r in mine["recs"] if r.get("id", "0") != "0" and "attr" not in r)
    if n:
        fail("cpuwide.data: %d records with a sample id but no attr" % n)


def t_threads():
    """perf record --threads writes a directory (data, data.N); plain -a a
    file: the directory reader against perf script -D record by record,
    header and features against perf report --header-only."""
    need_perf()
    d = os.path.join(WORK, "threads.data")
    p = run(["perf", "record", "-q", "--threads", "-a", "-e", "cpu-clock",
             "-c", "100000", "--switch-events", "-o", d, "--", "sleep", "0.2"])
    if p.returncode != 0 or not os.path.isdir(d):
        skip("perf record --threads is not available here: %s" % p.stderr[-300:])
    mine = compare_records(d)
    compare_header(d, mine)
    if not any(l.startswith("dir_format 1 files ") for l in mine["lines"]):
        fail("threads.data: not read as a version 1 directory: %s"
             % [l for l in mine["lines"] if l.startswith("dir_format")])
    nfiles = len(set(r["file"] for r in mine["recs"]))
    if nfiles < 2:
        fail("threads.data: records from %d file(s)" % nfiles)
    # tiny windows: records read again at their offsets, remapping often
    small = pdump(d, "-w", "4096", "-x")
    if small["lines"] != mine["lines"]:
        fail("threads.data: a 4 KiB window reads differently from the default")
    f = record(os.path.join(WORK, "all.data"),
               ["-a", "-e", "cpu-clock", "-c", "100000", "--", "sleep", "0.1"])
    compare_records(f)
    damaged_dirs(d, mine)


def dir_format_section(path):
    """File offset of the HEADER_DIR_FORMAT feature's u64 in path/data."""
    with open(os.path.join(path, "data"), "rb") as f:
        head = f.read()
    data_off, data_size = int.from_bytes(head[40:48], "little"), int.from_bytes(head[48:56], "little")
    bits = int.from_bytes(head[72:104], "little")
    i = bin(bits & ((1 << 24) - 1)).count("1")   # sections before bit 24
    return int.from_bytes(head[data_off + data_size + 16 * i:][:8], "little")


def damaged_dirs(d, full):
    """A data.N file cut inside a record, HEADER_DIR_FORMAT version 2, and
    no HEADER_DIR_FORMAT at all: a warning, an error, data.N ignored."""
    c = os.path.join(WORK, "cut.dir")
    shutil.rmtree(c, ignore_errors=True)
    shutil.copytree(d, c)
    last = [r for r in full["recs"] if r.get("file") == "data.0"][-1]
    with open(os.path.join(c, "data.0"), "r+b") as f:
        f.truncate(last["off"] + 4)
    m = pdump(c)
    want = sorted(rec_key(r) for r in full["recs"] if r is not last)
    if m["end"] != "end" or sorted(rec_key(r) for r in m["recs"]) != want or \
            not any("truncated" in w and "data.0" in w for w in m["warnings"]):
        fail("cut data.0: %s, %d records (want %d), warnings %s"
             % (m["end"], len(m["recs"]), len(want), m["warnings"]))
    at = dir_format_section(c)
    with open(os.path.join(c, "data"), "r+b") as f:
        f.seek(at)
        f.write((2).to_bytes(8, "little"))
    expect(c, "open error -7", ["version 2", "HEADER_DIR_FORMAT"])
    with open(os.path.join(c, "data"), "r+b") as f:
        f.seek(72 + 3)              # feature bit 24: byte 3, bit 0
        b = f.read(1)[0]
        f.seek(72 + 3)
        f.write(bytes([b & ~1]))
    m = pdump(c)
    if m["end"] != "end" or any(r.get("file") != "data" for r in m["recs"]) or \
            not any("data.N files ignored" in w for w in m["warnings"]):
        fail("no HEADER_DIR_FORMAT: %s, files %s, warnings %s"
             % (m["end"], set(r.get("file") for r in m["recs"]), m["warnings"]))
    print("damaged directories: cut data.0, version 2, no DIR_FORMAT checked")


def t_coresight():
    d = os.path.join(SHARED, "coresight-perfdata")
    files = [os.path.join(d, n) for n in ("perf_etm.data", "perf_with_missing_aux_data.data")]
    if not all(os.path.exists(f) for f in files):
        skip("shared traces not found at %s" % d)
    if not shutil.which("perf"):
        skip("perf not installed")
    for f in files:
        mine = compare_records(f)
        compare_header(f, mine)
    mine = pdump(files[0], "-x")
    types = set(r["type"] for r in mine["recs"])
    for t in ("AUXTRACE_INFO", "AUXTRACE", "AUX", "ITRACE_START", "MMAP2", "COMM"):
        if t not in types:
            fail("perf_etm.data: no %s record read" % t)
    # AUXTRACE payload: hash of the bytes perf says follow the record
    for r in mine["recs"]:
        if r["type"] == "AUXTRACE":
            size = int(re.search(r"size=(\S+)", r["detail"]).group(1), 16)
            with open(files[0], "rb") as fh:
                fh.seek(r["off"] + r["size"])
                data = fh.read(size)
            h = 0xcbf29ce484222325
            for c in data:
                h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
            if "fnv=%016x" % h not in r["detail"]:
                fail("perf_etm.data: AUXTRACE payload hash %s, expected %016x" % (r["detail"], h))
    # simpleperf's auxtrace index (entries without a count) points at it
    idx = [l for l in mine["lines"] if l.startswith("aux_index ")]
    aux = [r for r in mine["recs"] if r["type"] == "AUXTRACE"]
    if [int(l.split()[1], 16) for l in idx] != [r["off"] for r in aux]:
        fail("perf_etm.data: aux index %s vs AUXTRACE records at %s" % (idx, [hex(r["off"]) for r in aux]))


def cut(src, n, dst):
    with open(src, "rb") as f:
        data = f.read(n)
    with open(dst, "wb") as f:
        f.write(data)


def check_cut(full, path, n, pipe_like):
    """Reader on the first n bytes must return exactly the records that end
    by n, then end with a truncation warning (none when the cut is a record
    boundary of a file whose end is EOF: nothing shows it was cut)."""
    m = pdump(path)
    want = [(r["off"], r["type"]) for r in full["recs"] if r["end_off"] <= n]
    got = [(r["off"], r["type"]) for r in m["recs"]]
    ctx = "%s cut at %d" % (os.path.basename(path), n)
    if m["end"] != "end":
        fail("%s: ended with %r" % (ctx, m["end"]))
    if got != want:
        fail("%s: %d records, expected %d" % (ctx, len(got), len(want)))
    boundary = n == full["recs"][0]["off"] or any(r["end_off"] == n for r in full["recs"])
    warned = [w for w in m["warnings"] if "truncated at offset" in w]
    if not pipe_like and n >= full["recs"][-1]["end_off"]:
        # all records are there, only the feature sections are cut
        if warned or not any("feature" in w for w in m["warnings"]):
            fail("%s: warnings %s, expected only a feature warning" % (ctx, m["warnings"]))
        return len(got)
    if not (pipe_like and boundary) and not warned:
        fail("%s: no truncation warning (%s)" % (ctx, m["warnings"]))
    if pipe_like and boundary and warned:
        fail("%s: truncation warning at a record boundary of a pipe file: %s" % (ctx, warned))
    if warned and not pipe_like and not boundary:
        want_off = next((r["off"] for r in full["recs"] if r["end_off"] > n), None)
        if "offset %d " % want_off not in warned[0] or "file ends at %d" % n not in warned[0]:
            fail("%s: warning %r should name offset %d" % (ctx, warned[0], want_off))
    return len(got)


def t_truncate():
    need_perf()
    f = basic_recording("trunc.data")
    full = pdump(f)
    # the oracle record list is perf's, from the uncut file
    compare_records(f, mine=full)
    tmp = os.path.join(WORK, "cut.data")
    recs = full["recs"]
    cuts = sorted(set([r["off"] for r in recs] + [recs[-1]["end_off"] - 1] +
                      [r["off"] + d for r in recs[:: max(1, len(recs) // 8)] for d in (1, 4, 7, 8, 9)]))
    for n in cuts:
        cut(f, n, tmp)
        check_cut(full, tmp, n, pipe_like=False)
    nfile = len(cuts)
    # header claims data.size == 0 (perf killed before the final header):
    # read to the end of file with a warning
    with open(f, "rb") as fh:
        data = bytearray(fh.read())
    data_end = int(re.search(r"data_offset=(\d+)", full["lines"][0]).group(1)) + \
        int(re.search(r"data_size=(\d+)", full["lines"][0]).group(1))
    z = bytearray(data[:data_end])
    z[48:56] = bytes(8)
    z0 = os.path.join(WORK, "zero-size.data")
    with open(z0, "wb") as fh:
        fh.write(z)
    m = pdump(z0)
    if [r["off"] for r in m["recs"]] != [r["off"] for r in recs] or m["end"] != "end" or \
            not any("not finalised" in w for w in m["warnings"]):
        fail("data.size==0 file: %d records (want %d), end %r, warnings %s"
             % (len(m["recs"]), len(recs), m["end"], m["warnings"]))
    # (perf 6.1 itself warns and reads no records from such a file; the
    # oracle is its record list of the same data with the size set)
    # killed recording: data.size 0 and cut mid-record
    for n in (recs[len(recs) // 2]["off"] + 5, recs[-1]["off"] + 3):
        cut(z0, n, tmp)
        check_cut(full, tmp, n, pipe_like=True)
    # pipe mode: cut at every record boundary and inside records
    p = basic_recording("trunc-pipe.data", pipe=True)
    pfull = pdump(p)
    compare_records(p, pipe=True, mine=pfull)
    precs = pfull["recs"]
    cuts = sorted(set([r["off"] for r in precs if r["type"] != "HEADER_ATTR"] +
                      [r["off"] + 3 for r in precs[::3]]))
    # the attrs are in the first record: cuts before it leave no attrs,
    # which is fine for framing but skip them to keep sid checks meaningful
    npipe = 0
    for n in cuts:
        if n <= precs[0]["end_off"]:
            continue
        cut(p, n, tmp)
        check_cut(pfull, tmp, n, pipe_like=True)
        npipe += 1
    print("truncation: %d file-mode cuts, %d pipe-mode cuts checked" % (nfile, npipe))


def patch(src, dst, edits, size=None):
    with open(src, "rb") as f:
        data = bytearray(f.read())
    for off, b in edits:
        data[off:off + len(b)] = b
    if size is not None:
        data = data[:size]
    with open(dst, "wb") as f:
        f.write(data)
    return dst


def expect(path, kind, words):
    m = pdump(path)
    line = m["end"] or ""
    ok = kind in line and all(w in line for w in words)
    if not ok:
        fail("%s: expected %s %s, got %r" % (os.path.basename(path), kind, words, line))
    return m


def t_corrupt():
    need_perf()
    f = basic_recording("corrupt-src.data")
    full = pdump(f)
    recs = full["recs"]
    le = lambda v, n=8: v.to_bytes(n, "little")
    d = os.path.join(WORK, "c.data")
    # record header size 0, 4 and 0xffff in the middle of the data section
    r = recs[len(recs) // 2]
    for sz in (0, 4):
        patch(f, d, [(r["off"] + 6, le(sz, 2))])
        m = expect(d, "error -6", ["offset %d" % r["off"], "size %d" % sz])
        if [x["off"] for x in m["recs"]] != [x["off"] for x in recs if x["off"] < r["off"]]:
            fail("corrupt size %d: records before it not all returned" % sz)
    patch(f, d, [(recs[-1]["off"] + 6, le(0xfff8, 2))])
    expect(d, "error -6", ["offset %d" % recs[-1]["off"], "past the end of the data section"])
    # header fields
    expect(patch(f, d, [(16, le(1 << 40))]), "open error -6", ["attr_size"])
    expect(patch(f, d, [(16, le(8))]), "open error -6", ["attr_size"])
    expect(patch(f, d, [(32, le(1 << 62))]), "open error -6", ["attrs section"])
    expect(patch(f, d, [(24, le((1 << 64) - 8))]), "open error -6", ["attrs section"])
    expect(patch(f, d, [(40, le(1 << 50))]), "open error -6", ["data section offset"])
    expect(patch(f, d, [(48, le((1 << 64) - 16))]), "open error -6", ["data section size"])
    expect(patch(f, d, [(8, le(0))]), "open error -4", ["header size 0"])
    expect(patch(f, d, [(8, le(1 << 40))]), "open error -4", ["header size"])
    # ids section of attr 0 and an absurd attr.size
    attrs_off = int.from_bytes(open(f, "rb").read()[24:32], "little")
    attr_size = int.from_bytes(open(f, "rb").read()[16:24], "little")
    expect(patch(f, d, [(attrs_off + attr_size - 8, le(1 << 60))]), "open error -6", ["ids section"])
    expect(patch(f, d, [(attrs_off + 4, le(8, 4))]), "open error -6", ["attr.size 8"])
    m = pdump(patch(f, d, [(attrs_off + 4, le(0xfffffff0, 4))]))
    if m["end"] != "end":   # bigger than what we know: the known part is used
        fail("attr.size 0xfffffff0: %r" % m["end"])
    # feature table past the end: warning, records still read
    data_end = int(re.search(r"data_offset=(\d+)", full["lines"][0]).group(1)) + \
        int(re.search(r"data_size=(\d+)", full["lines"][0]).group(1))
    m = pdump(patch(f, d, [(data_end + 8, le(1 << 60))]))
    if m["end"] != "end" or not any("feature" in w for w in m["warnings"]):
        fail("bad feature section: %r %s" % (m["end"], m["warnings"]))
    # every byte of the header, attrs and first records set to 0 / 0xff:
    # a clear error or a clean read, never a crash
    src = open(f, "rb").read()
    n = 0
    for off in range(0, min(len(src), recs[2]["off"])):
        for v in (0x00, 0xff):
            patch(f, d, [(off, bytes([v]))])
            pdump(d)
            n += 1
    print("corruption: %d mutated files read without a crash" % n)


def t_errors():
    d = WORK
    expect(os.path.join(d, "does-not-exist.data"), "open error -3",
           ["cannot open", "No such file or directory"])
    open(os.path.join(d, "empty.data"), "wb").close()
    expect(os.path.join(d, "empty.data"), "open error -5", ["empty.data"])
    with open(os.path.join(d, "short.data"), "wb") as f:
        f.write(b"PERFILE2\x68\x00")
    expect(os.path.join(d, "short.data"), "open error -5", ["truncated"])
    with open(os.path.join(d, "notperf.data"), "wb") as f:
        f.write(b"\x7fELF" + bytes(200))
    expect(os.path.join(d, "notperf.data"), "open error -4", ["is not a perf.data file", "magic"])
    with open(os.path.join(d, "bigendian.data"), "wb") as f:
        f.write(b"2ELIFREP" + (104).to_bytes(8, "big") + bytes(200))
    expect(os.path.join(d, "bigendian.data"), "open error -7", ["big-endian"])
    with open(os.path.join(d, "hdr.data"), "wb") as f:
        f.write(b"PERFILE2" + (104).to_bytes(8, "little") + bytes(40))
    expect(os.path.join(d, "hdr.data"), "open error -5", ["truncated"])
    expect(d, "open error -3", ["not a regular file"])
    # a COMPRESSED record: reported as unsupported, iteration goes on
    with open(os.path.join(d, "z.data"), "wb") as f:
        f.write(b"PERFILE2" + (16).to_bytes(8, "little"))
        f.write((81).to_bytes(4, "little") + (0).to_bytes(2, "little") + (16).to_bytes(2, "little") + bytes(8))
        f.write((68).to_bytes(4, "little") + (0).to_bytes(2, "little") + (8).to_bytes(2, "little"))
    m = pdump(os.path.join(d, "z.data"))
    if not any(l.startswith("unsupported:") and "compressed" in l for l in m["lines"]) or \
            [r["type"] for r in m["recs"]] != ["FINISHED_ROUND"]:
        fail("compressed record: %s" % m["lines"])


def t_window():
    """Tiny windows force a remap for nearly every record: same output as
    perf script -D (and the default window)."""
    need_perf()
    f = record(os.path.join(WORK, "window.data"),
               ["-a", "--switch-events", "-e", "dummy", "--", "sleep", "0.05"])
    for w in ("4096", "8192"):
        mine = pdump(f, "-w", w, "-x")
        compare_records(f, mine=mine)
        if mine["lines"] != pdump(f, "-x")["lines"]:
            fail("window %s: output differs from the default window" % w)
    d = os.path.join(SHARED, "coresight-perfdata", "perf_with_missing_aux_data.data")
    if os.path.exists(d):
        compare_records(d, mine=pdump(d, "-w", "4096", "-x"))


TESTS = {"record": t_record, "threads": t_threads, "pipe": t_pipe, "cpuwide": t_cpuwide,
         "coresight": t_coresight, "truncate": t_truncate,
         "corrupt": t_corrupt, "errors": t_errors, "window": t_window}

if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] not in TESTS:
        print(__doc__)
        sys.exit(2)
    _, name, PDUMP, WORK, SHARED = sys.argv
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    # perf's own HOME (perf record fills its build-id cache): nothing from
    # this machine, nothing written into the real HOME
    perf_home(os.path.join(WORK, "home"))
    TESTS[name]()
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        sys.exit(1)
    print("PASS")
