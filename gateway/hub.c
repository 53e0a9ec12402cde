/*
 * hub: the supervisor's side of its workers' sockets (hub.h). The store
 * and the locks are small arrays searched in order: a gateway has a few
 * dozen targets, and they change when breakers do, not per request.
 * Times are the monotonic clock's milliseconds.
 */
#include "gateway/hub.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "gateway/config.h"
#include "gateway/hubio.h"
#include "gateway/hubmsg.h"

/* Room for a store's key: the prefix (128), "breaker:", a provider and a model (255 each). */
#define HUB_KEY_MAX 1024
/* Room for a lock's owner: a replica's name and ":" and 16 hex digits. */
#define HUB_OWNER_MAX 128

/* One worker's socket. */
struct hub_conn {
	uv_pipe_t pipe;			/* first: the struct is freed with the handle */
	struct hub *h;
	unsigned no;
	struct buf in;
	bool open;
};

/* A stored value. */
struct hub_entry {
	char *key;
	char *value;
	size_t len;
	uint64_t expires_ms;
};

/* A probe lock held. */
struct hub_lock {
	char *key;
	char *owner;
	unsigned no;			/* the worker that took it */
	uint64_t expires_ms;
};

/* A worker's gather: the other workers' views, as they come. */
struct hub_gather {
	struct list_node link;
	uint64_t gid;
	unsigned asker;
	char id[32];			/* the asker's id, echoed */
	char view[16];
	uint64_t deadline_ms;
	size_t nwaiting;
	bool waiting[GW_WORKERS_MAX];	/* by worker no - 1 */
	bool answered[GW_WORKERS_MAX];
	struct buf texts[GW_WORKERS_MAX];
};

static uint64_t now_ms(void)
{
	return clock_mono_ns() / 1000000u;
}

static int send_to(struct hub_conn *c, enum hubmsg_type type, size_t n,
		   const struct hubmsg_field *f)
{
	int rc;

	if (!c || !c->open)
		return -ENOTCONN;
	rc = hubio_send((uv_stream_t *)&c->pipe, type, n, f);
	if (rc)
		log_warn("hub: cannot write to worker %u: %s", c->no, uv_strerror(rc));
	return rc;
}

/* Hands a frame to every worker but no (whose frame it was). */
static void relay(struct hub *h, unsigned no, enum hubmsg_type type, size_t n,
		  const struct hubmsg_field *f)
{
	unsigned k;

	for (k = 1; k <= h->n; k++) {
		if (k != no && send_to(h->conn[k - 1], type, n, f) == 0)
			h->relayed++;
	}
}

/* ---- the store ---- */

static struct hub_entry *entry_of(struct hub *h, const char *key)
{
	size_t i;

	for (i = 0; i < h->nentries; i++) {
		if (strcmp(h->entries[i].key, key) == 0)
			return &h->entries[i];
	}
	return NULL;
}

static int store_put(struct hub *h, const char *key, const struct hubmsg_field *value,
		     double ttl_ms)
{
	struct hub_entry *e = entry_of(h, key);
	char *v = malloc(value->len + 1);

	if (!v)
		return -ENOMEM;
	memcpy(v, value->data, value->len);
	v[value->len] = '\0';
	if (!e) {
		if (buf_grow_array((void **)&h->entries, &h->capentries, h->nentries + 1,
				   sizeof(*h->entries))) {
			free(v);
			return -ENOMEM;
		}
		e = &h->entries[h->nentries];
		e->key = strdup(key);
		if (!e->key) {
			free(v);
			return -ENOMEM;
		}
		e->value = NULL;
		h->nentries++;
	}
	free(e->value);
	e->value = v;
	e->len = value->len;
	e->expires_ms = now_ms() + (uint64_t)(ttl_ms > 1 ? ttl_ms : 1);
	return 0;
}

static struct hub_lock *lock_of(struct hub *h, const char *key)
{
	size_t i;

