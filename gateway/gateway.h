/*
 * gateway: the failover gateway's process-wide state — config, routing
 * tables and breakers, counters, the HTTP server and the curl_uv that
 * carries every upstream transfer — and what its modules share: the
 * endpoint dispatch (gateway.c) and the chat request's entry points
 * (proxy.c and its shell files: greq, leg, stream, respond, bill, queue;
 * the decisions are policy.c's). The health checks are probe.h's, the
 * JSON and Prometheus views admin.h's.
 */
#ifndef FAULTLINE_GATEWAY_GATEWAY_H
#define FAULTLINE_GATEWAY_GATEWAY_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "gateway/auth.h"
#include "common/buf.h"
#include "gateway/config.h"
#include "gateway/degraded.h"
#include "common/curl_uv.h"
#include "common/http_server.h"
#include "common/list.h"
#include "common/log.h"
#include "gateway/metrics.h"
#include "gateway/policy.h"
#include "common/rng.h"
#include "gateway/router.h"

struct gateway;
struct greq;
struct probe;
struct shared;
struct worker;

/* A worker's place in a gateway of several processes (workers: N; worker.h). */
struct gateway_worker {
	unsigned no;			/* 1 to n */
	unsigned n;
	int hub_fd;			/* its socket to the supervisor's hub */
	void (*on_lost)(struct gateway *gw);	/* the supervisor is gone: drain */
};

/* Requests of up to this many legs keep their memory for the next (greq.c). */
#define GW_GREQ_POOL_LEGS 4

struct gateway {
	uv_loop_t *loop;
	const struct gw_config *cfg;
	struct router router;
	struct provider_stats *pstats;	/* one per provider, by config index */
	struct status_counts unrouted;	/* answers to requests with no known alias */
	uint64_t auth_failures[AUTH_NVERDICTS];	/* requests refused for their key, by verdict */
	struct cost_table *costs;	/* spend by provider, tenant and feature */
	struct curl_uv cu;
	struct curl_uv hcu;		/* the health checks' transfers */
	struct probe **probes;		/* one per provider with a health_check */
	size_t nprobes;
	struct http_server *srv;
	struct curl_slist *base_headers;	/* sent upstream on every attempt */
	struct curl_slist *big_headers;		/* the same and "Expect:", for a body of 1 MiB or more */
	CURLU **chat_uh;		/* each provider's chat_url parsed once, by config index */
	struct rng rng_retry;		/* backoff jitter */
	struct rng rng_breaker;		/* cooldown jitter */
	struct rng rng_health;		/* with --t0: each provider's first check's phase */
	bool checks_phased;		/* --t0 given: the first checks at t0 + a drawn phase */
	FILE *events;			/* --events, or NULL */
	const char *events_path;	/* its name (the caller's string) */
	bool events_failed;		/* a write failed: it was renamed NAME.tmp, exit 1 */
	struct policy_env pol;		/* what every request's decisions read: router, config, RNGs */
	struct list reqs;		/* chat requests in progress (struct greq) */
	struct list dirty;		/* streams with relayed events not yet written */
	uv_check_t flush;		/* writes them once the loop's I/O callbacks are done */
	uv_timer_t qtimer;		/* the batch queues' next expiry or drain */
	struct router_listener breaker_log;	/* writes breaker changes: events file, log */
	struct router_listener queue_wake;	/* drains the batch queues after one */
	struct router_listener probe_pace;	/* checks at the fast cadence while a breaker is not closed */
	struct shared *shared;		/* the breakers shared: Redis, or the workers' hub; else NULL */
	struct worker *worker;		/* one of several workers: the link to the hub; else NULL */
	unsigned worker_no;		/* its number, 1 to N; 0: not one of several */
	bool checks_here;		/* health checks run in this process (not another worker) */
	struct degraded degraded;	/* each alias's degraded answers and answer cache */
	double checks_from_ms;		/* the first health checks' time (gw_now_ms's clock) */
	uint64_t in_flight;
	uint64_t streams_in_flight;	/* committed streams whose client is still being sent to */
	uint64_t overloaded;		/* attempts failed for want of the gateway's resources */
	size_t body_bytes;		/* upstream answers buffered, every leg (the budget's) */
	struct log_limit overload_log;	/* their log line, at most once a second */
	uint64_t next_id;		/* for generated request ids */
	char id_prefix[24];
	struct list greq_pool[GW_GREQ_POOL_LEGS];	/* freed requests' memory, by legs - 1 (greq.c) */
	CURL **easy_pool;		/* idle easy handles, a stack */
	size_t npool;
	void (*on_idle)(struct gateway *gw);	/* drained: no client connection left */
};

