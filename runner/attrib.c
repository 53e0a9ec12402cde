/*
 * attrib: the timing join of mock rows to client requests, each answer's
 * answering row, and when the primary stopped getting traffic; see
 * attrib.h.
 */
#include "runner/attrib.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A request's start for the join: start_ms, else sched_ms. */
static double req_start(const struct run_req *r)
{
	return isnan(r->start_ms) ? r->sched_ms : r->start_ms;
}

/* When a row ended: t_ms + dur_ms (t_ms when dur_ms is unknown). */
static double row_end(const struct run_mrow *m)
{
	return isnan(m->dur_ms) ? m->t_ms : m->t_ms + m->dur_ms;
}

/* A user's chat row: what the join and the upstream figures take. */
static bool user_row(const struct run_mrow *m)
{
	return !m->check && m->kind == MOCK_KIND_CHAT;
}

/* Whether m could be an answer the client got: a 2xx that went out whole. */
static bool answer_like(const struct run_mrow *m)
{
	if (!user_row(m) || m->outcome == MOCK_CLIENT_ABORTED)
		return false;
	if (m->status < 0)
		return m->outcome != MOCK_FAULTED;
	return m->status >= 200 && m->status <= 299;
}

/* Whether r is an ok answer of some provider (not the gateway's degraded one). */
static bool provider_answer(const struct run_req *r)
{
	return r->outcome == OUT_OK && r->degraded == RUN_NOT_DEGRADED;
}

/* Whether m is at the provider r's provider column names (any when it names none). */
static bool at_named(const struct rundata *d, const struct run_req *r, const struct run_mrow *m)
{
	return !r->provider || strcmp(r->provider, d->mock_providers[m->file]) == 0;
}

/*
 * Whether m is a better answering row for r than the one it has: ending
 * by r's end beats ending after it; then the later end.
 */
static bool better_answer(const struct run_req *r, const struct run_mrow *m)
{
	const struct run_mrow *a = r->answer;
	double lim = isnan(r->end_ms) ? INFINITY : r->end_ms + ATTRIB_SLACK_MS;
	bool m_in = row_end(m) <= lim;
	bool a_in;

	if (!a)
		return true;
	a_in = row_end(a) <= lim;
	if (m_in != a_in)
		return m_in;
	return row_end(m) >= row_end(a);
}

/* Undoes an earlier call's timing joins and answers. */
static void unjoin(struct rundata *d)
{
	size_t i;

	for (i = 0; i < d->nmrows; i++) {
		if (d->mrows[i].join == RUN_JOIN_TIMING) {
			d->mrows[i].req = NULL;
			d->mrows[i].join = RUN_JOIN_NONE;
		}
	}
	for (i = 0; i < d->nreqs; i++)
		d->reqs[i].answer = NULL;
}

/* Step 1: each ok answer's answering row among the rows joined by id. */
static void answers_by_id(struct rundata *d)
{
	size_t i;

	for (i = 0; i < d->nmrows; i++) {
		struct run_mrow *m = &d->mrows[i];
		struct run_req *r = m->req;

		if (!r || !answer_like(m) || !provider_answer(r) || !at_named(d, r, m))
			continue;
		if (better_answer(r, m))
			r->answer = m;
	}
}

/* Whether a row is free for the timing join. */
static bool joinable(const struct run_mrow *m)
{
	return user_row(m) && !m->req && !m->unrecorded;
}

