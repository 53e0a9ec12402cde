/*
 * shared: a replica's breakers shared through Redis (shared.h). The
 * decisions — what to publish, whether another replica's change applies,
 * whether ours is newer than the stored one — are fleet.c's; this file
 * carries them over redis_link and keeps each target's probe lock.
 */
#include "gateway/shared.h"

#include <errno.h>
#include <hiredis/hiredis.h>
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

/* Compare-and-delete: the lock is released only by the replica holding it. */
static const char release_script[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end "
	"return 0";

/* Compare-and-extend: the holder keeps its lock while its probe is out. */
static const char extend_script[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], "
	"ARGV[2]) end return 0";

struct shared_target {
	struct shared *s;
	struct gw_target *t;
	uv_timer_t timer;		/* the probe lock's next try, or its holder's extension */
	struct buf key;			/* PREFIX breaker:P/M */
	struct buf lock;		/* PREFIX probe:P/M */
	bool lock_pending;		/* a SET NX is in flight */
	bool lock_held;
};

struct shared {
	const struct gw_shared *cfg;
	uint64_t instance;		/* this process, among replicas of one name */
	char owner[FLEET_REPLICA_LEN + 20];	/* the lock's value: REPLICA:INSTANCE */
	struct log_limit namesake_log;	/* another process with this replica's name */
	struct router *r;
	struct redis_link link;
	struct router_listener listen;
	struct shared_target *st;	/* one per router target, same order */
	size_t n;
	size_t syncing;			/* GETs still to answer after connecting */
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

/* Publishes m on the channel and stores it under its target's key. */
static void publish(struct shared *s, struct shared_target *st, const struct fleet_msg *m)
{
	struct buf payload = { 0 };
	char ttl[32];

	if (s->link.up && fleet_msg_encode(m, &payload) == 0) {
		const char *set[5] = { "SET", st->key.data, payload.data, "PX", ttl };
		const char *pub[3] = { "PUBLISH", s->link.channel, payload.data };

		snprintf(ttl, sizeof(ttl), "%.0f",
			 fleet_store_ttl_ms(m, now_unix_ms(), s->cfg->lock_ms));
		redis_link_command(&s->link, NULL, NULL, 5, set);
		redis_link_command(&s->link, NULL, NULL, 3, pub);
		s->c.published++;
	}
	buf_free(&payload);
}

/*
 * Gives the lock back (after the verdict is published: the same
 * connection keeps the order, so no replica wins it before the verdict).
 * A replica that stops while holding it does not wait to send this: the
 * lock expires after lock_ms.
 */
static void release_lock(struct shared_target *st)
{
	const char *argv[5] = { "EVAL", release_script, "1", st->lock.data, st->s->owner };

	if (!st->lock_held)
		return;
	st->lock_held = false;
	uv_timer_stop(&st->timer);
	redis_link_command(&st->s->link, NULL, NULL, 5, argv);
}

static void on_timer(uv_timer_t *h);

/* Arms st's lock timer for when its open breaker's cooldown ends (or after delay_ms). */
static void arm(struct shared_target *st, double delay_ms)
{
	const struct breaker *b = &st->t->br;
	double wait = delay_ms;

	if (st->s->closed || !st->s->link.up || b->state != BREAKER_OPEN || !b->cfg.enabled)
		return;
	if (wait < 0)
		wait = b->open_until_ms - gw_now_ms();
	uv_timer_start(&st->timer, on_timer, wait > 0 ? (uint64_t)ceil(wait) : 0, 0);
}

static void on_lock(void *arg, const struct redisReply *r)
{
	struct shared_target *st = arg;
	struct shared *s = st->s;
	struct breaker_change chg;

	st->lock_pending = false;
	if (!r || s->closed)
		return;
	if (r->type == REDIS_REPLY_STATUS && r->str && strcmp(r->str, "OK") == 0) {
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
 * without traffic does not keep the fleet from probing.
 */
static void extend_lock(struct shared_target *st)
{
	struct shared *s = st->s;
	char ttl[32];
	const char *argv[6] = { "EVAL", extend_script, "1", st->lock.data, s->owner, ttl };

	if (st->t->br.state != BREAKER_HALF_OPEN || st->t->br.probes_in_flight == 0)
		return;
	snprintf(ttl, sizeof(ttl), "%.0f", s->cfg->lock_ms);
	redis_link_command(&s->link, NULL, NULL, 6, argv);
	uv_timer_start(&st->timer, on_timer, (uint64_t)(s->cfg->lock_ms / 3) + 1, 0);
}

/* The cooldown is over: try for the probe lock; the winner goes half-open. */
static void on_timer(uv_timer_t *h)
{
	struct shared_target *st = h->data;
	struct shared *s = st->s;
	char ttl[32];
	const char *argv[6] = { "SET", st->lock.data, s->owner, "NX", "PX", ttl };
	/*
	 * No look at open_until here: while the gate is on, requests that find
	 * the cooldown over push it on (breaker_gate), and under steady traffic
	 * a timer that followed it would never try for the lock. A later end
	 * (another replica's reopen) re-arms this timer when it arrives.
	 */
	if (s->closed || !s->link.up)
		return;
	if (st->lock_held) {
		extend_lock(st);
		return;
	}
	if (st->lock_pending || st->t->br.state != BREAKER_OPEN)
		return;
	snprintf(ttl, sizeof(ttl), "%.0f", s->cfg->lock_ms);
	if (redis_link_command(&s->link, on_lock, st, 6, argv) == 0)
		st->lock_pending = true;
}

/* The router's listener: shares this replica's own opens and closes. */
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
		release_lock(st);	/* after the verdict, on the same connection */
	if (chg->to == BREAKER_OPEN)
		arm(st, -1);
}

/* Another replica's message m, heard via "pubsub" or "sync". */
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

static void on_message(void *arg, const char *data, size_t len)
{
	struct shared *s = arg;
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
	apply(s, &m, "pubsub");
}

/* A target's stored state, read on connecting. */
static void on_sync(void *arg, const struct redisReply *r)
{
	struct shared_target *st = arg;
	struct shared *s = st->s;
	struct fleet_msg stored;
	struct fleet_msg mine;
	bool have;

	if (!r || s->closed)
		return;
	have = r->type == REDIS_REPLY_STRING && fleet_msg_decode(r->str, r->len, &stored) == 0;
	/* A replica restarted under its old name learns what its last life stored. */
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

static void on_up(void *arg)
{
	struct shared *s = arg;
	size_t i;

	s->syncing = s->n;
	s->synced = s->n == 0;
	for (i = 0; i < s->n; i++) {
		struct shared_target *st = &s->st[i];
		const char *argv[2] = { "GET", st->key.data };

		breaker_gate(&st->t->br, s->cfg->timeout_ms);
		st->lock_pending = st->lock_held = false;
		redis_link_command(&s->link, on_sync, st, 2, argv);
	}
}

static void on_down(void *arg, const char *why)
{
	struct shared *s = arg;
	size_t i;

	(void)why;
	s->synced = false;
	s->syncing = 0;
	for (i = 0; i < s->n; i++) {
		breaker_gate(&s->st[i].t->br, 0);
		s->st[i].lock_pending = s->st[i].lock_held = false;
		uv_timer_stop(&s->st[i].timer);
	}
}

struct shared *shared_start(uv_loop_t *loop, const struct gw_config *cfg, struct router *r,
			    uint64_t seed, char *err)
{
	static const struct redis_link_ops ops = { on_up, on_down, on_message };
	struct shared *s = calloc(1, sizeof(*s));
	struct buf channel = { 0 };
	struct buf heartbeat = { 0 };
	struct rng rng;
	size_t i;

	if (!s)
		goto nomem;
	s->cfg = &cfg->shared;
	/* Another process's id, whatever the seed: the clock and the pid, mixed. */
	rng_seed(&rng, (uint64_t)clock_unix_ns() ^ ((uint64_t)getpid() << 40));
	s->instance = rng_next(&rng);
	snprintf(s->owner, sizeof(s->owner), "%s:%016llx", s->cfg->replica,
		 (unsigned long long)s->instance);
	s->r = r;
	s->n = r->ntargets;
	s->st = calloc(s->n ? s->n : 1, sizeof(*s->st));
	if (!s->st || fleet_channel(&channel, s->cfg->key_prefix) ||
	    buf_printf(&heartbeat, "%sheartbeat:%016llx", s->cfg->key_prefix,
		       (unsigned long long)s->instance))
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
	if (redis_link_start(&s->link, loop, s->cfg, channel.data, heartbeat.data, &ops, s, seed))
		goto nomem;
	buf_free(&channel);
	buf_free(&heartbeat);
	for (i = 0; i < s->n; i++) {
		uv_timer_init(loop, &s->st[i].timer);
		s->st[i].timer.data = &s->st[i];
	}
	s->listen.on_change = on_change;
	s->listen.arg = s;
	router_listen(r, &s->listen);
	return s;

nomem:
	buf_free(&channel);
	buf_free(&heartbeat);
	if (s && s->st)
		shared_free(s);
	else
		free(s);
	snprintf(err, 256, "out of memory");
	return NULL;
}

struct shared_counts shared_counts(const struct shared *s)
{
	struct shared_counts c = s->c;

	c.up = s->link.up && s->synced;
	c.ups = s->link.ups;
	c.downs = s->link.downs;
	c.dropped = s->link.dropped;
	return c;
}

void shared_close(struct shared *s)
{
	size_t i;

	if (!s || s->closed)
		return;
	s->closed = true;
	for (i = 0; i < s->n; i++) {
		release_lock(&s->st[i]);
		uv_close((uv_handle_t *)&s->st[i].timer, NULL);
	}
	redis_link_close(&s->link);
}

void shared_free(struct shared *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++) {
		buf_free(&s->st[i].key);
		buf_free(&s->st[i].lock);
	}
	free(s->st);
	free(s);
}
