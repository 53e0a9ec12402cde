/*
 * admin: the gateway's views of itself — the aliases (/v1/models), every
 * breaker (/admin/breakers, JSON) and the counters (/metrics, Prometheus
 * text format 0.0.4) — built from the routing tables and counters as they
 * are at the call.
 */
#include <errno.h>
#include <math.h>

#include "gateway/admin.h"

#include "gateway/gateway.h"
#include "gateway/probe.h"
#include "gateway/shared.h"
#include "common/json.h"

int admin_models(const struct gateway *gw, struct buf *b)
{
	size_t i;
	int rc = buf_puts(b, "{\"object\":\"list\",\"data\":[");

	for (i = 0; i < gw->router.nroutes; i++) {
		rc |= buf_puts(b, i ? ",{\"id\":" : "{\"id\":");
		rc |= json_escape(b, gw->router.routes[i].alias->name);
		rc |= buf_puts(b, ",\"object\":\"model\",\"created\":0,\"owned_by\":\"faultline\"}");
	}
	rc |= buf_puts(b, "]}");
	return rc ? -ENOMEM : 0;
}

static int put_num(struct buf *b, const char *key, double v)
{
	int rc = buf_printf(b, ",\"%s\":", key);

	if (!isfinite(v))
		return rc | buf_puts(b, "null");
	return rc | buf_put_fixed(b, v, 3);
}

static int put_counts(struct buf *b, const char *key, const struct breaker_counts *c,
		      bool rejected)
{
	int rc = buf_printf(b, ",\"%s\":{\"requests\":%llu,\"failures\":%llu,\"slow\":%llu,"
			    "\"late\":%llu", key, (unsigned long long)c->requests,
			    (unsigned long long)c->failures, (unsigned long long)c->slow,
			    (unsigned long long)c->late);

	if (rejected)
		rc |= buf_printf(b, ",\"rejected\":%llu", (unsigned long long)c->rejected);
	return rc | buf_puts(b, "}");
}

int admin_breakers(const struct gateway *gw, struct buf *b, double now_ms)
{
	size_t i;
	int rc = buf_puts(b, "{\"breakers\":[");

	for (i = 0; i < gw->router.ntargets; i++) {
		const struct gw_target *t = &gw->router.targets[i];
		const struct breaker *br = &t->br;
		struct breaker_counts w = breaker_window(br, now_ms);

		rc |= buf_puts(b, i ? ",{\"provider\":" : "{\"provider\":");
		rc |= json_escape(b, t->prov->name);
		rc |= buf_puts(b, ",\"model\":");
		rc |= json_escape(b, t->model);
		rc |= buf_printf(b, ",\"state\":\"%s\",\"enabled\":%s", breaker_state_name(br->state),
				 br->cfg.enabled ? "true" : "false");
		rc |= put_num(b, "time_in_state_ms", now_ms - br->since_ms);
		rc |= buf_printf(b, ",\"consecutive_failures\":%llu,\"trips\":%u",
				 (unsigned long long)br->consecutive_failures, br->trips);
		rc |= put_num(b, "cooldown_ms", br->trips ? br->cooldown_ms : NAN);
		rc |= put_num(b, "open_remaining_ms",
			      br->state == BREAKER_OPEN ? fmax(0, br->open_until_ms - now_ms) : NAN);
		rc |= buf_printf(b, ",\"probes_in_flight\":%u,\"probes_succeeded\":%u",
				 br->probes_in_flight, br->probes_succeeded);
		rc |= put_counts(b, "totals", &br->totals, true);
		rc |= put_counts(b, "window", &w, false);
		rc |= buf_puts(b, "}");
	}
	rc |= buf_puts(b, "]}");
	return rc ? -ENOMEM : 0;
}

