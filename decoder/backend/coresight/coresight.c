/* SPDX-License-Identifier: MIT */
#include "coresight.h"
#include "cssnapshot.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "util.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <unistd.h>

#ifndef PTD_HAVE_OPENCSD

int coresight_open_snapshot(const char *dir, struct imgstore *st,
			    unsigned threads, struct backend **out, char *err,
			    size_t errlen)
{
	*out = NULL;
	util_errf(err, errlen, "%s: this ptdecode was built without OpenCSD "
		  "(install libopencsd-dev and rebuild) and cannot decode "
		  "CoreSight trace", dir);
	return PTD_ERR_UNSUPPORTED;
}

int coresight_open_perf(const struct cs_etm_info *info,
			const struct coresight_queue_desc *queues,
			size_t nqueues, struct imgstore *st, unsigned threads,
			struct backend **out, char *err, size_t errlen)
{
	*out = NULL;
	util_errf(err, errlen, "this ptdecode was built without OpenCSD "
		  "(install libopencsd-dev and rebuild) and cannot decode "
		  "CoreSight trace");
	return PTD_ERR_UNSUPPORTED;
}

int coresight_next_range(struct backend *b, struct coresight_range *r)
{ return PTD_ERR_UNSUPPORTED; }
size_t coresight_queue_count(const struct backend *b) { return 0; }
int coresight_queue_info(const struct backend *b, size_t i, int *cpu,
			 uint8_t *trace_id, int *proto)
{ return PTD_ERR_INVAL; }
size_t coresight_warning_count(const struct backend *b) { return 0; }
const char *coresight_warning(const struct backend *b, size_t i) { return NULL; }

#else

#include <opencsd/c_api/opencsd_c_api.h>
#include <opencsd/etmv3/trc_pkt_types_etmv3.h>
#include <opencsd/etmv4/trc_pkt_types_etmv4.h>
#include <opencsd/ete/trc_pkt_types_ete.h>
#include <opencsd/ptm/trc_pkt_types_ptm.h>

/* Decoding pauses (OCSD_RESP_WAIT) once this many elements are pending. */
#define CS_ELEM_HIGH 1024
/* Trace bytes handed to OpenCSD per call. */
#define CS_BLOCK (1u << 20)
/* Our own element type for decoder errors (beyond OpenCSD's range). */
#define CS_EL_ERROR 0x100

struct cs_elem {
	uint16_t type;           /* ocsd_gen_trc_elem_t or CS_EL_ERROR */
	uint8_t isa, last_type, last_sub, cond, trace_id;
	uint8_t ctx_valid, vmid_valid, ret_addr, on_reason;
	uint8_t guard;           /* CS_EL_ERROR from the mispredict guard */
	uint32_t num_i, ex_num, ctxid, vmid;
	uint32_t msg;            /* CS_EL_ERROR: 1 + offset of its text in
				  * the decoder's string pool, or 0 */
	int32_t pid;
	uint64_t st, en, index, ts, time;
};

struct csq {
	struct cs_source *srcs;  /* decoders of this queue's tree */
	size_t nsrcs;
	int cpu;
	int formatted;
	uint32_t dfmt_flags;
	struct coresight_chunk *chunks;
	size_t nchunks;
};

/* A unit of decoding: chunks [c0, c1) of queue q.  The decoder starts each
 * chunk from reset (perf's AUXTRACE records need not continue each other;
 * a snapshot queue is one chunk), so units decode independently, on any
 * thread, to the same elements. */
struct cs_unit {
	size_t q, c0, c1;
	uint64_t bytes;
};

/* Units of consecutive chunks grow to this many bytes; a unit bigger than
 * CS_UNIT_BIG is decoded by the consumer itself, a step at a time, so its
 * elements never pile up in memory. */
#define CS_UNIT_BYTES (64u << 10)
#define CS_UNIT_BIG (16u << 20)
/* Units decoded ahead of the consumer, per thread. */
#define CS_AHEAD 2

/* the mispredict guard (see guard_packet), per trace ID */
struct cs_guard {
	struct cs_dec *d;
	uint8_t trace_id, nospec;
	uint32_t max_spec;   /* TRCIDR8.MAXSPEC */
	uint8_t addr_front;  /* an address element may be newer than
			      * the newest atom */
	uint8_t addr_behind; /* one may be older (and uncommitted) */
	uint8_t addr_wait;   /* an exception or Q element waits for
			      * its address packet */
};

/* One OpenCSD decode tree and what it produced: the consumer has one, each
 * pool thread one.  OpenCSD calls back into it only from the thread that
 * runs ocsd_dt_process_data on its tree. */
struct cs_dec {
	struct cs_backend *cb;
	dcd_tree_handle_t tree;
	size_t tree_q;           /* the queue the tree was made for */
	const struct cs_unit *u; /* the unit being decoded */
	size_t chunk, pos;
	int flush, eot_sent, done, fatal;
	int quiet;               /* OpenCSD's error log is off (pool running):
				  * an OpenCSD error marks ocsd_err instead
				  * of reading the log */
	int ocsd_err;
	int32_t pid;
	uint64_t time;

	struct cs_elem *el;
	size_t el_n, el_cap, call_start;
	char *str;               /* error texts */
	size_t str_n, str_cap;
	int nomem;

	struct cs_guard guard[128];
};

/* A unit's decoded elements, handed from a pool thread to the consumer. */
struct cs_result {
	int state;               /* CS_FREE, CS_RUNNING, CS_DONE, CS_OWN */
	int fatal, nomem;
	struct cs_elem *el;
	size_t n;
	char *str;
};
enum { CS_FREE, CS_RUNNING, CS_DONE, CS_OWN };

struct cs_backend {
	struct backend b;
	struct imgstore *st;
	struct util_map *maps;   /* snapshot trace buffer files */
	size_t nmaps;
	struct coresight_chunk *snap_chunks;
	struct csq *q;
	size_t nq, cur;

	struct cs_unit *units;
	size_t nunits, ucur;     /* ucur: the unit being consumed */
	int ustarted;            /* units[ucur] is under way */
	size_t dead_q;           /* 1 + a queue a fatal error ended */
	unsigned threads;

	/* the consumer's decoder, and the elements being consumed (its own
	 * or a pool result's) */
	struct cs_dec main;
	int own;                 /* units[ucur] decoded by main step by step */
	int excl;                /* ... holding the pool's exclusive mode */
	const struct cs_elem *el;
	const char *el_str;
	size_t el_head, el_n;

	/* the pool: units ahead of ucur decoded on other threads */
	struct cs_pool *pool;

	/* an instruction range being expanded */
	int in_range;
	struct cs_elem r;
	uint64_t ip;
	uint32_t ni;

	int have_pending;
	struct ptd_event pending;

	/* PE context */
	int have_ctx;
	uint32_t ctxid, vmid;
	uint64_t tsc;

	char **warn;
	size_t nwarn, warncap;
	char msg[512];
	char errmsg[512];
};

static struct cs_backend *to_cs(struct backend *b)
{
	return (struct cs_backend *)b;
}

