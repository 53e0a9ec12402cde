/*
 * curl_uv: libcurl's multi_socket interface on a libuv loop. One uv_poll_t
 * per socket curl asks about, one uv_timer_t for curl's timeout, and after
 * every action a drain of curl_multi_info_read.
 */
#include <errno.h>
#include <stdlib.h>

#include "curl_uv.h"

/* One socket curl asked us to watch. */
struct curl_watch {
	uv_poll_t poll;			/* first: the handle's memory is the watch's */
	curl_socket_t fd;
	struct curl_uv *cu;
	struct curl_watch *prev;
	struct curl_watch *next;
};

static void maybe_closed(struct curl_uv *cu)
{
	if (cu->closed && cu->closing == 0 && !cu->watches && cu->on_closed)
		cu->on_closed(cu);
}

/* Hands every finished transfer back to its owner. */
static void drain_done(struct curl_uv *cu)
{
	CURLMsg *msg;
	CURL *easy;
	CURLcode result;
	int left;

	for (;;) {
		msg = curl_multi_info_read(cu->multi, &left);
		if (!msg)
			break;
		if (msg->msg != CURLMSG_DONE)
			continue;
		/* msg belongs to the handle: read it before removing. */
		easy = msg->easy_handle;
		result = msg->data.result;
		curl_multi_remove_handle(cu->multi, easy);
		cu->transfers--;
		cu->on_done(cu, easy, result);
	}
}

static void on_watch_closed(uv_handle_t *h)
{
	struct curl_watch *w = h->data;
	struct curl_uv *cu = w->cu;

	free(w);
	cu->closing--;
	maybe_closed(cu);
}

static void unwatch(struct curl_uv *cu, struct curl_watch *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		cu->watches = w->next;
	if (w->next)
		w->next->prev = w->prev;
	uv_poll_stop(&w->poll);
	cu->closing++;
	uv_close((uv_handle_t *)&w->poll, on_watch_closed);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct curl_watch *w = h->data;
	struct curl_uv *cu = w->cu;
	int flags = 0;
	int running;

	if (status < 0) {
		/* Let curl read what arrived before the error, then meet it. */
		flags = CURL_CSELECT_ERR | CURL_CSELECT_IN | CURL_CSELECT_OUT;
	} else {
		if (events & UV_READABLE)
			flags |= CURL_CSELECT_IN;
		if (events & UV_WRITABLE)
			flags |= CURL_CSELECT_OUT;
	}
	curl_multi_socket_action(cu->multi, w->fd, flags, &running);
	drain_done(cu);
}

static void on_timeout(uv_timer_t *t)
{
	struct curl_uv *cu = t->data;
	int running;

	curl_multi_socket_action(cu->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	drain_done(cu);
}

/* CURLMOPT_SOCKETFUNCTION: start, change or stop watching a socket. */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct curl_uv *cu = userp;
	struct curl_watch *w = socketp;
	int events = 0;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (w) {
			curl_multi_assign(cu->multi, fd, NULL);
			unwatch(cu, w);
		}
		return 0;
	}
	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w)
			return -1;
		if (uv_poll_init_socket(cu->loop, &w->poll, fd)) {
			free(w);
			return -1;
		}
		w->fd = fd;
		w->cu = cu;
		w->poll.data = w;
		w->next = cu->watches;
		if (cu->watches)
			cu->watches->prev = w;
		cu->watches = w;
		curl_multi_assign(cu->multi, fd, w);
	}
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		events |= UV_READABLE;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		events |= UV_WRITABLE;
	if (uv_poll_start(&w->poll, events, on_poll))
		return -1;
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: curl wants to be called after timeout_ms. */
static int on_timer_change(CURLM *multi, long timeout_ms, void *userp)
{
	struct curl_uv *cu = userp;

	(void)multi;
	if (cu->closed)
		return 0;
	if (timeout_ms < 0)
		uv_timer_stop(&cu->timer);
	else
		uv_timer_start(&cu->timer, on_timeout, (uint64_t)timeout_ms, 0);
	return 0;
}

int curl_uv_init(struct curl_uv *cu, uv_loop_t *loop, curl_uv_done_cb on_done)
{
	*cu = (struct curl_uv){ .loop = loop, .on_done = on_done };
	cu->multi = curl_multi_init();
	if (!cu->multi)
		return -ENOMEM;
	uv_timer_init(loop, &cu->timer);
	cu->timer.data = cu;
	curl_multi_setopt(cu->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(cu->multi, CURLMOPT_SOCKETDATA, cu);
	curl_multi_setopt(cu->multi, CURLMOPT_TIMERFUNCTION, on_timer_change);
	curl_multi_setopt(cu->multi, CURLMOPT_TIMERDATA, cu);
	return 0;
}

int curl_uv_add(struct curl_uv *cu, CURL *easy)
{
	if (cu->closed)
		return -EINVAL;
	if (curl_multi_add_handle(cu->multi, easy) != CURLM_OK)
		return -EINVAL;
	cu->transfers++;
	return 0;
}

int curl_uv_remove(struct curl_uv *cu, CURL *easy)
{
	if (curl_multi_remove_handle(cu->multi, easy) != CURLM_OK)
		return -EINVAL;
	cu->transfers--;
	return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
	struct curl_uv *cu = h->data;

	cu->closing--;
	maybe_closed(cu);
}

void curl_uv_close(struct curl_uv *cu, curl_uv_closed_cb on_closed)
{
	if (cu->closed)
		return;
	cu->closed = true;
	cu->on_closed = on_closed;
	/* Closing the connection cache tells on_socket about its sockets. */
	curl_multi_cleanup(cu->multi);
	cu->multi = NULL;
	while (cu->watches)
		unwatch(cu, cu->watches);
	cu->closing++;
	uv_close((uv_handle_t *)&cu->timer, on_timer_closed);
}