/* "# HELP" and "# TYPE" lines of a metric. */
static int family(struct buf *b, const char *name, const char *type, const char *help)
{
	return buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* `{provider="P",model="M"` (no closing brace: more labels may follow). */
static int target_labels(struct buf *b, const struct gw_target *t)
{
	int rc = buf_puts(b, "{provider=");

	rc |= metrics_label(b, t->prov->name);
	rc |= buf_puts(b, ",model=");
	return rc | metrics_label(b, t->model);
}

static int requests_of(struct buf *b, const char *alias, const struct status_counts *c)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < c->used; i++) {
		rc |= buf_puts(b, "faultline_requests_total{alias=");
		rc |= metrics_label(b, alias);
		rc |= buf_printf(b, ",status=\"%d\"} %llu\n", c->status[i],
				 (unsigned long long)c->n[i]);
	}
	if (c->other) {
		rc |= buf_puts(b, "faultline_requests_total{alias=");
		rc |= metrics_label(b, alias);
		rc |= buf_printf(b, ",status=\"other\"} %llu\n", (unsigned long long)c->other);
	}
	return rc;
}

/* The _bucket, _sum and _count lines of one histogram h, labelled key="value". */
static int histogram_of(struct buf *b, const char *name, const char *key, const char *value,
			const struct latency_hist *h)
{
	uint64_t cum = 0;
	size_t k;
	int rc = 0;

	for (k = 0; k <= LATENCY_BUCKETS; k++) {
		cum += h->n[k];
		rc |= buf_printf(b, "%s_bucket{%s=", name, key);
		rc |= metrics_label(b, value);
		if (k < LATENCY_BUCKETS)
			rc |= buf_printf(b, ",le=\"%g\"} %llu\n", metrics_latency_bounds[k],
					 (unsigned long long)cum);
		else
			rc |= buf_printf(b, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
	}
	rc |= buf_printf(b, "%s_sum{%s=", name, key);
	rc |= metrics_label(b, value);
	rc |= buf_printf(b, "} %.6f\n", h->sum_s);
	rc |= buf_printf(b, "%s_count{%s=", name, key);
	rc |= metrics_label(b, value);
	return rc | buf_printf(b, "} %llu\n", (unsigned long long)h->count);
}

/* The histogram of one provider. */
static int histogram(struct buf *b, const char *name, const char *provider,
		     const struct latency_hist *h)
{
	return histogram_of(b, name, "provider", provider, h);
}

static int attempts_and_latency(struct buf *b, const struct gateway *gw)
{
	const struct gw_config *cfg = gw->cfg;
	size_t i;
	size_t k;
	int rc = family(b, "faultline_attempts_total", "counter",
			"Upstream attempts by provider and how they ended.");

	for (i = 0; i < cfg->nproviders; i++) {
		for (k = 0; k < GW_NOUTCOMES; k++) {
			rc |= buf_puts(b, "faultline_attempts_total{provider=");
			rc |= metrics_label(b, cfg->providers[i].name);
			rc |= buf_printf(b, ",outcome=\"%s\"} %llu\n",
					 metrics_outcome_name((enum gw_outcome)k),
					 (unsigned long long)gw->pstats[i].outcomes[k]);
		}
	}
	rc |= family(b, "faultline_upstream_latency_seconds", "histogram",
		     "Duration of upstream attempts.");
	for (i = 0; i < cfg->nproviders; i++)
		rc |= histogram(b, "faultline_upstream_latency_seconds", cfg->providers[i].name,
				&gw->pstats[i].latency);
	rc |= family(b, "faultline_stream_ttft_seconds", "histogram",
		     "Time from a streaming attempt's start to its first content.");
	for (i = 0; i < cfg->nproviders; i++)
		rc |= histogram(b, "faultline_stream_ttft_seconds", cfg->providers[i].name,
				&gw->pstats[i].ttft);
	rc |= family(b, "faultline_stream_stalls_total", "counter",
		     "Committed streams ended by the stall timeout.");
	for (i = 0; i < cfg->nproviders; i++) {
		rc |= buf_puts(b, "faultline_stream_stalls_total{provider=");
		rc |= metrics_label(b, cfg->providers[i].name);
		rc |= buf_printf(b, "} %llu\n", (unsigned long long)gw->pstats[i].stalls);
	}
	rc |= family(b, "faultline_stream_truncations_total", "counter",
		     "Committed streams that broke other than by a stall.");
	for (i = 0; i < cfg->nproviders; i++) {
		for (k = 0; k < TRUNC_KINDS; k++) {
			rc |= buf_puts(b, "faultline_stream_truncations_total{provider=");
			rc |= metrics_label(b, cfg->providers[i].name);
			rc |= buf_printf(b, ",reason=\"%s\"} %llu\n",
					 metrics_trunc_name((enum stream_trunc)k),
					 (unsigned long long)gw->pstats[i].truncations[k]);
		}
	}
	return rc;
}

static int breakers(struct buf *b, const struct gateway *gw)
{
	const struct router *r = &gw->router;
	size_t i;
	int from;
	int to;
	int rc = family(b, "faultline_breaker_state", "gauge",
			"Circuit breaker state: 0 closed, 1 open, 2 half-open.");

	for (i = 0; i < r->ntargets; i++) {
		rc |= buf_puts(b, "faultline_breaker_state");
		rc |= target_labels(b, &r->targets[i]);
		rc |= buf_printf(b, "} %d\n", (int)r->targets[i].br.state);
	}
	rc |= family(b, "faultline_breaker_transitions_total", "counter",
		     "Circuit breaker state changes.");
	for (i = 0; i < r->ntargets; i++) {
		for (from = 0; from < 3; from++) {
			for (to = 0; to < 3; to++) {
				if (from == to)
					continue;
				rc |= buf_puts(b, "faultline_breaker_transitions_total");
				rc |= target_labels(b, &r->targets[i]);
				rc |= buf_printf(b, ",from=\"%s\",to=\"%s\"} %llu\n",
						 breaker_state_name((enum breaker_state)from),
						 breaker_state_name((enum breaker_state)to),
						 (unsigned long long)r->targets[i].transitions[from][to]);
			}
		}
	}
	rc |= family(b, "faultline_breaker_rejections_total", "counter",
		     "Requests that skipped a target because its breaker was open.");
	for (i = 0; i < r->ntargets; i++) {
		rc |= buf_puts(b, "faultline_breaker_rejections_total");
		rc |= target_labels(b, &r->targets[i]);
		rc |= buf_printf(b, "} %llu\n", (unsigned long long)r->targets[i].br.totals.rejected);
	}
	return rc;
}

/* `{provider="P",tenant="T",feature="F"` of a cost row (no closing brace). */
static int cost_labels(struct buf *b, const struct gateway *gw, const struct cost_row *r)
{
	int rc = buf_puts(b, "{provider=");

	rc |= metrics_label(b, r->provider == COST_OTHER ? "other"
							  : gw->cfg->providers[r->provider].name);
	rc |= buf_puts(b, ",tenant=");
	rc |= metrics_label(b, r->tenant);
	rc |= buf_puts(b, ",feature=");
	return rc | metrics_label(b, r->feature);
}

/* The shared breakers (shared_state redis, or a workers gateway's hub); nothing when not shared. */
static int shared_state(struct buf *b, const struct gateway *gw)
{
	const struct shared_counts c = gw->shared ? shared_counts(gw->shared)
						  : (struct shared_counts){ 0 };
	const struct {
		const char *name;
		const char *help;
		uint64_t v;
	} counters[] = {
		{ "faultline_shared_published_total", "Own breaker changes published to the fleet.",
		  c.published },
		{ "faultline_shared_received_total", "Other replicas' breaker changes received.",
		  c.received },
		{ "faultline_shared_applied_total", "Received changes that changed a breaker here.",
		  c.applied },
		{ "faultline_shared_stale_total",
		  "Received changes older than the breaker's state, ignored.", c.stale },
		{ "faultline_shared_reconnects_total", "Times the link to the store was lost.",
		  c.downs },
		{ "faultline_shared_dropped_total",
		  "Redis commands not sent because the link was down.", c.dropped },
	};
	size_t i;
	int rc;

	if (!gw->shared)
		return 0;
	rc = family(b, "faultline_shared_state_up", "gauge",
		    "1 while the breakers are shared (through Redis: connected, subscribed, "
		    "synced; or the workers' hub); 0 while each is this process's own.");
	rc |= buf_printf(b, "faultline_shared_state_up %d\n", c.up ? 1 : 0);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		rc |= family(b, counters[i].name, "counter", counters[i].help);
		rc |= buf_printf(b, "%s %llu\n", counters[i].name, (unsigned long long)counters[i].v);
	}
	rc |= family(b, "faultline_shared_probe_locks_total", "counter",
		     "Probe locks tried: won (this replica probes) or lost (another does).");
	rc |= buf_printf(b, "faultline_shared_probe_locks_total{result=\"won\"} %llu\n"
			 "faultline_shared_probe_locks_total{result=\"lost\"} %llu\n",
			 (unsigned long long)c.locks_won, (unsigned long long)c.locks_lost);
	return rc;
}

