/*
 * curl_uv: libcurl's multi_socket interface on a libuv loop. One uv_poll_t
 * per socket curl asks about, one uv_timer_t for curl's timeout, and after
 * every action a drain of curl_multi_info_read.
 *
 * A kept-alive connection goes back to curl's pool after every transfer,
 * and curl says CURL_POLL_REMOVE; stopping and closing its poll each time
 * costs three or four syscalls a request. So the sockets curl_uv opened
 * for connections (its CURLOPT_OPENSOCKETFUNCTION) that curl has read from
 * stay watched while idle: an event on an idle socket (the server closed
 * it) stops the poll, and the watch goes only when curl closes the socket
 * (through curl_uv's CURLOPT_CLOSESOCKETFUNCTION, before the close). A
 * socket that never got that far (a connect attempt: libcurl 7.88 closes
 * those with a plain close()) is unwatched at REMOVE, as is every socket
 * curl_uv did not open; an fd is taken as curl_uv's only while its inode
 * is the one on_open saw. Idle watches do not keep the loop alive.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/curl_uv.h"

/* One socket curl asked us to watch. */
struct curl_watch {
	uv_poll_t poll;			/* first: the handle's memory is the watch's */
	curl_socket_t fd;
	struct curl_uv *cu;
	struct list_node link;		/* on cu->watches */
	int events;			/* UV_READABLE/UV_WRITABLE polled; 0: stopped */
	bool idle;			/* curl said REMOVE: back in its pool */
	bool owned;			/* opened by on_open, closed by on_close */
	bool established;		/* curl has read from it: a connection, not an attempt */
};

/* The socket's inode (unique among open sockets), or 0. */
static ino_t ino_of(curl_socket_t fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

/* The watch of fd, or NULL. */
static struct curl_watch *watch_of(const struct curl_uv *cu, curl_socket_t fd)
{
	if (fd < 0 || (size_t)fd >= cu->nfds)
		return NULL;
	return cu->by_fd[fd];
}

/* Makes room in the fd tables for fd. Returns 0 or -ENOMEM. */
static int grow_fds(struct curl_uv *cu, curl_socket_t fd)
{
	size_t n = cu->nfds ? cu->nfds : 64;
	struct curl_watch **w;
	ino_t *o;

	if ((size_t)fd < cu->nfds)
		return 0;
	while (n <= (size_t)fd)
		n *= 2;
	w = realloc(cu->by_fd, n * sizeof(*w));
	if (!w)
		return -ENOMEM;
	cu->by_fd = w;
	o = realloc(cu->owned, n * sizeof(*o));
	if (!o)
		return -ENOMEM;
	cu->owned = o;
	memset(w + cu->nfds, 0, (n - cu->nfds) * sizeof(*w));
	memset(o + cu->nfds, 0, (n - cu->nfds) * sizeof(*o));
	cu->nfds = n;
	return 0;
}

static void free_fds(struct curl_uv *cu);

static void maybe_closed(struct curl_uv *cu)
{
	if (!cu->closed || cu->closing || !list_empty(&cu->watches))
		return;
	free_fds(cu);
	if (cu->on_closed)
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
	list_remove(&cu->watches, &w->link);
	if (watch_of(cu, w->fd) == w)
		cu->by_fd[w->fd] = NULL;
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

	if (status < 0)
		w->events = 0;		/* libuv stopped the handle on POLLERR */
	if (w->idle) {
		/* Curl is not using the socket: it finds out when it next does. */
		uv_poll_stop(&w->poll);
		w->events = 0;
		return;
	}
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
	struct curl_watch *w = socketp ? socketp : watch_of(cu, fd);
	int events = 0;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (!w)
			return 0;
		curl_multi_assign(cu->multi, fd, NULL);
		if (w->owned && w->established) {
			w->idle = true;		/* on_close ends it */
			uv_unref((uv_handle_t *)&w->poll);
		} else {
			/*
			 * A connect attempt: curl 7.88 closes those without the
			 * closesocket callback (cf_socket_close, !ctx->active).
			 */
			if ((size_t)fd < cu->nfds)
				cu->owned[fd] = 0;
			unwatch(cu, w);
		}
		return 0;
	}
	if (!w) {
		if (grow_fds(cu, fd))
			return -1;
		w = calloc(1, sizeof(*w));
		if (!w)
			return -1;
		if (uv_poll_init_socket(cu->loop, &w->poll, fd)) {
			free(w);
			return -1;
		}
		w->fd = fd;
		w->cu = cu;
		w->owned = cu->owned[fd] && cu->owned[fd] == ino_of(fd);
		w->poll.data = w;
		list_push_front(&cu->watches, &w->link);
		cu->by_fd[fd] = w;
	}
	if (w->idle) {
		w->idle = false;
		uv_ref((uv_handle_t *)&w->poll);
	}
	curl_multi_assign(cu->multi, fd, w);
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT) {
		events |= UV_READABLE;
		w->established = true;
	}
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		events |= UV_WRITABLE;
	if (events == w->events)
		return 0;		/* already polled so: no syscall */
	if (uv_poll_start(&w->poll, events, on_poll))
		return -1;
	w->events = events;
	return 0;
}