static void add_warning(struct cs_backend *cb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_warning(struct cs_backend *cb, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	char *s;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (util_grow((void **)&cb->warn, &cb->warncap, cb->nwarn + 1,
		      sizeof(*cb->warn)))
		return;
	s = strdup(buf);
	if (s)
		cb->warn[cb->nwarn++] = s;
}

/* ---- architecture of a core, from its type name ------------------------ */

/* Core names OpenCSD's snapshot reader knows (trc_core_arch_map), plus its
 * "ARMvM[.m]-P" and "ARM-AA64[-P]" patterns. */
static const struct {
	const char *name;
	ocsd_arch_version_t arch;
	ocsd_core_profile_t prof;
} core_map[] = {
	{ "Cortex-A78", ARCH_V8, profile_CortexA },
	{ "Cortex-A77", ARCH_V8r3, profile_CortexA },
	{ "Cortex-A76", ARCH_V8r3, profile_CortexA },
	{ "Cortex-A75", ARCH_V8r3, profile_CortexA },
	{ "Cortex-A73", ARCH_V8, profile_CortexA },
	{ "Cortex-A72", ARCH_V8, profile_CortexA },
	{ "Cortex-A65", ARCH_V8r3, profile_CortexA },
	{ "Cortex-A57", ARCH_V8, profile_CortexA },
	{ "Cortex-A55", ARCH_V8r3, profile_CortexA },
	{ "Cortex-A53", ARCH_V8, profile_CortexA },
	{ "Cortex-A35", ARCH_V8, profile_CortexA },
	{ "Cortex-A32", ARCH_V8, profile_CortexA },
	{ "Cortex-A17", ARCH_V7, profile_CortexA },
	{ "Cortex-A15", ARCH_V7, profile_CortexA },
	{ "Cortex-A12", ARCH_V7, profile_CortexA },
	{ "Cortex-A9", ARCH_V7, profile_CortexA },
	{ "Cortex-A8", ARCH_V7, profile_CortexA },
	{ "Cortex-A7", ARCH_V7, profile_CortexA },
	{ "Cortex-A5", ARCH_V7, profile_CortexA },
	{ "Cortex-R52", ARCH_V8, profile_CortexR },
	{ "Cortex-R8", ARCH_V7, profile_CortexR },
	{ "Cortex-R7", ARCH_V7, profile_CortexR },
	{ "Cortex-R5", ARCH_V7, profile_CortexR },
	{ "Cortex-R4", ARCH_V7, profile_CortexR },
	{ "Cortex-M33", ARCH_V8, profile_CortexM },
	{ "Cortex-M23", ARCH_V8, profile_CortexM },
	{ "Cortex-M0", ARCH_V7, profile_CortexM },
	{ "Cortex-M0+", ARCH_V7, profile_CortexM },
	{ "Cortex-M3", ARCH_V7, profile_CortexM },
	{ "Cortex-M4", ARCH_V7, profile_CortexM },
};

static int profile_letter(char c, ocsd_core_profile_t *p)
{
	switch (c) {
	case 'A': *p = profile_CortexA; return 0;
	case 'R': *p = profile_CortexR; return 0;
	case 'M': *p = profile_CortexM; return 0;
	}
	return -1;
}

static int core_arch(const char *name, int *arch, int *prof)
{
	ocsd_core_profile_t p = profile_CortexA;

	for (size_t i = 0; i < sizeof(core_map) / sizeof(core_map[0]); i++)
		if (!strcmp(core_map[i].name, name)) {
			*arch = core_map[i].arch;
			*prof = core_map[i].prof;
			return 0;
		}
	/* ARMvM[.m]-P */
	if (!strncmp(name, "ARMv", 4) && name[4] >= '0' && name[4] <= '9') {
		int maj = name[4] - '0', min = 0;
		const char *s = name + 5;

		if (*s == '.' && s[1] >= '0' && s[1] <= '9') {
			min = s[1] - '0';
			s += 2;
		}
		if (*s != '-' || profile_letter(s[1], &p) || maj < 7)
			return -1;
		*arch = maj == 7 ? ARCH_V7 : maj > 8 ? ARCH_AA64 :
			min < 3 ? ARCH_V8 : min == 3 ? ARCH_V8r3 : ARCH_AA64;
		*prof = p;
		return 0;
	}
	/* ARM-AA64[-P] */
	if (!strncmp(name, "ARM-", 4) && (!strncmp(name + 4, "AA64", 4) ||
					  !strncmp(name + 4, "aa64", 4))) {
		if (name[8] == '-' && profile_letter(name[9], &p))
			p = profile_CortexA;
		*arch = ARCH_AA64;
		*prof = p;
		return 0;
	}
	return -1;
}

/* Protocol from a trace source's type ("ETM4.1", "PTM1.1", "ETE"...). */
static int source_proto(const char *type)
{
	size_t n = strcspn(type, ".");

	if (n == 4 && !strncasecmp(type, "ETM4", 4))
		return CS_PROTO_ETMV4;
	if (n == 4 && !strncasecmp(type, "ETM3", 4))
		return CS_PROTO_ETMV3;
	if (n >= 3 && (!strncasecmp(type, "PTM", 3) || !strncasecmp(type, "PFT", 3)))
		return CS_PROTO_PTM;
	if (n == 3 && !strncasecmp(type, "ETE", 3))
		return CS_PROTO_ETE;
	if (n == 3 && !strncasecmp(type, "STM", 3))
		return CS_PROTO_STM;
	if (n == 3 && !strncasecmp(type, "ITM", 3))
		return CS_PROTO_ITM;
	return CS_PROTO_NONE;
}

/* ---- decode trees ------------------------------------------------------ */

static ocsd_datapath_resp_t push_elem(const void *ctx, const ocsd_trc_index_t idx,
				      const uint8_t id,
				      const ocsd_generic_trace_elem *g)
{
	struct cs_dec *d = (struct cs_dec *)ctx;
	struct cs_elem *e;

	switch (g->elem_type) {
	case OCSD_GEN_TRC_ELEM_CYCLE_COUNT:
	case OCSD_GEN_TRC_ELEM_EVENT:
	case OCSD_GEN_TRC_ELEM_SWTRACE:
	case OCSD_GEN_TRC_ELEM_SYNC_MARKER:
	case OCSD_GEN_TRC_ELEM_MEMTRANS:
	case OCSD_GEN_TRC_ELEM_CUSTOM:
	case OCSD_GEN_TRC_ELEM_EO_TRACE:
		return OCSD_RESP_CONT;   /* nothing we report */
	default:
		break;
	}
	if (util_grow((void **)&d->el, &d->el_cap, d->el_n + 1,
		      sizeof(*d->el))) {
		d->nomem = 1;
		return OCSD_RESP_FATAL_SYS_ERR;
	}
	e = &d->el[d->el_n++];
	memset(e, 0, sizeof(*e));
	e->type = (uint16_t)g->elem_type;
	e->isa = (uint8_t)g->isa;
	e->trace_id = id;
	e->index = idx;
	e->st = g->st_addr;
	e->en = g->en_addr;
	e->pid = d->pid;
	e->time = d->time;
	e->last_type = (uint8_t)g->last_i_type;
	e->last_sub = (uint8_t)g->last_i_subtype;
	e->cond = g->last_instr_cond;
	e->ret_addr = g->excep_ret_addr;
	switch (g->elem_type) {
	case OCSD_GEN_TRC_ELEM_INSTR_RANGE:
	case OCSD_GEN_TRC_ELEM_I_RANGE_NOPATH:
		e->num_i = g->num_instr_range;
		break;
	case OCSD_GEN_TRC_ELEM_EXCEPTION:
		e->ex_num = g->exception_number;
		break;
	case OCSD_GEN_TRC_ELEM_TRACE_ON:
		e->on_reason = (uint8_t)g->trace_on_reason;
		break;
	case OCSD_GEN_TRC_ELEM_TIMESTAMP:
		e->ts = g->timestamp;
		break;
	case OCSD_GEN_TRC_ELEM_PE_CONTEXT:
		e->ctx_valid = g->context.ctxt_id_valid;
		e->vmid_valid = g->context.vmid_valid;
		e->ctxid = g->context.context_id;
		e->vmid = g->context.vmid;
		break;
	default:
		break;
	}
	/* a pause every CS_ELEM_HIGH elements of one call, whether or not
	 * they are consumed at once: the calls (and so the errors OpenCSD
	 * reports per call) are the same on any thread */
	return d->el_n - d->call_start >= CS_ELEM_HIGH ? OCSD_RESP_WAIT
						       : OCSD_RESP_CONT;
}

/* OpenCSD reads code only through here, i.e. through the image store. */
static uint32_t read_mem(const void *ctx, const ocsd_vaddr_t addr,
			 const ocsd_mem_space_acc_t space, const uint8_t id,
			 const uint32_t len, uint8_t *buf)
{
	struct cs_dec *d = (struct cs_dec *)ctx;
	int n = imgstore_read_r(d->cb->st, d->pid, addr, d->time, buf, len,
				NULL, NULL, 0);

	return n > 0 ? (uint32_t)n : 0;
}

static int create_decoder(dcd_tree_handle_t tree, const struct cs_source *s,
			  unsigned char *csid_out, char *err, size_t errlen)
{
	ocsd_etmv3_cfg v3;
	ocsd_ptm_cfg ptm;
	ocsd_etmv4_cfg v4;
	ocsd_ete_cfg ete;
	const char *name;
	const void *cfg;
	unsigned char csid = 0;
	ocsd_err_t e;
	/* OpenCSD takes the trace ID from the TRACEIDR value; with perf's
	 * header version 2 that register holds no ID (bit 31 set) and the ID
	 * came from an AUX_OUTPUT_HW_ID record instead. */
	uint32_t v3id = (s->etmtraceidr & ~0x7fu & ~(1u << 31)) | s->trace_id;
	uint32_t v4id = (s->trctraceidr & ~0x7fu & ~(1u << 31)) | s->trace_id;

	switch (s->proto) {
	case CS_PROTO_ETMV3:
		memset(&v3, 0, sizeof(v3));
		v3.reg_idr = s->etmidr;
		v3.reg_ctrl = s->etmcr;
		v3.reg_ccer = s->etmccer;
		v3.reg_trc_id = v3id;
		v3.arch_ver = s->arch ? s->arch : ARCH_V7;
		v3.core_prof = s->profile ? s->profile : profile_CortexA;
		name = OCSD_BUILTIN_DCD_ETMV3, cfg = &v3;
		break;
	case CS_PROTO_PTM:
		memset(&ptm, 0, sizeof(ptm));
		ptm.reg_idr = s->etmidr;
		ptm.reg_ctrl = s->etmcr;
		ptm.reg_ccer = s->etmccer;
		ptm.reg_trc_id = v3id;
		ptm.arch_ver = s->arch ? s->arch : ARCH_V7;
		ptm.core_prof = s->profile ? s->profile : profile_CortexA;
		name = OCSD_BUILTIN_DCD_PTM, cfg = &ptm;
		break;
	case CS_PROTO_ETMV4:
		memset(&v4, 0, sizeof(v4));
		v4.reg_idr0 = s->trcidr0;
		v4.reg_idr1 = s->trcidr1;
		v4.reg_idr2 = s->trcidr2;
		v4.reg_idr8 = s->trcidr8;
		v4.reg_idr9 = s->trcidr9;
		v4.reg_idr10 = s->trcidr10;
		v4.reg_idr11 = s->trcidr11;
		v4.reg_idr12 = s->trcidr12;
		v4.reg_idr13 = s->trcidr13;
		v4.reg_configr = s->trcconfigr;
		v4.reg_traceidr = v4id;
		v4.arch_ver = s->arch ? s->arch : ARCH_V8;
		v4.core_prof = s->profile ? s->profile : profile_CortexA;
		name = OCSD_BUILTIN_DCD_ETMV4I, cfg = &v4;
		break;
	case CS_PROTO_ETE:
		memset(&ete, 0, sizeof(ete));
		ete.reg_idr0 = s->trcidr0;
		ete.reg_idr1 = s->trcidr1;
		ete.reg_idr2 = s->trcidr2;
		ete.reg_idr8 = s->trcidr8;
		ete.reg_devarch = s->trcdevarch;
		ete.reg_configr = s->trcconfigr;
		ete.reg_traceidr = v4id;
		ete.arch_ver = s->arch ? s->arch : ARCH_AA64;
		ete.core_prof = s->profile ? s->profile : profile_CortexA;
		name = OCSD_BUILTIN_DCD_ETE, cfg = &ete;
		break;
	default:
		util_errf(err, errlen, "no instruction trace decoder for %s",
			  cs_proto_name(s->proto));
		return PTD_ERR_UNSUPPORTED;
	}
	e = ocsd_dt_create_decoder(tree, name, OCSD_CREATE_FLG_FULL_DECODER,
				   cfg, &csid);
	*csid_out = csid;
	if (e != OCSD_OK) {
		char m[128];

		ocsd_err_str(e, m, sizeof(m));
		util_errf(err, errlen, "OpenCSD refused the %s decoder for trace "
			  "ID %#x: %s", cs_proto_name(s->proto), s->trace_id, m);
		return PTD_ERR_DECODE;
	}
	return 0;
}

static void push_error(struct cs_dec *d, uint64_t index, const char *msg);

/* OpenCSD 1.3.3 (Debian 12) crashes on some ETMv4 streams (found by
 * fuzzing; inputs in tests/fuzz/regress/coresight/opencsd-*):
 *  - a mispredict that finds an address element newer than the atom it
 *    applies to: TrcPktDecodeEtmV4I::mispredictAtom erases the element
 *    from its P0 stack and goes on with an invalidated iterator;
 *  - an exception (or a Q element without an address) committed before
 *    the address packet that must follow it: processException and
 *    processQElement read the element behind it on an empty stack (a
 *    trace info packet claiming a speculation depth beyond TRCIDR8's
 *    maximum makes the next exception commit at once);
 *  - an address in the last page of the address space: the memory access
 *    cache (TrcMemAccCache) overflows address + length and copies from
 *    outside its page.
 * The packet monitor sees each packet before the decoder does, so such a
 * packet is turned into a Discard here: the decoder drops its speculative
 * state and resynchronises, and the stream gets an error saying why.
 * A trace unit that does not trace speculatively (TRCIDR8.MAXSPEC = 0, most
 * cores) emits no commit, cancel or mispredict packets at all, so there
 * every such packet is discarded; otherwise the tests are conservative
 * (any address packet since the newest atom; after a cancel, any older one
 * that may be uncommitted).  Valid traces never commit an exception before
 * its address. */
enum { GUARD_NONE, GUARD_MISPREDICT, GUARD_NO_ADDR, GUARD_SPEC_DEPTH,
       GUARD_NOSPEC, GUARD_TOP };
/* OpenCSD's code cache tests address + length without overflow checks, so
 * a fetch within the last bytes of the address space "hits" any page and
 * copies from far outside it: addresses this high are never decoded. */
#define GUARD_TOP_ADDR (~(ocsd_vaddr_t)0 - 0xfff)

static void guard_packet(const void *ctx, const ocsd_datapath_op_t op,
			 const ocsd_trc_index_t index_sop, const void *pkt_in,
			 const uint32_t size, const uint8_t *data)
{
	struct cs_guard *g = (struct cs_guard *)ctx;
	/* the decoder reads this same packet object next */
	ocsd_etmv4_i_pkt *pkt = (ocsd_etmv4_i_pkt *)pkt_in;
	int mispredict = 0, commits = 0, atom = 0, speculative = 0;
	int hazard = GUARD_NONE;

	(void)size, (void)data;
	if (op != OCSD_OP_DATA || !pkt)
		return;
	switch ((int)pkt->type) {
	case ETM4_PKT_I_ADDR_MATCH:
	case ETM4_PKT_I_ADDR_CTXT_L_32IS0: case ETM4_PKT_I_ADDR_CTXT_L_32IS1:
	case ETM4_PKT_I_ADDR_CTXT_L_64IS0: case ETM4_PKT_I_ADDR_CTXT_L_64IS1:
	case ETM4_PKT_I_ADDR_L_32IS0: case ETM4_PKT_I_ADDR_L_32IS1:
	case ETM4_PKT_I_ADDR_L_64IS0: case ETM4_PKT_I_ADDR_L_64IS1:
	case ETM4_PKT_I_ADDR_S_IS0: case ETM4_PKT_I_ADDR_S_IS1:
		g->addr_front = 1;
		g->addr_wait = 0;
		if (pkt->v_addr.val >= GUARD_TOP_ADDR)
			hazard = GUARD_TOP;
		break;
	case ETM4_PKT_I_ATOM_F1: case ETM4_PKT_I_ATOM_F2:
	case ETM4_PKT_I_ATOM_F3: case ETM4_PKT_I_ATOM_F4:
	case ETM4_PKT_I_ATOM_F5: case ETM4_PKT_I_ATOM_F6:
		atom = commits = 1;
		break;
	case ETM4_PKT_I_EXCEPT:
		g->addr_wait = 1;
		break;
	case ETM4_PKT_I_Q:
		if (pkt->Q_pkt.addr_present)
			commits = 1;
		else
			g->addr_wait = 1;
		if (pkt->Q_pkt.addr_present && pkt->v_addr.val >= GUARD_TOP_ADDR)
			hazard = GUARD_TOP;
		break;
	case ETM4_PKT_I_COMMIT:
		commits = speculative = 1;
		break;
	case ETM4_PKT_I_EXCEPT_RTN:
	case ETM4_PKT_I_FUNC_RET:
		commits = 1;
		break;
	case ETM4_PKT_I_CANCEL_F1:
		g->addr_front |= g->addr_behind;
		speculative = 1;
		break;
	case ETM4_PKT_I_MISPREDICT:
		mispredict = commits = speculative = 1;
		break;
	case ETM4_PKT_I_CANCEL_F1_MISPRED:
	case ETM4_PKT_I_CANCEL_F2:
	case ETM4_PKT_I_CANCEL_F3:
		g->addr_front |= g->addr_behind;
		mispredict = commits = speculative = 1;
		break;
	case ETM4_PKT_I_DISCARD:
	case ETM4_PKT_I_OVERFLOW:
		g->addr_front = g->addr_behind = g->addr_wait = 0;
		break;
	case ETM4_PKT_I_TRACE_INFO:
		/* a depth beyond the maximum makes every later packet
		 * commit, an exception before its address too */
		if (pkt->curr_spec_depth > g->max_spec)
			hazard = GUARD_SPEC_DEPTH;
		break;
	default:
		break;
	}
	if (hazard)
		;
	else if (speculative && g->nospec)
		hazard = GUARD_NOSPEC;
	else if (commits && g->addr_wait)
		hazard = GUARD_NO_ADDR;
	else if (mispredict && (g->addr_front || g->addr_behind))
		hazard = GUARD_MISPREDICT;
	else if (atom) {
		/* without speculation the atom commits at once, and with
		 * it everything older */
		g->addr_behind = g->nospec ? 0 : (g->addr_behind | g->addr_front);
		g->addr_front = 0;
	}
	if (hazard) {
		struct cs_dec *d = g->d;

		pkt->type = ETM4_PKT_I_DISCARD;
		g->addr_front = g->addr_behind = g->addr_wait = 0;
		push_error(d, index_sop, NULL);
		if (d->el_n) {
			d->el[d->el_n - 1].trace_id = g->trace_id;
			d->el[d->el_n - 1].guard = (uint8_t)hazard;
		}
	}
}

/* OpenCSD's C API keeps its trees' callback objects in one global map,
 * unlocked: trees are made and destroyed under this lock. */
static pthread_mutex_t tree_lock = PTHREAD_MUTEX_INITIALIZER;

static dcd_tree_handle_t make_tree(struct cs_dec *d, const struct csq *q,
				   char *err, size_t errlen)
{
	dcd_tree_handle_t t;

	pthread_mutex_lock(&tree_lock);
	t = ocsd_create_dcd_tree(q->formatted ? OCSD_TRC_SRC_FRAME_FORMATTED
				 : OCSD_TRC_SRC_SINGLE, q->dfmt_flags);
	if (!t) {
		pthread_mutex_unlock(&tree_lock);
		util_errf(err, errlen, "OpenCSD could not create a decode tree");
		return NULL;
	}
	for (size_t i = 0; i < q->nsrcs; i++) {
		const struct cs_source *src = &q->srcs[i];
		struct cs_guard *g;
		unsigned char csid = 0;

		if (create_decoder(t, src, &csid, err, errlen))
			goto fail;
		/* the ID OpenCSD decodes this source under */
		g = &d->guard[csid & 0x7f];
		/* OpenCSD 1.3.3's C API attaches packet monitors to ETMv4
		 * decoders only, not to ETE ones: ETE goes unguarded */
		if (src->proto != CS_PROTO_ETMV4)
			continue;
		memset(g, 0, sizeof(*g));
		g->d = d;
		g->trace_id = csid & 0x7f;
		g->nospec = src->trcidr8 == 0;
		g->max_spec = src->trcidr8;
		if (ocsd_dt_attach_packet_callback(t, g->trace_id,
						   OCSD_C_API_CB_PKT_MON,
						   (void *)guard_packet, g) != OCSD_OK) {
			util_errf(err, errlen, "OpenCSD could not attach a packet "
				  "monitor to trace ID %#x", g->trace_id);
			goto fail;
		}
	}
	if (ocsd_dt_set_gen_elem_outfn(t, push_elem, d) != OCSD_OK ||
	    ocsd_dt_add_callback_trcid_mem_acc(t, 0, ~(ocsd_vaddr_t)0,
					       OCSD_MEM_SPACE_ANY, read_mem,
					       d) != OCSD_OK) {
		util_errf(err, errlen, "OpenCSD could not set up the decode tree");
		goto fail;
	}
	pthread_mutex_unlock(&tree_lock);
	return t;
fail:
	ocsd_destroy_dcd_tree(t);
	pthread_mutex_unlock(&tree_lock);
	return NULL;
}

static void destroy_tree(dcd_tree_handle_t t)
{
	pthread_mutex_lock(&tree_lock);
	ocsd_destroy_dcd_tree(t);
	pthread_mutex_unlock(&tree_lock);
}

static void dec_close(struct cs_dec *d)
{
	if (d->tree)
		destroy_tree(d->tree);
	d->tree = NULL;
}

static void dec_free(struct cs_dec *d)
{
	dec_close(d);
	free(d->el);
	free(d->str);
	d->el = NULL;
	d->str = NULL;
	d->el_n = d->el_cap = d->str_n = d->str_cap = 0;
}

/* An error element; msg (copied) is its text, NULL for the guard's. */
static void push_error(struct cs_dec *d, uint64_t index, const char *msg)
{
	struct cs_elem *e;
	size_t len = msg ? strlen(msg) + 1 : 0;

	if (util_grow((void **)&d->el, &d->el_cap, d->el_n + 1,
		      sizeof(*d->el)) ||
	    (len && util_grow((void **)&d->str, &d->str_cap, d->str_n + len, 1))) {
		d->nomem = 1;
		return;
	}
	e = &d->el[d->el_n++];
	memset(e, 0, sizeof(*e));
	e->type = CS_EL_ERROR;
	e->index = index;
	e->trace_id = d->cb->q[d->u->q].nsrcs ? d->cb->q[d->u->q].srcs[0].trace_id
					       : 0;
	if (len) {
		memcpy(d->str + d->str_n, msg, len);
		e->msg = (uint32_t)d->str_n + 1;
		d->str_n += len;
	}
}

/* The state each chunk starts from: the decoders reset, the guard's
 * speculation tracking too (its configuration stays). */
static void dec_chunk_reset(struct cs_dec *d)
{
	uint32_t used = 0;

	ocsd_dt_process_data(d->tree, OCSD_OP_RESET, 0, 0, NULL, &used);
	for (size_t i = 0; i < 128; i++)
		d->guard[i].addr_front = d->guard[i].addr_behind =
			d->guard[i].addr_wait = 0;
	d->pos = 0;
	d->flush = d->eot_sent = 0;
}

/* Starts unit u on d: its queue's tree, reset. */
static int dec_start(struct cs_dec *d, const struct cs_unit *u, char *err,
		     size_t errlen)
{
	if (d->tree && d->tree_q != u->q)
		dec_close(d);
	if (!d->tree) {
		d->tree = make_tree(d, &d->cb->q[u->q], err, errlen);
		if (!d->tree)
			return PTD_ERR_DECODE;
		d->tree_q = u->q;
	}
	d->u = u;
	d->chunk = u->c0;
	d->done = d->fatal = d->ocsd_err = 0;
	dec_chunk_reset(d);
	return 0;
}

/* One call into OpenCSD on d's unit; sets d->done at its end. */
static void dec_step(struct cs_dec *d)
{
	const struct csq *q = &d->cb->q[d->u->q];
	ocsd_datapath_resp_t resp = OCSD_RESP_CONT;
	uint32_t used = 0;
	uint64_t index = 0;

	d->call_start = d->el_n;
	if (d->flush) {
		resp = ocsd_dt_process_data(d->tree, OCSD_OP_FLUSH, 0, 0, NULL,
					    &used);
		d->flush = OCSD_DATA_RESP_IS_WAIT(resp);
	} else if (d->chunk < d->u->c1) {
		const struct coresight_chunk *c = &q->chunks[d->chunk];

		d->pid = c->pid;
		d->time = c->time;
		index = c->offset + d->pos;
		if (d->pos < c->size) {
			size_t left = c->size - d->pos;
			uint32_t blk = left > CS_BLOCK ? CS_BLOCK : (uint32_t)left;

			resp = ocsd_dt_process_data(d->tree, OCSD_OP_DATA, index,
						    blk, c->data + d->pos, &used);
			d->pos += used > blk ? blk : used;
			d->flush = OCSD_DATA_RESP_IS_WAIT(resp);
			if (!used && !d->flush && !OCSD_DATA_RESP_IS_FATAL(resp))
				resp = OCSD_RESP_FATAL_INVALID_DATA;
		} else if (!d->eot_sent) {
			resp = ocsd_dt_process_data(d->tree, OCSD_OP_EOT, 0, 0,
						    NULL, &used);
			d->eot_sent = 1;
			d->flush = OCSD_DATA_RESP_IS_WAIT(resp);
		} else {
			/* next chunk: perf does not promise that it
			 * continues this one */
			d->chunk++;
			if (d->chunk < d->u->c1)
				dec_chunk_reset(d);
		}
	} else {
		d->done = 1;
		return;
	}
	if (OCSD_DATA_RESP_IS_ERR(resp) || OCSD_DATA_RESP_IS_FATAL(resp)) {
		char m[256] = "", text[300];
		ocsd_trc_index_t idx = 0;
		uint8_t chan = 0;

		/* OpenCSD's error log is one object for all threads: while
		 * a pool runs it is off, and a unit with an error is
		 * decoded again alone (run_unit) to read it */
		if (d->quiet) {
			d->ocsd_err = 1;
		} else {
			ocsd_get_last_err(&idx, &chan, m, sizeof(m));
			m[strcspn(m, "\n")] = 0;
		}
		snprintf(text, sizeof(text), "OpenCSD: %s", m[0] ? m :
			 "decode error");
		push_error(d, index, text);
	}
	if (OCSD_DATA_RESP_IS_FATAL(resp)) {
		/* this queue cannot go on; the others can */
		dec_close(d);
		d->fatal = d->done = 1;
	}
}

/* ---- the pool ---------------------------------------------------------- */

/* Pool threads claim units in order, at most CS_AHEAD per thread ahead of
 * the consumer, and decode each whole into a cs_result.  OpenCSD's error
 * log is off meanwhile (it is one unlocked object); a unit that meets an
 * OpenCSD error is decoded again in exclusive mode (no other unit being
 * decoded, the log on), so that its messages are exactly those of a
 * single-threaded run.  The consumer decodes a unit itself when it
 * reaches one no thread has claimed (it never sleeps while there is work),
 * and units too big to hold decoded (CS_UNIT_BIG) step by step, in
 * exclusive mode. */
struct cs_pool {
	struct cs_backend *cb;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t *thr;
	struct cs_dec *dec;        /* one per pool thread */
	unsigned nthr;
	struct cs_result *res;     /* per unit */
	size_t claim;              /* units before it are all claimed */
	size_t active;             /* units being decoded with the log off */
	size_t excl_wait;          /* threads waiting for exclusive mode */
	int excl, stop;
};

static void log_on(int on)
{
	ocsd_def_errlog_init(on ? OCSD_ERR_SEV_ERROR : OCSD_ERR_SEV_NONE, 0);
}

/* With p->lock held: waits for exclusive mode and takes it. */
static void excl_enter(struct cs_pool *p)
{
	p->excl_wait++;
	while (p->active || p->excl)
		pthread_cond_wait(&p->cond, &p->lock);
	p->excl_wait--;
	p->excl = 1;
	log_on(1);
}

static void excl_leave(struct cs_pool *p)
{
	log_on(0);
	p->excl = 0;
	pthread_cond_broadcast(&p->cond);
}

/* Decodes unit i whole on d into r (lock not held). */
static void decode_whole(struct cs_dec *d, size_t i, struct cs_result *r,
			 int quiet)
{
	struct cs_backend *cb = d->cb;
	char err[256];

	d->el_n = d->str_n = 0;
	d->nomem = 0;
	d->quiet = quiet;
	if (dec_start(d, &cb->units[i], err, sizeof(err))) {
		/* the tree was made once at open: only memory can fail */
		r->nomem = 1;
	} else {
		while (!d->done && !d->nomem)
			dec_step(d);
	}
	r->fatal = d->fatal;
	r->nomem |= d->nomem;
	free(r->el);
	free(r->str);
	r->el = d->el;
	r->n = d->el_n;
	r->str = d->str;
	d->el = NULL;
	d->str = NULL;
	d->el_n = d->el_cap = d->str_n = d->str_cap = 0;
}

/* Claims the next unit a thread may decode ahead, or returns nunits
 * (lock held). */
static size_t claim_next(struct cs_pool *p)
{
	struct cs_backend *cb = p->cb;
	size_t lim = cb->ucur + (size_t)CS_AHEAD * (p->nthr + 1);

	while (p->claim < cb->nunits && p->res[p->claim].state != CS_FREE)
		p->claim++;
	if (p->excl || p->excl_wait || p->claim >= cb->nunits || p->claim > lim)
		return cb->nunits;
	p->res[p->claim].state = CS_RUNNING;
	return p->claim++;
}

/* Decodes claimed unit i on d (lock held on entry and exit). */
static void run_unit(struct cs_pool *p, struct cs_dec *d, size_t i)
{
	struct cs_result *r = &p->res[i];

	p->active++;
	pthread_mutex_unlock(&p->lock);
	decode_whole(d, i, r, 1);
	pthread_mutex_lock(&p->lock);
	p->active--;
	if (d->ocsd_err && !r->nomem) {
		excl_enter(p);
		pthread_mutex_unlock(&p->lock);
		r->nomem = 0;
		decode_whole(d, i, r, 0);
		pthread_mutex_lock(&p->lock);
		excl_leave(p);
	}
	r->state = CS_DONE;
	pthread_cond_broadcast(&p->cond);
}

static void *pool_main(void *arg)
{
	struct cs_dec *d = arg;
	struct cs_pool *p = d->cb->pool;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		size_t i = claim_next(p);

		if (i == d->cb->nunits) {
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		run_unit(p, d, i);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void pool_stop(struct cs_backend *cb)
{
	struct cs_pool *p = cb->pool;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	if (cb->excl) {
		/* the consumer stopped inside a big unit */
		cb->excl = 0;
		excl_leave(p);
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthr; i++)
		pthread_join(p->thr[i], NULL);
	log_on(1);
	for (unsigned i = 0; i < p->nthr; i++)
		dec_free(&p->dec[i]);
	for (size_t i = 0; i < cb->nunits; i++) {
		free(p->res[i].el);
		free(p->res[i].str);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->thr);
	free(p->dec);
	free(p->res);
	free(p);
	cb->pool = NULL;
}

/* Starts threads - 1 pool threads if there is more than one unit a pool
 * could decode.  Without a pool everything runs as before, on the caller's
 * thread; a pool that cannot start is no error. */
static void pool_start(struct cs_backend *cb, unsigned threads)
{
	struct cs_pool *p;
	size_t small = 0;

	for (size_t i = 0; i < cb->nunits; i++)
		small += cb->units[i].bytes <= CS_UNIT_BIG;
	if (threads < 2 || small < 2)
		return;
	if (threads - 1 > small)
		threads = (unsigned)small + 1;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->cb = cb;
	p->thr = calloc(threads, sizeof(*p->thr));
	p->dec = calloc(threads, sizeof(*p->dec));
	p->res = calloc(cb->nunits, sizeof(*p->res));
	if (!p->thr || !p->dec || !p->res) {
		free(p->thr);
		free(p->dec);
		free(p->res);
		free(p);
		return;
	}
	for (size_t i = 0; i < cb->nunits; i++)
		if (cb->units[i].bytes > CS_UNIT_BIG)
			p->res[i].state = CS_OWN;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	cb->pool = p;
	cb->main.quiet = 1;
	log_on(0);
	pthread_mutex_lock(&p->lock);
	for (unsigned i = 0; i < threads - 1; i++) {
		p->dec[i].cb = cb;
		if (pthread_create(&p->thr[i], NULL, pool_main, &p->dec[i]))
			break;
		p->nthr++;
	}
	pthread_mutex_unlock(&p->lock);
}

/* ---- the consumer ------------------------------------------------------ */

/* Moves the consumer to unit i: pool threads read ucur for their window. */
static void set_ucur(struct cs_backend *cb, size_t i)
{
	struct cs_pool *p = cb->pool;

	if (!p) {
		cb->ucur = i;
		return;
	}
	pthread_mutex_lock(&p->lock);
	cb->ucur = i;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* Makes the next elements available (cb->el[el_head..el_n)), or returns
 * PTD_ERR_END when all units are done. */
static int pump(struct cs_backend *cb)
{
	while (cb->el_head == cb->el_n) {
		struct cs_pool *p = cb->pool;
		const struct cs_unit *u;

		cb->el_head = cb->el_n = 0;
		if (cb->ustarted && cb->own) {
			/* the consumer's own unit: a step at a time */
			struct cs_dec *d = &cb->main;

			if (d->nomem)
				goto nomem;
			if (!d->done) {
				d->el_n = d->str_n = 0;
				dec_step(d);
				cb->el = d->el;
				cb->el_str = d->str;
				cb->el_n = d->el_n;
				continue;
			}
			if (d->fatal)
				cb->dead_q = cb->units[cb->ucur].q + 1;
			if (cb->excl) {
				pthread_mutex_lock(&p->lock);
				cb->excl = 0;
				excl_leave(p);
				pthread_mutex_unlock(&p->lock);
			}
			cb->ustarted = 0;
			set_ucur(cb, cb->ucur + 1);
		} else if (cb->ustarted) {
			/* a pool result, consumed */
			struct cs_result *r = &p->res[cb->ucur];

			if (r->fatal)
				cb->dead_q = cb->units[cb->ucur].q + 1;
			free(r->el);
			free(r->str);
			r->el = NULL;
			r->str = NULL;
			cb->ustarted = 0;
			set_ucur(cb, cb->ucur + 1);
		}
		/* the next unit, past those of a queue a fatal error ended */
		{
			size_t i = cb->ucur;

			while (i < cb->nunits && cb->units[i].q + 1 == cb->dead_q)
				i++;
			if (i != cb->ucur)
				set_ucur(cb, i);
		}
		if (cb->ucur >= cb->nunits) {
			cb->cur = cb->nq;
			return PTD_ERR_END;
		}
		u = &cb->units[cb->ucur];
		if (u->q != cb->cur) {
			/* a new queue: a new PE context */
			cb->cur = u->q;
			cb->have_ctx = 0;
			cb->tsc = 0;
		}
		cb->ustarted = 1;
		cb->own = !p || u->bytes > CS_UNIT_BIG;
		if (cb->own) {
			if (p) {
				pthread_mutex_lock(&p->lock);
				excl_enter(p);
				cb->excl = 1;
				pthread_mutex_unlock(&p->lock);
				cb->main.quiet = 0;
			}
			cb->main.el_n = cb->main.str_n = 0;
			if (dec_start(&cb->main, u, cb->errmsg, sizeof(cb->errmsg)))
				return PTD_ERR_DECODE;
			continue;
		}
		/* from the pool: claimed by nobody yet, decode it here;
		 * while a thread decodes it, decode the next free one */
		pthread_mutex_lock(&p->lock);
		while (p->res[cb->ucur].state != CS_DONE) {
			size_t i = cb->ucur;

			if (p->res[i].state != CS_FREE) {
				i = claim_next(p);
				if (i == cb->nunits) {
					pthread_cond_wait(&p->cond, &p->lock);
					continue;
				}
			} else {
				p->res[i].state = CS_RUNNING;
			}
			cb->main.quiet = 1;
			run_unit(p, &cb->main, i);
		}
		pthread_mutex_unlock(&p->lock);
		{
			struct cs_result *r = &p->res[cb->ucur];

			if (r->nomem)
				goto nomem;
			cb->el = r->el;
			cb->el_str = r->str;
			cb->el_n = r->n;
		}
	}
	return 0;
nomem:
	util_errf(cb->errmsg, sizeof(cb->errmsg), "out of memory while "
		  "decoding CoreSight trace");
	return PTD_ERR_NOMEM;
}

/* ---- elements to events ------------------------------------------------ */

static uint8_t isa_mode(uint8_t isa)
{
	switch (isa) {
	case ocsd_isa_arm: return PTD_MODE_ARM32;
	case ocsd_isa_thumb2: return PTD_MODE_THUMB;
	case ocsd_isa_aarch64: return PTD_MODE_A64;
	}
	return PTD_MODE_UNKNOWN;
}

static uint8_t last_class(const struct cs_elem *e)
{
	switch (e->last_type) {
	case OCSD_INSTR_BR:
		if (e->last_sub == OCSD_S_INSTR_BR_LINK)
			return PTD_IC_CALL;
		return e->cond ? PTD_IC_COND_JUMP : PTD_IC_JUMP;
	case OCSD_INSTR_BR_INDIRECT:
		switch (e->last_sub) {
		case OCSD_S_INSTR_BR_LINK: return PTD_IC_IND_CALL;
		case OCSD_S_INSTR_V8_RET:
		case OCSD_S_INSTR_V7_IMPLIED_RET: return PTD_IC_RETURN;
		case OCSD_S_INSTR_V8_ERET: return PTD_IC_FAR_RETURN;
		}
		return PTD_IC_IND_JUMP;
	}
	return PTD_IC_OTHER;
}

static void ev_init(struct cs_backend *cb, struct ptd_event *ev,
		    const struct cs_elem *e, int kind)
{
	const struct csq *q = &cb->q[cb->cur < cb->nq ? cb->cur : cb->nq - 1];

	memset(ev, 0, sizeof(*ev));
	ev->kind = (uint16_t)kind;
	ev->cpu = q->cpu;
	for (size_t i = 0; i < q->nsrcs; i++)
		if (q->srcs[i].trace_id == e->trace_id && q->srcs[i].cpu >= 0)
			ev->cpu = q->srcs[i].cpu;
	ev->pid = -1;
	ev->tid = cb->have_ctx ? (int32_t)cb->ctxid : -1;
	ev->queue = (uint32_t)(cb->cur < cb->nq ? cb->cur : cb->nq - 1);
	ev->offset = e->index;
	ev->tsc = cb->tsc;
}

/* Next instruction of the range being expanded. */
static int next_insn(struct cs_backend *cb, struct ptd_event *ev)
{
	struct cs_elem *r = &cb->r;
	uint8_t raw[4] = { 0 };
	unsigned size = 4;
	int n;

	ev_init(cb, ev, r, PTD_EV_INSN);
	n = imgstore_read(cb->st, r->pid, cb->ip, r->time, raw, 4, NULL);
	if (n < 2 || (r->isa != ocsd_isa_thumb2 && n < 4)) {
		/* OpenCSD read these bytes a moment ago, through the same
		 * store: a short read here means the store changed. */
		cb->in_range = 0;
		ev->kind = PTD_EV_ERROR;
		ev->error = PTD_ERR_NO_IMAGE;
		ev->ip = cb->ip;
		snprintf(cb->msg, sizeof(cb->msg), "cannot read the instruction "
			 "at %#llx inside a decoded range: %s",
			 (unsigned long long)cb->ip, imgstore_last_error(cb->st));
		ev->msg = cb->msg;
		return 0;
	}
	if (r->isa == ocsd_isa_thumb2)
		size = util_le16(raw) >= 0xe800 ? 4 : 2;
	if (size > (unsigned)n)
		ev->flags |= PTD_EVF_TRUNCATED;
	ev->ip = cb->ip;
	ev->size = (uint8_t)size;
	memcpy(ev->raw, raw, size);
	ev->mode = isa_mode(r->isa);
	cb->ip += size;
	cb->ni++;
	if (cb->ip >= r->en) {
		cb->in_range = 0;
		ev->iclass = last_class(r);
		if (cb->ip != r->en || cb->ni != r->num_i) {
			cb->have_pending = 1;
			ev_init(cb, &cb->pending, r, PTD_EV_ERROR);
			cb->pending.error = PTD_ERR_DECODE;
			cb->pending.ip = r->st;
			snprintf(cb->msg, sizeof(cb->msg), "range [%#llx, %#llx): "
				 "OpenCSD counts %u instructions, their lengths "
				 "give %u ending at %#llx",
				 (unsigned long long)r->st, (unsigned long long)r->en,
				 r->num_i, cb->ni, (unsigned long long)cb->ip);
			cb->pending.msg = cb->msg;
		}
	} else {
		ev->iclass = PTD_IC_OTHER;
	}
	return 0;
}

/* Turns one element into an event; returns 1 if ev was filled. */
static int elem_event(struct cs_backend *cb, const struct cs_elem *e,
		      struct ptd_event *ev)
{
	switch (e->type) {
	case OCSD_GEN_TRC_ELEM_INSTR_RANGE:
		if (e->en <= e->st)
			return 0;
		cb->r = *e;
		cb->ip = e->st;
		cb->ni = 0;
		cb->in_range = 1;
		next_insn(cb, ev);
		return 1;
	case OCSD_GEN_TRC_ELEM_ADDR_NACC:
		ev_init(cb, ev, e, PTD_EV_GAP);
		ev->ip = e->st;
		snprintf(cb->msg, sizeof(cb->msg), "no code bytes at %#llx (not "
			 "in any memory image): decoding resumes at the next "
			 "address in the trace", (unsigned long long)e->st);
		ev->msg = cb->msg;
		return 1;
	case OCSD_GEN_TRC_ELEM_I_RANGE_NOPATH:
		ev_init(cb, ev, e, PTD_EV_GAP);
		ev->ip = e->st;
		ev->addr = e->en;
		snprintf(cb->msg, sizeof(cb->msg), "%u instructions ran in "
			 "[%#llx, %#llx) on a path the trace does not give",
			 e->num_i, (unsigned long long)e->st,
			 (unsigned long long)e->en);
		ev->msg = cb->msg;
		return 1;
	case OCSD_GEN_TRC_ELEM_ADDR_UNKNOWN:
		ev_init(cb, ev, e, PTD_EV_GAP);
		ev->flags |= PTD_EVF_IP_SUPPRESSED;
		ev->msg = "address unknown until the next address packet";
		return 1;
	case OCSD_GEN_TRC_ELEM_TRACE_ON:
		ev_init(cb, ev, e, e->on_reason == TRACE_ON_OVERFLOW ?
			PTD_EV_OVERFLOW : PTD_EV_ENABLED);
		ev->flags |= PTD_EVF_IP_SUPPRESSED;
		return 1;
	case OCSD_GEN_TRC_ELEM_PE_CONTEXT:
		if (cb->have_ctx && (!e->ctx_valid || e->ctxid == cb->ctxid) &&
		    (!e->vmid_valid || e->vmid == cb->vmid))
			return 0;
		if (!e->ctx_valid && !e->vmid_valid)
			return 0;
		if (e->ctx_valid)
			cb->ctxid = e->ctxid;
		if (e->vmid_valid)
			cb->vmid = e->vmid;
		cb->have_ctx = 1;
		ev_init(cb, ev, e, PTD_EV_SWITCH);
		ev->addr = cb->vmid;
		ev->flags |= PTD_EVF_IP_SUPPRESSED;
		return 1;
	case OCSD_GEN_TRC_ELEM_EXCEPTION:
		ev_init(cb, ev, e, PTD_EV_ASYNC);
		ev->addr = e->ex_num;
		if (e->ret_addr)
			ev->ip = e->en;
		else
			ev->flags |= PTD_EVF_IP_SUPPRESSED;
		return 1;
	case OCSD_GEN_TRC_ELEM_TIMESTAMP:
		cb->tsc = e->ts;
		ev_init(cb, ev, e, PTD_EV_TIME);
		return 1;
	case CS_EL_ERROR:
		ev_init(cb, ev, e, PTD_EV_ERROR);
		ev->error = PTD_ERR_DECODE;
		ev->flags |= PTD_EVF_IP_SUPPRESSED;
		if (e->guard) {
			snprintf(cb->msg, sizeof(cb->msg), "trace ID %#x: %s "
				 "that OpenCSD 1.3.3 cannot decode safely; "
				 "speculative state dropped, decoding resumes "
				 "at the next sync", e->trace_id,
				 e->guard == GUARD_MISPREDICT ?
				 "a mispredict after an address element" :
				 e->guard == GUARD_SPEC_DEPTH ?
				 "a trace info packet with a speculation depth "
				 "beyond the maximum" :
				 e->guard == GUARD_TOP ?
				 "an address in the last page of the address "
				 "space" :
				 e->guard == GUARD_NOSPEC ?
				 "a commit, cancel or mispredict packet from a "
				 "trace unit without speculation (TRCIDR8 0)" :
				 "an exception or Q element committed before "
				 "its address");
			ev->msg = cb->msg;
			return 1;
		}
		/* OpenCSD's text, read when the error was reported */
		snprintf(cb->msg, sizeof(cb->msg), "%s", e->msg && cb->el_str ?
			 cb->el_str + e->msg - 1 : "OpenCSD: decode error");
		ev->msg = cb->msg;
		return 1;
	}
	return 0;
}

static int cs_next(struct backend *b, struct ptd_event *ev)
{
	struct cs_backend *cb = to_cs(b);

	for (;;) {
		int rc;

		if (cb->have_pending) {
			*ev = cb->pending;
			cb->have_pending = 0;
			return 0;
		}
		if (cb->in_range)
			return next_insn(cb, ev);
		rc = pump(cb);
		if (rc)
			return rc;
		if (elem_event(cb, &cb->el[cb->el_head++], ev))
			return 0;
	}
}

int coresight_next_range(struct backend *b, struct coresight_range *r)
{
	struct cs_backend *cb = to_cs(b);

	for (;;) {
		const struct cs_elem *e;
		int rc = pump(cb);

		if (rc)
			return rc;
		e = &cb->el[cb->el_head++];
		if (e->type != OCSD_GEN_TRC_ELEM_INSTR_RANGE &&
		    e->type != OCSD_GEN_TRC_ELEM_ADDR_NACC)
			continue;
		memset(r, 0, sizeof(*r));
		r->queue = (uint32_t)cb->cur;
		r->cpu = cb->q[cb->cur].cpu;
		for (size_t i = 0; i < cb->q[cb->cur].nsrcs; i++)
			if (cb->q[cb->cur].srcs[i].trace_id == e->trace_id)
				r->cpu = cb->q[cb->cur].srcs[i].cpu;
		r->trace_id = e->trace_id;
		r->offset = e->index;
		r->start = e->st;
		r->mode = isa_mode(e->isa);
		if (e->type == OCSD_GEN_TRC_ELEM_ADDR_NACC) {
			r->nacc = 1;
		} else {
			r->end = e->en;
			r->ninsns = e->num_i;
		}
		return 0;
	}
}

static const char *cs_errmsg(struct backend *b)
{
	return to_cs(b)->errmsg;
}

static void cs_destroy(struct backend *b)
{
	struct cs_backend *cb = to_cs(b);

	if (!cb)
		return;
	pool_stop(cb);
	dec_free(&cb->main);
	for (size_t i = 0; i < cb->nq; i++) {
		free(cb->q[i].srcs);
		free(cb->q[i].chunks);
	}
	for (size_t i = 0; i < cb->nmaps; i++)
		util_unmap(&cb->maps[i]);
	for (size_t i = 0; i < cb->nwarn; i++)
		free(cb->warn[i]);
	free(cb->warn);
	free(cb->maps);
	free(cb->q);
	free(cb->units);
	free(cb);
}

static struct cs_backend *cs_new(void)
{
	struct cs_backend *cb = calloc(1, sizeof(*cb));

	if (!cb)
		return NULL;
	cb->main.cb = cb;
	cb->b.next = cs_next;
	cb->b.errmsg = cs_errmsg;
	cb->b.destroy = cs_destroy;
	return cb;
}

size_t coresight_queue_count(const struct backend *b)
{
	return ((const struct cs_backend *)b)->nq;
}

int coresight_queue_info(const struct backend *b, size_t i, int *cpu,
			 uint8_t *trace_id, int *proto)
{
	const struct cs_backend *cb = (const struct cs_backend *)b;

	if (i >= cb->nq || !cb->q[i].nsrcs)
		return PTD_ERR_INVAL;
	*cpu = cb->q[i].cpu;
	*trace_id = cb->q[i].srcs[0].trace_id;
	*proto = cb->q[i].srcs[0].proto;
	return 0;
}

size_t coresight_warning_count(const struct backend *b)
{
	return ((const struct cs_backend *)b)->nwarn;
}

const char *coresight_warning(const struct backend *b, size_t i)
{
	const struct cs_backend *cb = (const struct cs_backend *)b;

	return i < cb->nwarn ? cb->warn[i] : NULL;
}

/* Checks every queue's configuration now rather than mid-stream, cuts the
 * queues into units and starts the pool (threads 0: one per core). */
static int cs_ready(struct cs_backend *cb, unsigned threads, char *err,
		    size_t errlen)
{
	size_t cap = 0;

	for (size_t i = 0; i < cb->nq; i++) {
		const struct csq *q = &cb->q[i];

		cb->main.tree = make_tree(&cb->main, q, err, errlen);
		if (!cb->main.tree)
			return PTD_ERR_DECODE;
		dec_close(&cb->main);
		for (size_t c = 0; c < q->nchunks;) {
			struct cs_unit *u;

			if (util_grow((void **)&cb->units, &cap, cb->nunits + 1,
				      sizeof(*cb->units))) {
				util_errf(err, errlen, "out of memory");
				return PTD_ERR_NOMEM;
			}
			u = &cb->units[cb->nunits++];
			u->q = i;
			u->c0 = c;
			u->bytes = q->chunks[c++].size;
			/* small chunks together: fewer hand-overs */
			while (c < q->nchunks && u->bytes + q->chunks[c].size <=
			       CS_UNIT_BYTES)
				u->bytes += q->chunks[c++].size;
			u->c1 = c;
		}
	}
	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		threads = n > 0 ? (unsigned)n : 1;
	}
	cb->threads = threads;
	pool_start(cb, threads);
	return 0;
}

/* ---- snapshots ----------------------------------------------------------- */

/* Fills s from the registers of a snapshot trace source.  Returns 0, or -1
 * with the missing register's name in *missing. */
static int snap_regs(const struct cssnap_device *d, struct cs_source *s,
		     const char **missing)
{
	static const struct {
		const char *name;
		int required;
		uint32_t def;
		size_t off;
		int v4;   /* 1: ETMv4 and ETE, 2: ETMv4 only, 3: ETE only,
			   * 0: ETMv3/PTM */
	} regs[] = {
#define R(n, req, def, f, v4) { n, req, def, offsetof(struct cs_source, f), v4 }
		R("ETMIDR", 1, 0, etmidr, 0),
		R("ETMCR", 1, 0, etmcr, 0),
		R("ETMCCER", 1, 0, etmccer, 0),
		R("ETMTRACEIDR", 1, 0, etmtraceidr, 0),
		R("TRCCONFIGR", 1, 0, trcconfigr, 1),
		R("TRCTRACEIDR", 1, 0, trctraceidr, 1),
		R("TRCIDR0", 1, 0, trcidr0, 1),
		R("TRCIDR1", 0, 0x4100F403, trcidr1, 1),
		R("TRCIDR2", 1, 0, trcidr2, 1),
		R("TRCIDR8", 0, 0, trcidr8, 1),
		R("TRCIDR9", 0, 0, trcidr9, 2),
		R("TRCIDR10", 0, 0, trcidr10, 2),
		R("TRCIDR11", 0, 0, trcidr11, 2),
		R("TRCIDR12", 0, 0, trcidr12, 2),
		R("TRCIDR13", 0, 0, trcidr13, 2),
		R("TRCDEVARCH", 0, 0x47705A13, trcdevarch, 3),
#undef R
	};
	int v4 = s->proto == CS_PROTO_ETMV4 ? 2 : s->proto == CS_PROTO_ETE ? 3 : 0;

	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		uint64_t v;

		if (v4 ? !(regs[i].v4 == 1 || regs[i].v4 == v4) : regs[i].v4)
			continue;
		if (cssnap_reg(d, regs[i].name, &v)) {
			if (regs[i].required) {
				*missing = regs[i].name;
				return -1;
			}
			v = regs[i].def;
		}
		*(uint32_t *)((char *)s + regs[i].off) = (uint32_t)v;
	}
	s->trace_id = (uint8_t)((v4 ? s->trctraceidr : s->etmtraceidr) & 0x7f);
	s->trace_id_valid = 1;
	return 0;
}

/* "cpu_3" -> 3; other core names have no number we can trust. */
static int core_number(const char *core)
{
	char *end;
	long n;

	if (strncmp(core, "cpu_", 4))
		return -1;
	n = strtol(core + 4, &end, 10);
	return *end || end == core + 4 || n < 0 || n > 65535 ? -1 : (int)n;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct cssnap_pair *)a)->a,
		      ((const struct cssnap_pair *)b)->a);
}

