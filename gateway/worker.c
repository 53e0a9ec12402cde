/*
 * worker: a worker's link to its supervisor's hub (worker.h). Frames out
 * are written at once when the socket takes them, else queued in order;
 * frames in are read into a buffer and handled whole, in order.
 */
#include "gateway/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/list.h"
#include "common/log.h"
#include "gateway/admin.h"
#include "gateway/budget.h"
#include "gateway/gateway.h"
#include "gateway/gather.h"
#include "gateway/health.h"
#include "gateway/hubio.h"
#include "gateway/hubmsg.h"
#include "gateway/probe.h"
#include "gateway/shared.h"

/* A store call waiting for the hub's answer. */
struct pending {
	struct list_node link;
	uint64_t id;
	uint64_t deadline;		/* the loop's ms: past it, taken as unanswered */
	shared_value_cb *value_cb;	/* a get's; NULL for a lock */
	shared_lock_cb *lock_cb;
	void *arg;
};

/* A view of the whole gateway being gathered for a client. */
struct view_wait {
	struct list_node link;
	struct worker *w;
	uint64_t id;
	uint64_t deadline;		/* the loop's ms: past it, answered alone */
	struct http_exchange *ex;	/* NULL once the client left */
	enum worker_view view;
};

struct worker {
	uv_pipe_t pipe;			/* the socket to the hub */
	uv_timer_t budget;		/* sends the budget's use every WORKER_BUDGET_MS; once
					 * the hub is lost, tells who waits on it */
	uv_timer_t waits;		/* the oldest store call's or view's deadline */
	struct log_limit unanswered_log;	/* store calls the hub left unanswered */
	struct gateway *gw;
	unsigned no;			/* 1 to n */
	unsigned n;
	void (*on_lost)(struct gateway *gw);
	struct buf in;			/* bytes read, not yet a whole frame */
	struct shared *shared;		/* the breakers, over the hub (NULL with Redis) */
	bool store_closed;		/* shared_close ran: no more store callbacks */
	struct list pending;		/* struct pending */
	struct list views;		/* struct view_wait */
	uint64_t next_id;
	bool open;			/* the socket can be written and read */
	bool closed;			/* worker_close ran */
};

static const char *const view_names[] = { "metrics", "breakers" };

static void fail_pending(struct worker *w);
static void answer_alone(struct worker *w);
static void answer_view(struct worker *w, struct view_wait *vw, struct gather_part *parts,
			size_t n, const char *sup);

/*
 * Ends a store call the hub will not answer and frees it: a read with
 * nothing found (failed: the store's failure), a lock with won (0 not won,
 * -1 failed). Nothing is called back once the store is closed.
 */
static void pending_end(struct worker *w, struct pending *p, bool failed, int won)
{
	if (!w->store_closed) {
		if (p->value_cb)
			p->value_cb(p->arg, failed, NULL, 0);
		else
			p->lock_cb(p->arg, won);
	}
	free(p);
}

/* Answers a view with this worker's figures alone (unless its client left) and frees it. */
static void view_alone(struct worker *w, struct view_wait *vw)
{
	struct gather_part parts[1];

	if (vw->ex && !w->closed)
		answer_view(w, vw, parts, 1, NULL);
	free(vw);
}

/* ---- waits the hub does not answer ---- */

static void on_waits_timer(uv_timer_t *t);

/* The timer at the earliest deadline of a store call or a view (each list oldest first). */
static void arm_waits(struct worker *w)
{
	struct list_node *p = list_first(&w->pending);
	struct list_node *v = list_first(&w->views);
	uint64_t now = uv_now(w->gw->loop);
	uint64_t next = UINT64_MAX;

	if (w->closed)
		return;
	if (p)
		next = list_entry(p, struct pending, link)->deadline;
	if (v && list_entry(v, struct view_wait, link)->deadline < next)
		next = list_entry(v, struct view_wait, link)->deadline;
	if (next == UINT64_MAX)
		uv_timer_stop(&w->waits);
	else
		uv_timer_start(&w->waits, on_waits_timer, next > now ? next - now : 0, 0);
}

