/* SPDX-License-Identifier: MIT */
#ifdef PTD_HAVE_OPENCSD

#include "cspool.h"
#include "csbackend.h"
#include "csdec.h"
#include "csfast.h"
#include "ptdecode.h"
#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <opencsd/c_api/opencsd_c_api.h>

/* Units of consecutive chunks grow to this many bytes; a unit bigger than
 * CS_UNIT_BIG is decoded by the consumer itself, a step at a time, so its
 * elements never pile up in memory. */
#define CS_UNIT_BYTES (64u << 10)
#define CS_UNIT_BIG (16u << 20)
/* A unit this big may be cut into pieces (csfast): worth a pool of its
 * own. */
#define CS_PIECE_BYTES (16u << 10)
/* Units decoded ahead of the consumer, per thread. */
#define CS_AHEAD 2

/* A unit's decoded elements, handed from a pool thread to the consumer. */
struct cs_result {
	int state;               /* CS_FREE, CS_RUNNING, CS_DONE, CS_OWN */
	int fatal, nomem;
	struct cs_elem *el;
	size_t n;
	char *str;
};
enum { CS_FREE, CS_RUNNING, CS_DONE, CS_OWN };

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
	struct cs_piece_set *sets;  /* pieces on offer */
};

int cspool_add_units(struct cs_backend *cb, size_t qi, char *err,
		     size_t errlen)
{
	const struct csq *q = &cb->q[qi];

	for (size_t c = 0; c < q->nchunks;) {
		struct cs_unit *u;

		if (util_grow((void **)&cb->units, &cb->unitcap, cb->nunits + 1,
			      sizeof(*cb->units))) {
			util_errf(err, errlen, "out of memory");
			return PTD_ERR_NOMEM;
		}
		u = &cb->units[cb->nunits++];
		u->q = qi;
		u->c0 = c;
		u->bytes = q->chunks[c++].size;
		/* small chunks together: fewer hand-overs */
		while (c < q->nchunks && u->bytes + q->chunks[c].size <=
		       CS_UNIT_BYTES)
			u->bytes += q->chunks[c++].size;
		u->c1 = c;
	}
	return 0;
}

/* ---- exclusive mode and OpenCSD's error log ----------------------------- */

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

/* ---- pool threads ------------------------------------------------------- */