	for (i = 0; i < h->nlocks; i++) {
		if (strcmp(h->locks[i].key, key) == 0)
			return &h->locks[i];
	}
	return NULL;
}

static void lock_drop(struct hub *h, struct hub_lock *l)
{
	free(l->key);
	free(l->owner);
	*l = h->locks[--h->nlocks];
}

/* Takes key for owner (worker no) when free or expired. Returns 1, 0 (held), or -ENOMEM. */
static int lock_take(struct hub *h, const char *key, const char *owner, unsigned no,
		     double ttl_ms)
{
	struct hub_lock *l = lock_of(h, key);
	uint64_t now = now_ms();

	if (l && l->expires_ms > now)
		return 0;
	if (l)
		lock_drop(h, l);
	if (buf_grow_array((void **)&h->locks, &h->caplocks, h->nlocks + 1, sizeof(*h->locks)))
		return -ENOMEM;
	l = &h->locks[h->nlocks];
	l->key = strdup(key);
	l->owner = strdup(owner);
	if (!l->key || !l->owner) {
		free(l->key);
		free(l->owner);
		return -ENOMEM;
	}
	l->no = no;
	l->expires_ms = now + (uint64_t)(ttl_ms > 1 ? ttl_ms : 1);
	h->nlocks++;
	return 1;
}

/* ---- gathers ---- */

static void gather_free(struct hub_gather *g)
{
	size_t i;

	for (i = 0; i < GW_WORKERS_MAX; i++)
		buf_free(&g->texts[i]);
	free(g);
}

/* Answers g's asker with the views in, and forgets g. */
static void gather_done(struct hub *h, struct hub_gather *g)
{
	struct hubmsg_field f[2 + 2 * GW_WORKERS_MAX];
	char nos[GW_WORKERS_MAX][12];
	bool answered[GW_WORKERS_MAX];
	struct buf sup = { 0 };
	size_t n = 2;
	unsigned k;

	list_remove(&h->gathers, &g->link);
	memcpy(answered, g->answered, sizeof(answered));
	answered[g->asker - 1] = true;
	hub_metrics(h, answered, &sup);
	f[0] = hubmsg_str(g->id);
	f[1] = (struct hubmsg_field){ sup.data ? sup.data : "", sup.len };
	for (k = 1; k <= h->n; k++) {
		if (!g->answered[k - 1])
			continue;
		snprintf(nos[k - 1], sizeof(nos[k - 1]), "%u", k);
		f[n++] = hubmsg_str(nos[k - 1]);
		f[n++] = (struct hubmsg_field){ g->texts[k - 1].data ? g->texts[k - 1].data : "",
						g->texts[k - 1].len };
	}
	send_to(h->conn[g->asker - 1], HUB_GATHERED, n, f);
	buf_free(&sup);
	gather_free(g);
}

static void arm_gathers(struct hub *h);

static void on_gather_timer(uv_timer_t *t)
{
	struct hub *h = t->data;
	struct list_node *n;
	uint64_t now = now_ms();

	while ((n = list_first(&h->gathers)) != NULL) {
		struct hub_gather *g = list_entry(n, struct hub_gather, link);

		if (g->deadline_ms > now)
			break;
		gather_done(h, g);
	}
	arm_gathers(h);
}

/* The timer at the oldest gather's end. */
static void arm_gathers(struct hub *h)
{
	struct list_node *n = list_first(&h->gathers);
	uint64_t now = now_ms();
	struct hub_gather *g;

	if (h->closed)
		return;
	if (!n) {
		uv_timer_stop(&h->gather_timer);
		return;
	}
	g = list_entry(n, struct hub_gather, link);
	uv_timer_start(&h->gather_timer, on_gather_timer,
		       g->deadline_ms > now ? g->deadline_ms - now : 0, 0);
}

