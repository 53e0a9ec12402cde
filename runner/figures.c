/*
 * figures: the summary's figures from a run's loaded records; the layout
 * is in stats.h. The records are sorted by time once (rundata), and each
 * range is a slice found by binary search.
 */
#include "runner/figures.h"
#include "runner/attrib.h"
#include "runner/contract.h"
#include "runner/replicas.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

#include "common/cfg.h"

#define DEFAULT_WINDOW_MS 5000.0
#define MAX_WINDOWS 1000000.0
#define MAX_STATUS 999

/* qsort, which may not be given a NULL base even for no elements. */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/* ---- what the figures judge each record by ---- */

/*
 * Where a request went, for its price and cost_usd.by_provider: its
 * provider column, else the provider whose answer it got by the mock logs
 * (answered_by), else the caller's provider (a direct setup's); NULL:
 * none known.
 */
static const char *went_to(const struct run_req *r, const struct stats_input *in)
{
	if (r->provider)
		return r->provider;
	return r->answered_by ? r->answered_by : in->provider;
}

/*
 * A row with no cost_usd is priced from its tokens (none counts as 0) at
 * the price of the provider it went to (went_to), when the caller has a
 * price for that provider.
 */
static double req_price(const struct run_req *r, const struct stats_input *in)
{
	const char *to = went_to(r, in);
	size_t i;

	if (!isnan(r->cost_read) || !to)
		return r->cost_read;
	for (i = 0; i < in->nprices; i++) {
		const struct stats_price *p = &in->prices[i];

		if (strcmp(p->provider, to) != 0)
			continue;
		return ((isnan(r->tokens_in) ? 0 : r->tokens_in) * p->input +
			(isnan(r->tokens_out) ? 0 : r->tokens_out) * p->output) / 1000;
	}
	return r->cost_read;
}

/*
 * Who answered r, an ok answer not degraded: its provider column
 * (authoritative: the gateway said so), else its answering mock row's
 * provider (attrib_join), else none known (then counted as the primary's).
 */
static void attribute(struct rundata *d, struct run_req *r)
{
	r->answered_by = NULL;
	r->attrib = RUN_ATTRIB_NONE;
	if (r->outcome != OUT_OK || r->degraded != RUN_NOT_DEGRADED)
		return;
	if (r->provider) {
		r->answered_by = r->provider;
		r->attrib = RUN_ATTRIB_HEADER;
	} else if (r->answer) {
		r->answered_by = d->mock_providers[r->answer->file];
		r->attrib = RUN_ATTRIB_MOCK_LOG;
	}
}

/*
 * The attempts r made that reached no mock log — refused connections,
 * which send nothing: the attempts it made (in->attempts: loadgen's 1 +
 * retries, or the attempts column) less its rows joined in the logs, or 0
 * when that is not known or not above them.
 */
static size_t refused_attempts(const struct run_req *r, const struct stats_input *in)
{
	double made = NAN;

	if (in->attempts == STATS_ATTEMPTS_LOADGEN)
		made = 1 + (isnan(r->retries) ? 0 : r->retries);
	else if (in->attempts == STATS_ATTEMPTS_COLUMN)
		made = r->attempts;
	if (isnan(made) || made <= (double)r->upstream)
		return 0;
	return (size_t)(made - (double)r->upstream);
}

/*
 * Fills d's derived fields: the timing join (attrib_join), then each
 * request's provider (attribute), cost, whether the primary answered it
 * (none known meaning the primary; a degraded answer is no provider's),
 * whether its answer broke the contract, how many mock rows are joined
 * to it and how many of its attempts were refused; each mock row's
 * duplicate — its outcome is client_aborted, or its request is not an ok
 * one answered by that row's provider (no request at all, or a degraded
 * answer, counts too) — health checks never. Returns 0 or -ENOMEM.
 */
static int prepare(struct rundata *d, const struct stats_input *in)
{
	size_t i;
	int rc = attrib_join(d);

	if (rc)
		return rc;
	for (i = 0; i < d->nreqs; i++) {
		struct run_req *r = &d->reqs[i];

		attribute(d, r);
		r->cost_usd = req_price(r, in);
		r->upstream = 0;
		r->duplicates = 0;
		r->by_primary = r->outcome == OUT_OK && r->degraded == RUN_NOT_DEGRADED &&
				(!r->answered_by || strcmp(r->answered_by, in->primary) == 0);
	}
	contract_mark_broken(d, in->primary);
	if (in->replicas)
		replicas_mark_paid(d, in->primary, in->primary_timeout_ms);
	for (i = 0; i < d->nmrows; i++) {
		struct run_mrow *m = &d->mrows[i];
		const struct run_req *r = m->req;
		bool answered;

		/* A health check is neither a user's attempt nor discarded work. */
		m->duplicate = false;
		if (m->check)
			continue;
		answered = r && r->outcome == OUT_OK && r->degraded == RUN_NOT_DEGRADED &&
				strcmp(r->answered_by ? r->answered_by : in->primary,
				       d->mock_providers[m->file]) == 0;

		m->duplicate = m->outcome == MOCK_CLIENT_ABORTED || !answered;
		if (m->req) {
			m->req->upstream++;
			m->req->duplicates += m->duplicate;
		}
	}
	for (i = 0; i < d->nreqs; i++)
		d->reqs[i].refused = refused_attempts(&d->reqs[i], in);
	return 0;
}

/* ---- figures ---- */

