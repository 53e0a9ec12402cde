/*
 * shared: breakers shared through a store (shared.h). The decisions —
 * what to publish, whether another's change applies, whether ours is
 * newer than the stored one — are fleet.c's; this file carries them over
 * the store (Redis: shared_redis.c; the workers' hub: worker.c) and keeps
 * each target's probe lock.
 */
#include "gateway/shared.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/rng.h"
#include "gateway/fleet.h"
#include "gateway/gateway.h"

struct shared_target {
	struct shared *s;
	struct gw_target *t;
	uv_timer_t timer;		/* the probe lock's next try, or its holder's extension */
	struct buf key;			/* PREFIX breaker:P/M */
	struct buf lock;		/* PREFIX probe:P/M */
	bool lock_pending;		/* a lock request is in flight */
	bool lock_held;
};

struct shared {
	const struct gw_shared *cfg;
	const struct shared_store_ops *ops;
	void *store;
	const char *via;		/* how others' changes arrive: "pubsub", "hub" */
	uint64_t instance;		/* this process, among replicas of one name */
	char owner[FLEET_REPLICA_LEN + 20];	/* the lock's value: REPLICA:INSTANCE */
	struct log_limit namesake_log;	/* another process with this replica's name */
	struct router *r;
	struct router_listener listen;
	struct shared_target *st;	/* one per router target, same order */
	size_t n;
	size_t syncing;			/* GETs still to answer after connecting */
	bool up;			/* the store is up */
	bool synced;
	bool closed;
	struct shared_counts c;
};

static double now_unix_ms(void)
{
	return (double)clock_unix_ns() / 1e6;
}

static struct shared_target *target_of(struct shared *s, const struct gw_target *t)
{
	size_t i = (size_t)(t - s->r->targets);

	return i < s->n ? &s->st[i] : NULL;
}

/* Stores m under its target's key and tells the others. */
static void publish(struct shared *s, struct shared_target *st, const struct fleet_msg *m)
{
	struct buf payload = { 0 };

	if (s->up && fleet_msg_encode(m, &payload) == 0 &&
	    s->ops->put(s->store, st->key.data, payload.data,
			fleet_store_ttl_ms(m, now_unix_ms(), s->cfg->lock_ms)) == 0)
		s->c.published++;
	buf_free(&payload);
}

/*
 * Gives the lock back (after the verdict is published: the store keeps
 * the order of one process's commands, so no one wins it before the
 * verdict). A process that stops while holding it does not wait to send
 * this: the lock expires after lock_ms (the hub frees a dead worker's at
 * once).
 */
static void release_lock(struct shared_target *st)
{
	if (!st->lock_held)
		return;
	st->lock_held = false;
	uv_timer_stop(&st->timer);
	st->s->ops->unlock(st->s->store, st->lock.data, st->s->owner);
}

static void on_timer(uv_timer_t *h);

/* Arms st's lock timer for when its open breaker's cooldown ends (or after delay_ms). */
static void arm(struct shared_target *st, double delay_ms)
{
	const struct breaker *b = &st->t->br;
	double wait = delay_ms;

	if (st->s->closed || !st->s->up || b->state != BREAKER_OPEN || !b->cfg.enabled)
		return;
	if (wait < 0)
		wait = b->open_until_ms - gw_now_ms();
	uv_timer_start(&st->timer, on_timer, wait > 0 ? (uint64_t)ceil(wait) : 0, 0);
}

static void on_lock(void *arg, int won)
{
	struct shared_target *st = arg;
	struct shared *s = st->s;
	struct breaker_change chg;

	st->lock_pending = false;
	if (won < 0 || s->closed)
		return;
	if (won) {
		s->c.locks_won++;
		st->lock_held = true;
		breaker_wake(&st->t->br, gw_now_ms(), "probe lock won", &chg);
		if (!chg.changed) {	/* closed or reopened meanwhile: nothing to probe */
			release_lock(st);
			return;
		}
		router_breaker_changed(s->r, st->t, &chg);
		uv_timer_start(&st->timer, on_timer, (uint64_t)(s->cfg->lock_ms / 3) + 1, 0);
		return;
	}
	s->c.locks_lost++;
	arm(st, s->cfg->lock_ms / 4);
}