static int cmp_queue_id(const void *a, const void *b)
{
	const struct csq *x = a, *y = b;

	return (int)x->srcs[0].trace_id - (int)y->srcs[0].trace_id;
}

struct dump_ref {
	const struct cssnap_device *core;
	const struct cssnap_dump *d;
};

static int add_dumps(struct cs_backend *cb, struct dump_ref *refs, size_t n,
		     char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		const struct cssnap_dump *d = refs[i].d;
		int dup = 0, rc;

		for (size_t j = 0; j < i && !dup; j++)
			dup = refs[j].d == d;
		if (dup)
			continue;
		if (d->missing) {
			add_warning(cb, "%s: memory dump %s of core %s cannot be "
				    "read (%s): code in [%#llx, %#llx) will show "
				    "as not accessible", refs[i].core->ini,
				    d->path, refs[i].core->name, d->errmsg,
				    (unsigned long long)d->address,
				    (unsigned long long)(d->address + d->length));
			continue;
		}
		if (!d->length)
			continue;
		/* overlapping dumps: the first one wins, as in OpenCSD */
		for (size_t j = 0; j < i && !dup; j++) {
			const struct cssnap_dump *o = refs[j].d;

			if (o->missing || !o->length || o->address >= d->address +
			    d->length || d->address >= o->address + o->length)
				continue;
			dup = 1;
			if (o->address != d->address || o->length != d->length ||
			    o->offset != d->offset || strcmp(o->path, d->path))
				add_warning(cb, "%s: memory dump %s at %#llx overlaps "
					    "%s at %#llx: ignored", refs[i].core->ini,
					    d->file, (unsigned long long)d->address,
					    o->file, (unsigned long long)o->address);
		}
		if (dup)
			continue;
		rc = imgstore_add_file(cb->st, IMGSTORE_KERNEL, d->address,
				       d->length, d->path, d->offset, 0,
				       IMGSTORE_FOREVER, d->file);
		if (rc < 0) {
			util_errf(err, errlen, "%s: cannot add memory dump %s to "
				  "the image store: %s", refs[i].core->ini, d->path,
				  ptd_strerror(rc));
			return rc;
		}
	}
	return 0;
}

