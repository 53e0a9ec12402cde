/*
 * shared: a gateway's breakers shared with the others that use the same
 * store — replicas of a fleet through Redis (config shared_state, backend
 * redis: shared_redis.c), or the workers of one gateway through their
 * supervisor's hub (workers: N, worker.c). Its own opens and closes are
 * put in the store (stored under each target's key and told to the
 * others); the others' are applied to its breakers as they arrive
 * (fleet.h decides how), and the stored ones are read back on every
 * (re)connection. While the store is up, an open breaker goes half-open
 * only in the process that wins the target's probe lock (taken only when
 * free, with an expiry): the others stay open until its verdict — a close
 * or a reopen — reaches them, or the lock expires and they try for it
 * again. While the store is down, each breaker is the process's own, as
 * without sharing; no request ever waits for the store.
 */
#ifndef FAULTLINE_GATEWAY_SHARED_H
#define FAULTLINE_GATEWAY_SHARED_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

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
 * A stored value's answer: lost when the store went down before it came
 * (value NULL); else value (len bytes, not NUL-terminated) or NULL when
 * nothing is stored.
 */
typedef void shared_value_cb(void *arg, bool lost, const char *value, size_t len);

/* A lock's answer: 1 taken, 0 another holds it, -1 the store went down first. */
typedef void shared_lock_cb(void *arg, int won);

/*
 * A store (its state in the store argument): every call returns 0, or a
 * negative errno when the command could not be sent (the store is down:
 * the callback is then not called). A callback runs later, from the loop.
 */
struct shared_store_ops {
	/* Stores value under key for ttl_ms and tells every other user of the store. */
	int (*put)(void *store, const char *key, const char *value, double ttl_ms);
	/* The value stored under key. */
	int (*get)(void *store, const char *key, shared_value_cb *cb, void *arg);
	/* Takes the lock key for owner for ttl_ms when nobody holds it. */
	int (*lock)(void *store, const char *key, const char *owner, double ttl_ms,
		    shared_lock_cb *cb, void *arg);
	/* Gives the lock back, when owner holds it. */
	int (*unlock)(void *store, const char *key, const char *owner);
	/* Keeps the lock ttl_ms longer, when owner holds it. */
	int (*extend)(void *store, const char *key, const char *owner, double ttl_ms);
	/* Adds the link's figures (ups, downs, dropped) to c. */
	void (*counts)(const void *store, struct shared_counts *c);
	/* Stops: pending callbacks get lost; nothing is called after it returns. */
	void (*close)(void *store);
	/* Frees the store once the loop has closed its handles (may be NULL). */
	void (*free)(void *store);
};

/*
 * Shares r's breakers as cfg says (replica: cfg->replica; lock_ms and
 * timeout_ms) through the store (ops, store), on loop; via names how the
 * others' changes arrive, in the events ("pubsub", "hub"). Returns the
 * state, or NULL with a message in err (256 bytes) when out of memory.
 * Nothing is shared until the store calls shared_up.
 */
struct shared *shared_new(uv_loop_t *loop, const struct gw_shared *cfg, struct router *r,
			  const char *via, const struct shared_store_ops *ops, void *store,
			  char *err);

/* The store is up (connected): reads every target's stored state, and shares from now on. */
void shared_up(struct shared *s);

/* The store is down: each breaker is this process's own until shared_up. */
void shared_down(struct shared *s);

/* Another's message (data, len bytes), from the store. */
void shared_message(struct shared *s, const char *data, size_t len);

/*
 * Starts sharing r's breakers through Redis as cfg->shared says (backend
 * redis) on loop; seed seeds the reconnection's jitter. Returns the
 * state, or NULL with a message in err (256 bytes) when out of memory.
 * Nothing waits: the first connection is made from the loop
 * (shared_redis.c).
 */
struct shared *shared_start(uv_loop_t *loop, const struct gw_config *cfg, struct router *r,
			    uint64_t seed, char *err);

/* Its counts, for /metrics and /admin. */
struct shared_counts shared_counts(const struct shared *s);

/*
 * Stops sharing: closes the store's connections and timers (the loop must
 * run for them to close); breaker changes after it are no longer shared.
 * NULL is ignored.
 */
void shared_close(struct shared *s);

/* Frees s once the loop has closed its handles (after the router's last change). */
void shared_free(struct shared *s);

#endif
