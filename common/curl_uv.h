/*
 * curl_uv: libcurl's multi_socket interface driven by a libuv loop — the
 * pattern of curl's docs/examples/multi-uv.c, with its gaps closed: every
 * finished transfer is drained from curl_multi_info_read after every
 * action, a poll error is handed to curl as CURL_CSELECT_ERR, and the poll
 * handles are freed only in their close callbacks. Every outbound HTTP
 * request of loadgen and the gateway goes through one of these per process.
 *
 * The caller owns its easy handles: it configures them, adds them with
 * curl_uv_add, and gets each back exactly once — through on_done when the
 * transfer ends, or by taking it back itself with curl_uv_remove.
 */
#ifndef FAULTLINE_CURL_UV_H
#define FAULTLINE_CURL_UV_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#include "common/list.h"

struct curl_uv;

/*
 * A transfer ended: easy has been removed from the multi handle already and
 * is the caller's again (to reuse or clean up); result is its CURLcode. The
 * callback may add and remove other handles.
 */
typedef void (*curl_uv_done_cb)(struct curl_uv *cu, CURL *easy, CURLcode result);

/* Called once every handle curl_uv used is closed and its memory is free. */
typedef void (*curl_uv_closed_cb)(struct curl_uv *cu);

struct curl_watch;
struct curl_uv;

/*
 * What curl_uv notes of one transfer, in the caller's memory (see
 * curl_uv_add_noted): whether creating a socket for it failed, and why.
 */
struct curl_uv_note {
	struct curl_uv *cu;
	int socket_errno;		/* errno of the last socket() that failed; 0: none */
};

struct curl_uv {
	uv_timer_t timer;		/* curl's timeout */
	uv_loop_t *loop;
	CURLM *multi;
	curl_uv_done_cb on_done;
	curl_uv_closed_cb on_closed;
	void *data;			/* the caller's */
	struct list watches;		/* sockets being polled (struct curl_watch) */
	struct curl_watch **by_fd;	/* the watch of each fd, or NULL */
	ino_t *owned;			/* inode of the fd curl_uv opened for a connection; 0: not ours */
	size_t nfds;			/* size of by_fd and owned */
	size_t closing;			/* handles whose close callback is due */
	size_t transfers;		/* easy handles added and not yet back */
	bool closed;			/* curl_uv_close was called */
	struct curl_uv_note self;	/* the note of transfers added unnoted */
};

/*
 * Sets up cu on loop with a new multi handle; on_done gets every finished
 * transfer. curl_global_init must have been called. Returns 0 or a negative
 * errno (-ENOMEM).
 */
int curl_uv_init(struct curl_uv *cu, uv_loop_t *loop, curl_uv_done_cb on_done);

/*
 * Starts a transfer. Returns 0, or -EINVAL when curl refuses the handle
 * (already added, or cu is closing). The easy handle must stay valid until
 * it comes back. curl_uv sets the handle's CURLOPT_OPENSOCKETFUNCTION and
 * CURLOPT_CLOSESOCKETFUNCTION (and their data) to its own: the caller must
 * not set them.
 */
int curl_uv_add(struct curl_uv *cu, CURL *easy);

/*
 * curl_uv_add, noting in *note (which must outlive the transfer) what
 * curl_uv sees of it that libcurl does not report: note->socket_errno is
 * EMFILE, ENFILE, ENOBUFS or ENOMEM when the last socket() made for it
 * failed so (the process's own resources, not the upstream's fault;
 * libcurl says only CURLE_COULDNT_CONNECT, with CURLINFO_OS_ERRNO 0),
 * else 0.
 */
int curl_uv_add_noted(struct curl_uv *cu, CURL *easy, struct curl_uv_note *note);

/*
 * Takes a transfer back before it ends (a timeout of the caller's, a
 * cancelled hedge): its connection is closed or returned to the pool, and
 * on_done is not called for it. Must not be called from inside one of the
 * easy handle's own libcurl callbacks (write, header…); from a libuv
 * callback or on_done it is safe. easy must be in flight (added and not
 * yet back): libcurl 7.88 cannot tell a handle that already came back, so
 * removing one twice is the caller's bug, not caught here. Returns 0, or
 * -EINVAL when libcurl refuses.
 */
int curl_uv_remove(struct curl_uv *cu, CURL *easy);

/*
 * Closes cu: every transfer must have come back first. Cached connections
 * are closed, then the timer and the poll handles; on_closed (may be NULL)
 * runs once all are closed, after which cu's memory may be freed. Easy
 * handles keep curl_uv's socket callbacks (pointing at cu): clean them up,
 * or add them to another curl_uv, but do not use them alone afterwards.
 */
void curl_uv_close(struct curl_uv *cu, curl_uv_closed_cb on_closed);

/* One line of a CURLOPT_HEADERFUNCTION callback, split at its colon. */
struct curl_uv_header {
	const char *name;	/* into the line; not NUL-terminated */
	size_t name_len;
	char value[256];	/* without surrounding white space or CRLF; cut to fit */
};

/*
 * Splits a header line ("Name: value\r\n", len bytes) into h. Returns false
 * for lines that are not a header — the status line, the blank line, a line
 * without a colon — and for a value with a control character (a bare CR,
 * say) other than a tab, which no caller should pass on.
 */
bool curl_uv_header_split(const char *line, size_t len, struct curl_uv_header *h);

/* Whether h is the header called name (case-insensitive); false for a NULL name. */
bool curl_uv_header_is(const struct curl_uv_header *h, const char *name);

#endif
