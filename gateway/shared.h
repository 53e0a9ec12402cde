/*
 * shared: a gateway replica's breakers shared with the other replicas of
 * its fleet through Redis (config shared_state, backend redis). Its own
 * opens and closes are published on the fleet's channel and stored under
 * each target's key; the others' are applied to its breakers as they
 * arrive (fleet.h decides how), and the stored ones are read back on every
 * (re)connection. While Redis is up, an open breaker goes half-open only
 * in the replica that wins the target's probe lock (SET NX with an
 * expiry): the others stay open until its verdict — a close or a reopen —
 * reaches them, or the lock expires and they try for it again. While
 * Redis is down, each breaker is the replica's own, as without sharing;
 * no request ever waits for Redis.
 */
#ifndef FAULTLINE_GATEWAY_SHARED_H
#define FAULTLINE_GATEWAY_SHARED_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "gateway/redis_link.h"
#include "gateway/router.h"

struct shared;

/* What /metrics shows of it. */
struct shared_counts {
	bool up;			/* connected, subscribed, synced */
	uint64_t published;		/* own changes published */
	uint64_t received;		/* others' messages received */
	uint64_t applied;		/* of which changed a breaker here */
	uint64_t stale;			/* of which were older than the breaker's state */
	uint64_t locks_won;		/* probe locks taken */
	uint64_t locks_lost;		/* probe locks another replica held */
	uint64_t ups;			/* times the link came up */
	uint64_t downs;			/* times it was lost */
	uint64_t dropped;		/* commands not sent while it was down */
};

/*
 * Starts sharing r's breakers as cfg->shared says (backend redis) on
 * loop; seed seeds the reconnection's jitter. Returns the state, or NULL
 * with a message in err (256 bytes) when out of memory. Nothing waits:
 * the first connection is made from the loop.
 */
struct shared *shared_start(uv_loop_t *loop, const struct gw_config *cfg, struct router *r,
			    uint64_t seed, char *err);

/* Its counts, for /metrics and /admin. */
struct shared_counts shared_counts(const struct shared *s);

/*
 * Stops sharing: closes the connections and timers (the loop must run
 * for them to close); breaker changes after it are no longer shared.
 * NULL is ignored.
 */
void shared_close(struct shared *s);

/* Frees s once the loop has closed its handles (after the router's last change). */
void shared_free(struct shared *s);

#endif