/* Decodes unit i whole on d into r (lock not held). */
static void decode_whole(struct cs_dec *d, size_t i, struct cs_result *r,
			 int quiet)
{
	struct cs_backend *cb = d->cb;
	char err[256];

	d->el_n = d->str_n = 0;
	d->nomem = 0;
	d->quiet = quiet;
	if (csdec_start(d, &cb->units[i], err, sizeof(err))) {
		/* the tree was made once at open: only memory can fail */
		r->nomem = 1;
	} else {
		while (!d->done && !d->nomem)
			csdec_step(d);
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

/* Walks a piece on offer, if any, on d (lock held on entry and exit).
 * Returns 1 after walking one. */
static int help_piece(struct cs_pool *p, struct cs_dec *d)
{
	for (struct cs_piece_set *s = p->sets; s; s = s->next)
		for (size_t k = 1; k < s->n; k++) {
			struct cs_piece *pc = &s->p[k];

			if (pc->state != CS_PIECE_FREE)
				continue;
			pc->state = CS_PIECE_RUNNING;
			pthread_mutex_unlock(&p->lock);
			csfast_walk_piece(d, s->owner, pc);
			pthread_mutex_lock(&p->lock);
			pc->state = CS_PIECE_DONE;
			pthread_cond_broadcast(&p->cond);
			return 1;
		}
	return 0;
}

int cspool_pieces_offer(struct cs_backend *cb, struct cs_piece_set *set)
{
	struct cs_pool *p = cb->pool;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->lock);
	set->next = p->sets;
	p->sets = set;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return 1;
}

int cspool_piece_take(struct cs_backend *cb, struct cs_piece_set *set,
		      size_t k)
{
	struct cs_pool *p = cb->pool;
	struct cs_piece *pc = &set->p[k];
	int mine;

	if (!p) {
		pc->state = CS_PIECE_MINE;
		return 1;
	}
	pthread_mutex_lock(&p->lock);
	if (pc->state == CS_PIECE_FREE)
		pc->state = CS_PIECE_MINE;
	while (pc->state == CS_PIECE_RUNNING)
		pthread_cond_wait(&p->cond, &p->lock);
	mine = pc->state == CS_PIECE_MINE;
	pthread_mutex_unlock(&p->lock);
	return mine;
}

void cspool_pieces_retract(struct cs_backend *cb, struct cs_piece_set *set)
{
	struct cs_pool *p = cb->pool;
	struct cs_piece_set **pp;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	for (size_t k = 1; k < set->n; k++) {
		if (set->p[k].state == CS_PIECE_FREE)
			set->p[k].state = CS_PIECE_MINE;
		while (set->p[k].state == CS_PIECE_RUNNING)
			pthread_cond_wait(&p->cond, &p->lock);
	}
	for (pp = &p->sets; *pp; pp = &(*pp)->next)
		if (*pp == set) {
			*pp = set->next;
			break;
		}
	pthread_mutex_unlock(&p->lock);
}

static void *pool_main(void *arg)
{
	struct cs_dec *d = arg;
	struct cs_pool *p = d->cb->pool;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		size_t i = claim_next(p);

		if (i == d->cb->nunits) {
			if (!help_piece(p, d))
				pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		run_unit(p, d, i);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ---- starting and stopping ---------------------------------------------- */

static void pool_free(struct cs_pool *p)
{
	free(p->thr);
	free(p->dec);
	free(p->res);
	free(p);
}

void cspool_stop(struct cs_backend *cb)
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
		csdec_free(&p->dec[i]);
	for (size_t i = 0; i < cb->nunits; i++) {
		free(p->res[i].el);
		free(p->res[i].str);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	pool_free(p);
	cb->pool = NULL;
}

/* A pool for threads threads, none started yet, or NULL. */
static struct cs_pool *pool_new(struct cs_backend *cb, unsigned threads)
{
	struct cs_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->cb = cb;
	p->thr = calloc(threads, sizeof(*p->thr));
	p->dec = calloc(threads, sizeof(*p->dec));
	p->res = calloc(cb->nunits, sizeof(*p->res));
	if (!p->thr || !p->dec || !p->res) {
		pool_free(p);
		return NULL;
	}
	for (size_t i = 0; i < cb->nunits; i++)
		if (cb->units[i].bytes > CS_UNIT_BIG)
			p->res[i].state = CS_OWN;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	return p;
}

void cspool_start(struct cs_backend *cb, unsigned threads)
{
	struct cs_pool *p;
	size_t small = 0;
	int pieces = 0;

	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		threads = n > 0 ? (unsigned)n : 1;
	}
	cb->threads = threads;
	for (size_t i = 0; i < cb->nunits; i++) {
		small += cb->units[i].bytes <= CS_UNIT_BIG;
		pieces |= cb->units[i].bytes >= CS_PIECE_BYTES &&
			  cb->units[i].bytes <= CS_UNIT_BIG;
	}
	/* one unit: a pool only to walk pieces of it (csfast) */
	if (threads < 2 || small < 1 || (small == 1 && !(cb->fast && pieces)))
		return;
	if (threads - 1 > small)
		threads = (unsigned)small + 1;
	p = pool_new(cb, threads);
	if (!p)
		return;
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

/* ---- the consumer ------------------------------------------------------- */

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

static int pump_nomem(struct cs_backend *cb)
{
	util_errf(cb->errmsg, sizeof(cb->errmsg), "out of memory while "
		  "decoding CoreSight trace");
	return PTD_ERR_NOMEM;
}

/* The consumer's own unit, a step at a time.  Returns 1 after a step, 0
 * at the unit's end, or a negative PTD_ERR_*. */
static int step_own(struct cs_backend *cb)
{
	struct cs_dec *d = &cb->main;

	if (d->nomem)
		return pump_nomem(cb);
	if (d->done)
		return 0;
	d->el_n = d->str_n = 0;
	csdec_step(d);
	cb->el = d->el;
	cb->el_str = d->str;
	cb->el_n = d->el_n;
	return 1;
}

/* Ends the unit being consumed (its queue ends with it on a fatal error)
 * and moves to the next. */
static void end_unit(struct cs_backend *cb)
{
	struct cs_pool *p = cb->pool;
	int fatal;

	if (cb->own) {
		fatal = cb->main.fatal;
		if (cb->excl) {
			pthread_mutex_lock(&p->lock);
			cb->excl = 0;
			excl_leave(p);
			pthread_mutex_unlock(&p->lock);
		}
	} else {
		struct cs_result *r = &p->res[cb->ucur];

		fatal = r->fatal;
		free(r->el);
		free(r->str);
		r->el = NULL;
		r->str = NULL;
	}
	if (fatal)
		cb->dead_q = cb->units[cb->ucur].q + 1;
	cb->ustarted = 0;
	set_ucur(cb, cb->ucur + 1);
}

/* Starts unit u on the consumer's own decoder, pausing the pool. */
static int start_own(struct cs_backend *cb, const struct cs_unit *u)
{
	struct cs_pool *p = cb->pool;

	if (p) {
		pthread_mutex_lock(&p->lock);
		excl_enter(p);
		cb->excl = 1;
		pthread_mutex_unlock(&p->lock);
		cb->main.quiet = 0;
	}
	cb->main.el_n = cb->main.str_n = 0;
	if (csdec_start(&cb->main, u, cb->errmsg, sizeof(cb->errmsg)))
		return PTD_ERR_DECODE;
	return 0;
}

/* Waits for the pool's result of the current unit, decoding it here if no
 * thread claimed it, and the next free one while a thread decodes it. */
static int take_result(struct cs_backend *cb)
{
	struct cs_pool *p = cb->pool;
	struct cs_result *r;

	pthread_mutex_lock(&p->lock);
	while (p->res[cb->ucur].state != CS_DONE) {
		size_t i = cb->ucur;

		if (p->res[i].state != CS_FREE) {
			i = claim_next(p);
			if (i == cb->nunits) {
				if (!help_piece(p, &cb->main))
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
	r = &p->res[cb->ucur];
	if (r->nomem)
		return pump_nomem(cb);
	cb->el = r->el;
	cb->el_str = r->str;
	cb->el_n = r->n;
	return 0;
}

/* Starts the next unit, past those of a queue a fatal error ended. */
static int start_next(struct cs_backend *cb)
{
	const struct cs_unit *u;
	size_t i = cb->ucur;

	while (i < cb->nunits && cb->units[i].q + 1 == cb->dead_q)
		i++;
	if (i != cb->ucur)
		set_ucur(cb, i);
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
	cb->own = !cb->pool || u->bytes > CS_UNIT_BIG;
	return cb->own ? start_own(cb, u) : take_result(cb);
}

int cspool_pump(struct cs_backend *cb)
{
	while (cb->el_head == cb->el_n) {
		int rc;

		cb->el_head = cb->el_n = 0;
		if (cb->ustarted && cb->own) {
			rc = step_own(cb);
			if (rc < 0)
				return rc;
			if (rc)
				continue;
		}
		if (cb->ustarted)
			end_unit(cb);
		rc = start_next(cb);
		if (rc)
			return rc;
	}
	return 0;
}

#endif /* PTD_HAVE_OPENCSD */
