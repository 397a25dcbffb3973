/* SPDX-License-Identifier: MIT */
#include "fastpt_oracle.h"
#include "imgstore.h"
#include "intelpt.h"

#include <intel-pt.h>
#include <string.h>

static int oracle_read(uint8_t *buf, size_t size, const struct pt_asid *asid,
		       uint64_t ip, void *ctx)
{
	struct oracle *o = ctx;
	int n = imgstore_read_r(o->st, o->pid, ip, o->time, buf, size, NULL, NULL, 0);

	(void)asid;
	return n > 0 ? n : -pte_nomap;
}

void oracle_free(struct oracle *o)
{
	pt_insn_free_decoder(o->dec);
	pt_free_encoder(o->enc);
	pt_image_free(o->image);
	memset(o, 0, sizeof(*o));
}

/* The encoder and decoder over o->buf, on first use.  Returns 0 or -1. */
static int oracle_open(struct oracle *o, struct imgstore *st)
{
	struct pt_config cfg;

	if (o->dec)
		return 0;
	pt_config_init(&cfg);
	cfg.begin = o->buf;
	cfg.end = o->buf + sizeof(o->buf);
	o->enc = pt_alloc_encoder(&cfg);
	o->dec = pt_insn_alloc_decoder(&cfg);
	o->image = pt_image_alloc("oracle");
	o->st = st;
	if (!o->enc || !o->dec || !o->image ||
	    pt_image_set_callback(o->image, oracle_read, o) < 0 ||
	    pt_insn_set_image(o->dec, o->image) < 0) {
		oracle_free(o);
		return -1;
	}
	return 0;
}

/* Writes the trace that starts decoding at ip in mode.  Returns 0 or -1. */
static int oracle_encode(struct oracle *o, uint64_t ip, uint8_t mode)
{
	struct pt_packet pk;

	memset(o->buf, 0, sizeof(o->buf)); /* zeros are PADs */
	pt_enc_sync_set(o->enc, 0);
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_psb;
	if (pt_enc_next(o->enc, &pk) < 0)
		return -1;
	pk.type = ppt_fup;
	pk.payload.ip.ipc = pt_ipc_full;
	pk.payload.ip.ip = ip;
	if (pt_enc_next(o->enc, &pk) < 0)
		return -1;
	pk.type = ppt_mode;
	pk.payload.mode.leaf = pt_mol_exec;
	pk.payload.mode.bits.exec = pt_set_exec_mode(
		mode == PTD_MODE_32 ? ptem_32bit :
		mode == PTD_MODE_16 ? ptem_16bit : ptem_64bit);
	if (pt_enc_next(o->enc, &pk) < 0)
		return -1;
	pk.type = ppt_psbend;
	return pt_enc_next(o->enc, &pk) < 0 ? -1 : 0;
}

int oracle_insn(struct oracle *o, struct imgstore *st, int32_t pid,
		uint64_t time, uint8_t mode, uint64_t ip, uint8_t *iclass)
{
	struct pt_insn insn;
	int status;

	if (oracle_open(o, st))
		return -1;
	o->pid = pid;
	o->time = time;
	if (oracle_encode(o, ip, mode))
		return -1;
	status = pt_insn_sync_set(o->dec, 0);
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;

		status = pt_insn_event(o->dec, &ev, sizeof(ev));
	}
	if (status < 0)
		return -1;
	memset(&insn, 0, sizeof(insn));
	status = pt_insn_next(o->dec, &insn, sizeof(insn));
	/* branches need packets to proceed and fail here: they are not
	 * for the oracle to judge (their targets matter) */
	if (status < 0 || insn.ip != ip || !insn.size)
		return -1;
	*iclass = intelpt_map_class(insn.iclass);
	return insn.size;
}
