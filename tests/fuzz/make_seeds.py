#!/usr/bin/env python3
"""make_seeds.py BUILD_DIR - regenerates the seed corpora in tests/fuzz/corpus/.

All seeds are made here, by this project: ptsynth traces of data/ptloop.elf,
perf record of /bin/true on this machine, hand-written CoreSight snapshots
and ETMv4 packet streams, and truncations of those.  Nothing is copied from
../shared/traces (the project must not commit those files).
"""
import os, struct, subprocess, sys, tempfile, shutil

top = os.path.dirname(os.path.abspath(__file__))
build = os.path.abspath(sys.argv[1])
corpus = os.path.join(top, 'corpus')
elf = os.path.join(top, 'data', 'ptloop.elf')
tool = os.path.join(build, 'tests', 'corrupt', 'ptd_corrupt_tool')
ptsynth = os.path.join(build, 'ptsynth')

def put(target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)

def read(p):
    with open(p, 'rb') as f:
        return f.read()

tmp = tempfile.mkdtemp(prefix='ptd-seeds-')
try:
    # --- Intel PT: ptsynth traces of ptloop (capture dir, perf.data, AUX) ---
    variants = {
        'default': ['--max-insns', '4000'],
        'psb256': ['--psb-period', '256', '--max-insns', '4000'],
        'notsc_noret': ['--no-tsc', '--noretcomp', '--max-insns', '3000'],
        'irq': ['--interrupts', '0.01', '--psb-period', '512', '--max-insns', '3000'],
        'full': ['--psb-period', '1024'],
    }
    for name, opts in variants.items():
        out = os.path.join(tmp, name + '.ptd')
        subprocess.run([ptsynth, 'record', '-o', out] + opts + ['--', elf],
                       check=True, stdout=subprocess.DEVNULL)
        pd = read(os.path.join(out, 'perf.data'))
        idx = read(os.path.join(out, 'text', 'index.tsv'))
        aux = os.path.join(tmp, name + '.aux')
        subprocess.run([tool, 'aux', os.path.join(out, 'perf.data'), aux], check=True)
        put('rawpt', name, read(aux))
        if name == 'full':
            continue
        put('perfdata', 'synth_' + name, pd)
        put('capdir', name, idx + pd)
        if name == 'default':
            put('textstore', 'synth', idx)
            # truncations: mid-record and inside the AUX payload
            put('perfdata', 'synth_cut_mid', pd[:len(pd) * 2 // 3])
            put('perfdata', 'synth_cut_hdr', pd[:300])
            put('rawpt', 'default_cut', read(aux)[:700])
    # --- perf record on this machine: file and pipe mode; perf's own HOME
    # (its build-id cache not written into the real one) ---
    sys.dont_write_bytecode = True
    sys.path.insert(0, os.path.dirname(top))
    from perf_home import perf_home
    perf_home(os.path.join(tmp, 'home'))
    f = os.path.join(tmp, 'perf.data')
    r = subprocess.run(['perf', 'record', '-q', '-e', 'dummy', '-o', f, '--', 'true'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode == 0:
        put('perfdata', 'perf_file', read(f))
    r = subprocess.run(['perf', 'record', '-q', '-e', 'dummy', '-o', '-', '--', 'true'],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if r.returncode == 0 and r.stdout:
        put('perfdata', 'perf_pipe', r.stdout)
        put('capdir', 'perf_pipe', b'# ptdecode-text-index 1\n' + r.stdout)
finally:
    shutil.rmtree(tmp)

# --- text store rows of every kind ---
hdr = b'# ptdecode-text-index 1\n# kind\tstart\tlen\tvalid_from\tvalid_to\tpid\tsource\thash\ttag\tprog_id\tpgoff\tbuild_id\tname\n'
rows = [b'bpf\t0xffffffffc0001000\t4096\t100\t200\t-1\tprog-info\t0180b3d2de84e7c8\t0123456789abcdef\t7\t0\t-\tbpf_prog_0123456789abcdef_f',
        b'bpf-subprog\t0xffffffffc0002000\t64\t100\t-\t-1\tfence\t-\t0123456789abcdef\t7\t0\t-\tsub',
        b'file\t0x400000\t4096\t0\t-\t42\tfile\t0180b3d2de84e7c8\t-\t0\t0\t0011223344556677889900112233445566778899\t/bin/x',
        b'poke\t0xffffffff81000000\t5\t300\t400\t-1\ttext-poke\tffffffffffffffff\t-\t0\t0\t-\tpoke']
put('textstore', 'kinds', hdr + b'\n'.join(rows) + b'\n')
put('textstore', 'badline', hdr + b'bpf\t0x1\n')

# --- CoreSight: ETMv4 packets (hand-written), raw and in 16-byte frames ---
def addr64_is0(a):
    return bytes([0x9d, (a >> 2) & 0x7f, (a >> 9) & 0x7f]) + bytes((a >> s) & 0xff for s in range(16, 64, 8))
def addr64_ctx(a):
    return bytes([0x85, (a >> 2) & 0x7f, (a >> 9) & 0x7f]) + bytes((a >> s) & 0xff for s in range(16, 64, 8)) + b'\x30'
etm = (b'\x00' * 11 + b'\x80'          # A-sync
       + b'\x01\x01\x00'                 # trace info
       + b'\x04'                         # trace on
       + addr64_ctx(0x1000)              # address + context (EL0, AArch64)
       + b'\xf7\xf7\xf6\xf7\xf7\xf7'     # atoms E E N E E E
       + addr64_is0(0x1010)
       + b'\xf7\xf7\xf6' * 4)

def frames(data, tid):
    out = b''
    for i in range(0, len(data), 14):
        chunk = data[i:i + 14].ljust(14, b'\x00')
        fr = bytearray(16)
        fr[0] = (tid << 1) | 1; aux = 0
        fr[1] = chunk[0]
        for k in range(1, 14):
            pos = k + 1
            if pos % 2 == 0:
                fr[pos] = chunk[k] & 0xfe
                aux |= (chunk[k] & 1) << (pos // 2)
            else:
                fr[pos] = chunk[k]
        fr[15] = aux
        out += bytes(fr)
    return out

put('coresight', 'raw', b'\x00' + etm)
put('coresight', 'raw_split', b'\x02' + etm + etm)
put('coresight', 'formatted', b'\x01' + frames(etm, 0x10))
put('coresight', 'formatted_2ids', b'\x03' + frames(etm, 0x10) + frames(etm, 0x12))

snap = (b'@@ snapshot.ini\n[snapshot]\nversion=1.0\n\n[device_list]\ndevice0=cpu_0.ini\ndevice1=etm_0.ini\n\n[trace]\nmetadata=trace.ini\n'
        b'@@ cpu_0.ini\n[device]\nname=cpu_0\nclass=core\ntype=Cortex-A53\n\n[regs]\nPC(size:64)=0x1000\n\n[dump1]\nfile=code.bin\naddress=0x1000\nlength=0x1000\n'
        b'@@ etm_0.ini\n[device]\nname=ETM_0\nclass=trace_source\ntype=ETM4\n\n[regs]\nTRCCONFIGR(0x004)=0x00000000\nTRCTRACEIDR(0x010)=0x00000010\n'
        b'TRCAUTHSTATUS(0x3EE)=0x000000CC\nTRCIDR0(0x078)=0x28000EA1\nTRCIDR1(0x079)=0x4100F403\nTRCIDR2(0x07A)=0x00000488\nTRCIDR8(0x060)=0x00000000\n')
def trace_ini(fmt):
    return (b'@@ trace.ini\n[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=ETB_0\nfile=trace.bin\nformat=' + fmt +
            b'\n\n[source_buffers]\nETM_0=ETB_0\n\n[core_trace_sources]\ncpu_0=ETM_0\n')
put('cssnap', 'formatted', snap + trace_ini(b'coresight') + b'@@ trace.bin\n' + frames(etm, 0x10))
put('cssnap', 'source_data', snap + trace_ini(b'source_data') + b'@@ trace.bin\n' + etm)
put('cssnap', 'no_trace', snap)
print('seeds written to', corpus)