static int health(struct buf *b, const struct gateway *gw)
{
	const struct gw_config *cfg = gw->cfg;
	size_t i;
	int rc = family(b, "faultline_provider_healthy", "gauge",
			"Active health check verdict: 1 healthy, 0 not (providers with checks).");

	for (i = 0; i < gw->nprobes; i++) {
		rc |= buf_puts(b, "faultline_provider_healthy{provider=");
		rc |= metrics_label(b, cfg->providers[probe_provider(gw->probes[i])].name);
		rc |= buf_printf(b, "} %d\n", probe_healthy(gw->probes[i]) ? 1 : 0);
	}
	rc |= family(b, "faultline_health_checks_total", "counter",
		     "Active health checks by provider and result.");
	for (i = 0; i < gw->nprobes; i++) {
		size_t prov = probe_provider(gw->probes[i]);

		rc |= buf_puts(b, "faultline_health_checks_total{provider=");
		rc |= metrics_label(b, cfg->providers[prov].name);
		rc |= buf_printf(b, ",result=\"pass\"} %llu\n",
				 (unsigned long long)gw->pstats[prov].health_checks[1]);
		rc |= buf_puts(b, "faultline_health_checks_total{provider=");
		rc |= metrics_label(b, cfg->providers[prov].name);
		rc |= buf_printf(b, ",result=\"fail\"} %llu\n",
				 (unsigned long long)gw->pstats[prov].health_checks[0]);
	}
	return rc;
}

