/*
 * redis_link: two hiredis async connections on the gateway's loop
 * (redis_link.h). hiredis 0.14 calls onConnect(REDIS_ERR) and frees the
 * context itself when a dial fails, and onDisconnect once a connected one
 * is lost or freed (after running every pending callback with a NULL
 * reply); both clear the link's pointer before anything else happens.
 * Its libuv adapter drops a poll error (libuv's status < 0: a refused
 * dial, a reset) without telling hiredis, so the link installs its own
 * read and write hooks around the adapter's handle (on_poll), which hand
 * the error to hiredis to read. The subscriber cannot be PINGed (hiredis
 * 0.14 mistakes the reply for a message), so it is watched by a heartbeat
 * the link publishes to a channel of its own and must hear back.
 */
#include "gateway/redis_link.h"

#include <errno.h>
#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/backoff.h"
#include "common/clock.h"

/* A command in flight: whose reply it is. */
struct pending_cmd {
	struct redis_link *l;
	redis_link_cb *cb;
	void *arg;
	bool counted;		/* in l->pending */
};

static void link_lost(struct redis_link *l, const char *why);

/* The adapter's poll callback, but a poll error goes to hiredis too. */
static void on_poll(uv_poll_t *h, int status, int events)
{
	redisLibuvEvents *p = h->data;

	if (status < 0)
		events = p->events;	/* hiredis's read or write finds the error */
	if (p->context && (events & UV_READABLE))
		redisAsyncHandleRead(p->context);
	if (p->context && (events & UV_WRITABLE))
		redisAsyncHandleWrite(p->context);
}

static void poll_update(redisLibuvEvents *p)
{
	if (p->events)
		uv_poll_start(&p->handle, p->events, on_poll);
	else
		uv_poll_stop(&p->handle);
}

static void hook_add_read(void *d)
{
	((redisLibuvEvents *)d)->events |= UV_READABLE;
	poll_update(d);
}

static void hook_del_read(void *d)
{
	((redisLibuvEvents *)d)->events &= ~UV_READABLE;
	poll_update(d);
}

static void hook_add_write(void *d)
{
	((redisLibuvEvents *)d)->events |= UV_WRITABLE;
	poll_update(d);
}

static void hook_del_write(void *d)
{
	((redisLibuvEvents *)d)->events &= ~UV_WRITABLE;
	poll_update(d);
}

static uint64_t now_ms(const struct redis_link *l)
{
	return uv_now(l->loop);
}

/* Frees a context we own, its pointer already cleared. */
static void drop_ctx(redisAsyncContext *ac)
{
	if (ac) {
		ac->data = NULL;
		redisAsyncFree(ac);
	}
}

static void maybe_up(struct redis_link *l)
{
	if (l->up || !l->cmd_ready || !l->sub_ready)
		return;
	l->up = true;
	l->attempt = 0;
	l->ups++;
	log_info("shared state: connected to Redis at %s:%d (replica %s)", l->cfg->host,
		 l->cfg->port, l->cfg->replica);
	if (l->ops.on_up)
		l->ops.on_up(l->arg);
}

/* A reply is an error: its text, for the log (never holds the password). */
static const char *reply_error(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ERROR && r->str ? r->str : NULL;
}

/* The command connection's replies: handshake steps and owners' commands. */
static void on_cmd_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct pending_cmd *p = privdata;
	struct redis_link *l = p->l;

	(void)ac;
	if (p->counted && l->pending > 0) {
		l->pending--;
		l->progress_ms = now_ms(l);
	}
	if (p->cb)
		p->cb(p->arg, reply);
	free(p);
}

/* The handshake's last step (SELECT, or PING when db 0 and no password). */
static void on_handshake(void *arg, const struct redisReply *r)
{
	struct redis_link *l = arg;
	char why[160];

	if (!r || l->closing)
		return;
	if (reply_error(r)) {
		snprintf(why, sizeof(why), "the handshake was refused: %.120s", reply_error(r));
		link_lost(l, why);
		return;
	}
	l->cmd_ready = true;
	maybe_up(l);
}

/* AUTH's reply on either connection: an error ends the link. */
static void on_auth(void *arg, const struct redisReply *r)
{
	struct redis_link *l = arg;
	char why[160];

	if (r && reply_error(r) && !l->closing) {
		snprintf(why, sizeof(why), "AUTH was refused: %.120s", reply_error(r));
		link_lost(l, why);
	}
}

static int send_argv(struct redis_link *l, redisAsyncContext *ac, redisCallbackFn *fn,
		     redis_link_cb *cb, void *arg, bool counted, int argc, const char **argv)
{
	struct pending_cmd *p = malloc(sizeof(*p));

	if (!p)
		return -ENOMEM;
	*p = (struct pending_cmd){ l, cb, arg, counted };
	if (redisAsyncCommandArgv(ac, fn, p, argc, argv, NULL) != REDIS_OK) {
		free(p);
		return -ENOTCONN;
	}
	if (counted && l->pending++ == 0)
		l->progress_ms = now_ms(l);
	return 0;
}