/*
 * A wait the hub left unanswered (it always answers at once, or within
 * HUB_GATHER_MS for a view: one that did not is not waited on for good):
 * a store call counts as nothing stored, a lock as not won — its breaker
 * tries again, as when another holds the lock; a view is answered with
 * this worker's alone.
 */
static void on_waits_timer(uv_timer_t *t)
{
	struct worker *w = t->data;
	uint64_t now = uv_now(w->gw->loop);
	struct list_node *n;

	while ((n = list_first(&w->pending)) != NULL &&
	       list_entry(n, struct pending, link)->deadline <= now) {
		struct pending *p = list_entry(n, struct pending, link);
		uint64_t quiet;

		list_remove(&w->pending, n);
		if (log_limit_pass(&w->unanswered_log, clock_mono_ns(), 10000000000ull, &quiet))
			log_warn("worker %u: the hub did not answer a %s within %d ms: taken as %s "
				 "(%llu more such held back)", w->no,
				 p->value_cb ? "read of the store" : "probe lock",
				 WORKER_STORE_WAIT_MS, p->value_cb ? "nothing stored" : "not won",
				 (unsigned long long)quiet);
		pending_end(w, p, false, 0);
	}
	while ((n = list_first(&w->views)) != NULL &&
	       list_entry(n, struct view_wait, link)->deadline <= now) {
		list_remove(&w->views, n);
		view_alone(w, list_entry(n, struct view_wait, link));
	}
	arm_waits(w);
}

/* A wait was added (its deadline the latest): the timer runs if it did not. */
static void wait_added(struct worker *w)
{
	if (!uv_is_active((uv_handle_t *)&w->waits))
		arm_waits(w);
}

/* After the socket was lost, from the loop: whoever waits on the hub is told. */
static void on_lost_timer(uv_timer_t *t)
{
	struct worker *w = t->data;

	fail_pending(w);
	answer_alone(w);
	if (w->shared && !w->store_closed)
		shared_down(w->shared);
	if (!w->closed && w->on_lost)
		w->on_lost(w->gw);
}

/*
 * The socket is gone (the supervisor died, or wrote nonsense): nothing
 * more is sent, and the rest happens from the loop (this may be called
 * from deep inside a request's handling, by a send).
 */
static void hub_lost(struct worker *w, const char *why)
{
	if (!w->open)
		return;
	w->open = false;
	uv_read_stop((uv_stream_t *)&w->pipe);
	if (!w->closed) {
		log_error("worker %u: lost the supervisor (%s): draining", w->no, why);
		uv_timer_start(&w->budget, on_lost_timer, 0, 0);
	}
}

/* Sends one frame. Returns 0, or -ENOTCONN when the hub is gone. */
static int send_frame(struct worker *w, enum hubmsg_type type, size_t n,
		      const struct hubmsg_field *f)
{
	int rc;

	if (!w->open)
		return -ENOTCONN;
	rc = hubio_send((uv_stream_t *)&w->pipe, type, n, f);
	if (rc) {
		char why[96];

		if (rc == -ENOBUFS)
			snprintf(why, sizeof(why), "it has not read the last %u MiB sent to it",
				 HUBIO_QUEUE_MAX >> 20);
		else
			snprintf(why, sizeof(why), "%s",
				 rc == -ENOMEM ? "out of memory" : uv_strerror(rc));
		hub_lost(w, why);
		return -ENOTCONN;
	}
	return 0;
}

/* A number as a field's text, in buffer t (32 bytes). */
static struct hubmsg_field num_field(char *t, double v)
{
	snprintf(t, 32, "%.0f", v);
	return hubmsg_str(t);
}

static struct hubmsg_field id_field(char *t, uint64_t id)
{
	snprintf(t, 32, "%" PRIu64, id);
	return hubmsg_str(t);
}

/* ---- the breakers' store ---- */

