/* SPDX-License-Identifier: MIT */
/*
 * minijit - a tiny x86-64 JIT that tells profilers what it generated, the
 * way JIT runtimes do for perf: DIR/jit-PID.dump (jitdump, CLOCK_MONOTONIC
 * timestamps, the dump file mmapped PROT_EXEC so a perf MMAP record names
 * it) and DIR/perf-PID.map.  It also writes what it emitted, independently
 * of the jitdump encoding, to DIR/minijit-PID.oracle for tests:
 *
 *   # minijit-oracle 1
 *   pid PID
 *   load INDEX 0xADDR SIZE TIME NAME HEXBYTES
 *   debug INDEX 0xADDR LINE FILE          (source lines of load INDEX)
 *   run NAME ARG RESULT T_BEFORE T_AFTER  (a call into JIT code)
 *
 * What it does (deterministic; a few hundred instructions of JIT code):
 *   1. JITs jf_step (Collatz step: a conditional branch) and jf_loop (a
 *      loop calling jf_step N times), runs jf_loop(N);
 *   2. re-JITs jf_step in place at the same address with different code
 *      (x < 100 ? x + 5 : x - 50) and runs jf_loop(N) again.
 * Each result is checked against the same computation in C (exit 1 if
 * wrong).  W^X: code is written while RW, then made RX before it runs.
 *
 * Usage: minijit [-n N] [DIR]   (DIR defaults to $MINIJIT_DIR, else ".")
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CODE_HINT ((void *)0x20000000)   /* a fixed address: same layout every run */
#define STEP_OFF 0x00
#define LOOP_OFF 0x40

static int dump_fd = -1;
static FILE *map_f, *oracle_f;
static uint64_t code_index;

static void die(const char *what)
{
	fprintf(stderr, "minijit: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void put(const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(dump_fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write jitdump");
		c += w;
		n -= (size_t)w;
	}
}

static void put32(uint32_t v) { put(&v, 4); }
static void put64(uint64_t v) { put(&v, 8); }

/* Record prefix: id, total_size, timestamp. */
static void prefix(uint32_t id, uint32_t size, uint64_t ts)
{
	put32(id);
	put32(size);
	put64(ts);
}

/* ---- a tiny x86-64 emitter --------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t n;
};

static void emit(struct buf *b, const char *hex)
{
	unsigned v;

	for (; *hex; hex += 2) {
		while (*hex == ' ')
			hex++;
		if (!*hex || sscanf(hex, "%2x", &v) != 1)
			break;
		b->p[b->n++] = (uint8_t)v;
	}
}

/* Emits a short jump opcode with a rel8 to patch; returns its position. */
static size_t jcc8(struct buf *b, uint8_t op)
{
	b->p[b->n++] = op;
	b->p[b->n++] = 0;
	return b->n - 1;
}

static void patch8(struct buf *b, size_t at, size_t target)
{
	b->p[at] = (uint8_t)(int8_t)((long)target - (long)(at + 1));
}

/* jf_step v1: x odd ? 3x + 1 : x / 2 */
static size_t gen_step_v1(uint8_t *p, size_t *lines_at)
{
	struct buf b = { p, 0 };
	size_t jz;

	lines_at[0] = b.n;
	emit(&b, "89 f8");             /* mov eax, edi */
	lines_at[1] = b.n;
	emit(&b, "40 f6 c7 01");       /* test dil, 1 */
	jz = jcc8(&b, 0x74);           /* jz even */
	lines_at[2] = b.n;
	emit(&b, "8d 44 7f 01");       /* lea eax, [rdi + rdi*2 + 1] */
	emit(&b, "c3");                /* ret */
	patch8(&b, jz, b.n);
	lines_at[3] = b.n;
	emit(&b, "d1 e8");             /* even: shr eax, 1 */
	emit(&b, "c3");                /* ret */
	return b.n;
}

