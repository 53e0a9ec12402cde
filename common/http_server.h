/*
 * http_server: an HTTP/1.1 server on libuv and http-parser, shared by the
 * mock providers, the gateway and the admin endpoints.
 *
 * One request per connection is handled at a time (pipelined requests wait
 * their turn). A request reaches the program as an exchange; the program
 * answers it at once or later — from a timer, a finished upstream transfer —
 * with a whole response (http_respond) or a chunked stream
 * (http_stream_begin/_write/_end). Keep-alive, request size limits, header
 * and idle timeouts, a connection limit and `Expect: 100-continue` are
 * handled here; protocol errors get an OpenAI-style JSON error (400, 408 is
 * a silent close, 413, 431). A chunked request's trailer fields are read
 * (they count toward max_header_bytes) and dropped: a request's headers are
 * the ones before its body.
 *
 * Ownership: the exchange belongs to the server. It stays valid until the
 * program ends it (the last write of a response, http_exchange_close, or any
 * call that returns an error) or until the server calls the exchange's
 * on_abort callback (the client went away, or the server is closing); after
 * either, the program must not touch it again. The same pointer is reused
 * for the connection's next request, so a program must drop it then.
 *
 * Ending an exchange may dispatch the connection's next (pipelined) request,
 * calling on_request before the ending call returns.
 *
 * A client that closes its side (EOF) while its request is being answered is
 * taken as gone, as nginx does (its 499): the exchange is aborted. Between
 * requests, a half-close lets queued answers finish.
 */
#ifndef FAULTLINE_HTTP_SERVER_H
#define FAULTLINE_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

struct http_server;
struct http_exchange;

struct http_server_config {
	size_t max_header_bytes;	/* request line + headers; over: 431 */
	size_t max_body_bytes;		/* over: 413 */
	uint64_t header_timeout_ms;	/* first byte to complete request */
	uint64_t idle_timeout_ms;	/* keep-alive wait between requests */
	unsigned max_conns;		/* further connections are closed (http_server_rejected) */
	int backlog;
};

/* Fills in the defaults: 16 KiB, 1 MiB, 10 s, 60 s, 10000, 1024. */
void http_server_config_default(struct http_server_config *cfg);

struct http_kv {
	const char *name;
	const char *value;
};

struct http_request {
	const char *method;		/* "GET", "POST"… */
	const char *url;		/* as sent: path and query */
	const char *path;		/* the path alone, NUL-terminated */
	const char *query;		/* after '?', or NULL */
	const struct http_kv *headers;
	size_t nheaders;
	const char *body;		/* NUL-terminated (body_len excludes it) */
	size_t body_len;
	bool keep_alive;
	unsigned short http_major;
	unsigned short http_minor;
	uint64_t recv_ns;		/* monotonic time the request had fully arrived */
};

/* Why an exchange was aborted. */
enum http_abort_reason {
	HTTP_ABORT_PEER,	/* the client closed or reset the connection */
	HTTP_ABORT_SERVER,	/* http_server_close_conns or http_server_free */
};

typedef void (*http_request_cb)(struct http_exchange *ex, void *server_data);
typedef void (*http_abort_cb)(struct http_exchange *ex, void *data,
			      enum http_abort_reason reason);
typedef void (*http_drain_cb)(struct http_exchange *ex, void *data);

/*
 * Creates a server on loop; on_request is called with each complete request.
 * Returns NULL when out of memory.
 */
struct http_server *http_server_new(uv_loop_t *loop,
				    const struct http_server_config *cfg,
				    http_request_cb on_request, void *data);

/*
 * Binds and listens on addr. Port 0 takes a free port, which is then kept
 * for later calls (so a listener closed by http_server_unlisten reopens on
 * the same port). Returns 0 or a libuv error code.
 */
int http_server_listen(struct http_server *srv, const struct sockaddr *addr);

