/*
 * bill: pricing an attempt's tokens and adding them up.
 */
#include "gateway/bill.h"

#include <stdio.h>

#include "common/numfmt.h"
#include "gateway/greq.h"

double bill_price(const struct gw_provider *p, int64_t in, int64_t out)
{
	return (double)in / 1000 * p->price_in_per_1k + (double)out / 1000 * p->price_out_per_1k;
}

int64_t bill_prompt_estimate(size_t bytes)
{
	return (int64_t)((bytes + 3) / 4);
}

bool bill_discard_charged(long status, bool stopped, bool connected)
{
	if (status ? status < 200 || status > 299 : !stopped)
		return false;
	return connected;
}

void bill_tokens(struct greq *g, const struct leg *l, int64_t in, int64_t out, bool discarded)
{
	const struct gw_target *t = l->p->t;
	const struct gw_provider *p = t->prov;
	double usd = bill_price(p, in, out);

	cost_table_add(g->gw->costs, t->provider, g->bill.tenant, g->bill.feature, in, out, usd);
	g->bill.cost_usd += usd;
	g->bill.billed = true;
	if (discarded)
		g->gw->pstats[t->provider].dup_usd += usd;
}

void bill_discarded(struct greq *g, const struct leg *l, bool stopped)
{
	curl_off_t connect_us = 0;
	curl_off_t pre_us = 0;
	long status = 0;

	curl_easy_getinfo(l->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(l->easy, CURLINFO_CONNECT_TIME_T, &connect_us);
	curl_easy_getinfo(l->easy, CURLINFO_PRETRANSFER_TIME_T, &pre_us);
	if (!bill_discard_charged(status, stopped, connect_us > 0 || pre_us > 0))
		return;
	bill_tokens(g, l, g->bill.est_tokens_in, (int64_t)l->relay.content_chunks, true);
}

void bill_cost_text(const struct greq *g, char *out, size_t len)
{
	/* No printf for the common case: this is written on every answer. */
	if (len < NUMFMT_LEN || !numfmt_fixed(out, g->bill.cost_usd, 9))
		snprintf(out, len, "%.9f", g->bill.cost_usd);
}