static int spend(struct buf *b, const struct gateway *gw)
{
	const struct cost_table *t = gw->costs;
	size_t i;
	int rc = family(b, "faultline_cost_usd_total", "counter",
			"Spend on attempts, by provider, tenant and feature (price table x usage).");

	for (i = 0; i < t->used; i++) {
		rc |= buf_puts(b, "faultline_cost_usd_total");
		rc |= cost_labels(b, gw, &t->row[i]);
		rc |= buf_printf(b, "} %.9f\n", t->row[i].usd);
	}
	rc |= family(b, "faultline_duplicate_cost_usd_total", "counter",
		     "Spend on answers that were discarded (hedges and attempts that lost or broke).");
	for (i = 0; i < gw->cfg->nproviders; i++) {
		rc |= buf_puts(b, "faultline_duplicate_cost_usd_total{provider=");
		rc |= metrics_label(b, gw->cfg->providers[i].name);
		rc |= buf_printf(b, "} %.9f\n", gw->pstats[i].dup_usd);
	}
	rc |= family(b, "faultline_tokens_total", "counter",
		     "Tokens billed, by provider, tenant, feature and direction.");
	for (i = 0; i < t->used; i++) {
		rc |= buf_puts(b, "faultline_tokens_total");
		rc |= cost_labels(b, gw, &t->row[i]);
		rc |= buf_printf(b, ",direction=\"input\"} %llu\n",
				 (unsigned long long)t->row[i].tokens_in);
		rc |= buf_puts(b, "faultline_tokens_total");
		rc |= cost_labels(b, gw, &t->row[i]);
		rc |= buf_printf(b, ",direction=\"output\"} %llu\n",
				 (unsigned long long)t->row[i].tokens_out);
	}
	return rc;
}

static const char *const hedge_event_names[HEDGE_NEVENTS] = { "started", "won", "cancelled" };
static const char *const queue_result_names[QUEUE_NRESULTS] = {
	"queued", "dequeued", "full", "expired", "left",
};

/* `NAME{alias="A"` (no closing brace). */
static int alias_metric(struct buf *b, const char *name, const struct gw_route *rt)
{
	int rc = buf_printf(b, "%s{alias=", name);

	return rc | metrics_label(b, rt->alias->name);
}