/* The subscriber's replies: the subscription's confirmation, then messages. */
static void on_sub_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct redis_link *l = privdata;
	redisReply *r = reply;

	(void)ac;
	if (!r || !l || l->closing)
		return;
	if (reply_error(r)) {
		char why[160];

		snprintf(why, sizeof(why), "SUBSCRIBE was refused: %.120s", reply_error(r));
		link_lost(l, why);
		return;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
	    r->element[0]->type != REDIS_REPLY_STRING)
		return;
	if (strcmp(r->element[0]->str, "subscribe") == 0) {
		/* Ready once both channels are: the fleet's and the heartbeat's. */
		if (r->element[2]->type == REDIS_REPLY_INTEGER && r->element[2]->integer >= 2) {
			l->sub_ready = true;
			maybe_up(l);
		}
	} else if (strcmp(r->element[0]->str, "message") == 0 &&
		   r->element[1]->type == REDIS_REPLY_STRING &&
		   r->element[2]->type == REDIS_REPLY_STRING) {
		if (strcmp(r->element[1]->str, l->heartbeat) == 0)
			l->heartbeat_sent_ms = 0;	/* heard: the subscription is alive */
		else if (l->ops.on_message)
			l->ops.on_message(l->arg, r->element[2]->str, r->element[2]->len);
	}
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct redis_link *l = ac->data;

	if (!l || status == REDIS_OK)
		return;
	/* hiredis frees ac after this returns. */
	if (l->cmd == ac)
		l->cmd = NULL;
	if (l->sub == ac)
		l->sub = NULL;
	link_lost(l, ac->errstr[0] ? ac->errstr : "cannot connect");
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct redis_link *l = ac->data;

	(void)status;
	if (!l)
		return;
	if (l->cmd == ac)
		l->cmd = NULL;
	if (l->sub == ac)
		l->sub = NULL;
	link_lost(l, ac->errstr[0] ? ac->errstr : "the connection closed");
}

/* Dials one connection; NULL when it failed at once (why says so). */
static redisAsyncContext *dial(struct redis_link *l, char *why, size_t len)
{
	redisAsyncContext *ac = redisAsyncConnect(l->cfg->host, l->cfg->port);

	if (!ac) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	if (ac->err) {
		snprintf(why, len, "%s", ac->errstr);
		redisAsyncFree(ac);
		return NULL;
	}
	ac->data = l;
	if (redisLibuvAttach(ac, l->loop) != REDIS_OK) {
		snprintf(why, len, "cannot watch its socket");
		ac->data = NULL;
		memset(&ac->ev, 0, sizeof(ac->ev));	/* the adapter's hooks, half set up */
		redisAsyncFree(ac);
		return NULL;
	}
	ac->ev.addRead = hook_add_read;
	ac->ev.delRead = hook_del_read;
	ac->ev.addWrite = hook_add_write;
	ac->ev.delWrite = hook_del_write;
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
	return ac;
}

/* Queues AUTH (when there is a password) on ac, before anything else. */
static int send_auth(struct redis_link *l, redisAsyncContext *ac, bool counted)
{
	const char *argv[2] = { "AUTH", l->cfg->password };

	if (!l->cfg->password)
		return 0;
	return send_argv(l, ac, on_cmd_reply, on_auth, l, counted, 2, argv);
}

static void on_retry(uv_timer_t *t)
{
	struct redis_link *l = t->data;
	char why[160] = "";
	char db[16];
	const char *sel[2] = { "SELECT", db };
	const char *subv[3] = { "SUBSCRIBE", l->channel, l->heartbeat };
	int rc;

	if (l->closing || l->cmd || l->sub)
		return;
	l->cmd_ready = l->sub_ready = false;
	l->heartbeat_sent_ms = 0;
	l->dialled_ms = now_ms(l);
	l->cmd = dial(l, why, sizeof(why));
	l->sub = l->cmd ? dial(l, why, sizeof(why)) : NULL;
	if (!l->cmd || !l->sub) {
		link_lost(l, why);
		return;
	}
	snprintf(db, sizeof(db), "%d", l->cfg->db);
	rc = send_auth(l, l->cmd, true);
	if (!rc)
		rc = send_argv(l, l->cmd, on_cmd_reply, on_handshake, l, true, 2, sel);
	if (!rc)
		rc = send_auth(l, l->sub, false);
	if (!rc && redisAsyncCommandArgv(l->sub, on_sub_reply, l, 3, subv, NULL) != REDIS_OK)
		rc = -ENOTCONN;
	if (rc)
		link_lost(l, "cannot queue the handshake");
}