/* A range's slices of the sorted records, and where its times start. */
struct span {
	double from;
	double to;
	double origin;		/* time_to_* are measured from here */
	size_t r0, r1;		/* requests */
	size_t m0, m1;		/* mock rows */
	size_t e0, e1;		/* events */
	bool phase;		/* a caller's phase: its answered windows too */
	bool summary;		/* a phase or the totals (not a window): mix_streams too */
	bool all;		/* the totals: every record, whatever its time */
};

/* Scratch space shared by every range's computation. */
struct ctx {
	const struct rundata *d;
	const struct stats_input *in;
	int cls;		/* only this class's requests; -1: all */
	const char *stream;	/* only this mix stream's requests; NULL: all */
	double *lat_ok;
	double *lat_all;
	double *lat_err;
	double *ttft;
	size_t status_n[MAX_STATUS + 1];
};

/* Index of the first element whose double at offset off is ≥ t. */
static size_t lower_bound(const void *base, size_t n, size_t size, size_t off, double t)
{
	size_t lo = 0;
	size_t hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		double v;

		memcpy(&v, (const char *)base + mid * size + off, sizeof(v));
		if (v < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct span span_of(const struct rundata *d, double from, double to)
{
	struct span s = { .from = from, .to = to, .origin = from };

	s.r0 = lower_bound(d->reqs, d->nreqs, sizeof(*d->reqs), offsetof(struct run_req, sched_ms), from);
	s.r1 = lower_bound(d->reqs, d->nreqs, sizeof(*d->reqs), offsetof(struct run_req, sched_ms), to);
	s.m0 = lower_bound(d->mrows, d->nmrows, sizeof(*d->mrows), offsetof(struct run_mrow, t_ms), from);
	s.m1 = lower_bound(d->mrows, d->nmrows, sizeof(*d->mrows), offsetof(struct run_mrow, t_ms), to);
	s.e0 = lower_bound(d->events, d->nevents, sizeof(*d->events), offsetof(struct run_event, t_ms), from);
	s.e1 = lower_bound(d->events, d->nevents, sizeof(*d->events), offsetof(struct run_event, t_ms), to);
	return s;
}

/* A number, or null for NAN. */
static cJSON *num(double v)
{
	return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the value at rank ceil(permille/1000 × n) of sorted v. */
static double nearest_rank(const double *v, size_t n, size_t permille)
{
	size_t rank = (permille * n + 999) / 1000;

	if (n == 0)
		return NAN;
	if (rank < 1)
		rank = 1;
	return v[rank - 1];
}

/* The LATENCY block of v[0..n), which it sorts. */
static cJSON *latency_block(double *v, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	double sum = 0;
	bool ok = true;
	size_t i;

	sort(v, n, sizeof(*v), dbl_cmp);
	for (i = 0; i < n; i++)
		sum += v[i];
	ok &= json_put(o, "count", cJSON_CreateNumber((double)n));
	ok &= json_put(o, "mean", num(n ? sum / (double)n : NAN));
	ok &= json_put(o, "p50", num(nearest_rank(v, n, 500)));
	ok &= json_put(o, "p95", num(nearest_rank(v, n, 950)));
	ok &= json_put(o, "p99", num(nearest_rank(v, n, 990)));
	ok &= json_put(o, "max", num(n ? v[n - 1] : NAN));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Adds v to map[key], creating it at 0. */
static bool map_add(cJSON *map, const char *key, double v)
{
	cJSON *item = cJSON_GetObjectItemCaseSensitive(map, key);

	if (!item)
		return json_put(map, key, cJSON_CreateNumber(v));
	cJSON_SetNumberHelper(item, item->valuedouble + v);
	return true;
}

static cJSON *status_block(const struct ctx *x, size_t none)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;
	int s;

	for (s = 0; s <= MAX_STATUS; s++) {
		char key[16];

		if (!x->status_n[s])
			continue;
		snprintf(key, sizeof(key), "%d", s);
		ok &= json_put(o, key, cJSON_CreateNumber((double)x->status_n[s]));
	}
	if (none)
		ok &= json_put(o, "none", cJSON_CreateNumber((double)none));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Whether r counts under x's class and stream filters. */
static bool counted(const struct ctx *x, const struct run_req *r)
{
	return (x->cls < 0 || (int)r->cls == x->cls) &&
	       (!x->stream || strcmp(r->stream_name, x->stream) == 0);
}

/* Whether x filters the range's requests (by class or stream). */
static bool filtered(const struct ctx *x)
{
	return x->cls >= 0 || x->stream;
}

/* counted, for runner/contract.h's range. */
static bool counted_cb(const void *arg, const struct run_req *r)
{
	return counted(arg, r);
}

/*
 * Where a request's cost went, for cost_usd.by_provider: its provider
 * column, else the provider the mock logs say answered it, else the
 * caller's provider (a direct setup's), else "" (none known: a degraded
 * answer, or an error no provider answered).
 */
static const char *cost_provider(const struct ctx *x, const struct run_req *r)
{
	if (r->provider)
		return r->provider;
	if (r->answered_by)
		return r->answered_by;
	return x->in->provider && r->degraded == RUN_NOT_DEGRADED ? x->in->provider : "";
}

/* Whether r was answered by a provider other than the primary (not degraded). */
static bool fallback_answer(const struct ctx *x, const struct run_req *r)
{
	return r->outcome == OUT_OK && r->degraded == RUN_NOT_DEGRADED && r->answered_by &&
	       strcmp(r->answered_by, x->in->primary) != 0;
}

/* The words of upstream_source: the mock logs' rows, and where refusals were counted. */
static const char *upstream_source(const struct stats_input *in, bool column_seen)
{
	if (in->attempts == STATS_ATTEMPTS_LOADGEN)
		return "mock_log+loadgen_refused";
	if (in->attempts == STATS_ATTEMPTS_COLUMN && column_seen)
		return "mock_log+gateway_attempts";
	return "mock_log";
}

/* The words of fallback_source: where the answers' providers came from. */
static cJSON *fallback_source(const size_t *by)
{
	if (by[RUN_ATTRIB_HEADER] && by[RUN_ATTRIB_MOCK_LOG])
		return cJSON_CreateString("provider_header+mock_log");
	if (by[RUN_ATTRIB_HEADER])
		return cJSON_CreateString("provider_header");
	if (by[RUN_ATTRIB_MOCK_LOG])
		return cJSON_CreateString("mock_log");
	return cJSON_CreateNull();
}

/* "attribution": the ok answers (not degraded) by where their provider came from. */
static cJSON *attribution_block(const size_t *by)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok &= json_put(o, "provider_header", cJSON_CreateNumber((double)by[RUN_ATTRIB_HEADER]));
	ok &= json_put(o, "mock_log", cJSON_CreateNumber((double)by[RUN_ATTRIB_MOCK_LOG]));
	ok &= json_put(o, "none", cJSON_CreateNumber((double)by[RUN_ATTRIB_NONE]));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The request-based figures of a span, added to o. */
static bool request_figures(struct ctx *x, const struct span *sp, cJSON *o)
{
	const struct rundata *d = x->d;
	size_t outcomes[OUT_COUNT] = { 0 };
	size_t degraded[RUN_DEGRADED_COUNT] = { 0 };
	size_t nok = 0, nlat_ok = 0, nlat_all = 0, nlat_err = 0, fallback = 0, none = 0;
	size_t upstream = 0, duplicates = 0, refused = 0;
	size_t instant = 0;
	size_t by[RUN_ATTRIB_COUNT] = { 0 };	/* ok answers by where their provider came from */
	bool column_seen = false;
	size_t n = 0;
	double to_primary = NAN;
	double cost = 0;
	double fallback_spend = 0;
	bool have_cost = false;
	cJSON *oc = cJSON_CreateObject();
	cJSON *deg = cJSON_CreateObject();
	cJSON *cost_o = cJSON_CreateObject();
	cJSON *by_tenant = cJSON_CreateObject();
	cJSON *by_feature = cJSON_CreateObject();
	cJSON *by_provider = cJSON_CreateObject();
	bool ok = oc && deg && cost_o && by_tenant && by_feature && by_provider;
	size_t i;
	int k;

	memset(x->status_n, 0, sizeof(x->status_n));
	for (i = sp->r0; i < sp->r1 && ok; i++) {
		const struct run_req *r = &d->reqs[i];

		if (!counted(x, r))
			continue;
		n++;
		upstream += r->upstream;
		duplicates += r->duplicates;
		refused += r->refused;
		column_seen = column_seen || !isnan(r->attempts);
		outcomes[r->outcome]++;
		if (r->status < 0)
			none++;
		else
			x->status_n[r->status]++;
		if (!isnan(r->latency_ms))
			x->lat_all[nlat_all++] = r->latency_ms;
		if (r->outcome != OUT_OK && !isnan(r->latency_ms))
			x->lat_err[nlat_err++] = r->latency_ms;
		if (r->outcome != OUT_OK && r->latency_ms < REQ_INSTANT_ERROR_MS)
			instant++;
		if (r->outcome == OUT_OK) {
			nok++;
			degraded[r->degraded]++;
			if (!isnan(r->latency_ms))
				x->lat_ok[nlat_ok++] = r->latency_ms;
			if (r->degraded == RUN_NOT_DEGRADED)
				by[r->attrib]++;
			if (!r->by_primary && r->degraded == RUN_NOT_DEGRADED)
				fallback++;
			else if (r->by_primary && isnan(to_primary) && !isnan(r->end_ms))
				to_primary = r->end_ms - sp->origin;
		}
		if (!isnan(r->cost_usd)) {
			have_cost = true;
			cost += r->cost_usd;
			ok &= map_add(by_tenant, r->tenant, r->cost_usd);
			ok &= map_add(by_feature, r->feature, r->cost_usd);
			ok &= map_add(by_provider, cost_provider(x, r), r->cost_usd);
			if (fallback_answer(x, r))
				fallback_spend += r->cost_usd;
		}
	}
	for (k = 0; k < OUT_COUNT && ok; k++)
		ok &= json_put(oc, outcome_name((enum outcome)k), cJSON_CreateNumber((double)outcomes[k]));
	ok &= json_put(o, "requests", cJSON_CreateNumber((double)n));
	ok &= json_put(o, "ok", cJSON_CreateNumber((double)nok));
	ok &= json_put(o, "answered_share", num(n ? (double)nok / (double)n : NAN));
	ok &= json_put(o, "error_rate", num(n ? (double)(n - nok) / (double)n : NAN));
	ok &= json_put(o, "outcomes", oc);
	oc = NULL;
	ok &= json_put(o, "status", status_block(x, none));
	ok &= json_put(o, "latency_ms", latency_block(x->lat_ok, nlat_ok));
	ok &= json_put(o, "latency_all_ms", latency_block(x->lat_all, nlat_all));
	ok &= json_put(o, "error_latency_ms", latency_block(x->lat_err, nlat_err));
	ok &= json_put(o, "instant_errors", cJSON_CreateNumber((double)instant));
	ok &= json_put(o, "throughput_per_s", num((double)nok / ((sp->to - sp->from) / 1000.0)));
	ok &= json_put(o, "fallback_share", num(nok ? (double)fallback / (double)nok : NAN));
	ok &= json_put(o, "fallback_answers", cJSON_CreateNumber((double)fallback));
	ok &= json_put(o, "fallback_source", fallback_source(by));
	ok &= json_put(o, "attribution", attribution_block(by));
	ok &= json_put(o, "time_to_primary_ms", num(to_primary));
	for (k = RUN_DEGRADED_STATIC; k < RUN_DEGRADED_COUNT; k++)
		ok &= json_put(deg, run_degraded_name((enum run_degraded)k),
			       cJSON_CreateNumber((double)degraded[k]));
	ok &= json_put(o, "degraded", deg);
	deg = NULL;
	ok &= json_put(o, "degraded_answers", cJSON_CreateNumber((double)(nok -
							 degraded[RUN_NOT_DEGRADED])));
	ok &= json_put(cost_o, "total", num(have_cost ? cost : NAN));
	ok &= json_put(cost_o, "by_tenant", by_tenant);
	by_tenant = NULL;
	ok &= json_put(cost_o, "by_feature", by_feature);
	by_feature = NULL;
	ok &= json_put(cost_o, "by_provider", by_provider);
	by_provider = NULL;
	ok &= json_put(o, "cost_usd", cost_o);
	ok &= json_put(o, "cost_per_answered", num(have_cost && nok ? cost / (double)nok : NAN));
	ok &= json_put(o, "fallback_spend_usd", num(have_cost ? fallback_spend : NAN));
	ok &= json_put(o, "upstream_requests", cJSON_CreateNumber((double)(upstream + refused)));
	ok &= json_put(o, "upstream_logged", cJSON_CreateNumber((double)upstream));
	ok &= json_put(o, "upstream_refused", cJSON_CreateNumber((double)refused));
	ok &= json_put(o, "upstream_source",
		       cJSON_CreateString(upstream_source(x->in, column_seen)));
	ok &= json_put(o, "extra_requests",
		       num(n ? (double)(upstream + refused) / (double)n - 1 : NAN));
	ok &= json_put(o, "attempts_per_request",
		       num(n ? (double)(upstream + refused) / (double)n : NAN));
	ok &= json_put(o, "duplicate_share",
		       num(upstream ? (double)duplicates / (double)upstream : NAN));
	return ok;
}

/* The index of the primary's mock log, or -1 when it has none. */
static int primary_file(const struct ctx *x)
{
	size_t i;

	for (i = 0; i < x->d->nmock; i++) {
		if (strcmp(x->d->mock_providers[i], x->in->primary) == 0)
			return (int)i;
	}
	return -1;
}

static int req_ptr_cmp(const void *a, const void *b)
{
	const struct run_req *x = *(const struct run_req *const *)a;
	const struct run_req *y = *(const struct run_req *const *)b;

	return x < y ? -1 : x > y;
}

/*
 * "exposed": the distinct requests (of x's class) whose chat rows at the
 * primary's log have t_ms in [from, until), and of them those that did
 * not end ok. NULL when out of memory.
 */
static cJSON *exposed_block(const struct ctx *x, const struct span *sp, double until)
{
	const struct rundata *d = x->d;
	int pf = primary_file(x);
	const struct run_req **seen = malloc((sp->m1 - sp->m0 + 1) * sizeof(*seen));
	size_t n = 0, distinct = 0, failed = 0;
	cJSON *o = cJSON_CreateObject();
	bool ok = seen && o;
	size_t i;

	for (i = sp->m0; ok && pf >= 0 && i < sp->m1 && d->mrows[i].t_ms < until; i++) {
		const struct run_mrow *m = &d->mrows[i];

		if (m->file != (size_t)pf || m->check || !m->req || !counted(x, m->req))
			continue;
		seen[n++] = m->req;
	}
	if (ok) {
		sort(seen, n, sizeof(*seen), req_ptr_cmp);
		for (i = 0; i < n; i++) {
			if (i && seen[i] == seen[i - 1])
				continue;
			distinct++;
			failed += seen[i]->outcome != OUT_OK;
		}
	}
	ok &= json_put(o, "requests", cJSON_CreateNumber((double)distinct));
	ok &= json_put(o, "failed", cJSON_CreateNumber((double)failed));
	free(seen);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/*
 * "checks" of a span — its health-check rows (any class filter aside:
 * checks are no request's), in all, per second and by provider (every
 * provider with a log, 0 included) — and "check_rate_per_s", the
 * primary's per second.
 */
static bool check_figures(const struct ctx *x, const struct span *sp, cJSON *o)
{
	const struct rundata *d = x->d;
	double secs = (sp->to - sp->from) / 1000.0;
	size_t *by = calloc(d->nmock ? d->nmock : 1, sizeof(*by));
	cJSON *ch = cJSON_CreateObject();
	cJSON *byp = cJSON_CreateObject();
	int pf = primary_file(x);
	size_t n = 0;
	bool ok = by && ch && byp;
	size_t i;

	for (i = sp->m0; ok && i < sp->m1; i++) {
		if (!d->mrows[i].check)
			continue;
		n++;
		by[d->mrows[i].file]++;
	}
	for (i = 0; ok && i < d->nmock; i++)
		ok &= map_add(byp, d->mock_providers[i], (double)by[i]);
	ok &= json_put(ch, "requests", cJSON_CreateNumber((double)n));
	ok &= json_put(ch, "per_s", num((double)n / secs));
	ok &= json_put(ch, "by_provider", byp);
	byp = NULL;
	ok &= json_put(o, "checks", ch);
	ch = NULL;
	ok &= json_put(o, "check_rate_per_s",
		       num(pf >= 0 && by ? (double)by[pf] / secs : 0));
	cJSON_Delete(byp);
	cJSON_Delete(ch);
	free(by);
	return ok;
}

/*
 * "upstream_by_provider": each provider's chat rows (not checks) timed in
 * the span — of x's requests, or any with no filter — and of them those
 * faulted; every provider with a log, 0 included. NULL when out of memory.
 */
static cJSON *upstream_block(const struct ctx *x, const struct span *sp)
{
	const struct rundata *d = x->d;
	size_t *rows = calloc(d->nmock + 1, sizeof(*rows));
	size_t *faulted = calloc(d->nmock + 1, sizeof(*faulted));
	cJSON *o = cJSON_CreateObject();
	bool ok = rows && faulted && o;
	size_t i;

	for (i = sp->m0; ok && i < sp->m1; i++) {
		const struct run_mrow *m = &d->mrows[i];

		if (m->check || m->kind != MOCK_KIND_CHAT ||
		    (filtered(x) && (!m->req || !counted(x, m->req))))
			continue;
		rows[m->file]++;
		faulted[m->file] += m->faulted;
	}
	for (i = 0; ok && i < d->nmock; i++) {
		cJSON *p = cJSON_CreateObject();

		ok = json_put(o, d->mock_providers[i], p);
		ok = ok && json_put(p, "attempts", cJSON_CreateNumber((double)rows[i]));
		ok = ok && json_put(p, "faulted", cJSON_CreateNumber((double)faulted[i]));
	}
	free(rows);
	free(faulted);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/*
 * "join": the users' chat rows (not health checks) timed in the span, by
 * how they were joined to a request: by id, by timing, not at all —
 * unrecorded (an id of loadgen's that requests.csv lacks) or unjoined.
 */
static cJSON *join_block(const struct ctx *x, const struct span *sp)
{
	const struct rundata *d = x->d;
	size_t by_id = 0, by_timing = 0, unrecorded = 0, unjoined = 0;
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;
	size_t i;

	for (i = sp->m0; i < sp->m1; i++) {
		const struct run_mrow *m = &d->mrows[i];

		if (m->check || m->kind != MOCK_KIND_CHAT)
			continue;
		if (m->join == RUN_JOIN_ID)
			by_id++;
		else if (m->join == RUN_JOIN_TIMING)
			by_timing++;
		else if (m->unrecorded)
			unrecorded++;
		else
			unjoined++;
	}
	ok &= json_put(o, "by_id", cJSON_CreateNumber((double)by_id));
	ok &= json_put(o, "by_timing", cJSON_CreateNumber((double)by_timing));
	ok &= json_put(o, "unrecorded", cJSON_CreateNumber((double)unrecorded));
	ok &= json_put(o, "unjoined", cJSON_CreateNumber((double)unjoined));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/*
 * "primary_requests" and "stop_ms" of a phase or the totals: the
 * primary's chat rows in the span and when they stopped (attrib_stop,
 * with a gap of in->stop_gap_ms); from t0 for the totals.
 */
static bool stop_figures(const struct ctx *x, const struct span *sp, cJSON *o)
{
	double gap = x->in->stop_gap_ms > 0 ? x->in->stop_gap_ms : ATTRIB_STOP_GAP_MS;
	double stop;
	size_t n;
	bool ok = true;

	attrib_stop(x->d, primary_file(x), sp->origin, sp->all ? INFINITY : sp->to,
		    x->in->duration_ms, gap, &stop, &n);
	ok &= json_put(o, "primary_requests", cJSON_CreateNumber((double)n));
	ok &= json_put(o, "stop_ms", num(stop));
	return ok;
}

/* The event and mock figures of a span, added to o. */
static bool other_figures(const struct ctx *x, const struct span *sp, cJSON *o)
{
	const struct rundata *d = x->d;
	cJSON *dup = cJSON_CreateObject();
	struct contract_range cr = {
		.r0 = sp->r0, .r1 = sp->r1, .from_ms = sp->all ? -INFINITY : sp->from,
		.to_ms = sp->all ? INFINITY : sp->to,
		.primary = x->in->primary, .counted = filtered(x) ? counted_cb : NULL, .arg = x,
	};
	double to_open = NAN;
	double to_close = NAN;
	double attempts = 0;
	double tokens = 0;
	size_t opens = 0;
	bool ok = true;
	size_t i;

	for (i = sp->e0; i < sp->e1; i++) {
		if (isnan(to_close) && strcmp(d->events[i].to, event_state_name(EVENT_CLOSED)) == 0)
			to_close = d->events[i].t_ms - sp->origin;
		if (strcmp(d->events[i].to, event_state_name(EVENT_OPEN)) != 0)
			continue;
		if (!opens)
			to_open = d->events[i].t_ms - sp->origin;
		opens++;
	}
	for (i = sp->m0; i < sp->m1; i++) {
		const struct run_mrow *m = &d->mrows[i];

		if (!m->duplicate || (filtered(x) && (!m->req || !counted(x, m->req))))
			continue;
		attempts++;
		tokens += m->tokens;
	}
	ok &= json_put(o, "opens", cJSON_CreateNumber((double)opens));
	ok &= json_put(o, "time_to_open_ms", num(to_open));
	ok &= json_put(o, "time_to_close_ms", num(to_close));
	ok &= json_put(o, "transitions", cJSON_CreateNumber((double)(sp->e1 - sp->e0)));
	ok &= json_put(o, "exposed",
		       exposed_block(x, sp, isnan(to_open) ? sp->to : sp->origin + to_open));
	ok &= json_put(dup, "attempts", cJSON_CreateNumber(attempts));
	ok &= json_put(dup, "tokens", cJSON_CreateNumber(tokens));
	ok &= json_put(o, "duplicate_work", dup);
	ok &= json_put(o, "upstream_by_provider", upstream_block(x, sp));
	if (!filtered(x))
		ok &= json_put(o, "join", join_block(x, sp));
	if (!filtered(x) && sp->summary)
		ok = ok && stop_figures(x, sp, o);
	ok = ok && check_figures(x, sp, o);
	ok = ok && contract_figures(d, &cr, o);
	return ok;
}

/* The streaming requests' figures of a span, added to o. */
static bool stream_figures(struct ctx *x, const struct span *sp, cJSON *o)
{
	const struct rundata *d = x->d;
	size_t streams = 0, stalls = 0, truncations = 0, error_events = 0, silent = 0;
	size_t nttft = 0;
	double max_gap = NAN;
	bool ok = true;
	size_t i;

	for (i = sp->r0; i < sp->r1; i++) {
		const struct run_req *r = &d->reqs[i];

		if (!r->streaming || !counted(x, r))
			continue;
		streams++;
		if (r->outcome == OUT_OK && !isnan(r->ttft_ms))
			x->ttft[nttft++] = r->ttft_ms;
		stalls += r->outcome == OUT_STALLED;
		truncations += r->outcome == OUT_TRUNCATED;
		error_events += r->error_event;
		silent += (r->outcome == OUT_STALLED || r->outcome == OUT_TRUNCATED) &&
			  !r->error_event;
		if (!isnan(r->max_gap_ms) && (isnan(max_gap) || r->max_gap_ms > max_gap))
			max_gap = r->max_gap_ms;
	}
	ok &= json_put(o, "streams", cJSON_CreateNumber((double)streams));
	ok &= json_put(o, "ttft_ms", latency_block(x->ttft, nttft));
	ok &= json_put(o, "stalls", cJSON_CreateNumber((double)stalls));
	ok &= json_put(o, "truncations", cJSON_CreateNumber((double)truncations));
	ok &= json_put(o, "error_events", cJSON_CreateNumber((double)error_events));
	ok &= json_put(o, "silent_breaks", cJSON_CreateNumber((double)silent));
	ok &= json_put(o, "max_gap_ms", num(max_gap));
	return ok;
}

/* Slack for window edges: a scaled phase bound may be off by a rounding. */
#define EDGE_SLACK_MS 1e-6

/*
 * The worst answered share over the windows [k·w, (k+1)·w) of length w
 * that lie wholly inside the span and hold a request (of x's class).
 */
static cJSON *window_block(const struct ctx *x, const struct span *sp, double w)
{
	const struct rundata *d = x->d;
	double worst = NAN;
	double worst_from = NAN;
	size_t nwin = 0;
	double k = ceil((sp->from - EDGE_SLACK_MS) / w) + 0.0;	/* + 0.0: never −0 */
	cJSON *o = cJSON_CreateObject();
	bool ok = true;

	for (; (k + 1) * w <= sp->to + EDGE_SLACK_MS; k++) {
		size_t r0 = lower_bound(d->reqs, d->nreqs, sizeof(*d->reqs),
					offsetof(struct run_req, sched_ms), k * w);
		size_t r1 = lower_bound(d->reqs, d->nreqs, sizeof(*d->reqs),
					offsetof(struct run_req, sched_ms), (k + 1) * w);
		size_t n = 0, nok = 0;
		size_t i;

		for (i = r0; i < r1; i++) {
			if (!counted(x, &d->reqs[i]))
				continue;
			n++;
			nok += d->reqs[i].outcome == OUT_OK;
		}
		if (!n)
			continue;
		nwin++;
		if (isnan(worst) || (double)nok / (double)n < worst) {
			worst = (double)nok / (double)n;
			worst_from = k * w;
		}
	}
	ok &= json_put(o, "windows", cJSON_CreateNumber((double)nwin));
	ok &= json_put(o, "worst_share", num(worst));
	ok &= json_put(o, "worst_from_ms", num(worst_from));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* "answered_windows" of a phase: one block per window length the caller asked for. */
static bool window_figures(const struct ctx *x, const struct span *sp, cJSON *o)
{
	cJSON *aw = cJSON_CreateObject();
	bool ok = aw != NULL;
	size_t i;

	for (i = 0; ok && i < x->in->nwindows; i++) {
		char key[40];

		stats_window_key(x->in->windows[i], key, sizeof(key));
		if (!cJSON_GetObjectItemCaseSensitive(aw, key))
			ok = json_put(aw, key, window_block(x, sp, x->in->windows[i]));
	}
	if (!ok) {
		cJSON_Delete(aw);
		return false;
	}
	return json_put(o, "answered_windows", aw);
}

static cJSON *figures(struct ctx *x, const struct span *sp);

/*
 * "mix_streams": the span's figures over each mix stream's requests alone
 * (the stream_name column), for every name the run's requests have, first
 * seen first (by sched_ms); nothing when they name fewer than two (one
 * stream's figures are the span's own).
 */
static bool stream_figures_by_name(struct ctx *x, const struct span *sp, cJSON *o)
{
	const struct rundata *d = x->d;
	cJSON *ms = cJSON_CreateObject();
	bool ok = ms != NULL;
	size_t i;

	for (i = 0; ok && i < d->nreqs; i++) {
		const char *name = d->reqs[i].stream_name;

		if (!name[0] || cJSON_GetObjectItemCaseSensitive(ms, name))
			continue;
		x->stream = name;
		ok = json_put(ms, name, figures(x, sp));
		x->stream = NULL;
	}
	if (!ok || !ms->child || !ms->child->next) {
		cJSON_Delete(ms);
		return ok;
	}
	return json_put(o, "mix_streams", ms);
}

/* "classes": the span's figures over each class the run has, alone. */
static bool class_figures(struct ctx *x, const struct span *sp, cJSON *o)
{
	cJSON *cl = cJSON_CreateObject();
	bool ok = cl != NULL;
	int c;

	for (c = 0; ok && c < CLASS_COUNT; c++) {
		if (!x->d->have_class[c])
			continue;
		x->cls = c;
		ok = json_put(cl, req_class_name((enum req_class)c), figures(x, sp));
		x->cls = -1;
	}
	if (!ok) {
		cJSON_Delete(cl);
		return false;
	}
	return json_put(o, "classes", cl);
}

/* FIGURES (stats.h) of a span, or NULL when out of memory. */
static cJSON *figures(struct ctx *x, const struct span *sp)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok &= json_put(o, "from_ms", cJSON_CreateNumber(sp->from));
	ok &= json_put(o, "to_ms", cJSON_CreateNumber(sp->to));
	ok = ok && request_figures(x, sp, o);
	ok = ok && other_figures(x, sp, o);
	ok = ok && stream_figures(x, sp, o);
	if (x->in->replicas && !filtered(x))
		ok = ok && replicas_figures(x->d, &x->d->reqs[sp->r0], sp->r1 - sp->r0,
					    &x->d->events[sp->e0], sp->e1 - sp->e0,
					    x->in->replicas, sp->from, sp->to, sp->origin, o);
	if (sp->phase)
		ok = ok && window_figures(x, sp, o);
	if (!filtered(x))
		ok = ok && class_figures(x, sp, o);
	if (!filtered(x) && sp->summary)
		ok = ok && stream_figures_by_name(x, sp, o);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* ---- the summary ---- */

static cJSON *str_or_null(const char *s)
{
	return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *transitions(const struct rundata *d)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	for (i = 0; a && i < d->nevents; i++) {
		const struct run_event *e = &d->events[i];
		cJSON *o = cJSON_CreateObject();
		bool ok = true;

		ok &= json_put(o, "t_ms", cJSON_CreateNumber(e->t_ms));
		ok &= json_put(o, event_keys[EVENT_PROVIDER], cJSON_CreateString(e->provider));
		ok &= json_put(o, event_keys[EVENT_MODEL], str_or_null(e->model));
		ok &= json_put(o, event_keys[EVENT_FROM], cJSON_CreateString(e->from));
		ok &= json_put(o, event_keys[EVENT_TO], cJSON_CreateString(e->to));
		ok &= json_put(o, event_keys[EVENT_REASON], str_or_null(e->reason));
		if (e->replica) {	/* the combined timeline of a replicated setup */
			char name[16];

			snprintf(name, sizeof(name), "r%u", e->replica);
			ok &= json_put(o, event_keys[EVENT_REPLICA], cJSON_CreateString(name));
			ok &= json_put(o, event_keys[EVENT_ORIGIN],
				       cJSON_CreateString(e->origin ? e->origin : "local"));
			if (e->peer)
				ok &= json_put(o, event_keys[EVENT_PEER], cJSON_CreateString(e->peer));
			if (e->via)
				ok &= json_put(o, event_keys[EVENT_VIA], cJSON_CreateString(e->via));
		}
		if (!ok || !cJSON_AddItemToArray(a, o)) {
			cJSON_Delete(o);
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

static cJSON *files_block(const struct rundata *d)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *mock = cJSON_CreateArray();
	bool ok = mock != NULL;
	size_t i;

	for (i = 0; ok && i < d->nmock; i++) {
		cJSON *s = cJSON_CreateString(d->mock_files[i]);

		ok = s && cJSON_AddItemToArray(mock, s);
		if (!ok)
			cJSON_Delete(s);
	}
	ok &= json_put(o, "requests", cJSON_CreateString(REC_REQUESTS_CSV));
	ok &= json_put(o, "mock", mock);
	ok &= json_put(o, "events", d->have_events ? cJSON_CreateString(REC_EVENTS)
					      : cJSON_CreateNull());
	if (d->nreplicas) {
		cJSON *rep = cJSON_CreateArray();
		unsigned k;

		for (k = 1; rep && k <= d->nreplicas; k++) {
			char name[32];

			snprintf(name, sizeof(name), "events-r%u.jsonl", k);
			if (!cJSON_AddItemToArray(rep, cJSON_CreateString(name)))
				ok = false;
		}
		ok &= json_put(o, "replica_events", rep);
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static double window_len(const struct stats_input *in)
{
	return in->window_ms > 0 ? in->window_ms : DEFAULT_WINDOW_MS;
}

int figures_check(const struct stats_input *in, char *err)
{
	size_t i;
	size_t j;

	if (!in->run_dir || !in->primary) {
		snprintf(err, CFG_ERR_LEN, "stats: run_dir and primary are required");
		return -EINVAL;
	}
	if (!isfinite(in->duration_ms) || in->duration_ms <= 0 || !isfinite(in->window_ms) ||
	    in->duration_ms / window_len(in) > MAX_WINDOWS) {
		snprintf(err, CFG_ERR_LEN,
			 "stats: expected duration_ms > 0 and at most %.0f windows, got %g and %g ms",
			 MAX_WINDOWS, in->duration_ms, in->window_ms);
		return -EINVAL;
	}
	for (i = 0; i < in->nwindows; i++) {
		if (!isfinite(in->windows[i]) || !(in->windows[i] > 0) ||
		    in->duration_ms / in->windows[i] > MAX_WINDOWS) {
			snprintf(err, CFG_ERR_LEN, "stats: answered window %zu: expected a length "
				 "above 0 ms and at most %.0f windows, got %g ms", i, MAX_WINDOWS,
				 in->windows[i]);
			return -EINVAL;
		}
	}
	for (i = 0; i < in->nprices; i++) {
		if (!in->prices[i].provider) {
			snprintf(err, CFG_ERR_LEN, "stats: price %zu: expected a provider", i);
			return -EINVAL;
		}
	}
	for (i = 0; i < in->nphases; i++) {
		const struct stats_phase *p = &in->phases[i];

		if (!p->name || !isfinite(p->from_ms) || !isfinite(p->to_ms) ||
		    p->from_ms >= p->to_ms) {
			snprintf(err, CFG_ERR_LEN,
				 "stats: phase %zu: expected a name and from_ms < to_ms", i);
			return -EINVAL;
		}
		for (j = 0; j < i; j++) {
			if (strcmp(in->phases[j].name, p->name) == 0) {
				snprintf(err, CFG_ERR_LEN, "stats: phase \"%.64s\" given twice",
					 p->name);
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* Builds the summary from loaded data. NULL when out of memory. */
static cJSON *summary(struct ctx *x, const struct stats_input *in)
{
	const struct rundata *d = x->d;
	cJSON *o = cJSON_CreateObject();
	cJSON *phases = cJSON_CreateObject();
	cJSON *windows = cJSON_CreateArray();
	double w = window_len(in);
	struct span all;
	bool ok = o && phases && windows;
	size_t i;

	for (i = 0; ok && i < in->nphases; i++) {
		struct span sp = span_of(d, in->phases[i].from_ms, in->phases[i].to_ms);

		sp.phase = true;
		sp.summary = true;
		ok = json_put(phases, in->phases[i].name, figures(x, &sp));
	}
	for (i = 0; ok; i++) {
		double from = (double)i * w;
		double to = (double)(i + 1) * w;
		struct span sp;
		cJSON *f;

		if (from >= in->duration_ms)
			break;
		sp = span_of(d, from, to < in->duration_ms ? to : in->duration_ms);
		f = figures(x, &sp);
		ok = f && cJSON_AddItemToArray(windows, f);
		if (!ok)
			cJSON_Delete(f);
	}
	all = (struct span){ .from = 0, .to = in->duration_ms, .origin = 0,
			     .r1 = d->nreqs, .m1 = d->nmrows, .e1 = d->nevents, .summary = true,
			     .all = true };
	ok &= json_put(o, "primary", cJSON_CreateString(in->primary));
	ok &= json_put(o, "t0_unix_ms", cJSON_CreateNumber((double)in->t0_unix_ms));
	ok &= json_put(o, "duration_ms", cJSON_CreateNumber(in->duration_ms));
	ok &= json_put(o, "window_ms", cJSON_CreateNumber(w));
	ok &= json_put(o, "files", files_block(d));
	ok &= json_put(o, "phases", phases);
	ok &= json_put(o, "windows", windows);
	ok = ok && json_put(o, "totals", figures(x, &all));
	ok = ok && json_put(o, "breaker_transitions", transitions(d));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int figures_summary(struct rundata *d, const struct stats_input *in, cJSON **out)
{
	struct ctx *x = calloc(1, sizeof(*x));
	int rc = -ENOMEM;

	*out = NULL;
	if (!x)
		return -ENOMEM;
	rc = prepare(d, in);
	if (rc) {
		free(x);
		return rc;
	}
	rc = -ENOMEM;
	x->d = d;
	x->in = in;
	x->cls = -1;
	x->lat_ok = malloc((d->nreqs ? d->nreqs : 1) * sizeof(double));
	x->lat_all = malloc((d->nreqs ? d->nreqs : 1) * sizeof(double));
	x->lat_err = malloc((d->nreqs ? d->nreqs : 1) * sizeof(double));
	x->ttft = malloc((d->nreqs ? d->nreqs : 1) * sizeof(double));
	if (!x->lat_ok || !x->lat_all || !x->lat_err || !x->ttft)
		goto out_free_ctx;
	*out = summary(x, in);
	if (*out)
		rc = 0;
out_free_ctx:
	free(x->lat_ok);
	free(x->lat_all);
	free(x->lat_err);
	free(x->ttft);
	free(x);
	return rc;
}
