/* SPDX-License-Identifier: MIT */
/*
 * queuemerge: the order of merged queues at equal timestamps, against
 * orders worked out by hand from perf's rule (intel_pt_process_queues:
 * the queue being decoded goes on while its next timestamp is at most
 * the heap's smallest; auxtrace_heap__add/pop's tie-breaking), with
 * scripted queues standing in for decoders.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queuemerge.h"

static int fails;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); fails++; } } while (0)

/* A queue that hands out scripted events: (tsc, iclass) pairs. */
struct script {
	struct backend base;
	const uint64_t *tsc;
	const int *iclass;      /* NULL: all PTD_IC_OTHER */
	size_t n, i;
	int *destroyed;
};

static int s_next(struct backend *b, struct ptd_event *ev)
{
	struct script *s = (struct script *)b;

	if (s->i >= s->n)
		return PTD_ERR_END;
	memset(ev, 0, sizeof(*ev));
	ev->kind = PTD_EV_INSN;
	ev->tsc = s->tsc[s->i];
	ev->iclass = (uint8_t)(s->iclass ? s->iclass[s->i] : PTD_IC_OTHER);
	ev->ip = s->i;          /* position in its queue */
	s->i++;
	return 0;
}

static const char *s_errmsg(struct backend *b)
{
	(void)b;
	return "";
}

static void s_destroy(struct backend *b)
{
	struct script *s = (struct script *)b;

	(*s->destroyed)++;
	free(s);
}

static struct backend *script(const uint64_t *tsc, const int *iclass, size_t n,
			      int *destroyed)
{
	struct script *s = calloc(1, sizeof(*s));

	if (!s)
		exit(2);
	s->base.next = s_next;
	s->base.errmsg = s_errmsg;
	s->base.destroy = s_destroy;
	s->tsc = tsc;
	s->iclass = iclass;
	s->n = n;
	s->destroyed = destroyed;
	return &s->base;
}

/* Merges and compares "Q:POS" of each event with want (space-separated);
 * queue cont (0: none) goes on from the one before it
 * (queuemerge_set_continues). */
static void expect_cont(struct backend **be, size_t n, int branch_order,
			const uint64_t *stops, size_t nstops, size_t cont,
			const char *want)
{
	struct backend *m;
	struct ptd_event ev;
	char got[1024] = "";
	size_t len = 0;
	int rc;

	CHECK(queuemerge_new(be, NULL, n, branch_order, stops, nstops, &m) == 0);
	if (cont)
		queuemerge_set_continues(m, cont);
	while ((rc = m->next(m, &ev)) == 0)
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%u:%llu",
					len ? " " : "", ev.queue, (unsigned long long)ev.ip);
	CHECK(rc == PTD_ERR_END);
	if (strcmp(got, want)) {
		fprintf(stderr, "FAIL: got  %s\n      want %s\n", got, want);
		fails++;
	}
	m->destroy(m);
}

static void expect(struct backend **be, size_t n, int branch_order,
		   const uint64_t *stops, size_t nstops, const char *want)
{
	expect_cont(be, n, branch_order, stops, nstops, 0, want);
}

