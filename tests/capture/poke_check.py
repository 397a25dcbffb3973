#!/usr/bin/env python3
"""poke_check.py CAPDIR LOADERDIR [PTSYNTH PTDECODE WORKDIR]

Checks ptcapture's re-copies of a JIT image rewritten in place (tail-call
prog_array updates; no TEXT_POKE on this kernel) against what the loader,
ptcap_pokeload, saw itself (LOADERDIR/oracle.tsv):

rows   The text store rows of the caller's image (data rows with bytes and
       `uncertain` rows without) are ordered and do not overlap; the first
       starts at the program's load, the last ends at its unload.  Every
       time the loader read the image (`seen T HASH`) lies in exactly one
       row, a data row holding those bytes (or, when ptcapture's polls were
       late, an uncertain row next to one).  For every update syscall
       [U0, U1]: the row of the version before it ends by U1, the row of
       the version after it starts at U0 or later, and the rows between
       them hold at least one `uncertain` row, and data rows only inside
       [U0, U1] (intermediate states of a patch done in steps).  info's
       jit_* counters agree.
decode With PTSYNTH...: `ptsynth walk` generates a trace through the
       caller using the loader's own versions (LOADERDIR/text: the truth
       between updates) with segments at each `seen` time, 2 us after each
       update returned, and inside each of ptcapture's uncertain windows
       during an update (there the walk runs through the old bytes, which
       nobody can confirm); then the trace is decoded with ptcapture's text
       store instead: segments inside ptcapture's data rows must decode
       exactly, segments inside its uncertain windows must give reports
       (gaps/errors) naming the caller's range, inside that window, and no
       instructions.
"""
import os
import re
import shutil
import subprocess
import sys

BIG = 2**64 - 1


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def read_oracle(d):
    caller, seen, upd = None, [], []
    with open(os.path.join(d, "oracle.tsv")) as f:
        for line in f:
            c = line.split()
            if c[0] == "caller":
                caller = (int(c[1]), int(c[2], 16), int(c[3]), c[4])
            elif c[0] == "seen":
                seen.append((int(c[1]), c[2]))
            elif c[0] == "update":
                upd.append((int(c[1]), int(c[2]), c[3]))
    if not caller or len(seen) != len(upd) + 1:
        fail("oracle.tsv incomplete")
    return caller, seen, upd


def read_rows(cap, addr):
    rows = []
    with open(os.path.join(cap, "text", "index.tsv")) as f:
        for line in f:
            if line.startswith("#"):
                continue
            c = line.rstrip("\n").split("\t")
            if len(c) != 13 or int(c[1], 16) != addr:
                continue
            rows.append(dict(kind=c[0], len=int(c[2]), frm=int(c[3]),
                             to=BIG if c[4] == "-" else int(c[4]), src=c[6],
                             hash=c[7], prog_id=int(c[9]), name=c[12]))
    rows.sort(key=lambda r: r["frm"])
    return rows


