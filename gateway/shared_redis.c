/*
 * shared_redis: the Redis store under the shared breakers (shared.h,
 * backend redis): a value is SET with an expiry and PUBLISHed on the
 * fleet's channel, the probe lock is a SET NX with an expiry, released
 * and extended by compare-and-delete and compare-and-extend scripts, all
 * on redis_link's command connection, whose order keeps a verdict ahead
 * of its lock's release.
 */
#include "gateway/shared.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/rng.h"
#include "gateway/fleet.h"
#include "gateway/redis_link.h"

/* Compare-and-delete: the lock is released only by the replica holding it. */
static const char release_script[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end "
	"return 0";

/* Compare-and-extend: the holder keeps its lock while its probe is out. */
static const char extend_script[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], "
	"ARGV[2]) end return 0";

struct redis_store {
	struct redis_link link;
	struct shared *s;
};

/* A command's callback and its argument, until the reply. */
struct redis_wait {
	shared_value_cb *value_cb;
	shared_lock_cb *lock_cb;
	void *arg;
};

static int put(void *store, const char *key, const char *value, double ttl_ms)
{
	struct redis_store *rs = store;
	char ttl[32];
	const char *set[5] = { "SET", key, value, "PX", ttl };
	const char *pub[3] = { "PUBLISH", rs->link.channel, value };
	int rc;

	snprintf(ttl, sizeof(ttl), "%.0f", ttl_ms);
	rc = redis_link_command(&rs->link, NULL, NULL, 5, set);
	return rc ? rc : redis_link_command(&rs->link, NULL, NULL, 3, pub);
}

static void on_get(void *arg, const struct redisReply *r)
{
	struct redis_wait *w = arg;

	if (!r)
		w->value_cb(w->arg, true, NULL, 0);
	else if (r->type == REDIS_REPLY_STRING)
		w->value_cb(w->arg, false, r->str, r->len);
	else
		w->value_cb(w->arg, false, NULL, 0);
	free(w);
}

static int get(void *store, const char *key, shared_value_cb *cb, void *arg)
{
	struct redis_store *rs = store;
	struct redis_wait *w = calloc(1, sizeof(*w));
	const char *argv[2] = { "GET", key };
	int rc;

	if (!w)
		return -ENOMEM;
	*w = (struct redis_wait){ .value_cb = cb, .arg = arg };
	rc = redis_link_command(&rs->link, on_get, w, 2, argv);
	if (rc)
		free(w);
	return rc;
}

static void on_lock(void *arg, const struct redisReply *r)
{
	struct redis_wait *w = arg;

	if (!r)
		w->lock_cb(w->arg, -1);
	else
		w->lock_cb(w->arg, r->type == REDIS_REPLY_STATUS && r->str &&
					   strcmp(r->str, "OK") == 0);
	free(w);
}

static int lock(void *store, const char *key, const char *owner, double ttl_ms,
		shared_lock_cb *cb, void *arg)
{
	struct redis_store *rs = store;
	struct redis_wait *w = calloc(1, sizeof(*w));
	char ttl[32];
	const char *argv[6] = { "SET", key, owner, "NX", "PX", ttl };
	int rc;

	if (!w)
		return -ENOMEM;
	*w = (struct redis_wait){ .lock_cb = cb, .arg = arg };
	snprintf(ttl, sizeof(ttl), "%.0f", ttl_ms);
	rc = redis_link_command(&rs->link, on_lock, w, 6, argv);
	if (rc)
		free(w);
	return rc;
}

static int unlock(void *store, const char *key, const char *owner)
{
	struct redis_store *rs = store;
	const char *argv[5] = { "EVAL", release_script, "1", key, owner };

	return redis_link_command(&rs->link, NULL, NULL, 5, argv);
}

static int extend(void *store, const char *key, const char *owner, double ttl_ms)
{
	struct redis_store *rs = store;
	char ttl[32];
	const char *argv[6] = { "EVAL", extend_script, "1", key, owner, ttl };

	snprintf(ttl, sizeof(ttl), "%.0f", ttl_ms);
	return redis_link_command(&rs->link, NULL, NULL, 6, argv);
}

static void counts(const void *store, struct shared_counts *c)
{
	const struct redis_store *rs = store;

	c->ups = rs->link.ups;
	c->downs = rs->link.downs;
	c->dropped = rs->link.dropped;
}

static void store_close(void *store)
{
	struct redis_store *rs = store;

	redis_link_close(&rs->link);
}

static void store_free(void *store)
{
	free(store);
}

static const struct shared_store_ops redis_ops = {
	put, get, lock, unlock, extend, counts, store_close, store_free,
};

static void on_up(void *arg)
{
	struct redis_store *rs = arg;

	shared_up(rs->s);
}

static void on_down(void *arg, const char *why)
{
	struct redis_store *rs = arg;

	(void)why;
	shared_down(rs->s);
}

static void on_message(void *arg, const char *data, size_t len)
{
	struct redis_store *rs = arg;

	shared_message(rs->s, data, len);
}

struct shared *shared_start(uv_loop_t *loop, const struct gw_config *cfg, struct router *r,
			    uint64_t seed, char *err)
{
	static const struct redis_link_ops ops = { on_up, on_down, on_message };
	struct redis_store *rs = calloc(1, sizeof(*rs));
	struct buf channel = { 0 };
	struct buf heartbeat = { 0 };
	struct rng rng;
	int rc;

	if (!rs)
		goto nomem;
	/* The heartbeat's channel is this process's own: the clock and the pid, mixed. */
	rng_seed(&rng, (uint64_t)clock_unix_ns() ^ ((uint64_t)getpid() << 40));
	rc = fleet_channel(&channel, cfg->shared.key_prefix);
	rc = rc ? rc : buf_printf(&heartbeat, "%sheartbeat:%016llx", cfg->shared.key_prefix,
				  (unsigned long long)rng_next(&rng));
	/* The first dial is made from the loop, after rs->s is set. */
	rc = rc ? rc : redis_link_start(&rs->link, loop, &cfg->shared, channel.data,
					heartbeat.data, &ops, rs, seed);
	buf_free(&channel);
	buf_free(&heartbeat);
	if (rc) {
		free(rs);
		goto nomem;
	}
	rs->s = shared_new(loop, &cfg->shared, r, "pubsub", &redis_ops, rs, err);
	if (!rs->s)
		redis_link_close(&rs->link);	/* rs holds its closing handles: left */
	return rs->s;

nomem:
	snprintf(err, 256, "out of memory");
	return NULL;
}
