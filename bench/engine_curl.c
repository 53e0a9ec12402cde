/*
 * engine_curl: the libcurl streamclient engine — one easy handle per
 * stream in one multi handle, driven by libuv through curl's socket
 * interface (a uv_poll_t per socket curl watches, one uv_timer_t for curl's
 * timeout), with every chunk curl writes handed on with the time it came.
 *
 * It exists to check the raw engine against an independent HTTP client,
 * and to show what a general-purpose client costs at this load.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "streamclient.h"

struct curl_run {
	CURLM *multi;
	uv_timer_t timer;
	struct curl_slist *headers;
	bool timer_open;
	bool aborted;
	struct run *r;
};

struct curl_stream {
	CURL *easy;
	struct stream *s;
	char errbuf[CURL_ERROR_SIZE];
};

/* One socket curl asked us to watch. */
struct sock_watch {
	uv_poll_t poll;		/* first: the handle's memory is the watch's */
	curl_socket_t fd;
	struct curl_run *cr;
};

static void check_done(struct curl_run *cr);

static size_t on_write(char *data, size_t size, size_t n, void *userp)
{
	struct curl_stream *cs = userp;
	uint64_t now = clock_mono_ns();

	stream_on_body(cs->s, data, size * n, now, now);
	return size * n;
}

static void on_watch_closed(uv_handle_t *h)
{
	free(h->data);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct sock_watch *w = h->data;
	int flags = 0;
	int running;

	/* On a socket error let curl's own read or write find out which. */
	if (status < 0)
		events = UV_READABLE | UV_WRITABLE;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(w->cr->multi, w->fd, flags, &running);
	check_done(w->cr);
}

static void on_timeout(uv_timer_t *t)
{
	struct curl_run *cr = t->data;
	int running;

	curl_multi_socket_action(cr->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(cr);
}

/* CURLMOPT_SOCKETFUNCTION: start, change or stop watching a socket. */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct curl_run *cr = userp;
	struct sock_watch *w = socketp;
	int events = 0;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (w) {
			uv_poll_stop(&w->poll);
			uv_close((uv_handle_t *)&w->poll, on_watch_closed);
			curl_multi_assign(cr->multi, fd, NULL);
		}
		return 0;
	}
	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w)
			return -1;
		w->fd = fd;
		w->cr = cr;
		if (uv_poll_init_socket(cr->r->loop, &w->poll, fd)) {
			free(w);
			return -1;
		}
		w->poll.data = w;
		curl_multi_assign(cr->multi, fd, w);
	}
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		events |= UV_READABLE;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		events |= UV_WRITABLE;
	uv_poll_start(&w->poll, events, on_poll);
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: curl wants to be called after timeout_ms. */
static int on_timer_change(CURLM *multi, long timeout_ms, void *userp)
{
	struct curl_run *cr = userp;

	(void)multi;
	if (cr->aborted)
		return 0;
	if (timeout_ms < 0)
		uv_timer_stop(&cr->timer);
	else
		uv_timer_start(&cr->timer, on_timeout, (uint64_t)timeout_ms, 0);
	return 0;
}

/* Ends the streams whose transfers curl has finished. */
static void check_done(struct curl_run *cr)
{
	struct curl_stream *cs;
	CURLMsg *msg;
	CURLcode result;
	long status;
	int left;

	for (;;) {
		if (cr->aborted)
			break;
		msg = curl_multi_info_read(cr->multi, &left);
		if (!msg)
			break;
		if (msg->msg != CURLMSG_DONE)
			continue;
		/* msg is freed with its handle: take what it says first. */
		result = msg->data.result;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&cs);
		status = 0;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
		curl_multi_remove_handle(cr->multi, cs->easy);
		curl_easy_cleanup(cs->easy);
		cs->easy = NULL;
		stream_finish(cs->s, (int)status, result == CURLE_OK ? NULL :
			      cs->errbuf[0] ? cs->errbuf : curl_easy_strerror(result));
	}
}