/*
 * Serves connections accepted on fd, a stream socket already bound and
 * listening that another process made (a workers gateway's supervisor,
 * which shares one port among its workers with SO_REUSEPORT). Returns 0,
 * the server then owning fd, or a libuv error code, fd staying the
 * caller's. http_server_unlisten then closes it and keeps no reserve
 * (the port is the other process's), and http_server_relisten refuses
 * (UV_EINVAL).
 */
int http_server_listen_fd(struct http_server *srv, int fd);

/*
 * Also serves connections accepted on fd, another listening socket
 * another process made (a workers gateway's supervisor hands a worker the
 * socket of a worker that died, until that one is back), under key,
 * until http_server_unlisten_also(srv, key); a drain takes in what waits
 * on it and closes it as it does the listener. Handed in while draining,
 * the connections waiting on it are taken in and it is closed at once.
 * fd is the server's whatever the result: 0, or a libuv error code (fd
 * closed; UV_EEXIST when key is served already).
 */
int http_server_listen_also_fd(struct http_server *srv, unsigned key, int fd);

/*
 * Stops serving the socket handed in under key (this process's copy is
 * closed: the socket lives on in the process that made it). Nothing when
 * there is none.
 */
void http_server_unlisten_also(struct http_server *srv, unsigned key);

/*
 * Listens again on the address of the last successful http_server_listen
 * (the port kept reserved since http_server_unlisten).
 */
int http_server_relisten(struct http_server *srv);

/*
 * Serves fd, a connected stream socket (one end of a socketpair, say), as
 * a connection the listener accepted: for tests and fuzzing that feed the
 * request parser without TCP. max_conns does not apply. Returns 0, the
 * server then owning fd (closed with the connection), or a libuv error
 * code, fd staying the caller's.
 */
int http_server_serve_fd(struct http_server *srv, int fd);

/* The bound address (valid after a successful listen). */
const struct sockaddr *http_server_addr(const struct http_server *srv);

/*
 * Stops listening: new connections are refused (ECONNREFUSED). The port
 * stays bound, without listening, so http_server_relisten gets it back.
 */
void http_server_unlisten(struct http_server *srv);

/* True while the server has a listening socket. */
bool http_server_is_listening(const struct http_server *srv);

/*
 * Closes every open connection; exchanges still in progress get on_abort
 * with HTTP_ABORT_SERVER first. With reset, connections end with a TCP RST.
 */
void http_server_close_conns(struct http_server *srv, bool reset);

/*
 * Starts a graceful stop: connections the kernel completed but nobody
 * accepted yet are taken in, the listener closes (new connections are
 * refused), idle keep-alive connections close, a request still arriving
 * — or due: its bytes are in — is let in (within header_timeout_ms), a
 * new connection with no byte yet has 1 s (at most header_timeout_ms) for
 * its first, then closes, and each
 * exchange, in progress or to come,
 * ends its connection once answered (its answer says Connection: close;
 * requests pipelined behind it are dropped). done (may
 * be NULL) is called once no connection is left — every answer written
 * out, or its client gone — and never from inside this call; the program
 * then frees the server.
 */
void http_server_drain(struct http_server *srv, void (*done)(void *arg), void *arg);

/* The number of open connections. */
unsigned http_server_conn_count(const struct http_server *srv);

/*
 * The number of connections closed as soon as accepted because max_conns
 * were open, since the server was made. The log says so at most once a
 * second ("connection limit (N) reached: closing a new connection (M more
 * suppressed)", M counting those since the line before).
 */
uint64_t http_server_rejected(const struct http_server *srv);

/*
 * Closes the listener and every connection (aborting exchanges in progress)
 * and frees the server once libuv has released its handles; done, if not
 * NULL, is called then.
 */
void http_server_free(struct http_server *srv, void (*done)(void *arg), void *arg);

/* The request being answered. Valid for the life of the exchange. */
const struct http_request *http_exchange_request(const struct http_exchange *ex);

/* A request header by case-insensitive name, or NULL. */
const char *http_request_header(const struct http_request *req, const char *name);