/* jf_step v2: x < 100 ? x + 5 : x - 50 */
static size_t gen_step_v2(uint8_t *p)
{
	struct buf b = { p, 0 };
	size_t jl;

	emit(&b, "8d 47 05");          /* lea eax, [rdi + 5] */
	emit(&b, "83 ff 64");          /* cmp edi, 100 */
	jl = jcc8(&b, 0x7c);           /* jl done */
	emit(&b, "8d 47 ce");          /* lea eax, [rdi - 50] */
	patch8(&b, jl, b.n);
	emit(&b, "c3");                /* done: ret */
	return b.n;
}

/* jf_loop(n): x = 27, sum = 0; n times: x = jf_step(x), sum += x */
static size_t gen_loop(uint8_t *p, uint64_t self, uint64_t step)
{
	struct buf b = { p, 0 };
	size_t top, jz, jmp;
	int32_t rel;

	emit(&b, "53 41 54 41 55");    /* push rbx; push r12; push r13 */
	emit(&b, "41 89 fc");          /* mov r12d, edi */
	emit(&b, "bb 1b 00 00 00");    /* mov ebx, 27 */
	emit(&b, "45 31 ed");          /* xor r13d, r13d */
	top = b.n;
	emit(&b, "45 85 e4");          /* test r12d, r12d */
	jz = jcc8(&b, 0x74);           /* jz done */
	emit(&b, "89 df");             /* mov edi, ebx */
	emit(&b, "e8");                /* call jf_step */
	rel = (int32_t)((int64_t)step - (int64_t)(self + b.n + 4));
	memcpy(b.p + b.n, &rel, 4);
	b.n += 4;
	emit(&b, "89 c3");             /* mov ebx, eax */
	emit(&b, "41 01 c5");          /* add r13d, eax */
	emit(&b, "41 ff cc");          /* dec r12d */
	jmp = jcc8(&b, 0xeb);          /* jmp top */
	patch8(&b, jmp, top);
	patch8(&b, jz, b.n);
	emit(&b, "44 89 e8");          /* done: mov eax, r13d */
	emit(&b, "41 5d 41 5c 5b c3"); /* pop r13; pop r12; pop rbx; ret */
	return b.n;
}

/* ---- what the JIT reports --------------------------------------------- */

struct dbg {
	uint64_t addr;
	uint32_t line;
};

static void debug_info(uint64_t code, const struct dbg *d, int n, const char *file)
{
	uint32_t size = 16 + 16;

	for (int i = 0; i < n; i++)
		size += 16 + (uint32_t)(strlen(file) + 1);
	prefix(2, size, now_ns());
	put64(code);
	put64((uint64_t)n);
	for (int i = 0; i < n; i++) {
		put64(d[i].addr);
		put32(d[i].line);
		put32(0);                          /* discriminator */
		put(file, strlen(file) + 1);
		fprintf(oracle_f, "debug %" PRIu64 " %#" PRIx64 " %u %s\n", code_index,
			d[i].addr, d[i].line, file);
	}
}

/* Reports code at addr; the caller has made it executable already, so
 * the timestamp is taken after the bytes are final and before they run. */
static void code_load(uint64_t addr, size_t size, const char *name)
{
	uint64_t ts = now_ns();
	uint32_t total = 16 + 40 + (uint32_t)(strlen(name) + 1 + size);
	const uint8_t *code = (const uint8_t *)(uintptr_t)addr;

	prefix(0, total, ts);
	put32((uint32_t)getpid());
	put32((uint32_t)getpid());                 /* tid */
	put64(addr);                               /* vma */
	put64(addr);                               /* code_addr */
	put64(size);
	put64(code_index);
	put(name, strlen(name) + 1);
	put(code, size);

	fprintf(map_f, "%" PRIx64 " %zx %s\n", addr, size, name);
	fflush(map_f);
	fprintf(oracle_f, "load %" PRIu64 " %#" PRIx64 " %zu %" PRIu64 " %s ",
		code_index, addr, size, ts, name);
	for (size_t i = 0; i < size; i++)
		fprintf(oracle_f, "%02x", code[i]);
	fputc('\n', oracle_f);
	code_index++;
}

static int c_step(int v, int x)
{
	if (v == 1)
		return x & 1 ? 3 * x + 1 : x >> 1;
	return x < 100 ? x + 5 : x - 50;
}

static int c_loop(int v, int n)
{
	int x = 27, sum = 0;

	while (n--) {
		x = c_step(v, x);
		sum += x;
	}
	return sum;
}