static struct pending *pending_new(struct worker *w, shared_value_cb *vcb, shared_lock_cb *lcb,
				   void *arg)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->id = ++w->next_id;
	p->deadline = uv_now(w->gw->loop) + WORKER_STORE_WAIT_MS;
	p->value_cb = vcb;
	p->lock_cb = lcb;
	p->arg = arg;
	list_push_back(&w->pending, &p->link);
	wait_added(w);
	return p;
}

static struct pending *pending_take(struct worker *w, uint64_t id)
{
	struct list_node *n;

	for (n = list_first(&w->pending); n; n = list_next(&w->pending, n)) {
		struct pending *p = list_entry(n, struct pending, link);

		if (p->id == id) {
			list_remove(&w->pending, &p->link);
			return p;
		}
	}
	return NULL;
}

/* Every store call still waiting learns the store is lost. */
static void fail_pending(struct worker *w)
{
	struct list_node *n;

	while ((n = list_first(&w->pending)) != NULL) {
		list_remove(&w->pending, n);
		pending_end(w, list_entry(n, struct pending, link), true, -1);
	}
}

static int store_put(void *store, const char *key, const char *value, double ttl_ms)
{
	char ttl[32];
	struct hubmsg_field f[3] = { hubmsg_str(key), hubmsg_str(value), num_field(ttl, ttl_ms) };

	return send_frame(store, HUB_PUT, 3, f);
}

static int store_get(void *store, const char *key, shared_value_cb *cb, void *arg)
{
	struct worker *w = store;
	struct pending *p;
	char id[32];
	int rc;

	if (!w->open)
		return -ENOTCONN;
	p = pending_new(w, cb, NULL, arg);
	if (!p)
		return -ENOMEM;
	struct hubmsg_field f[2] = { id_field(id, p->id), hubmsg_str(key) };

	rc = send_frame(w, HUB_GET, 2, f);
	if (rc && pending_take(w, p->id))
		free(p);
	return rc;
}

static int store_lock(void *store, const char *key, const char *owner, double ttl_ms,
		      shared_lock_cb *cb, void *arg)
{
	struct worker *w = store;
	struct pending *p;
	char id[32];
	char ttl[32];
	int rc;

	if (!w->open)
		return -ENOTCONN;
	p = pending_new(w, NULL, cb, arg);
	if (!p)
		return -ENOMEM;
	struct hubmsg_field f[4] = { id_field(id, p->id), hubmsg_str(key), hubmsg_str(owner),
				     num_field(ttl, ttl_ms) };

	rc = send_frame(w, HUB_LOCK, 4, f);
	if (rc && pending_take(w, p->id))
		free(p);
	return rc;
}

static int store_unlock(void *store, const char *key, const char *owner)
{
	struct hubmsg_field f[2] = { hubmsg_str(key), hubmsg_str(owner) };

	return send_frame(store, HUB_UNLOCK, 2, f);
}

static int store_extend(void *store, const char *key, const char *owner, double ttl_ms)
{
	char ttl[32];
	struct hubmsg_field f[3] = { hubmsg_str(key), hubmsg_str(owner), num_field(ttl, ttl_ms) };

	return send_frame(store, HUB_EXTEND, 3, f);
}

static void store_counts(const void *store, struct shared_counts *c)
{
	const struct worker *w = store;

	c->ups = 1;
	c->downs = w->open ? 0 : 1;
}

/* shared_close: no store callback may run after it. */
static void store_close(void *store)
{
	struct worker *w = store;

	fail_pending(w);
	w->store_closed = true;
}

static const struct shared_store_ops hub_ops = {
	store_put, store_get, store_lock, store_unlock, store_extend, store_counts, store_close,
	NULL,
};

struct shared *worker_shared(struct worker *w, char *err)
{
	w->shared = shared_new(w->gw->loop, &w->gw->cfg->shared, &w->gw->router, "hub", &hub_ops,
			       w, err);
	if (w->shared && w->open)
		shared_up(w->shared);
	return w->shared;
}

/* ---- views ---- */