/* Builds the queues of one trace buffer. */
static int snap_buffer(struct cs_backend *cb, const struct cssnap *s,
		       size_t bi, struct dump_ref **refs, size_t *nrefs,
		       size_t *refcap, int *nsw, char *err, size_t errlen)
{
	const struct cssnap_buffer *buf = &s->buf[bi];
	struct cssnap_pair *srcs;
	size_t nsrcs = 0, first_q = cb->nq, qcap = cb->nq;
	int formatted = strcasecmp(buf->format, "source_data") != 0;
	int rc = 0;

	if (strcasecmp(buf->format, "coresight") &&
	    strcasecmp(buf->format, "source_data") &&
	    strcasecmp(buf->format, "dstream_coresight")) {
		add_warning(cb, "trace.ini [%s]: format '%s' is unknown (coresight, "
			    "source_data and dstream_coresight are): buffer %s "
			    "skipped", buf->id, buf->format, buf->name);
		return 0;
	}
	srcs = calloc(s->nsrc_buf + 1, sizeof(*srcs));
	if (!srcs)
		return PTD_ERR_NOMEM;
	for (size_t i = 0; i < s->nsrc_buf; i++)
		if (!strcmp(s->src_buf[i].b, buf->name))
			srcs[nsrcs++] = s->src_buf[i];
	/* OpenCSD's reader walks sources by name; so do we, so that the same
	 * dump wins where dumps overlap and the same source is used for an
	 * unformatted buffer. */
	qsort(srcs, nsrcs, sizeof(*srcs), cmp_name);
	for (size_t i = 0; i < nsrcs; i++) {
		const struct cssnap_device *d = cssnap_device(s, srcs[i].a), *core;
		const char *core_name, *missing = NULL;
		struct cs_source src;
		struct csq *q;
		int dup;

		if (!d) {
			add_warning(cb, "trace.ini: source %s of buffer %s is not "
				    "in the device list: skipped", srcs[i].a,
				    buf->name);
			continue;
		}
		memset(&src, 0, sizeof(src));
		src.proto = source_proto(d->type);
		src.cpu = -1;
		if (src.proto == CS_PROTO_STM || src.proto == CS_PROTO_ITM) {
			(*nsw)++;
			add_warning(cb, "%s: %s source %s carries software trace, "
				    "not instruction flow: skipped", d->ini,
				    cs_proto_name(src.proto), d->name);
			continue;
		}
		if (src.proto == CS_PROTO_NONE) {
			add_warning(cb, "%s: trace source %s has unknown type '%s': "
				    "skipped", d->ini, d->name, d->type);
			continue;
		}
		core_name = cssnap_core_of(s, d->name);
		core = core_name ? cssnap_device(s, core_name) : NULL;
		if (!core) {
			add_warning(cb, "trace.ini: %s source %s has no core in "
				    "[core_trace_sources]%s: skipped",
				    cs_proto_name(src.proto), d->name,
				    core_name ? " that is in the device list" : "");
			continue;
		}
		if (core_arch(core->type, &src.arch, &src.profile)) {
			add_warning(cb, "%s: core type '%s' of %s is not one whose "
				    "architecture is known: source %s skipped",
				    core->ini, core->type, core->name, d->name);
			continue;
		}
		if (snap_regs(d, &src, &missing)) {
			add_warning(cb, "%s: %s source %s lacks register %s: "
				    "skipped", d->ini, cs_proto_name(src.proto),
				    d->name, missing);
			continue;
		}
		src.cpu = core_number(core->name);
		dup = 0;
		for (size_t j = first_q; j < cb->nq; j++)
			dup |= cb->q[j].srcs[0].trace_id == src.trace_id;
		if (dup) {
			add_warning(cb, "%s: trace ID %#x of %s is used by another "
				    "source of buffer %s: skipped", d->ini,
				    src.trace_id, d->name, buf->name);
			continue;
		}
		if (!formatted && cb->nq > first_q) {
			add_warning(cb, "trace.ini: buffer %s is unformatted "
				    "(source_data) and holds one source's trace: "
				    "%s is not decoded from it", buf->name, d->name);
			continue;
		}
		if (util_grow((void **)&cb->q, &qcap, cb->nq + 1, sizeof(*cb->q))) {
			rc = PTD_ERR_NOMEM;
			break;
		}
		q = &cb->q[cb->nq];
		memset(q, 0, sizeof(*q));
		q->srcs = malloc(sizeof(*q->srcs));
		q->chunks = calloc(1, sizeof(*q->chunks));
		if (!q->srcs || !q->chunks) {
			free(q->srcs);
			free(q->chunks);
			rc = PTD_ERR_NOMEM;
			break;
		}
		cb->nq++;
		q->srcs[0] = src;
		q->nsrcs = 1;
		q->cpu = src.cpu;
		q->formatted = formatted;
		q->dfmt_flags = !strcasecmp(buf->format, "dstream_coresight") ?
				OCSD_DFRMTR_HAS_FSYNCS : OCSD_DFRMTR_FRAME_MEM_ALIGN;
		q->chunks[0].data = cb->maps[bi].data;
		q->chunks[0].size = cb->maps[bi].size;
		q->chunks[0].time = IMGSTORE_TIME_UNKNOWN;
		q->chunks[0].pid = IMGSTORE_KERNEL;
		q->nchunks = 1;
		for (size_t k = 0; k < core->ndumps; k++) {
			if (util_grow((void **)refs, refcap, *nrefs + 1,
				      sizeof(**refs))) {
				rc = PTD_ERR_NOMEM;
				break;
			}
			(*refs)[*nrefs].core = core;
			(*refs)[(*nrefs)++].d = &core->dumps[k];
		}
		if (rc)
			break;
	}
	free(srcs);
	if (rc == PTD_ERR_NOMEM)
		util_errf(err, errlen, "out of memory");
	if (!rc && cb->nq > first_q)
		qsort(cb->q + first_q, cb->nq - first_q, sizeof(*cb->q),
		      cmp_queue_id);
	return rc;
}