static int start_stream(struct curl_run *cr, struct stream *s)
{
	struct curl_stream *cs = calloc(1, sizeof(*cs));
	struct run *r = cr->r;

	if (!cs)
		return UV_ENOMEM;
	s->conn = cs;
	cs->s = s;
	cs->easy = curl_easy_init();
	if (!cs->easy)
		return UV_ENOMEM;
	curl_easy_setopt(cs->easy, CURLOPT_URL, r->url);
	curl_easy_setopt(cs->easy, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(cs->easy, CURLOPT_POSTFIELDSIZE, (long)r->body_len);
	curl_easy_setopt(cs->easy, CURLOPT_HTTPHEADER, cr->headers);
	curl_easy_setopt(cs->easy, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(cs->easy, CURLOPT_WRITEDATA, cs);
	curl_easy_setopt(cs->easy, CURLOPT_PRIVATE, cs);
	curl_easy_setopt(cs->easy, CURLOPT_ERRORBUFFER, cs->errbuf);
	curl_easy_setopt(cs->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(cs->easy, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(cs->easy, CURLOPT_PROXY, "");
	s->state = STREAM_RUNNING;
	r->nactive++;
	s->start_ns = clock_mono_ns();
	if (curl_multi_add_handle(cr->multi, cs->easy) != CURLM_OK) {
		curl_easy_cleanup(cs->easy);
		cs->easy = NULL;
		stream_finish(s, 0, "curl_multi_add_handle failed");
	}
	return 0;
}

static int curl_start(struct run *r)
{
	struct curl_run *cr = calloc(1, sizeof(*cr));
	struct curl_slist *h;
	int rc;
	int i;

	if (!cr)
		return UV_ENOMEM;
	r->engine = cr;
	cr->r = r;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(r->first_error, sizeof(r->first_error), "curl_global_init failed");
		return UV_EINVAL;
	}
	cr->multi = curl_multi_init();
	uv_timer_init(r->loop, &cr->timer);
	cr->timer.data = cr;
	cr->timer_open = true;
	h = curl_slist_append(NULL, "Content-Type: application/json");
	if (h)
		cr->headers = curl_slist_append(h, "Accept: text/event-stream");
	if (!cr->multi || !h || !cr->headers)
		return UV_ENOMEM;
	curl_multi_setopt(cr->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(cr->multi, CURLMOPT_SOCKETDATA, cr);
	curl_multi_setopt(cr->multi, CURLMOPT_TIMERFUNCTION, on_timer_change);
	curl_multi_setopt(cr->multi, CURLMOPT_TIMERDATA, cr);
	for (i = 0; i < r->nstreams; i++) {
		rc = start_stream(cr, &r->streams[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
	(void)h;
}

static void curl_abort(struct run *r)
{
	struct curl_run *cr = r->engine;
	struct curl_stream *cs;
	int i;

	if (!cr || cr->aborted)
		return;
	/* Removing a handle closes its socket, and curl tells on_socket. */
	for (i = 0; i < r->nstreams; i++) {
		cs = r->streams[i].conn;
		if (cs && cs->easy) {
			curl_multi_remove_handle(cr->multi, cs->easy);
			curl_easy_cleanup(cs->easy);
			cs->easy = NULL;
		}
	}
	cr->aborted = true;
	if (cr->timer_open) {
		uv_close((uv_handle_t *)&cr->timer, on_timer_closed);
		cr->timer_open = false;
	}
}

static void curl_cleanup(struct run *r)
{
	struct curl_run *cr = r->engine;
	int i;

	if (!cr)
		return;
	curl_abort(r);
	for (i = 0; i < r->nstreams; i++) {
		free(r->streams[i].conn);
		r->streams[i].conn = NULL;
	}
	if (cr->multi)
		curl_multi_cleanup(cr->multi);
	curl_slist_free_all(cr->headers);
	curl_global_cleanup();
	free(cr);
	r->engine = NULL;
}

const struct engine engine_curl = {
	.name = "curl",
	.start = curl_start,
	.abort = curl_abort,
	.cleanup = curl_cleanup,
};