/* This worker's own view into b. Returns 0 or -ENOMEM. */
static int own_view(const struct worker *w, enum worker_view view, struct buf *b)
{
	if (view == WORKER_VIEW_METRICS)
		return admin_metrics(w->gw, b, gw_now_ms());
	return admin_breakers(w->gw, b, gw_now_ms());
}

static void respond_view(struct http_exchange *ex, enum worker_view view, int rc,
			 const struct buf *b)
{
	const struct http_kv metrics[] = {
		{ "Content-Type", "text/plain; version=0.0.4; charset=utf-8" },
	};
	const struct http_kv json[] = { { "Content-Type", "application/json" } };

	if (rc || !b->data)
		http_respond_error(ex, 500, "Out of memory.", "server_error", NULL, NULL, NULL, 0);
	else
		http_respond(ex, 200, view == WORKER_VIEW_METRICS ? metrics : json, 1, b->data,
			     b->len);
}

/* The whole view from others (parts[1..n), supervisor's text sup) and this worker's own. */
static void answer_view(struct worker *w, struct view_wait *vw, struct gather_part *parts,
			size_t n, const char *sup)
{
	struct buf own = { 0 };
	struct buf out = { 0 };
	int rc = own_view(w, vw->view, &own);

	parts[0] = (struct gather_part){ w->no, own.data };
	if (!rc)
		rc = vw->view == WORKER_VIEW_METRICS ? gather_metrics(&out, parts, n, sup)
						     : gather_breakers(&out, parts, n);
	http_exchange_set_data(vw->ex, NULL, NULL, NULL);
	respond_view(vw->ex, vw->view, rc, &out);
	buf_free(&own);
	buf_free(&out);
}

static void on_view_abort(struct http_exchange *ex, void *data, enum http_abort_reason reason)
{
	struct view_wait *vw = data;

	(void)ex;
	(void)reason;
	vw->ex = NULL;
}

/* The hub is gone: each view still gathered is answered with this worker's alone. */
static void answer_alone(struct worker *w)
{
	struct list_node *n;

	while ((n = list_first(&w->views)) != NULL) {
		list_remove(&w->views, n);
		view_alone(w, list_entry(n, struct view_wait, link));
	}
}

void worker_gather(struct worker *w, struct http_exchange *ex, enum worker_view view)
{
	struct view_wait *vw = calloc(1, sizeof(*vw));
	struct gather_part parts[1];
	char id[32];

	if (!vw) {
		http_respond_error(ex, 500, "Out of memory.", "server_error", NULL, NULL, NULL, 0);
		return;
	}
	vw->w = w;
	vw->id = ++w->next_id;
	vw->ex = ex;
	vw->view = view;
	struct hubmsg_field f[2] = { id_field(id, vw->id), hubmsg_str(view_names[view]) };

	if (send_frame(w, HUB_GATHER, 2, f)) {
		answer_view(w, vw, parts, 1, NULL);
		free(vw);
		return;
	}
	vw->deadline = uv_now(w->gw->loop) + WORKER_VIEW_WAIT_MS;
	list_push_back(&w->views, &vw->link);
	wait_added(w);
	http_exchange_set_data(ex, vw, on_view_abort, NULL);
}

/*
 * A part's worker number in a HUB_GATHERED: "K" (its live view) or "K+"
 * (its earlier lives' counters; *earlier set). False when it is neither.
 */
static bool part_worker(const struct hubmsg *m, size_t i, unsigned *no, bool *earlier)
{
	char text[16];
	char *end;
	unsigned long k;

	if (!hubmsg_copy(m, i, text, sizeof(text)) || text[0] < '1' || text[0] > '9')
		return false;
	k = strtoul(text, &end, 10);
	*earlier = *end == '+';
	if (*end && strcmp(end, "+"))
		return false;
	*no = (unsigned)k;
	return k <= GW_WORKERS_MAX;
}

/*
 * HUB_GATHERED (id, supervisor's text, then worker number and text, each):
 * this worker's own live part is left out (its view is rendered afresh).
 */