/* Closes both connections and dials again after the backoff. */
static void link_lost(struct redis_link *l, const char *why)
{
	redisAsyncContext *cmd = l->cmd;
	redisAsyncContext *sub = l->sub;
	struct backoff bo = { l->cfg->reconnect_ms, l->cfg->reconnect_max_ms };
	bool was_up = l->up;
	uint64_t quiet;
	double wait;

	l->cmd = l->sub = NULL;
	l->cmd_ready = l->sub_ready = false;
	l->up = false;
	l->pending = 0;
	drop_ctx(cmd);
	drop_ctx(sub);
	if (l->closing)
		return;
	if (was_up) {
		l->downs++;
		if (l->ops.on_down)
			l->ops.on_down(l->arg, why);
	}
	if (log_limit_pass(&l->down_log, clock_mono_ns(), 10000000000ull, &quiet))
		log_warn("shared state: Redis at %s:%d %s: %s; breakers are this replica's own "
			 "until it is back (%llu such lines held back)", l->cfg->host, l->cfg->port,
			 was_up ? "lost" : "unreachable", why, (unsigned long long)quiet);
	wait = backoff_delay_ms(&bo, l->attempt, &l->rng);
	if (l->attempt < 30)
		l->attempt++;
	if (!uv_is_active((uv_handle_t *)&l->retry))
		uv_timer_start(&l->retry, on_retry, (uint64_t)wait + 1, 0);
}

/*
 * Every timeout_ms / 2: a command waiting longer than timeout_ms means
 * Redis stopped answering; a link not up within timeout_ms of its dial,
 * or a heartbeat not heard back within timeout_ms, means a connection is
 * stuck or gone. An idle, ready link sends a PING, and an up one a
 * heartbeat, so that a stopped Redis or a dead subscriber is noticed
 * without traffic.
 */
static void on_watch(uv_timer_t *t)
{
	struct redis_link *l = t->data;
	const char *ping[1] = { "PING" };
	const char *beat[3] = { "PUBLISH", l->heartbeat, "1" };
	uint64_t now = now_ms(l);
	char why[96];

	if (l->closing || !l->cmd)
		return;
	if (l->pending > 0 && (double)(now - l->progress_ms) > l->cfg->timeout_ms) {
		snprintf(why, sizeof(why), "no reply in %.0f ms", l->cfg->timeout_ms);
		link_lost(l, why);
		return;
	}
	if (!l->up && (double)(now - l->dialled_ms) > l->cfg->timeout_ms) {
		snprintf(why, sizeof(why), "not ready %.0f ms after the dial", l->cfg->timeout_ms);
		link_lost(l, why);
		return;
	}
	if (l->up && l->heartbeat_sent_ms &&
	    (double)(now - l->heartbeat_sent_ms) > l->cfg->timeout_ms) {
		snprintf(why, sizeof(why), "the subscription went quiet (a heartbeat unheard in "
			 "%.0f ms)", l->cfg->timeout_ms);
		link_lost(l, why);
		return;
	}
	if (l->pending == 0 && l->cmd_ready)
		send_argv(l, l->cmd, on_cmd_reply, NULL, NULL, true, 1, ping);
	if (l->up && !l->heartbeat_sent_ms &&
	    send_argv(l, l->cmd, on_cmd_reply, NULL, NULL, true, 3, beat) == 0)
		l->heartbeat_sent_ms = now ? now : 1;
}

int redis_link_start(struct redis_link *l, uv_loop_t *loop, const struct gw_shared *cfg,
		     const char *channel, const char *heartbeat, const struct redis_link_ops *ops,
		     void *arg, uint64_t seed)
{
	uint64_t every = (uint64_t)(cfg->timeout_ms / 2);

	memset(l, 0, sizeof(*l));
	l->loop = loop;
	l->cfg = cfg;
	l->ops = *ops;
	l->arg = arg;
	l->channel = strdup(channel);
	l->heartbeat = strdup(heartbeat);
	if (!l->channel || !l->heartbeat) {
		free(l->channel);
		free(l->heartbeat);
		return -ENOMEM;
	}
	rng_seed(&l->rng, seed);
	uv_timer_init(loop, &l->retry);
	uv_timer_init(loop, &l->watch);
	l->retry.data = l->watch.data = l;
	uv_timer_start(&l->retry, on_retry, 0, 0);
	uv_timer_start(&l->watch, on_watch, every ? every : 1, every ? every : 1);
	uv_unref((uv_handle_t *)&l->watch);
	return 0;
}

int redis_link_command(struct redis_link *l, redis_link_cb *cb, void *arg, int argc,
		       const char **argv)
{
	if (!l->up || !l->cmd) {
		l->dropped++;
		return -ENOTCONN;
	}
	return send_argv(l, l->cmd, on_cmd_reply, cb, arg, true, argc, argv);
}

void redis_link_close(struct redis_link *l)
{
	redisAsyncContext *cmd = l->cmd;
	redisAsyncContext *sub = l->sub;

	l->closing = true;
	l->cmd = l->sub = NULL;
	l->up = false;
	drop_ctx(cmd);
	drop_ctx(sub);
	uv_close((uv_handle_t *)&l->retry, NULL);
	uv_close((uv_handle_t *)&l->watch, NULL);
	free(l->channel);
	free(l->heartbeat);
	l->channel = l->heartbeat = NULL;
}
