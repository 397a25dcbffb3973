/* count_events TRACE: a count-only session of the fast decoder
 * (PTD_OPEN_COUNT_ONLY, ptd_next_blocks) hands out the events libipt's
 * decoder gives (ptd_next), with the same times, at 1 and 2 threads.
 * Count-only is where the fast decoder reads the clock only for events
 * (TNT packets merged across MTC and CYC, runs replayed keyed without
 * timing packets); libipt takes the time at every packet.  Count-only
 * sessions never merge queues: libipt's are taken queue after queue. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <ptdecode.h>

struct evs {
	struct ptd_event *v;
	size_t n, cap;
};

static int push(struct evs *e, const struct ptd_event *ev)
{
	if (ev->kind == PTD_EV_INSN)
		return 0;
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 256;
		struct ptd_event *v = realloc(e->v, cap * sizeof(*v));

		if (!v)
			return -1;
		e->v = v;
		e->cap = cap;
	}
	e->v[e->n] = *ev;
	e->v[e->n++].msg = NULL;
	return 0;
}

static int collect(const char *path, enum ptd_decoder d, unsigned int flags,
		   unsigned int threads, struct evs *e)
{
	struct ptd_open_opts oo = { .sz = sizeof(oo), .flags = flags,
				    .threads = threads, .decoder = d };
	struct ptd_session *s;
	struct ptd_event ev;
	int rc;

	if (ptd_open(&s, path, &oo) < 0) {
		fprintf(stderr, "count_events: %s\n", ptd_errmsg(s));
		ptd_close(s);
		return -1;
	}
	if (flags & PTD_OPEN_COUNT_ONLY) {
		const struct ptd_block *blocks;
		size_t n;
		int have = 0;

		while ((rc = ptd_next_blocks(s, &blocks, &n, &ev, &have)) == 0)
			if (have && push(e, &ev))
				rc = -1;
	} else {
		while ((rc = ptd_next(s, &ev)) == 0)
			if (push(e, &ev))
				rc = -1;
	}
	ptd_close(s);
	return rc == PTD_ERR_END ? 0 : -1;
}

static int same(const struct ptd_event *a, const struct ptd_event *b)
{
	return a->kind == b->kind && a->ip == b->ip && a->addr == b->addr &&
	       a->tsc == b->tsc && a->time == b->time &&
	       (a->flags & PTD_EVF_TIME_VALID) == (b->flags & PTD_EVF_TIME_VALID) &&
	       a->pid == b->pid && a->tid == b->tid && a->cpu == b->cpu;
}

int main(int argc, char **argv)
{
	struct evs ref = { 0 };
	size_t timed = 0;

	if (argc != 2 || collect(argv[1], PTD_DECODER_LIBIPT, PTD_OPEN_PER_QUEUE, 1, &ref))
		return 1;
	for (size_t i = 0; i < ref.n; i++)
		timed += !!(ref.v[i].flags & PTD_EVF_TIME_VALID);
	for (unsigned int j = 1; j <= 2; j++) {
		struct evs got = { 0 };

		if (collect(argv[1], PTD_DECODER_FAST, PTD_OPEN_COUNT_ONLY, j, &got))
			return 1;
		for (size_t i = 0; i < ref.n || i < got.n; i++) {
			const struct ptd_event *a = i < got.n ? &got.v[i] : NULL;
			const struct ptd_event *b = i < ref.n ? &ref.v[i] : NULL;

			if (a && b && same(a, b))
				continue;
			printf("FAIL: -j%u: event %zu of %zu (libipt %zu): ", j, i, got.n, ref.n);
			if (a)
				printf("fast kind %u ip %#" PRIx64 " tsc %#" PRIx64 " time %" PRIu64 "; ",
				       a->kind, a->ip, a->tsc, a->time);
			if (b)
				printf("libipt kind %u ip %#" PRIx64 " tsc %#" PRIx64 " time %" PRIu64,
				       b->kind, b->ip, b->tsc, b->time);
			printf("\n");
			return 1;
		}
		free(got.v);
	}
	printf("OK: %zu events (%zu with a time) as libipt gives them, count-only -j1 and -j2\n",
	       ref.n, timed);
	free(ref.v);
	return 0;
}