static void on_gathered(struct worker *w, const struct hubmsg *m)
{
	struct gather_part parts[2 * GW_WORKERS_MAX + 1];
	struct buf texts[2 * GW_WORKERS_MAX];
	char *sup = NULL;
	struct list_node *node;
	struct view_wait *vw = NULL;
	uint64_t id;
	size_t n = 1;
	size_t i;

	if (!hubmsg_u64(m, 0, &id))
		return;
	for (node = list_first(&w->views); node; node = list_next(&w->views, node)) {
		if (list_entry(node, struct view_wait, link)->id == id) {
			vw = list_entry(node, struct view_wait, link);
			break;
		}
	}
	if (!vw)
		return;
	list_remove(&w->views, &vw->link);
	if (!vw->ex)
		goto out;
	memset(texts, 0, sizeof(texts));
	if (m->nfields > 1 && m->f[1].len) {
		struct buf b = { 0 };

		buf_append(&b, m->f[1].data, m->f[1].len);
		sup = buf_steal(&b);
	}
	for (i = 2; i + 1 < m->nfields && n <= 2 * GW_WORKERS_MAX; i += 2) {
		unsigned no;
		bool earlier;

		if (!part_worker(m, i, &no, &earlier) || (no == w->no && !earlier) ||
		    buf_append(&texts[n - 1], m->f[i + 1].data, m->f[i + 1].len))
			continue;
		parts[n] = (struct gather_part){ no, texts[n - 1].data };
		n++;
	}
	answer_view(w, vw, parts, n, sup);
	for (i = 0; i < 2 * GW_WORKERS_MAX; i++)
		buf_free(&texts[i]);
	free(sup);
out:
	free(vw);
}

/* HUB_VIEW (gid, view): this worker's view, for another's gather. */
static void on_view(struct worker *w, const struct hubmsg *m)
{
	struct buf b = { 0 };
	char view[16];
	int rc;

	if (m->nfields < 2 || !hubmsg_copy(m, 1, view, sizeof(view)))
		return;
	rc = own_view(w, strcmp(view, "breakers") == 0 ? WORKER_VIEW_BREAKERS
						       : WORKER_VIEW_METRICS, &b);
	struct hubmsg_field f[2] = { m->f[0], { rc ? "" : b.data, rc ? 0 : b.len } };

	send_frame(w, HUB_VIEWED, 2, f);
	buf_free(&b);
}

/* ---- health and budgets ---- */

bool worker_checks(const struct worker *w)
{
	return w->no == 1;
}

void worker_health(struct worker *w, size_t provider, bool ok, const struct health *st,
		   bool slow)
{
	char p[32];
	char fails[32];
	char passes[32];
	struct hubmsg_field f[6] = {
		num_field(p, (double)provider), hubmsg_str(ok ? "1" : "0"),
		hubmsg_str(st->healthy ? "1" : "0"), hubmsg_str(slow ? "1" : "0"),
		num_field(fails, st->fails), num_field(passes, st->passes),
	};

	send_frame(w, HUB_HEALTH, 6, f);
}

/* HUB_HEALTH: the checker's verdict, taken as this worker's own. */
static void on_health(struct worker *w, const struct hubmsg *m)
{
	uint64_t v[6];
	size_t i;

	for (i = 0; i < 6; i++) {
		if (!hubmsg_u64(m, i, &v[i]))
			return;
	}
	if (v[0] >= w->gw->cfg->nproviders)
		return;
	probe_mirror(w->gw, (size_t)v[0], v[2] != 0, v[3] != 0, (unsigned)v[4],
		     (unsigned)v[5]);
}

/* Every WORKER_BUDGET_MS: this worker's budget use since the last, per route, if any. */
static void on_budget_timer(uv_timer_t *t)
{
	struct worker *w = t->data;
	struct router *r = &w->gw->router;
	struct buf b = { 0 };
	bool any = false;
	size_t i;

	for (i = 0; i < r->nroutes; i++) {
		struct budget *bu = &r->routes[i].budget;

		any |= bu->deposits || bu->takes;
		buf_printf(&b, "%s%" PRIu64 " %" PRIu64, i ? " " : "", bu->deposits, bu->takes);
		bu->deposits = bu->takes = 0;
	}
	if (any && b.data) {
		struct hubmsg_field f[1] = { { b.data, b.len } };

		send_frame(w, HUB_BUDGET, 1, f);
	}
	buf_free(&b);
}

