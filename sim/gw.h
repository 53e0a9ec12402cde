/*
 * gw: faultline's gateway in the simulation — its own decision code
 * (gateway/policy.c and what it drives: the router and breakers, attempt
 * classification, retry backoff, hedging, the budget; gateway/bill.c's
 * prices) carried out on modelled calls in virtual time, as
 * gateway/proxy.c and leg.c carry it out on libcurl: an attempt is a call
 * to a provider with its watchdog, a backoff and a hedge delay are timers,
 * the answer goes back to the client with the x-faultline-* headers, and
 * every breaker change is a line of events.jsonl; a stream commits at its
 * first content and is watched for stalls as gateway/stream.c does; batch
 * requests wait in the policy's queue, drained on its timer as
 * gateway/queue.c drains it; each provider with a health_check is checked
 * on its timer, and the verdicts move its breakers as gateway/probe.c's
 * do (router_apply_health).
 */
#ifndef FAULTLINE_SIM_GW_H
#define FAULTLINE_SIM_GW_H

#include <stdio.h>

#include "common/list.h"
#include "common/rng.h"
#include "gateway/config.h"
#include "gateway/metrics.h"
#include "gateway/policy.h"
#include "gateway/router.h"
#include "sim/call.h"
#include "sim/evq.h"

struct sim_probe;

struct sim_gw {
	struct sim_server srv;		/* the clients' server (first) */
	struct evq *q;
	const struct sim_net *net;
	struct gw_config cfg;
	struct router router;
	bool router_ready;
	struct provider_stats *pstats;
	struct rng rng_retry;
	struct rng rng_breaker;
	struct rng rng_health;		/* the checks' first phases */
	struct sim_clock clock;		/* its hedge timers' lateness (the machine's) */
	struct policy_env env;
	struct router_listener events_log;
	struct sim_server **upstream;	/* by the config's provider index */
	FILE *events;			/* events.jsonl.tmp */
	char *events_path;
	int err;			/* an errno of the events file or memory; 0: none */
	struct list reqs;		/* struct sim_greq in flight */
	struct sim_timer qtimer;	/* the batch queues' (gateway/queue.c's) */
	double qfired_ms;		/* when it last ran; -1: never */
	struct router_listener queue_wake;
	struct router_listener probe_pace;	/* probe.c's: the fast cadence while suspect */
	struct sim_probe *probes;	/* by provider; NULL entries: no health check */
	size_t nprobes;
};

/*
 * Sets the gateway of setup st up from the config a real run gives it
 * (its {upstream.NAME} for provider NAME's server, servers[i] for the
 * scenario's provider i), its timers as late as clock says, its events
 * file dir/events.jsonl.tmp. Returns 0
 * or a negative errno with the reason in err (CFG_ERR_LEN bytes).
 */
struct scenario;
struct sc_setup;
int gw_start(struct sim_gw *g, const struct scenario *sc, const struct sc_setup *st,
	     struct evq *q, const struct sim_net *net, const struct sim_clock *clock,
	     struct sim_server **servers, const char *dir, char *err);

/* Renames the events file into place. Returns 0 or a negative errno with err. */
int gw_finish(struct sim_gw *g, char *err);

/* Frees what g holds. */
void gw_free(struct sim_gw *g);

#endif
