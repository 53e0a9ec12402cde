/*
 * contract: broken answers, sent, caught and reaching the client, per
 * provider (runner/contract.h).
 */
#include "runner/contract.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/*
 * The provider an ok request's answer came from: its column, else the
 * answering row's (runner/attrib.h), else the primary.
 */
static const char *answered_by(const struct run_req *r, const char *primary)
{
	return r->answered_by ? r->answered_by : primary;
}

void contract_mark_broken(struct rundata *d, const char *primary)
{
	size_t i;

	for (i = 0; i < d->nreqs; i++)
		d->reqs[i].broken = false;
	/* Rows by time: the last row of a request at its provider decides. */
	for (i = 0; i < d->nmrows; i++) {
		const struct run_mrow *m = &d->mrows[i];
		struct run_req *r = m->req;

		if (!r || m->check || m->kind != MOCK_KIND_CHAT || r->outcome != OUT_OK ||
		    r->degraded != RUN_NOT_DEGRADED ||
		    strcmp(answered_by(r, primary), d->mock_providers[m->file]) != 0)
			continue;
		r->broken = m->bad_content;
	}
}

/* Whether r is one of the range's requests that count. */
static bool in_range(const struct rundata *d, const struct contract_range *rg,
		     const struct run_req *r)
{
	return r >= &d->reqs[rg->r0] && r < &d->reqs[rg->r1] &&
	       (!rg->counted || rg->counted(rg->arg, r));
}

/* A provider's counts. */
struct tally {
	double violations;
	double reached;
	double gateway;
};

/* The tally of provider name in t (names[0, *n)), added when new; NULL: no room. */
static struct tally *tally_of(const char **names, struct tally *t, size_t *n, size_t cap,
			      const char *name)
{
	size_t i;

	for (i = 0; i < *n; i++) {
		if (strcmp(names[i], name) == 0)
			return &t[i];
	}
	if (*n == cap)
		return NULL;
	names[*n] = name;
	memset(&t[*n], 0, sizeof(t[*n]));
	return &t[(*n)++];
}

/* A count, or null when the run has no contract_violation line. */
static cJSON *gateway_count(const struct rundata *d, double v)
{
	return d->nviolations ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static bool put_counts(const struct rundata *d, cJSON *o, const struct tally *t)
{
	bool ok = true;

	ok &= json_put(o, "violations", cJSON_CreateNumber(t->violations));
	ok &= json_put(o, "reached_clients", cJSON_CreateNumber(t->reached));
	ok &= json_put(o, "caught", cJSON_CreateNumber(t->violations - t->reached));
	ok &= json_put(o, "gateway_violations", gateway_count(d, t->gateway));
	return ok;
}

bool contract_figures(const struct rundata *d, const struct contract_range *rg, cJSON *o)
{
	size_t cap = d->nmock + d->nviolations + 1;
	const char **names = calloc(cap, sizeof(*names));
	struct tally *t = calloc(cap, sizeof(*t));
	struct tally all = { 0 };
	cJSON *c = cJSON_CreateObject();
	cJSON *by = cJSON_CreateObject();
	size_t n = 0;
	bool ok = names && t && c && by;
	size_t i;

	for (i = 0; ok && i < d->nmock; i++)
		tally_of(names, t, &n, cap, d->mock_providers[i]);
	for (i = 0; ok && i < d->nmrows; i++) {
		const struct run_mrow *m = &d->mrows[i];

		if (!m->bad_content || m->check || m->kind != MOCK_KIND_CHAT || !m->req ||
		    !in_range(d, rg, m->req))
			continue;
		t[m->file].violations++;	/* the mock logs' tallies come first, in order */
		all.violations++;
	}
	for (i = rg->r0; ok && i < rg->r1; i++) {
		const struct run_req *r = &d->reqs[i];
		struct tally *p;

		if (!r->broken || (rg->counted && !rg->counted(rg->arg, r)))
			continue;
		p = tally_of(names, t, &n, cap, answered_by(r, rg->primary));
		if (p)
			p->reached++;
		all.reached++;
	}
	for (i = 0; ok && i < d->nviolations; i++) {
		const struct run_violation *v = &d->violations[i];
		struct tally *p;

		if (v->req ? !in_range(d, rg, v->req)
			   : rg->counted || v->t_ms < rg->from_ms || v->t_ms >= rg->to_ms)
			continue;
		p = tally_of(names, t, &n, cap, v->provider);
		if (p)
			p->gateway++;
		all.gateway++;
	}
	for (i = 0; ok && i < n; i++) {
		cJSON *one = cJSON_CreateObject();

		ok = json_put(by, names[i], one) && put_counts(d, one, &t[i]);
	}
	ok = ok && put_counts(d, c, &all);
	if (ok) {
		ok = json_put(c, "by_provider", by);	/* by is c's (or freed) either way */
		by = NULL;
	}
	if (ok)
		ok = json_put(o, "contract", c);	/* c is o's (or freed) either way */
	else
		cJSON_Delete(c);
	cJSON_Delete(by);
	free(names);
	free(t);
	return ok;
}