/*
 * The holder, every lock_ms / 3 while half-open: a probe still out (a
 * hang is cut only by its timeout, which may be longer than lock_ms)
 * keeps the lock; with none out it is left to expire, so that a holder
 * without traffic does not keep the others from probing.
 */
static void extend_lock(struct shared_target *st)
{
	struct shared *s = st->s;

	if (st->t->br.state != BREAKER_HALF_OPEN || st->t->br.probes_in_flight == 0)
		return;
	s->ops->extend(s->store, st->lock.data, s->owner, s->cfg->lock_ms);
	uv_timer_start(&st->timer, on_timer, (uint64_t)(s->cfg->lock_ms / 3) + 1, 0);
}

/* The cooldown is over: try for the probe lock; the winner goes half-open. */
static void on_timer(uv_timer_t *h)
{
	struct shared_target *st = h->data;
	struct shared *s = st->s;
	/*
	 * No look at open_until here: while the gate is on, requests that find
	 * the cooldown over push it on (breaker_gate), and under steady traffic
	 * a timer that followed it would never try for the lock. A later end
	 * (another's reopen) re-arms this timer when it arrives.
	 */
	if (s->closed || !s->up)
		return;
	if (st->lock_held) {
		extend_lock(st);
		return;
	}
	if (st->lock_pending || st->t->br.state != BREAKER_OPEN)
		return;
	if (s->ops->lock(s->store, st->lock.data, s->owner, s->cfg->lock_ms, on_lock, st) == 0)
		st->lock_pending = true;
}

/* The router's listener: shares this process's own opens and closes. */
static void on_change(void *arg, struct gw_target *t, const struct breaker_change *chg,
		      const struct change_origin *origin)
{
	struct shared *s = arg;
	struct shared_target *st = target_of(s, t);
	struct fleet_msg m;

	if (s->closed || !st)
		return;
	if (!origin && fleet_msg_of_change(&m, s->cfg->replica, s->instance, t->prov->name,
					   t->model, &t->br, chg, gw_now_ms(), now_unix_ms()))
		publish(s, st, &m);
	if (chg->to != BREAKER_HALF_OPEN)
		release_lock(st);	/* after the verdict, in the same order */
	if (chg->to == BREAKER_OPEN)
		arm(st, -1);
}

/* Another's message m, heard as via says ("pubsub", "hub") or "sync". */
static void apply(struct shared *s, const struct fleet_msg *m, const char *via)
{
	struct change_origin origin = { m->replica, via };
	struct breaker_change chg;
	size_t i;

	for (i = 0; i < s->n; i++) {
		struct gw_target *t = s->st[i].t;

		if (strcmp(t->prov->name, m->provider) || strcmp(t->model ? t->model : "", m->model))
			continue;
		switch (fleet_apply(&t->br, m, gw_now_ms(), now_unix_ms(), &chg)) {
		case FLEET_APPLIED:
			s->c.applied++;
			router_breaker_changed_from(s->r, t, &chg, &origin);
			break;
		case FLEET_HELD:
			arm(&s->st[i], -1);
			break;
		case FLEET_STALE:
			s->c.stale++;
			break;
		case FLEET_IGNORED:
			break;
		}
		return;
	}
}

void shared_message(struct shared *s, const char *data, size_t len)
{
	struct fleet_msg m;
	uint64_t quiet;

	if (s->closed || fleet_msg_decode(data, len, &m))
		return;
	if (m.instance == s->instance)
		return;		/* our own, back from the channel */
	if (strcmp(m.replica, s->cfg->replica) == 0 &&
	    log_limit_pass(&s->namesake_log, clock_mono_ns(), 60000000000ull, &quiet))
		log_warn("shared state: another gateway process also calls itself replica %s "
			 "(give each replica its own --replica; %llu such messages held back)",
			 m.replica, (unsigned long long)quiet);
	s->c.received++;
	apply(s, &m, s->via);
}

