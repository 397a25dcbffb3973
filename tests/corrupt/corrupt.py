#!/usr/bin/env python3
"""corrupt.py TEST BUILD_DIR WORK_DIR SHARED_TRACES

Corruption tests with exact expectations.  Inputs are made at test time:
ptsynth traces of tests/fuzz/data/ptloop.elf (so the undamaged decode is
known to be right: ptsynth's ground truth), damaged on purpose, plus the
shared raw Intel PT traces when present.

Every ptdecode run must end by itself with status 0 or 1 (never a signal,
never a sanitizer report); the CLI is run through $PTD_WRAPPER when set
(e.g. PTD_WRAPPER="valgrind --error-exitcode=99 -q").

Tests: truncate auxcut flip lost buildid absurd shared resync resync_far slow1g
"""
import os, random, re, resource, shlex, shutil, struct, subprocess, sys, time

test, build, work, shared = sys.argv[1:5]
top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PTDECODE = os.path.join(build, 'ptdecode')
PTSYNTH = os.path.join(build, 'ptsynth')
TOOL = os.path.join(build, 'tests', 'corrupt', 'ptd_corrupt_tool')
ELF = os.path.join(top, 'tests', 'fuzz', 'data', 'ptloop.elf')
WRAPPER = shlex.split(os.environ.get('PTD_WRAPPER', ''))
PSB = bytes([0x02, 0x82] * 8)
failures = []


def skip(why):
    print('SKIP:', why)
    sys.exit(77)


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what)
    return cond


def read(p):
    with open(p, 'rb') as f:
        return f.read()


def write(p, d):
    with open(p, 'wb') as f:
        f.write(d)


def run(args, timeout=300, limit_as=None, wrap=True):
    """Runs a tool; returns (rc, stdout, stderr). A signal, a sanitizer or
    valgrind report, or a timeout is a failure of the test."""
    cmd = (WRAPPER if wrap else []) + args
    pre = None
    if limit_as:
        pre = lambda: resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, preexec_fn=pre)
    except subprocess.TimeoutExpired:
        check(False, 'timeout (%ds): %s' % (timeout, ' '.join(args)))
        return -1, '', ''
    out = p.stdout.decode('utf-8', 'replace')
    err = p.stderr.decode('utf-8', 'replace')
    bad = re.search(r'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehavior', err)
    check(p.returncode in (0, 1) and not bad,
          'exit %d%s: %s\n%s' % (p.returncode, ' (sanitizer report)' if bad else '',
                                 ' '.join(args), err[-2000:]))
    return p.returncode, out, err


def insns(out):
    return [l for l in out.splitlines() if l.startswith('0x')]


def stat(out, name):
    m = re.search(r'^%s: (\d+)$' % re.escape(name), out, re.M)
    return int(m.group(1)) if m else None