int main(void)
{
	int destroyed = 0;

	/* Ties: the heap holds Q1:2, Q2:5, then Q0 goes back at 5 after
	 * Q2; popping Q1 moves the right child (Q0) up on equal keys, so
	 * Q0's events at 5 come before Q2's, which waited longer.  Q1 goes
	 * on through 5 (equal to the heap's top) before stopping at 7. */
	{
		static const uint64_t q0[] = { 1, 5, 5, 9 }, q1[] = { 2, 5, 7 },
				      q2[] = { 5, 5 };
		struct backend *be[3] = { script(q0, NULL, 4, &destroyed),
					  script(q1, NULL, 3, &destroyed),
					  script(q2, NULL, 2, &destroyed) };

		expect(be, 3, 0, NULL, 0, "0:0 1:0 1:1 0:1 0:2 2:0 2:1 1:2 0:3");
	}
	/* No timestamp: the queue's last key (0 before any), so an untimed
	 * trace is queue after queue; a key never goes back. */
	{
		static const uint64_t q0[] = { 0, 0, 0 }, q1[] = { 0, 0 },
				      q2[] = { 4, 0, 3, 6 }, q3[] = { 5 };
		struct backend *a[2] = { script(q0, NULL, 3, &destroyed),
					 script(q1, NULL, 2, &destroyed) };
		struct backend *b[2] = { script(q2, NULL, 4, &destroyed),
					 script(q3, NULL, 1, &destroyed) };

		expect(a, 2, 0, NULL, 0, "0:0 0:1 0:2 1:0 1:1");
		expect(b, 2, 0, NULL, 0, "0:0 0:1 0:2 1:0 0:3");
	}
	/* Branch order: after a branch instruction its queue goes on up to
	 * its next instruction, whatever that one's time. */
	{
		static const uint64_t q0[] = { 1, 1, 8, 9 }, q1[] = { 2, 3 };
		static const int c0[] = { PTD_IC_OTHER, PTD_IC_COND_JUMP, PTD_IC_OTHER,
					  PTD_IC_OTHER };
		struct backend *a[2] = { script(q0, c0, 4, &destroyed),
					 script(q1, NULL, 2, &destroyed) };
		struct backend *b[2] = { script(q0, c0, 4, &destroyed),
					 script(q1, NULL, 2, &destroyed) };

		expect(a, 2, 0, NULL, 0, "0:0 0:1 1:0 1:1 0:2 0:3");
		expect(b, 2, 1, NULL, 0, "0:0 0:1 0:2 1:0 1:1 0:3");
	}
	/* A sideband record at 5: perf decodes up to it, so Q0 stops at its
	 * event at 5 and goes back behind Q1 (waiting at 5); without the
	 * record Q0 goes on through its tie. */
	{
		static const uint64_t q0[] = { 1, 5, 9 }, q1[] = { 5, 6 };
		static const uint64_t stops[] = { 7, 5 };
		struct backend *a[2] = { script(q0, NULL, 3, &destroyed),
					 script(q1, NULL, 2, &destroyed) };
		struct backend *b[2] = { script(q0, NULL, 3, &destroyed),
					 script(q1, NULL, 2, &destroyed) };

		expect(a, 2, 0, NULL, 0, "0:0 0:1 1:0 1:1 0:2");
		expect(b, 2, 0, stops, 2, "0:0 1:0 0:1 1:1 0:2");
	}
	/* A snapshot gap splits CPU A's queue into Q0 and Q1; perf's heap
	 * holds one entry per CPU: A:1, B:5 (Q2), C:5 (Q3).  Popping A moves
	 * the right child (C) up on equal keys; A goes on into Q1 at 10 and
	 * goes back, then C runs before B.  With Q1 in the heap from the
	 * start (four entries) B would come first. */
	{
		static const uint64_t q0[] = { 1 }, q1[] = { 10, 10 },
				      q2[] = { 5, 5 }, q3[] = { 5, 5 };
		struct backend *a[4] = { script(q0, NULL, 1, &destroyed),
					 script(q1, NULL, 2, &destroyed),
					 script(q2, NULL, 2, &destroyed),
					 script(q3, NULL, 2, &destroyed) };
		struct backend *b[4] = { script(q0, NULL, 1, &destroyed),
					 script(q1, NULL, 2, &destroyed),
					 script(q2, NULL, 2, &destroyed),
					 script(q3, NULL, 2, &destroyed) };

		expect_cont(a, 4, 0, NULL, 0, 1, "0:0 3:0 3:1 2:0 2:1 1:0 1:1");
		expect(b, 4, 0, NULL, 0, "0:0 2:0 2:1 3:0 3:1 1:0 1:1");
	}
	CHECK(destroyed == 23);
	if (fails)
		return 1;
	printf("OK: queuemerge orders equal timestamps as perf's queue heap\n");
	return 0;
}