/* Hedges, the budget and the batch queues, per alias. */
static int routing(struct buf *b, const struct gateway *gw)
{
	const struct router *r = &gw->router;
	size_t i;
	size_t k;
	int rc = family(b, "faultline_hedges_total", "counter",
			"Hedge attempts started, hedges that won, attempts cancelled as losers.");

	for (i = 0; i < r->nroutes; i++) {
		for (k = 0; k < HEDGE_NEVENTS; k++) {
			rc |= alias_metric(b, "faultline_hedges_total", &r->routes[i]);
			rc |= buf_printf(b, ",event=\"%s\"} %llu\n", hedge_event_names[k],
					 (unsigned long long)r->routes[i].hedges[k]);
		}
	}
	rc |= family(b, "faultline_budget_exhausted_total", "counter",
		     "Retries and hedges not made for want of a budget token.");
	for (i = 0; i < r->nroutes; i++) {
		for (k = 0; k < 2; k++) {
			rc |= alias_metric(b, "faultline_budget_exhausted_total", &r->routes[i]);
			rc |= buf_printf(b, ",kind=\"%s\"} %llu\n", k ? "hedge" : "retry",
					 (unsigned long long)r->routes[i].exhausted[k]);
		}
	}
	rc |= family(b, "faultline_batch_queue_depth", "gauge", "Batch requests waiting.");
	for (i = 0; i < r->nroutes; i++) {
		rc |= alias_metric(b, "faultline_batch_queue_depth", &r->routes[i]);
		rc |= buf_printf(b, "} %zu\n", r->routes[i].waiting.len);
	}
	rc |= family(b, "faultline_batch_queue_total", "counter",
		     "Batch requests queued, dequeued, refused as full, expired, or left.");
	for (i = 0; i < r->nroutes; i++) {
		for (k = 0; k < QUEUE_NRESULTS; k++) {
			rc |= alias_metric(b, "faultline_batch_queue_total", &r->routes[i]);
			rc |= buf_printf(b, ",result=\"%s\"} %llu\n", queue_result_names[k],
					 (unsigned long long)r->routes[i].queue[k]);
		}
	}
	rc |= family(b, "faultline_batch_queue_wait_seconds", "histogram",
		     "Waits of dequeued batch requests.");
	for (i = 0; i < r->nroutes; i++)
		rc |= histogram_of(b, "faultline_batch_queue_wait_seconds", "alias",
				   r->routes[i].alias->name, &r->routes[i].qwait);
	return rc;
}

/* Degraded answers and the answer caches, per alias (gateway/degraded.h). */
static int degraded(struct buf *b, const struct gateway *gw)
{
	const struct router *r = &gw->router;
	const struct degraded *d = &gw->degraded;
	size_t i;
	int k;
	int rc = family(b, "faultline_degraded_answers_total", "counter",
			"Requests nothing healthy could answer that got the alias's degraded "
			"answer instead of the error, by mode.");

	for (i = 0; i < d->nroutes; i++) {
		for (k = 0; k < DEGRADED_COUNT; k++) {
			rc |= alias_metric(b, "faultline_degraded_answers_total", &r->routes[i]);
			rc |= buf_printf(b, ",mode=\"%s\"} %llu\n",
					 req_degraded_name((enum req_degraded)k),
					 (unsigned long long)d->routes[i].answers[k]);
		}
	}
	rc |= family(b, "faultline_degraded_cache_misses_total", "counter",
		     "Requests of a cache alias nothing healthy could answer and the cache "
		     "had no fresh answer for: they got the error.");
	for (i = 0; i < d->nroutes; i++) {
		if (!d->routes[i].has_cache)
			continue;
		rc |= alias_metric(b, "faultline_degraded_cache_misses_total", &r->routes[i]);
		rc |= buf_printf(b, "} %llu\n", (unsigned long long)d->routes[i].cache_misses);
	}
	rc |= family(b, "faultline_answer_cache_entries", "gauge",
		     "Answers held by a cache alias's answer cache (max_entries bounds it).");
	for (i = 0; i < d->nroutes; i++) {
		if (!d->routes[i].has_cache)
			continue;
		rc |= alias_metric(b, "faultline_answer_cache_entries", &r->routes[i]);
		rc |= buf_printf(b, "} %zu\n", d->routes[i].cache.entries);
	}
	rc |= family(b, "faultline_answer_cache_bytes", "gauge",
		     "Bytes the answer cache holds: keys, answers and 64 per entry "
		     "(max_bytes bounds it).");
	for (i = 0; i < d->nroutes; i++) {
		if (!d->routes[i].has_cache)
			continue;
		rc |= alias_metric(b, "faultline_answer_cache_bytes", &r->routes[i]);
		rc |= buf_printf(b, "} %zu\n", d->routes[i].cache.bytes);
	}
	rc |= family(b, "faultline_answer_cache_dropped_total", "counter",
		     "Answers the cache let go: evicted by a bound, expired, or too big to keep.");
	for (i = 0; i < d->nroutes; i++) {
		const struct answer_cache_stats *s = &d->routes[i].cache.stats;
		const struct {
			const char *why;
			uint64_t n;
		} rows[] = { { "evicted", s->evictions }, { "expired", s->expired },
			     { "too_big", s->too_big } };

		if (!d->routes[i].has_cache)
			continue;
		for (k = 0; k < 3; k++) {
			rc |= alias_metric(b, "faultline_answer_cache_dropped_total", &r->routes[i]);
			rc |= buf_printf(b, ",reason=\"%s\"} %llu\n", rows[k].why,
					 (unsigned long long)rows[k].n);
		}
	}
	return rc;
}