/* A target's stored state, read on connecting. */
static void on_sync(void *arg, bool lost, const char *value, size_t len)
{
	struct shared_target *st = arg;
	struct shared *s = st->s;
	struct fleet_msg stored;
	struct fleet_msg mine;
	bool have;

	if (lost || s->closed)
		return;
	have = value && fleet_msg_decode(value, len, &stored) == 0;
	/* A process restarted under its old name learns what its last life stored. */
	if (have && stored.instance != s->instance)
		apply(s, &stored, "sync");
	if (fleet_local_newer(&st->t->br, have ? &stored : NULL, gw_now_ms(), now_unix_ms()) &&
	    fleet_msg_of_state(&mine, s->cfg->replica, s->instance, st->t->prov->name,
			       st->t->model, &st->t->br, gw_now_ms(), now_unix_ms()))
		publish(s, st, &mine);
	arm(st, -1);
	if (s->syncing > 0 && --s->syncing == 0)
		s->synced = true;
}

void shared_up(struct shared *s)
{
	size_t i;

	if (s->closed)
		return;
	s->up = true;
	s->syncing = s->n;
	s->synced = s->n == 0;
	for (i = 0; i < s->n; i++) {
		struct shared_target *st = &s->st[i];

		breaker_gate(&st->t->br, s->cfg->timeout_ms);
		st->lock_pending = st->lock_held = false;
		s->ops->get(s->store, st->key.data, on_sync, st);
	}
}

void shared_down(struct shared *s)
{
	size_t i;

	s->up = false;
	s->synced = false;
	s->syncing = 0;
	if (s->closed)
		return;
	for (i = 0; i < s->n; i++) {
		breaker_gate(&s->st[i].t->br, 0);
		s->st[i].lock_pending = s->st[i].lock_held = false;
		uv_timer_stop(&s->st[i].timer);
	}
}

struct shared *shared_new(uv_loop_t *loop, const struct gw_shared *cfg, struct router *r,
			  const char *via, const struct shared_store_ops *ops, void *store,
			  char *err)
{
	struct shared *s = calloc(1, sizeof(*s));
	struct rng rng;
	size_t i;

	if (!s)
		goto nomem;
	s->cfg = cfg;
	s->ops = ops;
	s->store = store;
	s->via = via;
	/* Another process's id, whatever the seed: the clock and the pid, mixed. */
	rng_seed(&rng, (uint64_t)clock_unix_ns() ^ ((uint64_t)getpid() << 40));
	s->instance = rng_next(&rng);
	snprintf(s->owner, sizeof(s->owner), "%s:%016llx", s->cfg->replica,
		 (unsigned long long)s->instance);
	s->r = r;
	s->n = r->ntargets;
	s->st = calloc(s->n ? s->n : 1, sizeof(*s->st));
	if (!s->st)
		goto nomem;
	for (i = 0; i < s->n; i++) {
		struct shared_target *st = &s->st[i];

		st->s = s;
		st->t = &r->targets[i];
		if (fleet_breaker_key(&st->key, s->cfg->key_prefix, st->t->prov->name,
				      st->t->model) ||
		    fleet_lock_key(&st->lock, s->cfg->key_prefix, st->t->prov->name, st->t->model))
			goto nomem;
	}
	for (i = 0; i < s->n; i++) {
		uv_timer_init(loop, &s->st[i].timer);
		s->st[i].timer.data = &s->st[i];
	}
	s->listen.on_change = on_change;
	s->listen.arg = s;
	router_listen(r, &s->listen);
	return s;

nomem:
	if (s && s->st) {
		s->ops = NULL;
		shared_free(s);
	} else {
		free(s);
	}
	snprintf(err, 256, "out of memory");
	return NULL;
}

struct shared_counts shared_counts(const struct shared *s)
{
	struct shared_counts c = s->c;

	c.up = s->up && s->synced;
	if (s->ops->counts)
		s->ops->counts(s->store, &c);
	return c;
}

void shared_close(struct shared *s)
{
	size_t i;

	if (!s || s->closed)
		return;
	for (i = 0; i < s->n; i++)
		release_lock(&s->st[i]);
	s->closed = true;
	for (i = 0; i < s->n; i++)
		uv_close((uv_handle_t *)&s->st[i].timer, NULL);
	s->ops->close(s->store);
}

void shared_free(struct shared *s)
{
	size_t i;

	if (!s)
		return;
	if (s->ops && s->ops->free)
		s->ops->free(s->store);
	for (i = 0; i < s->n; i++) {
		buf_free(&s->st[i].key);
		buf_free(&s->st[i].lock);
	}
	free(s->st);
	free(s);
}