/*
 * Attaches the program's state to the exchange: on_abort is called if the
 * exchange ends without the program ending it; on_drain (may be NULL) when
 * the queued output has all been written after having been non-empty.
 */
void http_exchange_set_data(struct http_exchange *ex, void *data,
			    http_abort_cb on_abort, http_drain_cb on_drain);

/*
 * The server's data pointer (the one given to http_server_new) for the
 * server this exchange arrived on.
 */
void *http_exchange_server_data(const struct http_exchange *ex);

/*
 * Bytes of response queued in user space, not yet taken by the kernel
 * (the measure of a slow reader).
 */
size_t http_exchange_queued(const struct http_exchange *ex);

/*
 * Resets the connection (TCP RST) once nbytes of the response (status line
 * and headers included) have been written: the write that reaches the
 * limit is cut there, and returns -ECONNRESET. For fault injection.
 */
void http_exchange_set_reset_after(struct http_exchange *ex, size_t nbytes);

/*
 * Sends a whole response with Content-Length and ends the exchange. headers
 * (n of them) are added as given; Content-Length and Connection are the
 * server's. Returns 0, or a negative errno: -EPIPE when the exchange had
 * already ended, -EINVAL when a response was already started, -ENOMEM, or
 * -ECONNRESET when the reset budget cut it (the exchange has ended in every
 * case; on -EINVAL and -ENOMEM the connection is reset).
 */
int http_respond(struct http_exchange *ex, int status,
		 const struct http_kv *headers, size_t n,
		 const void *body, size_t len);

/*
 * Sends an OpenAI-style error answer, {"error":{"message","type","param",
 * "code"}} (param and code may be NULL), with extra headers, and ends the
 * exchange. Returns as http_respond does.
 */
int http_respond_error(struct http_exchange *ex, int status, const char *message,
		       const char *type, const char *param, const char *code,
		       const struct http_kv *extra, size_t n);

/*
 * Sends the status line and headers with a Content-Length, and no body: the
 * program writes the body with http_write_raw (a fault may send less than
 * it declared). The exchange stays open. Returns 0 or a negative errno
 * (the exchange has ended).
 */
int http_respond_head(struct http_exchange *ex, int status,
		      const struct http_kv *headers, size_t n, size_t content_length);

/*
 * Starts a chunked response (for HTTP/1.0 clients, a close-delimited one).
 * Returns 0, or a negative errno when the exchange has ended.
 */
int http_stream_begin(struct http_exchange *ex, int status,
		      const struct http_kv *headers, size_t n);

/*
 * Whether a stream on ex is (or would be) chunked — the client speaks
 * HTTP/1.1 or later — and so can end with trailers.
 */
bool http_stream_chunked(const struct http_exchange *ex);

/* Sends one chunk. Returns 0, or a negative errno when the exchange ended. */
int http_stream_write(struct http_exchange *ex, const void *data, size_t len);

/*
 * Ends the exchange: a chunked stream gets its last chunk; an answer begun
 * with http_respond_head keeps the connection when exactly the declared
 * length was written, and otherwise (like a close-delimited stream) ends it
 * by closing. Returns 0 or a negative errno.
 */
int http_stream_end(struct http_exchange *ex);

/*
 * http_stream_end with trailer fields (n of them) after a chunked stream's
 * last chunk; a stream that is not chunked (HTTP/1.0) ends without them.
 * Returns 0 or a negative errno.
 */
int http_stream_end_trailers(struct http_exchange *ex, const struct http_kv *trailers, size_t n);

/*
 * Writes bytes exactly as given, with no framing (for faults: a truncated
 * body, a broken frame). Returns 0, or a negative errno when the exchange
 * has ended.
 */
int http_write_raw(struct http_exchange *ex, const void *data, size_t len);

/*
 * Ends the exchange by closing its connection once queued output is
 * written: with a FIN, or with reset a TCP RST.
 */
void http_exchange_close(struct http_exchange *ex, bool reset);

/* The reason phrase for a status code ("OK", "Service Unavailable"…). */
const char *http_reason(int status);

#endif