static int ptr_end_cmp(const void *a, const void *b)
{
	const struct run_mrow *x = *(const struct run_mrow *const *)a;
	const struct run_mrow *y = *(const struct run_mrow *const *)b;
	double ex = row_end(x);
	double ey = row_end(y);

	if (ex != ey)
		return ex < ey ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int req_end_cmp(const void *a, const void *b)
{
	const struct run_req *x = *(const struct run_req *const *)a;
	const struct run_req *y = *(const struct run_req *const *)b;

	if (x->end_ms != y->end_ms)
		return x->end_ms < y->end_ms ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int req_start_cmp(const void *a, const void *b)
{
	const struct run_req *x = *(const struct run_req *const *)a;
	const struct run_req *y = *(const struct run_req *const *)b;
	double sx = req_start(x);
	double sy = req_start(y);

	if (sx != sy)
		return sx < sy ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/* The first of rows[0..n) (sorted by end) whose end is above t (≥ t when inclusive is false). */
static size_t first_end_after(struct run_mrow *const *rows, size_t n, double t, bool inclusive)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		double e = row_end(rows[mid]);

		if (inclusive ? e <= t : e < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Step 2: the ok answers without an answering row, by end_ms, each take
 * the free answer-like row inside their time — arrived at start − slack
 * or later, ended by end_ms + slack — that arrived first. rows[0..n) are
 * the free answer-like rows by end. Going by the requests' ends, the rows
 * inside a request's time end before every later request's end, so what
 * tells them apart for the requests to come is their arrival: the
 * earliest-arriving one is of use to the fewest of them. That makes the
 * matching as large as any (an exchange argument, as for interval
 * scheduling): when every answer-like row is an ok request's answer,
 * every ok request gets one.
 */
static void answers_by_timing(struct rundata *d, struct run_mrow **rows, size_t n,
			      struct run_req **reqs)
{
	size_t nr = 0;
	size_t i, k;

	for (i = 0; i < d->nreqs; i++) {
		struct run_req *r = &d->reqs[i];

		if (provider_answer(r) && !r->answer && !isnan(r->end_ms))
			reqs[nr++] = r;
	}
	sort(reqs, nr, sizeof(*reqs), req_end_cmp);
	for (i = 0; i < nr; i++) {
		struct run_req *r = reqs[i];
		double start = req_start(r) - ATTRIB_SLACK_MS;
		size_t lo = first_end_after(rows, n, start, false);
		size_t hi = first_end_after(rows, n, r->end_ms + ATTRIB_SLACK_MS, true);
		struct run_mrow *best = NULL;

		/* A row that arrived at start or later ended at start or later. */
		for (k = lo; k < hi; k++) {
			struct run_mrow *m = rows[k];

			if (m->req || m->t_ms < start || !at_named(d, r, m))
				continue;
			if (!best || m->t_ms < best->t_ms ||
			    (m->t_ms == best->t_ms && m->seq < best->seq))
				best = m;
		}
		if (!best)
			continue;
		best->req = r;
		best->join = RUN_JOIN_TIMING;
		r->answer = best;
	}
}

/* Per request, what step 3 weighs: its rows so far and when its last one ended. */
struct tally {
	size_t rows;
	double busy_until;	/* the latest end of its rows joined in step 3; -INF: none */
};

/*
 * Whether m overlaps a row r already has — its answer, or the last row
 * step 3 gave it (rows come by arrival, so that one arrived before m): a
 * gateway tries a request's targets one after the other, so an attempt
 * overlapping another of the request's is a hedge, the rarer case.
 */
static bool overlaps(const struct run_req *r, const struct tally *t, const struct run_mrow *m)
{
	const struct run_mrow *a = r->answer;

	if (a && a->t_ms < row_end(m) && m->t_ms < row_end(a))
		return true;
	return t->busy_until > m->t_ms;
}

/*
 * Whether request r (tally tr) takes row m before best (tb): not
 * overlapping before overlapping, then fewer rows, then the earlier start.
 */
static bool takes_before(const struct run_req *r, const struct tally *tr,
			 const struct run_req *best, const struct tally *tb,
			 const struct run_mrow *m)
{
	bool ro = overlaps(r, tr, m);
	bool bo = overlaps(best, tb, m);

	if (ro != bo)
		return !ro;
	if (tr->rows != tb->rows)
		return tr->rows < tb->rows;
	return req_start_cmp(&r, &best) < 0;
}

/*
 * Step 3: every free row, by arrival, to the open request that takes it
 * first (takes_before). t[i] is d->reqs[i]'s tally.
 */
static int rest_by_timing(struct rundata *d, struct run_req **reqs, struct tally *t)
{
	struct run_req **open = malloc((d->nreqs ? d->nreqs : 1) * sizeof(*open));
	size_t nr = 0, nopen = 0, next = 0;
	size_t i, k;

	if (!open)
		return -ENOMEM;
	for (i = 0; i < d->nreqs; i++) {
		if (!isnan(d->reqs[i].end_ms))
			reqs[nr++] = &d->reqs[i];
	}
	sort(reqs, nr, sizeof(*reqs), req_start_cmp);
	for (i = 0; i < d->nmrows; i++) {
		struct run_mrow *m = &d->mrows[i];
		struct run_req *best = NULL;
		size_t kept = 0;

		if (!joinable(m))
			continue;
		while (next < nr && req_start(reqs[next]) - ATTRIB_SLACK_MS <= m->t_ms)
			open[nopen++] = reqs[next++];
		for (k = 0; k < nopen; k++) {
			struct run_req *r = open[k];

			if (r->end_ms + ATTRIB_SLACK_MS < m->t_ms)
				continue;	/* ended before it: closed for good (rows go by t_ms) */
			open[kept++] = r;
			if (!best || takes_before(r, &t[r - d->reqs], best, &t[best - d->reqs], m))
				best = r;
		}
		nopen = kept;
		if (!best)
			continue;
		m->req = best;
		m->join = RUN_JOIN_TIMING;
		t[best - d->reqs].rows++;
		if (row_end(m) > t[best - d->reqs].busy_until)
			t[best - d->reqs].busy_until = row_end(m);
	}
	free(open);
	return 0;
}

int attrib_join(struct rundata *d)
{
	struct run_mrow **rows = malloc((d->nmrows ? d->nmrows : 1) * sizeof(*rows));
	struct run_req **reqs = malloc((d->nreqs ? d->nreqs : 1) * sizeof(*reqs));
	struct tally *t = calloc(d->nreqs ? d->nreqs : 1, sizeof(*t));
	size_t n = 0;
	size_t i;
	int rc = -ENOMEM;

	if (!rows || !reqs || !t)
		goto out_free;
	for (i = 0; i < d->nreqs; i++)
		t[i].busy_until = -INFINITY;
	unjoin(d);
	answers_by_id(d);
	for (i = 0; i < d->nmrows; i++) {
		if (joinable(&d->mrows[i]) && answer_like(&d->mrows[i]))
			rows[n++] = &d->mrows[i];
	}
	sort(rows, n, sizeof(*rows), ptr_end_cmp);
	answers_by_timing(d, rows, n, reqs);
	for (i = 0; i < d->nmrows; i++) {
		if (d->mrows[i].req && user_row(&d->mrows[i]))
			t[d->mrows[i].req - d->reqs].rows++;
	}
	rc = rest_by_timing(d, reqs, t);
out_free:
	free(rows);
	free(reqs);
	free(t);
	return rc;
}

void attrib_stop(const struct rundata *d, int pf, double from, double to, double end_ms,
		 double gap_ms, double *stop_ms, size_t *requests)
{
	double prev = from;	/* the last arrival so far (from: none yet) */
	double busy = from;	/* when the requests so far had all ended */
	double next = isinf(to) || end_ms > to ? end_ms : to;
	size_t n = 0;
	size_t i;

	*stop_ms = NAN;
	*requests = 0;
	if (pf < 0)
		return;
	for (i = 0; i < d->nmrows; i++) {
		const struct run_mrow *m = &d->mrows[i];

		if (m->file != (size_t)pf || !user_row(m))
			continue;
		if (m->t_ms < from) {	/* still in progress at from: traffic too */
			busy = fmax(busy, row_end(m));
			continue;
		}
		if (m->t_ms >= to) {
			next = m->t_ms;
			break;
		}
		n++;
		if (isnan(*stop_ms) && m->t_ms - fmax(prev, busy) >= gap_ms)
			*stop_ms = prev - from;
		prev = m->t_ms;
		busy = fmax(busy, row_end(m));
	}
	if (isnan(*stop_ms) && next - fmax(prev, busy) >= gap_ms)
		*stop_ms = prev - from;
	*requests = n;
}
