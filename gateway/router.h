/*
 * router: the gateway's routing tables — one target per distinct provider +
 * upstream model, each with its circuit breaker (aliases that share a
 * target share its breaker), and one route per alias listing its targets
 * in order — and the pure choices made over them.
 */
#ifndef FAULTLINE_GATEWAY_ROUTER_H
#define FAULTLINE_GATEWAY_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/list.h"
#include "common/records.h"
#include "gateway/breaker.h"
#include "gateway/budget.h"
#include "gateway/config.h"
#include "gateway/health.h"
#include "gateway/hedge.h"
#include "gateway/metrics.h"

struct gw_target {
	const struct gw_provider *prov;
	size_t provider;		/* index of prov in the config */
	const char *model;		/* upstream model name (the config's) */
	struct breaker br;
	uint64_t transitions[3][3];	/* [from][to] state changes, another's applied too */
	uint64_t own_transitions[3][3];	/* of which this process's own (no origin) */
	struct lat_ring lat;		/* recent successes' latencies, for adaptive hedging */
	bool failed_slow;		/* its last failure ran out of time (a timeout, a hang) */
};

/* What happened to an alias's batch requests, for /metrics. */
enum queue_result {
	QUEUE_QUEUED,
	QUEUE_DEQUEUED,
	QUEUE_FULL,
	QUEUE_EXPIRED,
	QUEUE_LEFT,
	QUEUE_NRESULTS,
};

/* Hedging's counts, for /metrics. */
enum hedge_event {
	HEDGE_STARTED,
	HEDGE_WON,
	HEDGE_CANCELLED,
	HEDGE_NEVENTS,
};

struct gw_route {
	const struct gw_alias *alias;
	struct gw_target **targets;	/* in the chain's order */
	size_t ntargets;
	struct status_counts requests;	/* answers by status */
	struct budget budget;		/* retries and hedges */
	uint64_t hedges[HEDGE_NEVENTS];
	uint64_t exhausted[2];		/* budget ran out: [0] a retry, [1] a hedge */
	/* The batch queue: waiting requests (struct policy_state), oldest first. */
	struct list waiting;
	unsigned qrunning;		/* dequeued requests still in progress */
	uint64_t queue[QUEUE_NRESULTS];
	struct latency_hist qwait;	/* waits of dequeued requests */
};

/*
 * Where a breaker change came from when it was not this process's own
 * evidence: another replica's change (gateway/shared.h), which replica,
 * and how it was heard ("pubsub": its message; "sync": the state stored
 * in Redis, read on connecting). NULL origin: this replica's own.
 */
struct change_origin {
	const char *peer;
	const char *via;
};

/*
 * Someone told of every breaker state change (router_listen): the
 * gateway's events file and log, the batch queues' wake-up, the replicas'
 * shared state. The listener owns this struct; the router links it.
 */
struct router_listener {
	struct list_node link;
	void (*on_change)(void *arg, struct gw_target *t, const struct breaker_change *chg,
			  const struct change_origin *origin);
	void *arg;
};

struct router {
	struct gw_target *targets;
	size_t ntargets;
	struct gw_route *routes;
	size_t nroutes;
	struct list listeners;		/* struct router_listener, in the order registered */
	uint64_t breaker_gen;		/* breaker state changes so far */
	size_t queued;			/* batch requests waiting, every route */
};

/*
 * Builds the tables for cfg (which must outlive the router), every breaker
 * closed at now_ms with its provider's settings. Returns 0 or -ENOMEM.
 */
int router_init(struct router *r, const struct gw_config *cfg, double now_ms);

/*
 * Registers l (which must stay put until router_free) to be told of every
 * breaker state change, after the listeners registered before it.
 */
void router_listen(struct router *r, struct router_listener *l);

/*
 * Hands one breaker's admit or record result to the router: when its
 * state changed (chg->changed), counts the transition, bumps breaker_gen
 * and tells every listener. Whoever moves a breaker calls this.
 */
void router_breaker_changed(struct router *r, struct gw_target *t,
			    const struct breaker_change *chg);

/* router_breaker_changed for a change another replica made (origin not NULL). */
void router_breaker_changed_from(struct router *r, struct gw_target *t,
				 const struct breaker_change *chg,
				 const struct change_origin *origin);

/*
 * After a health check of provider (ok: it passed; n: the checks in a row
 * that gave this verdict; healthy: the provider's state after it, ch the
 * change, health.h): while it is unhealthy its targets' breakers are
 * opened (a no-op on one open already), and when it has just turned
 * healthy the open ones go half-open — so neither waits for traffic to
 * find out. Each change is told to the listeners.
 */
void router_apply_health(struct router *r, size_t provider, enum health_change ch, bool ok,
			 unsigned n, bool healthy, double now, struct rng *rng);

/*
 * Whether some target of provider has a breaker that is not closed (open
 * or half-open): its health checks then run at the fast cadence
 * (health_suspect).
 */
bool router_provider_suspect(const struct router *r, size_t provider);

/* A breaker state as events.jsonl names it (common/records.h). */
enum event_state router_event_state(enum breaker_state s);

/* Frees the tables. */
void router_free(struct router *r);

/* The route of an alias, or NULL. */
struct gw_route *router_find(const struct router *r, const char *alias);

/* Which targets of a route one request may use. */
struct target_filter {
	const char *only;	/* x-faultline-provider: that provider's alone; NULL: any */
	bool no_anthropic;	/* none of an Anthropic provider's: the request cannot be
				 * translated (docs/dialects.md) */
};

/* Whether request filter f lets target t be used (always true for NULL). */
bool router_target_allowed(const struct gw_target *t, const struct target_filter *f);

/* Whether any target of the route is allowed by f. */
bool router_route_allows(const struct gw_route *rt, const struct target_filter *f);

/*
 * Among the route's targets allowed by f, not in the chain positions
 * of the bit mask tried, and cheap to try — its last failure did not run
 * out of time, and its provider's health checks (pstats, by provider
 * index; NULL: none checked) do not say it is down after a check that
 * timed out — the one whose last failure is the oldest (a target that
 * never failed first; ties go to the earlier one in the chain), or NULL
 * when none is left. *pos gets its position in the chain.
 */
struct gw_target *router_least_recently_failed(const struct gw_route *rt,
					       const struct target_filter *f,
					       const struct provider_stats *pstats,
					       uint32_t tried, size_t *pos);

/*
 * Whether some target of the route allowed by f would be admitted at
 * now_ms — for a batch request, half-open only with no probe in flight,
 * so that deferrable work takes one probe slot at a time and leaves the
 * rest to interactive requests.
 */
bool router_route_may_admit(const struct gw_route *rt, const struct target_filter *f,
			    double now_ms, bool batch);

/*
 * The soonest time after now_ms at which an open target of the route
 * allowed by f goes half-open by its cooldown; INFINITY when none is
 * open.
 */
double router_route_next_open_end(const struct gw_route *rt, const struct target_filter *f);

#endif
