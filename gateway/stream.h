/*
 * stream: relaying a streaming request's events to its client (stream.c).
 */
#ifndef FAULTLINE_GATEWAY_STREAM_H
#define FAULTLINE_GATEWAY_STREAM_H

#include <curl/curl.h>
#include <stddef.h>

#include "common/http_server.h"

struct greq;
struct leg;

/*
 * CURLOPT_WRITEFUNCTION of a 2xx event stream: events held back until
 * the commit, then relayed. Returns len, 0 to end the transfer, or
 * CURL_WRITEFUNC_PAUSE while the client is slow.
 */
size_t stream_on_body(struct leg *l, char *data, size_t len);

/*
 * A committed stream's transfer is over (code: curl's result): ends the
 * client's stream if that is still to do, then the request.
 */
void stream_over(struct greq *g, CURLcode code);

/* Takes g off the list of streams waiting for the flush. */
void stream_unmark(struct greq *g);

/* http_server's on_drain: the client took everything queued, so a paused upstream goes on. */
void stream_on_client_drain(struct http_exchange *ex, void *data);

/*
 * A committed stream the gateway itself cuts (it is stopping): the client
 * is told so, and its chunked answer ended, before the connection closes.
 */
void stream_cut(struct http_exchange *ex);

#endif
