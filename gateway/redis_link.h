/*
 * redis_link: the gateway's two connections to Redis on its one loop
 * (hiredis's async API through its libuv adapter) — one for commands, one
 * subscribed to a channel — that never make anything wait: commands are
 * queued and answered through callbacks. It says when both are ready
 * (AUTH, SELECT and SUBSCRIBE answered) and when they are lost: a refused
 * or dropped connection, an error reply to the handshake, a handshake not
 * done within timeout_ms, a reply later than timeout_ms (a PING goes out
 * while nothing else is pending, so a Redis that stopped answering is
 * noticed within about twice that), or a heartbeat the link publishes to
 * its own channel not heard back on the subscriber within timeout_ms. A
 * lost link is closed and dialled again after a capped, jittered backoff.
 */
#ifndef FAULTLINE_GATEWAY_REDIS_LINK_H
#define FAULTLINE_GATEWAY_REDIS_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/log.h"
#include "common/rng.h"
#include "gateway/config.h"

struct redisAsyncContext;
struct redisReply;

/* What the link tells its owner. */
struct redis_link_ops {
	void (*on_up)(void *arg);			/* both connections ready */
	void (*on_down)(void *arg, const char *why);	/* they were up, and are lost */
	void (*on_message)(void *arg, const char *data, size_t len);	/* on the channel */
};

/* A command's answer: reply is NULL when the link was lost before it came. */
typedef void redis_link_cb(void *arg, const struct redisReply *reply);

struct redis_link {
	uv_loop_t *loop;
	const struct gw_shared *cfg;		/* outlives the link */
	char *channel;
	char *heartbeat;			/* its own channel, to hear itself on */
	struct redis_link_ops ops;
	void *arg;
	struct redisAsyncContext *cmd;		/* NULL while not connected */
	struct redisAsyncContext *sub;
	bool cmd_ready;				/* its handshake answered */
	bool sub_ready;				/* subscribed */
	bool up;				/* both ready, on_up told */
	bool closing;
	uv_timer_t retry;			/* the next dial */
	uv_timer_t watch;			/* the reply watchdog and idle PING */
	unsigned attempt;			/* dials since it was last up */
	struct rng rng;				/* the backoff's jitter */
	uint64_t pending;			/* commands sent on cmd, not yet answered */
	uint64_t progress_ms;			/* when cmd last answered, or went busy */
	uint64_t dialled_ms;			/* when the connections were last dialled */
	uint64_t heartbeat_sent_ms;		/* a heartbeat not yet heard back; 0: none */
	struct log_limit down_log;		/* "lost", at most once every 10 s */
	uint64_t ups;				/* times it came up */
	uint64_t downs;				/* times it was lost */
	uint64_t dropped;			/* commands not sent: the link was down */
};

/*
 * Starts dialling cfg's Redis on loop (the first dial at once), and
 * subscribes to channel and to heartbeat (a channel of this link's own).
 * seed seeds the backoff's jitter. Returns 0 or -ENOMEM.
 */
int redis_link_start(struct redis_link *l, uv_loop_t *loop, const struct gw_shared *cfg,
		     const char *channel, const char *heartbeat,
		     const struct redis_link_ops *ops, void *arg, uint64_t seed);

/*
 * Sends a command (argc arguments, each a C string: hiredis takes their
 * lengths) on the command connection; cb (may be NULL) gets the reply, or
 * NULL when the link is lost first. Returns 0, or -ENOTCONN when the link is not up (counted in
 * dropped; cb is not called), -ENOMEM.
 */
int redis_link_command(struct redis_link *l, redis_link_cb *cb, void *arg, int argc,
		       const char **argv);

/* Closes the connections and timers; pending commands' callbacks get NULL. */
void redis_link_close(struct redis_link *l);

#endif
