/* SPDX-License-Identifier: MIT */
#ifdef PTD_HAVE_OPENCSD

#include "cstree.h"
#include "csbackend.h"
#include "csdec.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "util.h"

#include <pthread.h>
#include <string.h>

#include <opencsd/etmv3/trc_pkt_types_etmv3.h>
#include <opencsd/etmv4/trc_pkt_types_etmv4.h>
#include <opencsd/ete/trc_pkt_types_ete.h>
#include <opencsd/ptm/trc_pkt_types_ptm.h>

static pthread_mutex_t tree_lock = PTHREAD_MUTEX_INITIALIZER;

void cstree_lock(void)
{
	pthread_mutex_lock(&tree_lock);
}

void cstree_unlock(void)
{
	pthread_mutex_unlock(&tree_lock);
}

/* ---- elements and code bytes ------------------------------------------- */

/* Copies the fields of g that events need into e. */
static void fill_elem(struct cs_elem *e, const ocsd_generic_trace_elem *g)
{
	e->type = (uint16_t)g->elem_type;
	e->isa = (uint8_t)g->isa;
	e->st = g->st_addr;
	e->en = g->en_addr;
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
}

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
	fill_elem(e, g);
	e->trace_id = id;
	e->index = idx;
	e->pid = d->pid;
	e->time = d->time;
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

/* ---- protocol configurations -------------------------------------------- */

/* OpenCSD takes the trace ID from the TRACEIDR value; with perf's header
 * version 2 that register holds no ID (bit 31 set) and the ID came from an
 * AUX_OUTPUT_HW_ID record instead. */
static uint32_t traceidr(uint32_t reg, uint8_t trace_id)
{
	return (reg & ~0x7fu & ~(1u << 31)) | trace_id;
}

static void etmv3_config(const struct cs_source *s, ocsd_etmv3_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->reg_idr = s->etmidr;
	c->reg_ctrl = s->etmcr;
	c->reg_ccer = s->etmccer;
	c->reg_trc_id = traceidr(s->etmtraceidr, s->trace_id);
	c->arch_ver = s->arch ? s->arch : ARCH_V7;
	c->core_prof = s->profile ? s->profile : profile_CortexA;
}

static void ptm_config(const struct cs_source *s, ocsd_ptm_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->reg_idr = s->etmidr;
	c->reg_ctrl = s->etmcr;
	c->reg_ccer = s->etmccer;
	c->reg_trc_id = traceidr(s->etmtraceidr, s->trace_id);
	c->arch_ver = s->arch ? s->arch : ARCH_V7;
	c->core_prof = s->profile ? s->profile : profile_CortexA;
}

static void etmv4_config(const struct cs_source *s, ocsd_etmv4_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->reg_idr0 = s->trcidr0;
	c->reg_idr1 = s->trcidr1;
	c->reg_idr2 = s->trcidr2;
	c->reg_idr8 = s->trcidr8;
	c->reg_idr9 = s->trcidr9;
	c->reg_idr10 = s->trcidr10;
	c->reg_idr11 = s->trcidr11;
	c->reg_idr12 = s->trcidr12;
	c->reg_idr13 = s->trcidr13;
	c->reg_configr = s->trcconfigr;
	c->reg_traceidr = traceidr(s->trctraceidr, s->trace_id);
	c->arch_ver = s->arch ? s->arch : ARCH_V8;
	c->core_prof = s->profile ? s->profile : profile_CortexA;
}

static void ete_config(const struct cs_source *s, ocsd_ete_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->reg_idr0 = s->trcidr0;
	c->reg_idr1 = s->trcidr1;
	c->reg_idr2 = s->trcidr2;
	c->reg_idr8 = s->trcidr8;
	c->reg_devarch = s->trcdevarch;
	c->reg_configr = s->trcconfigr;
	c->reg_traceidr = traceidr(s->trctraceidr, s->trace_id);
	c->arch_ver = s->arch ? s->arch : ARCH_AA64;
	c->core_prof = s->profile ? s->profile : profile_CortexA;
}

/* Adds s's protocol decoder to tree; *csid_out is the trace ID OpenCSD
 * decodes it under. */
static int create_decoder(dcd_tree_handle_t tree, const struct cs_source *s,
			  unsigned char *csid_out, char *err, size_t errlen)
{
	union {
		ocsd_etmv3_cfg v3;
		ocsd_ptm_cfg ptm;
		ocsd_etmv4_cfg v4;
		ocsd_ete_cfg ete;
	} cfg;
	const char *name;
	unsigned char csid = 0;
	ocsd_err_t e;

	switch (s->proto) {
	case CS_PROTO_ETMV3:
		etmv3_config(s, &cfg.v3);
		name = OCSD_BUILTIN_DCD_ETMV3;
		break;
	case CS_PROTO_PTM:
		ptm_config(s, &cfg.ptm);
		name = OCSD_BUILTIN_DCD_PTM;
		break;
	case CS_PROTO_ETMV4:
		etmv4_config(s, &cfg.v4);
		name = OCSD_BUILTIN_DCD_ETMV4I;
		break;
	case CS_PROTO_ETE:
		ete_config(s, &cfg.ete);
		name = OCSD_BUILTIN_DCD_ETE;
		break;
	default:
		util_errf(err, errlen, "no instruction trace decoder for %s",
			  cs_proto_name(s->proto));
		return PTD_ERR_UNSUPPORTED;
	}
	e = ocsd_dt_create_decoder(tree, name, OCSD_CREATE_FLG_FULL_DECODER,
				   &cfg, &csid);
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

/* ---- trees -------------------------------------------------------------- */

/* Adds src's decoder to t, guarded if it is ETMv4.  Returns 0 or -1 with
 * a message in err. */
static int add_source(dcd_tree_handle_t t, struct cs_dec *d,
		      const struct cs_source *src, char *err, size_t errlen)
{
	struct cs_guard *g;
	unsigned char csid = 0;

	if (create_decoder(t, src, &csid, err, errlen))
		return -1;
	if (src->proto != CS_PROTO_ETMV4)
		return 0;
	/* the ID OpenCSD decodes this source under */
	g = &d->guard[csid & 0x7f];
	csguard_init(g, d, csid & 0x7f, src->trcidr8);
	if (ocsd_dt_attach_packet_callback(t, g->trace_id, OCSD_C_API_CB_PKT_MON,
					   (void *)csguard_packet, g) != OCSD_OK) {
		util_errf(err, errlen, "OpenCSD could not attach a packet "
			  "monitor to trace ID %#x", g->trace_id);
		return -1;
	}
	return 0;
}

dcd_tree_handle_t cstree_make(struct cs_dec *d, const struct csq *q,
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
	for (size_t i = 0; i < q->nsrcs; i++)
		if (add_source(t, d, &q->srcs[i], err, errlen))
			goto fail;
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

void cstree_destroy(dcd_tree_handle_t t)
{
	pthread_mutex_lock(&tree_lock);
	ocsd_destroy_dcd_tree(t);
	pthread_mutex_unlock(&tree_lock);
}

#endif /* PTD_HAVE_OPENCSD */