int coresight_open_snapshot(const char *dir, struct imgstore *st,
			    unsigned threads, struct backend **out, char *err,
			    size_t errlen)
{
	struct cs_backend *cb;
	struct cssnap *s = NULL;
	struct dump_ref *refs = NULL;
	size_t nrefs = 0, refcap = 0;
	int rc, nsw = 0;

	*out = NULL;
	rc = cssnap_load(dir, &s, err, errlen);
	if (rc)
		return rc;
	cb = cs_new();
	if (!cb || !(cb->maps = calloc(s->nbuf + 1, sizeof(*cb->maps)))) {
		util_errf(err, errlen, "out of memory");
		rc = PTD_ERR_NOMEM;
		goto fail;
	}
	cb->st = st;
	cb->nmaps = s->nbuf;
	for (size_t i = 0; i < s->nbuf; i++) {
		rc = util_map_file(s->buf[i].path, &cb->maps[i], err, errlen);
		if (rc) {
			char tmp[256];

			snprintf(tmp, sizeof(tmp), "%s", err);
			util_errf(err, errlen, "trace buffer %s (trace.ini [%s] "
				  "file=%s): %s", s->buf[i].name, s->buf[i].id,
				  s->buf[i].file, tmp);
			goto fail;
		}
		rc = snap_buffer(cb, s, i, &refs, &nrefs, &refcap, &nsw, err,
				 errlen);
		if (rc)
			goto fail;
	}
	if (!cb->nq) {
		if (nsw) {
			util_errf(err, errlen, "snapshot %s holds only STM/ITM "
				  "trace (software instrumentation), which has no "
				  "instruction flow", dir);
			rc = PTD_ERR_UNSUPPORTED;
		} else {
			util_errf(err, errlen, "snapshot %s has no instruction "
				  "trace source that can be decoded%s%s", dir,
				  cb->nwarn ? ": " : "", cb->nwarn ? cb->warn[0] : "");
			rc = PTD_ERR_NO_TRACE;
		}
		goto fail;
	}
	rc = add_dumps(cb, refs, nrefs, err, errlen);
	if (rc)
		goto fail;
	rc = cs_ready(cb, threads, err, errlen);
	if (rc)
		goto fail;
	free(refs);
	cssnap_free(s);
	*out = &cb->b;
	return 0;
fail:
	free(refs);
	cssnap_free(s);
	if (cb)
		cs_destroy(&cb->b);
	return rc;
}