/* HUB_GATHER (id, view) from worker no: every other worker is asked for its view. */
static void gather_start(struct hub *h, unsigned no, const struct hubmsg *m)
{
	struct hub_gather *g = calloc(1, sizeof(*g));
	struct hubmsg_field f[2];
	char gid[32];
	unsigned k;

	if (!g || !hubmsg_copy(m, 0, g->id, sizeof(g->id)) ||
	    !hubmsg_copy(m, 1, g->view, sizeof(g->view))) {
		free(g);
		return;
	}
	g->gid = ++h->next_gid;
	g->asker = no;
	g->deadline_ms = now_ms() + HUB_GATHER_MS;
	snprintf(gid, sizeof(gid), "%" PRIu64, g->gid);
	f[0] = hubmsg_str(gid);
	f[1] = hubmsg_str(g->view);
	list_push_back(&h->gathers, &g->link);
	for (k = 1; k <= h->n; k++) {
		if (k != no && send_to(h->conn[k - 1], HUB_VIEW, 2, f) == 0) {
			g->waiting[k - 1] = true;
			g->nwaiting++;
		}
	}
	if (g->nwaiting == 0)
		gather_done(h, g);
	arm_gathers(h);
}

/* HUB_VIEWED (gid, text) from worker no. */
static void gather_answer(struct hub *h, unsigned no, const struct hubmsg *m)
{
	struct list_node *n;
	uint64_t gid;

	if (m->nfields != 2 || !hubmsg_u64(m, 0, &gid))
		return;
	for (n = list_first(&h->gathers); n; n = list_next(&h->gathers, n)) {
		struct hub_gather *g = list_entry(n, struct hub_gather, link);

		if (g->gid != gid)
			continue;
		if (!g->waiting[no - 1])
			return;
		g->waiting[no - 1] = false;
		g->nwaiting--;
		if (buf_append(&g->texts[no - 1], m->f[1].data, m->f[1].len) == 0)
			g->answered[no - 1] = true;
		if (g->nwaiting == 0) {
			gather_done(h, g);
			arm_gathers(h);
		}
		return;
	}
}

/* ---- a worker's frames ---- */

static void answer_get(struct hub *h, struct hub_conn *c, const struct hubmsg *m)
{
	char key[HUB_KEY_MAX];
	struct hub_entry *e;
	struct hubmsg_field f[3];

	if (m->nfields != 2 || !hubmsg_copy(m, 1, key, sizeof(key)))
		return;
	e = entry_of(h, key);
	if (e && e->expires_ms <= now_ms())
		e = NULL;
	f[0] = m->f[0];
	f[1] = hubmsg_str(e ? "1" : "0");
	f[2] = (struct hubmsg_field){ e ? e->value : "", e ? e->len : 0 };
	send_to(c, HUB_VALUE, 3, f);
}

static void answer_lock(struct hub *h, struct hub_conn *c, const struct hubmsg *m)
{
	char key[HUB_KEY_MAX];
	char owner[HUB_OWNER_MAX];
	double ttl;
	int won;
	struct hubmsg_field f[2];

	if (m->nfields != 4 || !hubmsg_copy(m, 1, key, sizeof(key)) ||
	    !hubmsg_copy(m, 2, owner, sizeof(owner)) || !hubmsg_num(m, 3, &ttl))
		return;
	won = lock_take(h, key, owner, c->no, ttl);
	f[0] = m->f[0];
	f[1] = hubmsg_str(won > 0 ? "1" : "0");
	send_to(c, HUB_LOCKED, 2, f);
}

/* HUB_UNLOCK (key, owner), or with extend HUB_EXTEND (key, owner, ttl_ms). */
static void unlock_or_extend(struct hub *h, const struct hubmsg *m, bool extend)
{
	char key[HUB_KEY_MAX];
	char owner[HUB_OWNER_MAX];
	struct hub_lock *l;
	double ttl = 0;

	if (m->nfields != (extend ? 3u : 2u) || !hubmsg_copy(m, 0, key, sizeof(key)) ||
	    !hubmsg_copy(m, 1, owner, sizeof(owner)) || (extend && !hubmsg_num(m, 2, &ttl)))
		return;
	l = lock_of(h, key);
	if (!l || strcmp(l->owner, owner))
		return;
	if (extend)
		l->expires_ms = now_ms() + (uint64_t)(ttl > 1 ? ttl : 1);
	else
		lock_drop(h, l);
}