/* CURLOPT_OPENSOCKETFUNCTION: a connection's socket, noted as ours. */
static curl_socket_t on_open(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct curl_uv_note *note = clientp;
	struct curl_uv *cu = note->cu;
	curl_socket_t fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);

	if (fd < 0) {
		/* Only the process's own resources: any other errno is curl's to report. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			note->socket_errno = errno;
		return CURL_SOCKET_BAD;
	}
	note->socket_errno = 0;	/* an earlier failure (another address) is past */
	if (purpose != CURLSOCKTYPE_IPCXN)
		return fd;
	if (grow_fds(cu, fd)) {
		close(fd);
		return CURL_SOCKET_BAD;
	}
	cu->owned[fd] = ino_of(fd);
	return fd;
}

/* CURLOPT_CLOSESOCKETFUNCTION: the watch goes before the socket does. */
static int on_close(void *clientp, curl_socket_t fd)
{
	struct curl_uv *cu = clientp;
	struct curl_watch *w = watch_of(cu, fd);

	if (w)
		unwatch(cu, w);
	if (fd >= 0 && (size_t)fd < cu->nfds)
		cu->owned[fd] = 0;
	return close(fd);
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
	list_init(&cu->watches);
	cu->multi = curl_multi_init();
	if (!cu->multi)
		return -ENOMEM;
	uv_timer_init(loop, &cu->timer);
	cu->timer.data = cu;
	curl_multi_setopt(cu->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(cu->multi, CURLMOPT_SOCKETDATA, cu);
	curl_multi_setopt(cu->multi, CURLMOPT_TIMERFUNCTION, on_timer_change);
	curl_multi_setopt(cu->multi, CURLMOPT_TIMERDATA, cu);
	cu->self.cu = cu;
	return 0;
}

int curl_uv_add(struct curl_uv *cu, CURL *easy)
{
	return curl_uv_add_noted(cu, easy, &cu->self);
}

int curl_uv_add_noted(struct curl_uv *cu, CURL *easy, struct curl_uv_note *note)
{
	if (cu->closed)
		return -EINVAL;
	note->cu = cu;
	note->socket_errno = 0;
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, on_open);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, note);
	curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, on_close);
	curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, cu);
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

static void free_fds(struct curl_uv *cu)
{
	free(cu->by_fd);
	free(cu->owned);
	cu->by_fd = NULL;
	cu->owned = NULL;
	cu->nfds = 0;
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
	while (!list_empty(&cu->watches))
		unwatch(cu, list_entry(list_first(&cu->watches), struct curl_watch, link));
	cu->closing++;
	uv_close((uv_handle_t *)&cu->timer, on_timer_closed);
}

bool curl_uv_header_split(const char *line, size_t len, struct curl_uv_header *h)
{
	const char *colon = memchr(line, ':', len);
	const char *v;
	size_t vlen;
	size_t i;

	if (!colon || (len >= 5 && strncmp(line, "HTTP/", 5) == 0))
		return false;
	h->name = line;
	h->name_len = (size_t)(colon - line);
	v = colon + 1;
	vlen = len - h->name_len - 1;
	while (vlen && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
	while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' ' ||
			v[vlen - 1] == '\t'))
		vlen--;
	for (i = 0; i < vlen; i++) {
		unsigned char c = (unsigned char)v[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;	/* a bare CR or the like: never relayed */
	}
	if (vlen >= sizeof(h->value))
		vlen = sizeof(h->value) - 1;
	memcpy(h->value, v, vlen);
	h->value[vlen] = '\0';
	return true;
}

bool curl_uv_header_is(const struct curl_uv_header *h, const char *name)
{
	return name && strlen(name) == h->name_len && strncasecmp(h->name, name, h->name_len) == 0;
}