/* ---- perf ---------------------------------------------------------------- */

int coresight_open_perf(const struct cs_etm_info *info,
			const struct coresight_queue_desc *queues,
			size_t nqueues, struct imgstore *st, unsigned threads,
			struct backend **out, char *err, size_t errlen)
{
	struct cs_backend *cb;
	int rc = PTD_ERR_NOMEM;

	*out = NULL;
	if (!info || !info->nr_cpu || (!queues && nqueues)) {
		util_errf(err, errlen, "coresight_open_perf: no ETM configuration");
		return PTD_ERR_INVAL;
	}
	cb = cs_new();
	if (!cb || !(cb->q = calloc(nqueues + 1, sizeof(*cb->q))))
		goto nomem;
	cb->st = st;
	rc = PTD_ERR_NOMEM;
	for (size_t i = 0; i < nqueues; i++) {
		const struct coresight_queue_desc *d = &queues[i];
		struct csq *q = &cb->q[cb->nq++];

		q->cpu = d->cpu;
		q->formatted = d->formatted;
		q->dfmt_flags = OCSD_DFRMTR_FRAME_MEM_ALIGN;
		q->srcs = calloc(info->nr_cpu, sizeof(*q->srcs));
		q->chunks = calloc(d->nchunks + 1, sizeof(*q->chunks));
		if (!q->srcs || !q->chunks)
			goto nomem;
		if (d->nchunks)
			memcpy(q->chunks, d->chunks, d->nchunks * sizeof(*q->chunks));
		q->nchunks = d->nchunks;
		for (uint32_t c = 0; c < info->nr_cpu; c++) {
			const struct cs_source *s = &info->cpus[c];

			if (!d->formatted && s->cpu != d->cpu)
				continue;
			if (d->formatted && !s->trace_id_valid)
				continue;
			q->srcs[q->nsrcs++] = *s;
			if (!d->formatted)
				break;
		}
		if (!q->nsrcs) {
			util_errf(err, errlen, "AUX queue %zu (cpu %d): no ETM "
				  "configuration%s in AUXTRACE_INFO", i, d->cpu,
				  d->formatted ? " with a valid trace ID" :
				  " for that CPU");
			rc = PTD_ERR_CORRUPT;
			goto fail;
		}
	}
	rc = cs_ready(cb, threads, err, errlen);
	if (rc)
		goto fail;
	*out = &cb->b;
	return 0;
nomem:
	util_errf(err, errlen, "out of memory");
fail:
	if (cb)
		cs_destroy(&cb->b);
	return rc;
}

#endif /* PTD_HAVE_OPENCSD */