/* HUB_BUDGET: another worker's use, added to this worker's copy of each bucket. */
static void on_budget(struct worker *w, const struct hubmsg *m)
{
	struct router *r = &w->gw->router;
	struct buf text = { 0 };
	const char *p;
	size_t i;

	if (m->nfields < 1 || buf_append(&text, m->f[0].data, m->f[0].len) || !text.data)
		goto out;
	p = text.data;
	for (i = 0; i < r->nroutes; i++) {
		char *end;
		unsigned long long d = strtoull(p, &end, 10);
		unsigned long long t;

		if (end == p)
			break;
		p = end;
		t = strtoull(p, &end, 10);
		if (end == p)
			break;
		p = end;
		budget_apply_others(&r->routes[i].budget, &r->routes[i].alias->budget, d, t,
				    gw_now_ms());
	}
out:
	buf_free(&text);
}

/* ---- another worker's listening socket ---- */

static void on_taken_closed(uv_handle_t *h)
{
	free(h);
}

/*
 * HUB_ADOPT (worker K), with K's listening socket (K died): served
 * besides this worker's own until HUB_RELEASE, so that the connections
 * the kernel hands K's socket meanwhile are answered, not left waiting.
 */
static void on_adopt(struct worker *w, const struct hubmsg *m)
{
	uv_tcp_t *t;
	uv_os_fd_t fd;
	uint64_t k;
	int copy = -1;
	int rc;

	if (uv_pipe_pending_count(&w->pipe) == 0) {
		log_warn("worker %u: the hub handed over a socket that did not come", w->no);
		return;
	}
	t = malloc(sizeof(*t));
	if (!t)
		return;		/* left pending: the next adopt would take it; the hub goes on */
	uv_tcp_init(w->gw->loop, t);
	rc = uv_accept((uv_stream_t *)&w->pipe, (uv_stream_t *)t);
	if (!rc && uv_fileno((uv_handle_t *)t, &fd) == 0)
		copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	uv_close((uv_handle_t *)t, on_taken_closed);
	if (copy < 0 || !hubmsg_u64(m, 0, &k) || k < 1 || k > w->n || k == w->no) {
		if (copy >= 0)
			close(copy);
		log_warn("worker %u: a socket the hub handed over could not be taken", w->no);
		return;
	}
	rc = http_server_listen_also_fd(w->gw->srv, (unsigned)k, copy);
	if (rc)
		log_warn("worker %u: cannot serve worker %u's socket: %s", w->no, (unsigned)k,
			 uv_strerror(rc));
	else
		log_debug("worker %u: serving worker %u's socket too until it is back", w->no,
			  (unsigned)k);
}

/* HUB_RELEASE (worker K): K serves its socket again. */
static void on_release(struct worker *w, const struct hubmsg *m)
{
	uint64_t k;

	if (!hubmsg_u64(m, 0, &k) || k < 1 || k > w->n)
		return;
	http_server_unlisten_also(w->gw->srv, (unsigned)k);
	log_debug("worker %u: worker %u is back: its socket is its own again", w->no,
		  (unsigned)k);
}

/* ---- the socket ---- */