static bool on_frame(void *arg, const struct hubmsg *m)
{
	struct hub_conn *c = arg;
	struct hub *h = c->h;
	char key[HUB_KEY_MAX];
	double ttl;

	switch (m->type) {
	case HUB_READY:
		if (h->ops.on_ready)
			h->ops.on_ready(h->arg, c->no);
		break;
	case HUB_PUT:
		if (m->nfields == 3 && hubmsg_copy(m, 0, key, sizeof(key)) &&
		    hubmsg_num(m, 2, &ttl) && store_put(h, key, &m->f[1], ttl) == 0)
			relay(h, c->no, HUB_MESSAGE, 1, &m->f[1]);
		break;
	case HUB_GET:
		answer_get(h, c, m);
		break;
	case HUB_LOCK:
		answer_lock(h, c, m);
		break;
	case HUB_UNLOCK:
		unlock_or_extend(h, m, false);
		break;
	case HUB_EXTEND:
		unlock_or_extend(h, m, true);
		break;
	case HUB_GATHER:
		gather_start(h, c->no, m);
		break;
	case HUB_VIEWED:
		gather_answer(h, c->no, m);
		break;
	case HUB_HEALTH:
	case HUB_BUDGET:
		relay(h, c->no, m->type, m->nfields, m->f);
		break;
	default:
		log_warn("hub: worker %u sent a %s message, which the hub does not take", c->no,
			 hubmsg_type_name(m->type));
		break;
	}
	return c->open;
}

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *ub)
{
	struct hub_conn *c = hd->data;

	(void)suggested;
	hubio_alloc(&c->in, ub);
}

static void on_conn_closed(uv_handle_t *hd)
{
	struct hub_conn *c = hd->data;

	buf_free(&c->in);
	free(c);
}

/* Stops reading c and closes it; its worker's state is hub_detach's. */
static void conn_close(struct hub_conn *c)
{
	if (!c->open)
		return;
	c->open = false;
	uv_read_stop((uv_stream_t *)&c->pipe);
	uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *ub)
{
	struct hub_conn *c = s->data;

	(void)ub;
	if (nread < 0) {
		/* The worker died or closed it: its exit is what detaches it. */
		if (nread != UV_EOF)
			log_warn("hub: worker %u's socket: %s", c->no, uv_strerror((int)nread));
		uv_read_stop(s);
		return;
	}
	if (hubio_read(&c->in, (size_t)nread, on_frame, c)) {
		log_error("hub: worker %u sent a malformed message: its socket is closed", c->no);
		hub_detach(c->h, c->no);
	}
}

/* ---- life ---- */

int hub_init(struct hub *h, uv_loop_t *loop, unsigned n, const struct hub_ops *ops, void *arg)
{
	memset(h, 0, sizeof(*h));
	h->loop = loop;
	h->n = n;
	h->ops = *ops;
	h->arg = arg;
	list_init(&h->gathers);
	h->conn = calloc(n, sizeof(*h->conn));
	h->restarts = calloc(n, sizeof(*h->restarts));
	h->attached = calloc(n, sizeof(*h->attached));
	if (!h->conn || !h->restarts || !h->attached) {
		hub_free(h);
		return -ENOMEM;
	}
	uv_timer_init(loop, &h->gather_timer);
	h->gather_timer.data = h;
	return 0;
}