static int run(int (*fn)(int), const char *name, int arg, int want)
{
	uint64_t t0 = now_ns();
	int got = fn(arg);
	uint64_t t1 = now_ns();

	fprintf(oracle_f, "run %s %d %d %" PRIu64 " %" PRIu64 "\n", name, arg, got, t0, t1);
	if (got != want) {
		fprintf(stderr, "minijit: %s(%d) = %d, want %d\n", name, arg, got, want);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("MINIJIT_DIR");
	long page = sysconf(_SC_PAGESIZE);
	char path[4096];
	uint8_t *code;
	uint64_t base;
	size_t step_len, loop_len, at[4];
	struct dbg d[4];
	int n = 10, opt, bad = 0;
	int (*loop)(int);

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n' || (n = atoi(optarg)) < 0) {
			fprintf(stderr, "usage: minijit [-n N] [DIR]\n");
			return 2;
		}
	}
	if (optind < argc)
		dir = argv[optind];
	if (!dir)
		dir = ".";

	snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, (int)getpid());
	dump_fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
	if (dump_fd < 0)
		die(path);
	snprintf(path, sizeof(path), "%s/perf-%d.map", dir, (int)getpid());
	if (!(map_f = fopen(path, "w")))
		die(path);
	snprintf(path, sizeof(path), "%s/minijit-%d.oracle", dir, (int)getpid());
	if (!(oracle_f = fopen(path, "w")))
		die(path);
	fprintf(oracle_f, "# minijit-oracle 1\npid %d\n", (int)getpid());

	/* jitdump header: magic, version, total_size, elf_mach (EM_X86_64),
	 * pad1, pid, timestamp, flags (0: CLOCK_MONOTONIC times) */
	put32(0x4A695444);
	put32(1);
	put32(40);
	put32(62);
	put32(0);
	put32((uint32_t)getpid());
	put64(now_ns());
	put64(0);
	/* like perf's agents: an executable mapping of the dump file makes
	 * perf record an MMAP of it, which tells tools where the dump is */
	if (mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, dump_fd, 0) ==
	    MAP_FAILED)
		die("mmap jitdump");

	code = mmap(CODE_HINT, (size_t)page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (code == MAP_FAILED)
		code = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		die("mmap code");
	base = (uint64_t)(uintptr_t)code;
	memset(code, 0xcc, (size_t)page);         /* int3 everywhere else */

	/* 1. jf_step v1 and jf_loop */
	step_len = gen_step_v1(code + STEP_OFF, at);
	loop_len = gen_loop(code + LOOP_OFF, base + LOOP_OFF, base + STEP_OFF);
	if (mprotect(code, (size_t)page, PROT_READ | PROT_EXEC))
		die("mprotect RX");
	for (int i = 0; i < 4; i++) {
		d[i].addr = base + STEP_OFF + at[i];
		d[i].line = (uint32_t)(10 + 2 * i);
	}
	debug_info(base + STEP_OFF, d, 4, "minijit-step.jit");
	code_load(base + STEP_OFF, step_len, "jf_step[v1]");
	code_load(base + LOOP_OFF, loop_len, "jf_loop");
	loop = (int (*)(int))(uintptr_t)(base + LOOP_OFF);
	bad |= run(loop, "jf_loop", n, c_loop(1, n));

	/* 2. jf_step re-JITted in place */
	if (mprotect(code, (size_t)page, PROT_READ | PROT_WRITE))
		die("mprotect RW");
	memset(code + STEP_OFF, 0xcc, LOOP_OFF - STEP_OFF);
	step_len = gen_step_v2(code + STEP_OFF);
	if (mprotect(code, (size_t)page, PROT_READ | PROT_EXEC))
		die("mprotect RX");
	code_load(base + STEP_OFF, step_len, "jf_step[v2]");
	bad |= run(loop, "jf_loop", n, c_loop(2, n));

	prefix(3, 16, now_ns());                  /* JIT_CODE_CLOSE */
	if (close(dump_fd) || fclose(map_f) || fclose(oracle_f))
		die("close");
	return bad;
}