def synth(name, opts):
    """A ptsynth capture of ptloop (made once per work dir)."""
    d = os.path.join(work, name + '.ptd')
    if not os.path.isdir(d):
        if not os.access(PTSYNTH, os.X_OK):
            skip('ptsynth not built')
        p = subprocess.run([PTSYNTH, 'record', '-o', d] + opts + ['--', ELF],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode:
            shutil.rmtree(d, ignore_errors=True)
            skip('ptsynth cannot trace here: ' + p.stdout.decode()[-300:])
    return d


def records(path):
    """(rc, [(offset, end, type)], data_end, warnings) from the reader."""
    p = subprocess.run([TOOL, 'records', path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    recs, data_end, warns = [], None, []
    for l in p.stdout.decode().splitlines():
        if l.startswith('data_end '):
            data_end = int(l.split()[1])
        elif l.startswith('warning: '):
            warns.append(l)
        else:
            a, b, t = map(int, l.split())
            recs.append((a, b, t))
    return p.returncode, recs, data_end, warns


def raw_decode(trace, extra=()):
    rc, out, _ = run([PTDECODE, '-q', '--pt', trace, '--elf', ELF, '--cpu', '6/158/10',
                      '--insn', '--no-sym', '--no-disasm', '--stats'] + list(extra))
    return out


def prefix_kept(out, prefix, start):
    """The instructions before the first error at or after the damaged
    segment (trace offset start) are the undamaged prefix; errors before it
    are the undamaged trace's own (libipt 2.1 reports some in Unzip).  The
    last instruction of the prefix may instead be named by the error: its
    successor (e.g. a TIP target) lay in the damaged segment, so libipt
    reports the error at that instruction's IP rather than the
    instruction."""
    before, err_ip = [], None
    for l in out.splitlines():
        m = re.match(r'\[error offset=(0x[0-9a-f]+) ip=(0x[0-9a-f]+|0)', l)
        if m and int(m.group(1), 16) >= start:
            err_ip = m.group(2)
            break
        if l.startswith('0x'):
            before.append(l)
    if before[:len(prefix)] == prefix:
        return True
    return (prefix and before == prefix[:-1] and err_ip is not None and
            int(err_ip, 16) == int(prefix[-1], 16))


def psbs(data):
    return [m.start() for m in re.finditer(re.escape(PSB), data)]


def aux_of(perf):
    out = perf + '.aux'
    subprocess.run([TOOL, 'aux', perf, out], check=True)
    return read(out)


# ---------------------------------------------------------------------------
def t_truncate():
    d = synth('trunc', ['--psb-period', '256', '--max-insns', '6000'])
    perf = os.path.join(d, 'perf.data')
    full = read(perf)
    rc, recs, data_end, warns = records(perf)
    check(rc == 0 and not warns and data_end == recs[-1][1],
          'undamaged file reads cleanly (%d records)' % len(recs))
    rc, out, _ = run([PTDECODE, '-q', '--insn', '--no-sym', '--no-disasm', perf])
    full_insns = insns(out)
    check(len(full_insns) == 6000, 'undamaged decode: %d instructions' % len(full_insns))
    first = recs[0][0]
    cuts = sorted(set([c for a, b, _ in recs for c in (a, (a + b) // 2)] + [data_end]))
    cut_path = os.path.join(work, 'cut.data')
    ncut = 0
    for cut in [0, 8, 50, 104, first - 1] + cuts:
        write(cut_path, full[:cut])
        rc, out, err = run([PTDECODE, '--insn', '--no-sym', '--no-disasm', '--stats',
                            cut_path])
        if cut < first:
            # not even a header: one clear message, exit 1
            check(rc == 1 and err.strip(), 'cut %d (header): exit 1 with a message' % cut)
            continue
        ncut += 1
        trc, got, _, w = records(cut_path)
        want = [r for r in recs if r[1] <= cut]
        check(trc == 0 and got == want,
              'cut %d: reader returns the %d whole records before the cut (got %d)'
              % (cut, len(want), len(got)))
        trunc = re.compile(r'truncated|file ends at|past the end of the file')
        check(any(trunc.search(x) for x in w), 'cut %d: truncation warning (%s)' % (cut, w))
        check(trunc.search(err), 'cut %d: ptdecode warns about the truncation' % cut)
        has_aux = any(t == 71 for _, _, t in want)
        if not has_aux:
            check(rc == 1 and err.strip(), 'cut %d: no AUX data: exit 1 with a message' % cut)
            continue
        got_insns = insns(out)
        # exactly the instructions of the whole AUX chunks before the cut
        aux = aux_of(cut_path)
        write(cut_path + '.raw', aux)
        ref = insns(raw_decode(cut_path + '.raw'))
        # exit 0, or 1 with the truncation named (the CLI may flag the
        # truncated input in its exit status after decoding it)
        check((rc == 0 or (rc == 1 and 'truncated' in err)) and got_insns == ref and
              got_insns == full_insns[:len(got_insns)],
              'cut %d: %d instructions, = raw decode of the %d AUX bytes (%d) and a prefix'
              ' of the full decode' % (cut, len(got_insns), len(aux), len(ref)))
    print('truncate: %d records, %d cuts checked' % (len(recs), ncut))


def t_auxcut():
    d = synth('aux', ['--psb-period', '256'])
    aux = aux_of(os.path.join(d, 'perf.data'))
    path = os.path.join(work, 'aux.bin')
    write(path, aux)
    full = insns(raw_decode(path))
    check(len(full) == 14760, 'undamaged raw decode: %d instructions' % len(full))
    ps = psbs(aux)
    seg = {}
    for p in ps:
        write(path + '.p', aux[:p])
        seg[p] = len(insns(raw_decode(path + '.p')))
    n = 0
    for cut in range(1, len(aux), 41):
        write(path + '.c', aux[:cut])
        got = insns(raw_decode(path + '.c'))
        before = max(p for p in ps if p <= cut)
        check(got == full[:len(got)], 'cut %d: decode is a prefix of the uncut decode' % cut)
        check(len(got) >= seg[before],
              'cut %d: all %d instructions of the segments before PSB %d decoded (%d)'
              % (cut, seg[before], before, len(got)))
        n += 1
    print('auxcut: %d cuts, %d PSBs' % (n, len(ps)))


def t_flip():
    d = synth('aux', ['--psb-period', '256'])
    aux = aux_of(os.path.join(d, 'perf.data'))
    path = os.path.join(work, 'flip.bin')
    write(path, aux)
    full = insns(raw_decode(path))
    ps = psbs(aux)
    rnd = random.Random(1234)
    with_err = 0
    cases = 40
    for k in range(cases):
        lo = rnd.randrange(ps[0] + len(PSB) + 4, len(aux) - 8)
        bad = bytearray(aux)
        for i in range(lo, lo + 8):
            bad[i] = rnd.randrange(256)
        write(path + '.d', bytes(bad))
        out = raw_decode(path + '.d')
        got = insns(out)
        # the segment holding the first damaged byte starts at the last PSB
        # that ends before it; everything before it decodes as undamaged
        start = max(p for p in ps if p + len(PSB) <= lo)
        write(path + '.p', aux[:start])
        prefix = insns(raw_decode(path + '.p'))
        check(prefix_kept(out, prefix, start),
              'flip at %d: the %d instructions before segment %d are unchanged'
              % (lo, len(prefix), start))
        errs = [int(m.group(1), 16) for m in
                re.finditer(r'^\[error offset=0x([0-9a-f]+)', out, re.M)]
        if not errs:
            continue
        with_err += 1
        # after the last error decoding resumed at a PSB after it: the tail
        # equals a standalone decode from that PSB
        lines = out.splitlines()
        last = max(i for i, l in enumerate(lines) if l.startswith('[error'))
        tail = [l for l in lines[last:] if l.startswith('0x')]
        ok = False
        for p in [p for p in ps if p >= errs[-1]][:2] + [len(aux)]:
            write(path + '.t', aux[p:])
            ref = insns(raw_decode(path + '.t')) if p < len(aux) else []
            ok = ok or tail == ref
        check(ok, 'flip at %d: after the error at %#x decoding resumes at the next PSB'
              % (lo, errs[-1]))
    check(with_err >= cases // 2, 'errors reported for %d of %d damaged traces' % (with_err, cases))
    print('flip: %d cases, %d with errors reported' % (cases, with_err))


def patch_records(perf, fn):
    """Copies perf.data, letting fn(type, offset, buf) patch records."""
    buf = bytearray(read(perf))
    _, recs, _, _ = records(perf)
    for a, b, t in recs:
        fn(t, a, buf)
    return buf


def t_lost():
    d = synth('lost', ['--psb-period', '256', '--max-insns', '6000'])
    perf = os.path.join(d, 'perf.data')
    state = {'comm': 0, 'aux': 0}

    def fn(t, a, buf):
        if t == 3 and not state['comm']:      # COMM -> LOST of 5 records
            state['comm'] = 1
            struct.pack_into('<IH', buf, a, 2, 0)
            struct.pack_into('<QQ', buf, a + 8, 0, 5)
        if t == 11 and not state['aux']:      # first AUX: truncated flag
            state['aux'] = 1
            flags = struct.unpack_from('<Q', buf, a + 24)[0]
            struct.pack_into('<Q', buf, a + 24, flags | 1)
    bad = os.path.join(work, 'lost.data')
    write(bad, patch_records(perf, fn))
    check(state['comm'] and state['aux'], 'found a COMM and an AUX record to damage')
    rc, out, err = run([PTDECODE, '-q', '--insn', '--no-sym', '--no-disasm', '--stats', bad])
    check(rc == 0, 'LOST/truncated input decodes (exit %d)' % rc)
    check(stat(out, 'lost') == 6 and stat(out, 'lost records') == 5 and
          stat(out, 'aux truncated') == 1,
          'stats: lost %s (want 6), lost records %s (want 5), aux truncated %s (want 1)'
          % (stat(out, 'lost'), stat(out, 'lost records'), stat(out, 'aux truncated')))
    check(stat(out, 'instructions') == 6000, 'instructions still decoded: %s'
          % stat(out, 'instructions'))
    print('lost: stats checked')


def t_buildid():
    d = synth('bid', ['--max-insns', '2000'])
    perf = os.path.join(d, 'perf.data')
    state = {'n': 0}

    def fn(t, a, buf):   # MMAP2 of ptloop: claim a build id it does not have
        if t == 10 and ELF.encode() in bytes(buf[a:a + 4096]):
            state['n'] += 1
            misc = struct.unpack_from('<H', buf, a + 4)[0]
            struct.pack_into('<H', buf, a + 4, misc | (1 << 14))
            struct.pack_into('<B3x20s', buf, a + 8 + 40, 20, bytes(range(1, 21)))
    bad = os.path.join(work, 'bid.data')
    write(bad, patch_records(perf, fn))
    check(state['n'] >= 1, 'found the MMAP2 of ptloop')
    sysroot = os.path.join(work, 'sysroot')
    img = sysroot + ELF
    os.makedirs(os.path.dirname(img), exist_ok=True)
    shutil.copy(ELF, img)
    # ptloop has no build id note: the reader cannot verify it (and uses it)
    rc, out, err = run([PTDECODE, '--insn', '--no-sym', '--no-disasm', '--stats', bad])
    print('image without a build id note, trace records one: exit %d, %s instructions, '
          'build id mentioned: %s' % (rc, stat(out, 'instructions'), 'build id' in err))
    # a different ELF with a real build id in the sysroot: mismatch named
    shutil.copy('/bin/true', img)
    rc, out, err = run([PTDECODE, '--sysroot', sysroot, '--insn', '--no-sym',
                        '--no-disasm', '--stats', bad])
    check('build id' in (out + err) and '0102030405' in (out + err) and
          stat(out, 'instructions') == 0 and
          stat(out, 'errors') + stat(out, 'gaps') >= 1,
          'build id mismatch: reported with the recorded id, the wrong file not used\n'
          + err[-500:])
    print('buildid: checked')


def t_absurd():
    d = synth('abs', ['--psb-period', '256', '--max-insns', '3000'])
    perf = os.path.join(d, 'perf.data')
    good = read(perf)
    _, recs, data_end, _ = records(perf)
    huge = 1 << 62
    cases = {}

    def hdr(off, val):
        b = bytearray(good)
        struct.pack_into('<Q', b, off, val)
        return b
    cases['attr_size'] = hdr(16, huge)
    cases['attrs_size'] = hdr(32, huge)
    cases['data_offset'] = hdr(40, huge)
    cases['data_size'] = hdr(48, huge)
    cases['data_size_wrap'] = hdr(48, (1 << 64) - 16)
    cases['header_size'] = hdr(8, huge)
    feat = bytearray(good)                       # every feature section huge
    for i in range(data_end, len(good) - 15, 16):
        struct.pack_into('<QQ', feat, i, 0x100, huge)
    cases['feature_sizes'] = feat
    aux = [a for a, b, t in recs if t == 71]
    b = bytearray(good)                          # AUXTRACE payload size
    struct.pack_into('<Q', b, aux[0] + 8, huge)
    cases['auxtrace_size'] = b
    b = bytearray(good)
    struct.pack_into('<Q', b, aux[0] + 8, (1 << 64) - 8)
    cases['auxtrace_size_wrap'] = b
    b = bytearray(good)                          # AUXTRACE_INFO claims more
    info = [a for a, bb, t in recs if t == 70][0]
    struct.pack_into('<H', b, info + 6, 0xfff8)
    cases['auxinfo_size'] = b
    b = bytearray(good)                          # record size 0 (no progress)
    struct.pack_into('<H', b, recs[3][0] + 6, 0)
    cases['record_size0'] = b
    asan = b'__asan_init' in read(PTDECODE)
    limit = None if asan else 1 << 30
    if asan:   # ASan reserves terabytes of shadow: cap allocations instead
        os.environ['ASAN_OPTIONS'] = (os.environ.get('ASAN_OPTIONS', '') +
                                      ':max_allocation_size_mb=1024:allocator_may_return_null=0')
    for name, data in sorted(cases.items()):
        p = os.path.join(work, 'absurd_' + name + '.data')
        write(p, data)
        t0 = time.time()
        rc, out, err = run([PTDECODE, '--stats', p], timeout=60, limit_as=limit)
        check(rc == 0 or err.strip(), '%s: exit %d with a message' % (name, rc))
        print('absurd %-20s exit %d in %.2fs: %s' % (name, rc, time.time() - t0,
                                                      (err.strip().splitlines() or [''])[-1][:110]))
    # text store: a row claiming a huge blob
    cap = os.path.join(work, 'absurd.ptd')
    shutil.rmtree(cap, ignore_errors=True)
    shutil.copytree(d, cap)
    idx = os.path.join(cap, 'text', 'index.tsv')
    rows = read(idx).decode().splitlines()
    rows = [r if r.startswith('#') else '\t'.join(r.split('\t')[:2] + ['1099511627776'] +
                                                  r.split('\t')[3:]) for r in rows]
    write(idx, ('\n'.join(rows) + '\n').encode())
    rc, out, err = run([PTDECODE, '--stats', cap], timeout=60, limit_as=limit)
    check(rc == 0 or err.strip(), 'text store huge len: exit %d with a message' % rc)
    print('absurd text-len exit %d: %s' % (rc, (err.strip().splitlines() or [''])[-1][:110]))


def t_shared():
    base = os.path.join(shared, 'intelpt-raw', 'Unzip')
    if not os.path.isdir(base):
        skip('%s not found (the shared real traces are not beside this checkout)' % base)
    trace = read(os.path.join(base, 'trace'))
    pages = '%s/data.addr:%s/data.dump' % (base, base)

    def dec(p, whole=False):
        rc, out, _ = run([PTDECODE, '-q', '--pt', p, '--pages', pages, '--insn',
                          '--no-sym', '--no-disasm', '--stats'])
        return out if whole else out
    path = os.path.join(work, 'unzip')
    write(path, trace)
    full = insns(dec(path))
    ps = psbs(trace)
    rnd = random.Random(99)
    for k in range(12):
        lo = rnd.randrange(ps[0] + 16, len(trace) - 8)
        bad = bytearray(trace)
        for i in range(lo, lo + 8):
            bad[i] = rnd.randrange(256)
        write(path + '.d', bytes(bad))
        got = insns(dec(path + '.d'))
        start = max(p for p in ps if p + 16 <= lo)
        write(path + '.p', trace[:start])
        prefix = insns(dec(path + '.p'))
        check(prefix_kept(dec(path + '.d', True), prefix, start),
              'Unzip flip at %d: %d instructions before segment %d unchanged'
              % (lo, len(prefix), start))
        cut = rnd.randrange(1, len(trace))
        write(path + '.c', trace[:cut])
        got = insns(dec(path + '.c'))
        check(got == full[:len(got)], 'Unzip cut %d: prefix of the uncut decode' % cut)
    print('shared: Unzip, 12 flips and 12 cuts')


def damage_tip(perf, out):
    """A copy of perf.data (and of its raw trace, out + '.aux') in which
    the target of a TIP in the middle of a PSB segment, one more TIP
    following it in that segment, points outside the code (0x400ff0, next
    to ptloop.elf's code).  Returns the raw trace's path."""
    raw = out + '.aux'
    subprocess.run([TOOL, 'aux', perf, raw], check=True)
    aux = bytearray(read(raw))
    pk = [l.split() for l in subprocess.run([TOOL, 'packets', raw], check=True,
                                            stdout=subprocess.PIPE).stdout.decode().splitlines()]
    tips = [i for i in range(len(pk) - 1) if pk[i][1] == 'tip' and pk[i][2] == '1'
            and pk[i + 1][1] == 'tip']
    check(len(tips) > 10, 'the trace has 16-bit TIPs to damage')
    off = int(pk[tips[len(tips) // 3]][0])
    aux[off + 1:off + 3] = b'\xf0\x0f'
    write(raw, bytes(aux))
    data = bytearray(read(perf))
    pos = 0
    for l in subprocess.run([TOOL, 'auxspan', perf], check=True,
                            stdout=subprocess.PIPE).stdout.decode().splitlines():
        fo, size = map(int, l.split())
        data[fo:fo + size] = aux[pos:pos + size]
        pos += size
    write(out, bytes(data))
    return raw


def pieces_of_truth(out, truth):
    """The instructions between errors, in order: each run a contiguous
    stretch of the ground truth after the previous one (instructions at
    the damaged target 0x400ff0.. left out).  Returns the ground truth
    instructions left out, or None when a run is not there."""
    runs, cur = [], []
    for l in out.splitlines():
        if l.startswith('[error'):
            runs.append(cur)
            cur = []
        elif l.startswith('0x') and not 0x400ff0 <= int(l.split()[0], 16) < 0x401000:
            cur.append(int(l.split()[0], 16))
    runs.append(cur)
    at, lost = 0, 0
    for r in runs:
        if not r:
            continue
        i = at
        while i + len(r) <= len(truth) and truth[i:i + len(r)] != r:
            i += 1
        if i + len(r) > len(truth):
            return None
        lost += i - at
        at = i + len(r)
    return lost + len(truth) - at


def t_resync():
    """--resync-on-error on a TIP damaged to point outside the code, in
    perf.data and raw, with both decoders, against ptsynth's ground truth:
    with --resync-at-psb (a raw trace's default) decoding resumes at the
    next PSB; raw with --resync-on-error at the next TIP,
    losing only the ground truth's instructions up to that TIP's target.
    With return compression the returns whose calls came before the
    resume point cannot be decoded (each one an error of its own, and a
    resync), and every stretch decoded is still the ground truth's.
    perf.data by default (--resync-on-error) resumes where perf's decoder
    does (after code it cannot read, at a full IP only: here the next
    PSB): the instructions are perf script's, at -j1 and -j2."""
    for name, opts in (('noretcomp', ['--noretcomp']), ('retcomp', [])):
        d = synth('resync_' + name, opts)
        truth = [int(l, 16) for l in read(os.path.join(d, 'expected.insn')).split()]
        perf = os.path.join(work, name + '.data')
        raw = damage_tip(os.path.join(d, 'perf.data'), perf)
        inputs = (('perf.data', [perf]),
                  ('raw', ['--pt', raw, '--elf', ELF, '--cpu', '6/158/10']))
        theirs = None
        if shutil.which('perf'):
            p = subprocess.run(['perf', 'script', '-i', perf, '--itrace=i0ns', '-F', 'ip'],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env=dict(os.environ, HOME=work))
            theirs = [int(l, 16) for l in p.stdout.decode().split()]
        for kind, args in inputs:
            for dec in ('libipt', 'fast'):
                base = [PTDECODE, '-q', '--decoder=' + dec, '--insn', '--no-sym',
                        '--no-disasm', '--stats'] + args
                what = '%s %s %s' % (name, kind, dec)
                _, plain, _ = run(base + ['--resync-at-psb'])
                _, res, _ = run(base + ['--resync-on-error'])
                _, dflt, _ = run(base)
                check(dflt == (res if kind == 'perf.data' else plain),
                      what + ': the default is --resync-on-error for perf.data, '
                      '--resync-at-psb for raw')
                if kind == 'perf.data':
                    for j in ('1', '2'):
                        _, out, _ = run(base + ['-j', j])
                        ours = [int(l.split()[0], 16) for l in insns(out)]
                        if theirs is None:
                            print('%s: perf is not installed: not compared' % what)
                            break
                        check(ours == theirs, '%s -j%s: %d instructions, perf script '
                              '%d, equal: %s' % (what, j, len(ours), len(theirs),
                                                 ours == theirs))
                        print('%s -j%s: %d instructions = perf script\'s: %s'
                              % (what, j, len(ours), ours == theirs))
                    check(stat(res, 'errors') == 1, what + ': one error')
                    continue
                lost_plain = pieces_of_truth(plain, truth)
                lost = pieces_of_truth(res, truth)
                nerr = stat(res, 'errors')
                print('%s: ground truth %d instructions; lost without '
                      '--resync-on-error %s, with it %s (%s errors, %s resyncs)'
                      % (what, len(truth), lost_plain, lost, nerr,
                         stat(res, 'resyncs after errors')))
                check(stat(plain, 'errors') == 1 and lost_plain is not None,
                      what + ': without the option one error, then the ground truth')
                check(lost is not None and lost < lost_plain,
                      what + ': with it the ground truth, less of it lost')
                # no PSB after the damage: every error but one at the end
                # of the trace resumes at an IP packet
                check(nerr - 1 <= stat(res, 'resyncs after errors') <= nerr,
                      what + ': every error resynchronised')
                if name == 'noretcomp':
                    check(nerr == 1 and 1 <= lost <= 64,
                          what + ': one error, the rest of its loop iteration lost')
        # no damage: the option changes nothing
        for dec in ('libipt', 'fast'):
            base = [PTDECODE, '-q', '--decoder=' + dec, '--insn', os.path.join(d, 'perf.data')]
            _, a, _ = run(base + ['--resync-at-psb'])
            _, b, _ = run(base + ['--resync-on-error'])
            check(a == b and len(insns(a)) == len(truth),
                  '%s %s: without errors --resync-on-error changes nothing' % (name, dec))


def t_resync_far():
    """--resync-on-error in a trace with no PSB after the error: the
    resumed flow is decoded 1 MiB far, then an error says the rest up to
    the next PSB is skipped (bounded work per error, never silent).
    Code: 0x400000 call 0x400010; 0x400005 jmp *%rax; 0x400010 ret; the
    trace: a bad compressed return, then 120000 times a TIP to 0x400000
    and a taken ret (3 instructions per 10 bytes)."""
    ptenc = os.path.join(build, 'tests', 'rawpt', 'ptenc')
    if not os.access(ptenc, os.X_OK):
        skip('ptenc not built')
    code = os.path.join(work, 'code.bin')
    subprocess.run([ptenc, code, 'raw:e80b000000ffe0' + '90' * 9 + 'c3'], check=True)
    parts = []
    for name, pk in (('h', ['psb', 'psbend', 'mode64', 'pge:0x400000', 'tnt:0']),
                     ('m', ['tip:0x400000', 'tnt:1']), ('t', ['pgd'])):
        path = os.path.join(work, name)
        subprocess.run([ptenc, path] + pk, check=True)
        parts.append(read(path))
    trace = os.path.join(work, 'far.pt')
    write(trace, parts[0] + parts[1] * 120000 + parts[2])
    _, out, _ = run([PTDECODE, '-q', '--resync-on-error', '--pt', trace, '--raw',
                     code + ':0x400000', '--insn', '--no-sym', '--no-disasm'], timeout=120)
    n = len(insns(out))
    errs = [l for l in out.splitlines() if l.startswith('[error')]
    print('far: %d instructions, errors: %s' % (n, errs))
    chunks = (1 << 20) // 10
    check(3 * (chunks - 1) + 2 <= n <= 3 * (chunks + 1) + 2,
          'far: the 1 MiB after the resync point decoded (%d instructions)' % n)
    check(len(errs) == 2 and 'resync=0x1e' in errs[0] and
          'no PSB in the 1048576 bytes after the resync point at 0x1e' in errs[1],
          'far: the bad return resyncs, the end of the splice is an error')


def t_slow1g():
    if os.environ.get('PTD_SLOW') != '1':
        skip('slow test: run with PTD_SLOW=1 ctest -L slow')
    path = os.path.join(work, 'random1g.bin')
    rnd = random.Random(7)
    with open(path, 'wb') as f:
        for i in range(1024):               # 1 GiB, a PSB+PSBEND every 64 KiB
            blk = bytearray(rnd.randbytes(1 << 20))
            for o in range(0, 1 << 20, 1 << 16):
                blk[o:o + 18] = PSB + b'\x02\x23'
            f.write(blk)
    asan = b'__asan_init' in read(PTDECODE)
    for extra in (['--max-insns', '1000000'], []):
        t0 = time.time()
        rc, out, err = run([PTDECODE, '-q', '--pt', path, '--elf', ELF, '--stats'] + extra,
                           timeout=1800, limit_as=None if asan else 3 << 30)
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        print('1 GiB random %s: exit %d, %.0fs, peak RSS (children) %d MB, instructions %s, errors %s'
              % (' '.join(extra) or '(no limit)', rc, time.time() - t0, ru.ru_maxrss // 1024,
                 stat(out, 'instructions'), stat(out, 'errors')))
        check(rc == 0, '1 GiB random decodes to the end')
    os.unlink(path)


os.makedirs(work, exist_ok=True)
for need in (PTDECODE, TOOL):
    if not os.access(need, os.X_OK):
        skip(need + ' not built')
globals()['t_' + test]()
if failures:
    print('%d failure(s)' % len(failures))
    sys.exit(1)
print('PASS')