int admin_metrics(const struct gateway *gw, struct buf *b, double now_ms)
{
	size_t i;
	int rc;

	(void)now_ms;
	rc = family(b, "faultline_requests_total", "counter",
		    "Chat completion requests answered, by alias and status.");
	for (i = 0; i < gw->router.nroutes; i++)
		rc |= requests_of(b, gw->router.routes[i].alias->name, &gw->router.routes[i].requests);
	rc |= requests_of(b, "", &gw->unrouted);
	rc |= family(b, "faultline_requests_in_flight", "gauge",
		     "Chat completion requests being handled.");
	rc |= buf_printf(b, "faultline_requests_in_flight %llu\n",
			 (unsigned long long)gw->in_flight);
	rc |= family(b, "faultline_streams_in_flight", "gauge",
		     "Committed streams still being relayed.");
	rc |= buf_printf(b, "faultline_streams_in_flight %llu\n",
			 (unsigned long long)gw->streams_in_flight);
	rc |= family(b, "faultline_connections_rejected_total", "counter",
		     "Client connections closed at once because max_connections were open.");
	rc |= buf_printf(b, "faultline_connections_rejected_total %llu\n",
			 (unsigned long long)(gw->srv ? http_server_rejected(gw->srv) : 0));
	rc |= family(b, "faultline_gateway_overloaded_total", "counter",
		     "Upstream attempts and health checks that failed for want of the gateway's "
		     "own resources (descriptors, memory, the body budget).");
	rc |= buf_printf(b, "faultline_gateway_overloaded_total %llu\n",
			 (unsigned long long)gw->overloaded);
	rc |= family(b, "faultline_upstream_body_bytes", "gauge",
		     "Bytes of upstream answers buffered now (upstream_body_budget_bytes bounds it).");
	rc |= buf_printf(b, "faultline_upstream_body_bytes %zu\n", gw->body_bytes);
	rc |= family(b, "faultline_auth_failures_total", "counter",
		     "Requests refused for want of a client key: missing, or invalid.");
	for (i = AUTH_MISSING; i < AUTH_NVERDICTS; i++)
		rc |= buf_printf(b, "faultline_auth_failures_total{reason=\"%s\"} %llu\n",
				 auth_verdict_name((enum auth_verdict)i),
				 (unsigned long long)gw->auth_failures[i]);
	rc |= attempts_and_latency(b, gw);
	rc |= breakers(b, gw);
	rc |= health(b, gw);
	rc |= shared_state(b, gw);
	rc |= spend(b, gw);
	rc |= routing(b, gw);
	rc |= degraded(b, gw);
	return rc ? -ENOMEM : 0;
}