static void dispatch(struct worker *w, const struct hubmsg *m)
{
	struct pending *p;
	uint64_t id;

	switch (m->type) {
	case HUB_MESSAGE:
		if (m->nfields == 1 && w->shared && !w->store_closed)
			shared_message(w->shared, m->f[0].data, m->f[0].len);
		break;
	case HUB_VALUE:
		if (m->nfields == 3 && hubmsg_u64(m, 0, &id) && (p = pending_take(w, id))) {
			bool found = m->f[1].len == 1 && m->f[1].data[0] == '1';

			if (p->value_cb && !w->store_closed)
				p->value_cb(p->arg, false, found ? m->f[2].data : NULL,
					    found ? m->f[2].len : 0);
			free(p);
		}
		break;
	case HUB_LOCKED:
		if (m->nfields == 2 && hubmsg_u64(m, 0, &id) && (p = pending_take(w, id))) {
			if (p->lock_cb && !w->store_closed)
				p->lock_cb(p->arg, m->f[1].len == 1 && m->f[1].data[0] == '1');
			free(p);
		}
		break;
	case HUB_VIEW:
		on_view(w, m);
		break;
	case HUB_GATHERED:
		on_gathered(w, m);
		break;
	case HUB_HEALTH:
		on_health(w, m);
		break;
	case HUB_BUDGET:
		on_budget(w, m);
		break;
	case HUB_ADOPT:
		on_adopt(w, m);
		break;
	case HUB_RELEASE:
		on_release(w, m);
		break;
	default:
		log_warn("worker %u: the hub sent a %s message, which a worker does not take", w->no,
			 hubmsg_type_name(m->type));
		break;
	}
}

static bool on_frame(void *arg, const struct hubmsg *m)
{
	struct worker *w = arg;

	dispatch(w, m);
	return w->open;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *ub)
{
	struct worker *w = h->data;

	(void)suggested;
	hubio_alloc(&w->in, ub);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *ub)
{
	struct worker *w = s->data;

	(void)ub;
	if (nread < 0)
		hub_lost(w, nread == UV_EOF ? "its socket closed" : uv_strerror((int)nread));
	else if (hubio_read(&w->in, (size_t)nread, on_frame, w))
		hub_lost(w, "a malformed message");
}

void worker_ready(struct worker *w)
{
	send_frame(w, HUB_READY, 0, NULL);
}

struct worker *worker_start(struct gateway *gw, int fd, unsigned no, unsigned n,
			    void (*on_lost)(struct gateway *gw), char *err)
{
	struct worker *w = calloc(1, sizeof(*w));
	int rc;

	if (!w) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	w->gw = gw;
	w->no = no;
	w->n = n;
	w->on_lost = on_lost;
	list_init(&w->pending);
	list_init(&w->views);
	uv_pipe_init(gw->loop, &w->pipe, 1);	/* IPC: the hub hands over sockets (HUB_ADOPT) */
	w->pipe.data = w;
	rc = uv_pipe_open(&w->pipe, fd);
	if (!rc)
		rc = uv_read_start((uv_stream_t *)&w->pipe, on_alloc, on_read);
	if (rc) {
		snprintf(err, 256, "worker %u: cannot use its socket to the supervisor (fd %d): %s",
			 no, fd, uv_strerror(rc));
		uv_close((uv_handle_t *)&w->pipe, NULL);
		return NULL;	/* w holds the closing handle: left */
	}
	uv_timer_init(gw->loop, &w->budget);
	w->budget.data = w;
	uv_timer_init(gw->loop, &w->waits);
	w->waits.data = w;
	uv_timer_start(&w->budget, on_budget_timer, WORKER_BUDGET_MS, WORKER_BUDGET_MS);
	w->open = true;
	return w;
}

void worker_close(struct worker *w)
{
	struct list_node *n;

	if (!w || w->closed)
		return;
	w->closed = true;
	if (w->open) {
		w->open = false;
		uv_read_stop((uv_stream_t *)&w->pipe);
	}
	fail_pending(w);
	while ((n = list_first(&w->views)) != NULL) {
		struct view_wait *vw = list_entry(n, struct view_wait, link);

		list_remove(&w->views, n);
		if (vw->ex)
			http_exchange_set_data(vw->ex, NULL, NULL, NULL);
		free(vw);
	}
	uv_close((uv_handle_t *)&w->pipe, NULL);
	uv_close((uv_handle_t *)&w->budget, NULL);
	uv_close((uv_handle_t *)&w->waits, NULL);
}

void worker_free(struct worker *w)
{
	if (!w)
		return;
	buf_free(&w->in);
	free(w);
}