/* Monotonic milliseconds: the clock of breakers, deadlines and attempts. */
double gw_now_ms(void);

/* The gateway's random streams of its seed. */
#define GW_RNG_RETRY 1		/* retry backoff jitter */
#define GW_RNG_BREAKER 2	/* breaker cooldown jitter */
#define GW_RNG_HEALTH 3		/* the health checks' phases (with --t0) */

/*
 * Sets up gw for cfg on loop: routing tables, counters, curl_uv, the
 * server (not yet listening), the events file (events_path may be NULL),
 * the health checks — at once, or with t0_unix_ms > 0 (--t0: a run's
 * shared time base) each provider's first at t0 plus a phase drawn from
 * the seed in [0, its interval): random against a fault's start, as in
 * life, and the same in every run and in chaos sim. wk (NULL: a gateway
 * of one process) makes it one worker of several: its link to the hub
 * carries the breakers (unless shared_state is redis), health verdicts,
 * budgets and the whole gateway's views (worker.h). Returns 0, or a
 * negative errno with a message in err (256 bytes).
 */
int gateway_init(struct gateway *gw, uv_loop_t *loop, const struct gw_config *cfg,
		 const char *events_path, uint64_t seed, int64_t t0_unix_ms,
		 const struct gateway_worker *wk, char *err);

/*
 * Starts a graceful stop: no new connections, idle ones closed, the rest
 * closed once answered; on_idle runs (from the loop) once no client
 * connection is left, so every answer has been written out.
 */
void gateway_drain(struct gateway *gw, void (*on_idle)(struct gateway *gw));

/* Ends every chat request still in flight (their clients' connections close). */
void gateway_cancel_all(struct gateway *gw);

/*
 * Closes what holds handles — every request still in flight, the server,
 * curl_uv, the easy handles, the events file; the loop then runs until the
 * handles have closed, and gateway_free releases the rest.
 */
void gateway_close(struct gateway *gw);

/* Frees the routing tables and counters, once the loop has stopped. */
void gateway_free(struct gateway *gw);

/*
 * Counts an upstream attempt or health check that failed for want of the
 * gateway's own resources (why: "Too many open files", or the body budget
 * reached…) — never the provider's fault — and logs it, at most one line a
 * second, saying how many more were not logged.
 */
void gateway_overloaded(struct gateway *gw, const char *why, const char *provider);

/*
 * An answer of provider/model to request_id broke its contract (why): a
 * line in the events file, when there is one.
 */
void gateway_event_contract(struct gateway *gw, const char *provider, const char *model,
			    const char *request_id, const char *why);

/* An easy handle for an attempt: from the pool, or new (NULL when out of memory). */
CURL *gateway_easy_get(struct gateway *gw);

/* Hands an easy handle back to the pool (or cleans it up when the pool is full). */
void gateway_easy_put(struct gateway *gw, CURL *easy);

/* ---- proxy.c, stream.c (proxy_flush), queue.c (proxy_queue_*) ---- */

/* Handles one POST /v1/chat/completions. */
void proxy_chat(struct gateway *gw, struct http_exchange *ex);

/* curl_uv's on_done: an upstream transfer ended. */
void proxy_on_done(struct curl_uv *cu, CURL *easy, CURLcode result);

/* Ends a request in flight without answering (its client is told nothing more). */
void proxy_cancel(struct greq *g);

/* Ends every chat request in flight, as proxy_cancel. */
void proxy_cancel_all(struct gateway *gw);

/* gw->flush's callback: writes every stream's relayed events to its client. */
void proxy_flush(uv_check_t *h);

/*
 * Registers the batch queues' listener with the router: a breaker that
 * closed or went half-open drains them at the next loop turn.
 */
void proxy_queue_listen(struct gateway *gw);

/* A probe slot or target may be free again: the batch queues are drained at the next loop turn. */
void proxy_queue_wake(struct gateway *gw);

/* The gateway is stopping: every queued batch request gets a 503 at once. */
void proxy_queue_stop(struct gateway *gw);

#endif