int hub_attach(struct hub *h, unsigned no, int fd)
{
	struct hub_conn *c = calloc(1, sizeof(*c));
	int rc;

	if (!c) {
		close(fd);
		return UV_ENOMEM;
	}
	hub_detach(h, no);
	c->h = h;
	c->no = no;
	uv_pipe_init(h->loop, &c->pipe, 0);
	c->pipe.data = c;
	rc = uv_pipe_open(&c->pipe, fd);
	if (!rc)
		rc = uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
	if (rc) {
		uv_os_fd_t taken;

		if (uv_fileno((uv_handle_t *)&c->pipe, &taken))
			close(fd);	/* the pipe did not take it */
		uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
		return rc;
	}
	c->open = true;
	h->conn[no - 1] = c;
	if (h->attached[no - 1]++)
		h->restarts[no - 1]++;
	return 0;
}

void hub_detach(struct hub *h, unsigned no)
{
	struct hub_conn *c = h->conn[no - 1];
	struct list_node *n;
	struct list_node *next;
	size_t i;

	if (!c)
		return;
	h->conn[no - 1] = NULL;
	conn_close(c);
	for (i = h->nlocks; i-- > 0;) {
		if (h->locks[i].no == no)
			lock_drop(h, &h->locks[i]);
	}
	for (n = list_first(&h->gathers); n; n = next) {
		struct hub_gather *g = list_entry(n, struct hub_gather, link);

		next = list_next(&h->gathers, n);
		if (g->asker == no) {
			list_remove(&h->gathers, n);
			gather_free(g);
		} else if (g->waiting[no - 1]) {
			g->waiting[no - 1] = false;
			if (--g->nwaiting == 0)
				gather_done(h, g);
		}
	}
	arm_gathers(h);
}

int hub_metrics(const struct hub *h, const bool *answered, struct buf *b)
{
	unsigned k;
	int rc = buf_printf(b, "# HELP faultline_workers Worker processes the gateway runs "
			       "(workers).\n# TYPE faultline_workers gauge\nfaultline_workers %u\n",
			    h->n);

	rc |= buf_puts(b, "# HELP faultline_worker_up Whether the worker's figures are in this "
			  "view: 1, or 0 when it did not answer (dead, restarting, or slower "
			  "than a second).\n# TYPE faultline_worker_up gauge\n");
	for (k = 1; k <= h->n; k++)
		rc |= buf_printf(b, "faultline_worker_up{worker=\"%u\"} %d\n", k,
				 answered[k - 1] ? 1 : 0);
	rc |= buf_puts(b, "# HELP faultline_worker_restarts_total Times the supervisor started "
			  "the worker again after it died.\n"
			  "# TYPE faultline_worker_restarts_total counter\n");
	for (k = 1; k <= h->n; k++)
		rc |= buf_printf(b, "faultline_worker_restarts_total{worker=\"%u\"} %" PRIu64 "\n", k,
				 h->restarts[k - 1]);
	return rc ? -ENOMEM : 0;
}

void hub_close(struct hub *h)
{
	struct list_node *n;
	unsigned k;

	if (h->closed)
		return;
	h->closed = true;
	for (k = 1; k <= h->n; k++) {
		if (h->conn[k - 1])
			conn_close(h->conn[k - 1]);
		h->conn[k - 1] = NULL;
	}
	while ((n = list_first(&h->gathers)) != NULL) {
		list_remove(&h->gathers, n);
		gather_free(list_entry(n, struct hub_gather, link));
	}
	uv_close((uv_handle_t *)&h->gather_timer, NULL);
}

void hub_free(struct hub *h)
{
	size_t i;

	for (i = 0; i < h->nentries; i++) {
		free(h->entries[i].key);
		free(h->entries[i].value);
	}
	for (i = 0; i < h->nlocks; i++) {
		free(h->locks[i].key);
		free(h->locks[i].owner);
	}
	free(h->entries);
	free(h->locks);
	free(h->conn);
	free(h->restarts);
	free(h->attached);
	h->entries = NULL;
	h->locks = NULL;
	h->conn = NULL;
}
