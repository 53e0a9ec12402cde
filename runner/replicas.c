/*
 * replicas: a replicated gateway setup's figures — the requests that
 * waited out the primary's timeout, per replica; breaker transitions per
 * replica, the spread of their first openings, and overlapping recovery
 * probes (runner/replicas.h).
 */
#include "runner/replicas.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/records.h"

unsigned replicas_of_request(const char *id, unsigned nreplicas)
{
	size_t len = id ? strlen(id) : 0;
	size_t start = len;
	unsigned long long n = 0;
	size_t i;

	while (start > 0 && id[start - 1] >= '0' && id[start - 1] <= '9')
		start--;
	if (!nreplicas || start == len || len - start > 18)
		return 0;
	for (i = start; i < len; i++)
		n = n * 10 + (unsigned long long)(id[i] - '0');
	if (n == 0)
		return 0;
	return (unsigned)((n - 1) % nreplicas) + 1;
}

bool replicas_row_paid_timeout(const struct run_mrow *m, double timeout_ms)
{
	if (!(timeout_ms > 0) || m->check || m->kind != MOCK_KIND_CHAT || m->status != 0)
		return false;
	return m->dur_ms >= REPLICAS_TIMEOUT_SHARE * timeout_ms;
}

void replicas_mark_paid(struct rundata *d, const char *primary, double timeout_ms)
{
	size_t i;

	for (i = 0; i < d->nreqs; i++)
		d->reqs[i].paid_timeout = false;
	for (i = 0; i < d->nmrows; i++) {
		const struct run_mrow *m = &d->mrows[i];

		if (m->req && strcmp(d->mock_providers[m->file], primary) == 0 &&
		    replicas_row_paid_timeout(m, timeout_ms))
			m->req->paid_timeout = true;
	}
}

static bool is_open(const struct run_event *e)
{
	return strcmp(e->to, event_state_name(EVENT_OPEN)) == 0;
}

/* Each replica's first opening in events[0, n) into first[1..nreplicas] (NAN: none). */
static void first_opens(const struct run_event *events, size_t n, unsigned nreplicas,
			double *first)
{
	size_t i;
	unsigned k;

	for (k = 0; k <= nreplicas; k++)
		first[k] = NAN;
	for (i = 0; i < n; i++) {
		k = events[i].replica;
		if (k >= 1 && k <= nreplicas && isnan(first[k]) && is_open(&events[i]))
			first[k] = events[i].t_ms;
	}
}

double replicas_open_spread(const struct run_event *events, size_t n, unsigned nreplicas)
{
	double first[RUNDATA_REPLICAS_MAX + 1];
	double lo = INFINITY;
	double hi = -INFINITY;
	unsigned k;

	if (nreplicas < 1 || nreplicas > RUNDATA_REPLICAS_MAX)
		return NAN;
	first_opens(events, n, nreplicas, first);
	for (k = 1; k <= nreplicas; k++) {
		if (isnan(first[k]))
			return NAN;
		lo = fmin(lo, first[k]);
		hi = fmax(hi, first[k]);
	}
	return hi - lo;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Whether e and f are about one breaker: the same provider and model. */
static bool same_breaker(const struct run_event *e, const struct run_event *f)
{
	return same_str(e->provider, f->provider) && same_str(e->model, f->model);
}

/* Whether e puts its replica's breaker half-open by its own change. */
static bool local_half_open(const struct run_event *e)
{
	return e->replica >= 1 && strcmp(e->to, event_state_name(EVENT_HALF_OPEN)) == 0 &&
	       (!e->origin || strcmp(e->origin, "local") == 0);
}

/* Where the half-open interval starting at all[i] ends: its replica's next change. */
static double half_open_end(const struct run_event *all, size_t nall, size_t i)
{
	size_t j;

	for (j = i + 1; j < nall; j++) {
		if (all[j].replica == all[i].replica && same_breaker(&all[j], &all[i]))
			return all[j].t_ms;
	}
	return INFINITY;
}

size_t replicas_probe_overlaps(const struct run_event *all, size_t nall, double from_ms,
			       double to_ms)
{
	size_t overlaps = 0;
	size_t i, j;

	for (i = 0; i < nall; i++) {
		double end;

		if (!local_half_open(&all[i]) || all[i].t_ms < from_ms || all[i].t_ms >= to_ms)
			continue;
		end = half_open_end(all, nall, i);
		/* Every later start (sorted by time) that begins before this one ends. */
		for (j = i + 1; j < nall && all[j].t_ms < end; j++) {
			if (local_half_open(&all[j]) && all[j].replica != all[i].replica &&
			    same_breaker(&all[j], &all[i]) && all[j].t_ms < to_ms)
				overlaps++;
		}
	}
	return overlaps;
}

static cJSON *num_or_null(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

bool replicas_figures(const struct rundata *d, const struct run_req *reqs, size_t nreqs,
		      const struct run_event *events, size_t nev, unsigned nreplicas,
		      double from_ms, double to_ms, double origin_ms, cJSON *o)
{
	size_t requests[RUNDATA_REPLICAS_MAX + 1] = { 0 };
	size_t paid[RUNDATA_REPLICAS_MAX + 1] = { 0 };
	size_t transitions[RUNDATA_REPLICAS_MAX + 1] = { 0 };
	size_t opens[RUNDATA_REPLICAS_MAX + 1] = { 0 };
	double first[RUNDATA_REPLICAS_MAX + 1];
	cJSON *per = cJSON_CreateObject();
	size_t total_paid = 0;
	bool ok = per != NULL;
	size_t i;
	unsigned k;

	if (nreplicas > RUNDATA_REPLICAS_MAX)
		nreplicas = RUNDATA_REPLICAS_MAX;
	for (i = 0; i < nreqs; i++) {
		k = replicas_of_request(reqs[i].id, nreplicas);
		requests[k]++;
		paid[k] += reqs[i].paid_timeout;
		total_paid += reqs[i].paid_timeout;
	}
	for (i = 0; i < nev; i++) {
		k = events[i].replica <= nreplicas ? events[i].replica : 0;
		transitions[k]++;
		opens[k] += is_open(&events[i]);
	}
	first_opens(events, nev, nreplicas, first);
	for (k = 1; ok && k <= nreplicas; k++) {
		cJSON *r = cJSON_CreateObject();
		char name[16];

		snprintf(name, sizeof(name), "r%u", k);
		ok = json_put(per, name, r);
		ok &= json_put(r, "requests", cJSON_CreateNumber((double)requests[k]));
		ok &= json_put(r, "timeout_paid", cJSON_CreateNumber((double)paid[k]));
		ok &= json_put(r, "transitions", cJSON_CreateNumber((double)transitions[k]));
		ok &= json_put(r, "opens", cJSON_CreateNumber((double)opens[k]));
		ok &= json_put(r, "time_to_open_ms", num_or_null(first[k] - origin_ms));
	}
	ok &= json_put(o, "timeout_paid", cJSON_CreateNumber((double)total_paid));
	ok &= json_put(o, "replica_open_spread_ms",
		       num_or_null(replicas_open_spread(events, nev, nreplicas)));
	ok &= json_put(o, "probe_overlaps",
		       cJSON_CreateNumber((double)replicas_probe_overlaps(d->events, d->nevents,
									  from_ms, to_ms)));
	if (ok)
		return json_put(o, "replicas", per);
	cJSON_Delete(per);
	return false;
}