def info(cap):
    d = {}
    with open(os.path.join(cap, "info")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            d[k] = v
    return d


def row_at(rows, t):
    hits = [i for i, r in enumerate(rows) if r["frm"] <= t < r["to"]]
    return hits


def merge_late(rows):
    """A version, an uncertain row, the same version again: ptcapture's
    polls came late (jit_late_polls) but found the bytes unchanged; for
    the checks against the loader's reads and updates that is one version
    with a stretch nobody saw."""
    out = []
    for r in rows:
        if (len(out) >= 2 and r["kind"] != "uncertain" and out[-1]["kind"] == "uncertain"
                and out[-2]["kind"] != "uncertain" and out[-2]["hash"] == r["hash"]):
            out.pop()
            out[-1] = dict(out[-1], to=r["to"])
            continue
        out.append(r)
    return out


def check_rows(cap, caller, seen, upd):
    pid, addr, length, tag = caller
    rows = [r for r in read_rows(cap, addr) if r["name"].endswith("_poke_caller")]
    if not rows:
        fail("no text store row for the caller at %#x" % addr)
    for r in rows:
        print("  %-9s [%d, %s) %s" % (r["kind"], r["frm"],
                                      "-" if r["to"] == BIG else r["to"], r["hash"]))
        if r["len"] != length or r["to"] <= r["frm"]:
            fail("bad row (length or empty window): %s" % r)
        unc = r["kind"] == "uncertain"
        if unc != (r["hash"] == "-"):
            fail("an uncertain row must have no bytes and a data row bytes: %s" % r)
        if not unc and not os.path.exists(os.path.join(cap, "text", r["hash"] + ".bin")):
            fail("blob %s missing" % r["hash"])
    for a, b in zip(rows, rows[1:]):
        if a["to"] > b["frm"]:
            fail("rows overlap: [%d, %d) and [%d, ...)" % (a["frm"], a["to"], b["frm"]))
        if a["kind"] == "uncertain" and b["kind"] == "uncertain":
            fail("two uncertain rows in a row")
    if rows[0]["kind"] == "uncertain" or rows[0]["frm"] > seen[0][0]:
        fail("the first row does not start with the program")
    if rows[-1]["to"] == BIG:
        fail("the caller was unloaded during the capture, its last row is open")
    all_rows = rows
    rows = merge_late(rows)
    where = []
    for t, h in seen:
        hits = row_at(rows, t)
        if len(hits) != 1:
            fail("loader read the image at %d: %d rows there" % (t, len(hits)))
        m = hits[0]
        r = rows[m]
        if r["kind"] == "uncertain":
            # ptcapture's polls were late (a busy machine): its last poll
            # before the read confirmed these bytes, or its first poll after
            # it did; between polls it rightly claims nothing.
            near = [x for x in (m - 1, m + 1) if 0 <= x < len(rows) and
                    rows[x]["kind"] != "uncertain" and rows[x]["hash"] == h]
            print("  (the loader's read at %d lies in an uncertain row: no poll "
                  "between %d and %d%s)" % (t, r["frm"], r["to"],
                                            "" if near else "; that version was never polled"))
            if not near:
                # polls so late (a sanitizer build on a busy machine) that
                # the version came and went between two of them: ptcapture
                # rightly claims nothing there; the updates around it
                # cannot be checked row by row
                where.append(m)
                continue
            m, r = near[0], rows[near[0]]
        if r["hash"] != h:
            fail("at %d the loader read %s, the row there holds %s (%s)" %
                 (t, h, r["hash"], r["kind"]))
        where.append(m)
    for k, (u0, u1, what) in enumerate(upd):
        i, j = where[k], where[k + 1]
        if "uncertain" in (rows[i]["kind"], rows[j]["kind"]):
            if i > j:
                fail("update %s: the loader's reads go backwards in the rows" % what)
            print("  update %-6s: a version around it was never polled" % what)
            continue
        if i >= j:
            fail("update %s: the versions before and after it share a row" % what)
        if rows[i]["to"] > u1 or rows[j]["frm"] < u0:
            fail("update %s [%d, %d]: version before ends at %d, after starts at %d" %
                 (what, u0, u1, rows[i]["to"], rows[j]["frm"]))
        between = rows[i + 1:j]
        if not any(r["kind"] == "uncertain" for r in between):
            fail("update %s: no uncertain row between the versions" % what)
        for r in between:
            if r["kind"] != "uncertain" and not (u0 <= r["frm"] and r["to"] <= u1):
                fail("update %s: a version between the two lies outside the syscall" % what)
            if r["kind"] == "uncertain" and (r["to"] <= u0 or r["frm"] >= u1):
                fail("update %s: an uncertain row between them misses the syscall" % what)
        print("  update %-6s [%d, %d] (%.3f ms): %d row(s) between the versions: %s" %
              (what, u0, u1, (u1 - u0) / 1e6, len(between),
               " ".join(r["kind"] for r in between)))
    unc = [r for r in all_rows if r["kind"] == "uncertain"]
    width = sum(r["to"] - r["frm"] for r in unc)
    inf = info(cap)
    for k in ("jit_tracked_progs", "jit_recopy_polls", "jit_rewrites_detected",
              "jit_uncertain_rows", "jit_uncertain_ns", "jit_late_polls"):
        if k not in inf:
            fail("info has no %s" % k)
    # an update that came and went between two late polls is not detected,
    # its time lies in an uncertain row (checked above)
    detected = int(inf["jit_rewrites_detected"]) + int(inf["jit_late_polls"])
    if detected < len(upd) or int(inf["jit_uncertain_rows"]) < len(unc) \
            or int(inf["jit_uncertain_ns"]) < width:
        fail("info jit_* counters below what the caller alone shows")
    print("OK rows: %d data + %d uncertain rows for %d loader versions; uncertain "
          "%.3f ms in all (widest %.3f ms); %s polls, %s rewrites" %
          (len(rows) - len(unc), len(unc), len(seen), width / 1e6,
           max(r["to"] - r["frm"] for r in unc) / 1e6, inf["jit_recopy_polls"],
           inf["jit_rewrites_detected"]))
    return all_rows


def decode(ptdecode, d, decoder):
    p = subprocess.run([ptdecode, "--decoder=" + decoder, "--insn", d],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    insns, other = [], []
    for line in p.stdout.splitlines():
        if line.startswith("0x"):
            insns.append(line.split()[0])
        elif line.strip():
            other.append(line)
    return insns, other


def check_decode(cap, loader, rows, caller, seen, upd, ptsynth, ptdecode, work):
    _, addr, length, _ = caller
    out = os.path.join(work, "walk.ptd")
    shutil.rmtree(out, ignore_errors=True)
    times = [t for t, _ in seen] + [u1 + 2000 for _, u1, _ in upd]
    for u0, u1, _ in upd:
        for r in rows:
            a, b = max(r["frm"], u0), min(r["to"], u1)
            if r["kind"] == "uncertain" and a < b:
                times.append((a + b) // 2)
    spec = os.path.join(work, "walk.spec")
    with open(spec, "w") as f:
        for t in sorted(times):
            f.write("segment %d %#x 400\n" % (t, addr))
    p = subprocess.run([ptsynth, "walk", "-o", out, "--from", cap, "--text",
                        os.path.join(loader, "text"), "--comm", "ptcap_pokeload",
                        "--bpf-used", spec],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        fail("ptsynth walk: %s" % p.stdout[-500:])
    # decode with ptcapture's own text store, not the loader's truth
    shutil.rmtree(os.path.join(out, "text"))
    shutil.copytree(os.path.join(cap, "text"), os.path.join(out, "text"))
    with open(os.path.join(out, "expected.insn")) as f:
        exp = [l.strip() for l in f if l.strip()]
    segs = []
    with open(os.path.join(out, "walk.log")) as f:
        for line in f:
            m = re.match(r"segment time=(\d+) start=\S+ insns=(\d+) first_line=(\d+)", line)
            if m:
                segs.append((int(m[1]), int(m[3]), int(m[2])))
    want, unc_wins, nexact = [], [], 0
    for t, first, n in segs:
        hits = row_at(rows, t)
        if len(hits) != 1:
            fail("walk segment at %d: %d capture rows" % (t, len(hits)))
        r = rows[hits[0]]
        if r["kind"] == "uncertain":
            unc_wins.append((r["frm"], r["to"]))
        else:
            want += exp[first - 1:first - 1 + n]
            nexact += 1
    if not unc_wins:
        fail("no walk segment fell into an uncertain window (timing); rerun")
    rng = "[%#x, %#x)" % (addr, addr + length)
    for dec in ("fast", "libipt"):
        got, other = decode(ptdecode, out, dec)
        if got != want:
            fail("%s: the segments in data rows do not decode exactly (%d vs %d insns)" %
                 (dec, len(got), len(want)))
        reports = [l for l in other if l.startswith("[gap") or l.startswith("[error")]
        hit = set()
        for l in reports:
            m = re.search(r" ip=(0x[0-9a-f]+)", l)
            tm = re.search(r" time=(\d+)\.(\d{9})", l)
            if not m or not addr <= int(m[1], 16) < addr + length or rng not in l \
                    or "not captured" not in l:
                fail("%s: report not about the caller's range %s: %s" % (dec, rng, l))
            t = int(tm[1]) * 10**9 + int(tm[2]) if tm else -1
            w = [k for k, (a, b) in enumerate(unc_wins) if a <= t < b]
            if not w:
                fail("%s: report outside the uncertain windows: %s" % (dec, l))
            hit.update(w)
        if len(hit) != len(unc_wins):
            fail("%s: %d segments in uncertain windows, reports for %d" %
                 (dec, len(unc_wins), len(hit)))
        print("OK decode %s: %d segments in data rows exact (%d insns), %d in uncertain "
              "windows reported (%d reports, kinds %s)" %
              (dec, nexact, len(got), len(unc_wins), len(reports),
               " ".join(sorted(set(l.split()[0] for l in reports)))))


def main():
    if len(sys.argv) not in (3, 6):
        print(__doc__)
        sys.exit(2)
    cap, loader = sys.argv[1:3]
    caller, seen, upd = read_oracle(loader)
    rows = check_rows(cap, caller, seen, upd)
    if len(sys.argv) == 6:
        check_decode(cap, loader, rows, caller, seen, upd, *sys.argv[3:6])


if __name__ == "__main__":
    main()
