/* SPDX-License-Identifier: MIT */
/*
 * csdec - one CoreSight decoder of the CoreSight backend
 * (backend/coresight/): an OpenCSD decode tree (cstree) and the elements
 * it produced, stepped through one unit of a queue's chunks, one call into
 * OpenCSD at a time.  The consumer has one, each pool thread one (cspool).
 * OpenCSD calls back into a decoder only from the thread that runs
 * ocsd_dt_process_data on its tree.
 */
#ifndef PTD_CSDEC_H
#define PTD_CSDEC_H

#include <stddef.h>
#include <stdint.h>

#include <opencsd/c_api/opencsd_c_api.h>

#include "csguard.h"

struct cs_backend;
struct cs_unit;
struct csfast;

/* Decoding pauses (OCSD_RESP_WAIT) once this many elements are pending. */
#define CS_ELEM_HIGH 1024
/* Our own element type for decoder errors (beyond OpenCSD's range). */
#define CS_EL_ERROR 0x100

/* An OpenCSD generic element, as much of it as events need: the fields
 * of one type share room with those of others (a unit's elements are
 * kept until it ends: the smaller, the more of them stay in the cache). */
struct cs_elem {
	uint16_t type;           /* ocsd_gen_trc_elem_t or CS_EL_ERROR */
	uint8_t isa, last_type, last_sub, cond, trace_id;
	uint8_t ctx_valid, vmid_valid, ret_addr, on_reason;
	uint8_t guard;           /* CS_EL_ERROR from the packet guard */
	union {
		uint32_t num_i;  /* INSTR_RANGE, I_RANGE_NOPATH */
		uint32_t ex_num; /* EXCEPTION */
		uint32_t msg;    /* CS_EL_ERROR: 1 + offset of its text in
				  * the decoder's string pool, or 0 */
	};
	int32_t pid;
	uint64_t st;
	union {
		uint64_t en;     /* ranges, EXCEPTION */
		uint64_t ts;     /* TIMESTAMP */
		struct {
			uint32_t ctxid, vmid;   /* PE_CONTEXT */
		};
	};
	uint64_t index, time;
};

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

	struct cs_guard guard[128];  /* per trace ID */

	/* the fast ETMv4 path (csfast), and whether it decodes the unit */
	struct csfast *fast;
	int fast_on;
	/* a pool thread's walker of other units' pieces (csfast) */
	struct csfast *piece;
};

/* Starts unit u on d: its queue's tree (made if d has another one),
 * reset.  Returns 0 or PTD_ERR_DECODE with a message in err. */
int csdec_start(struct cs_dec *d, const struct cs_unit *u, char *err,
		size_t errlen);

/* One call into OpenCSD on d's unit, its elements appended to d->el; sets
 * d->done at the unit's end (and d->fatal if an error ended it early). */
void csdec_step(struct cs_dec *d);

/* Appends an error element at trace index index; msg (copied) is its
 * text, NULL for the guard's.  Sets d->nomem when out of memory. */
void csdec_push_error(struct cs_dec *d, uint64_t index, const char *msg);

/* Destroys d's tree (csdec_start makes a new one). */
void csdec_close(struct cs_dec *d);

/* Destroys d's tree and frees its elements. */
void csdec_free(struct cs_dec *d);

#endif
