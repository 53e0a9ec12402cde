/*
 * lgharness: what the loadgen integration tests share — running bin/loadgen
 * (to completion, in the background to signal it, or with its stderr a
 * terminal), temp dirs that are removed at teardown, reading its
 * requests.csv and summary.json, a nearest-rank percentile to check the
 * summary against the rows, and a stub OpenAI-style server inside the test
 * process (its own libuv loop on a thread) that records the request headers
 * it receives and answers with the response headers a test chooses — a
 * whole chat completion, or an event stream that is never ended (after
 * [DONE], or with only comments after its first token), and a raw TCP
 * server that answers with the very bytes a test gives it.
 */
#ifndef FAULTLINE_LGHARNESS_H
#define FAULTLINE_LGHARNESS_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#include "tests/support/harness.h"
#include "common/http_server.h"

/* A loadgen (or any program) run as a child, its output captured. */
struct lg_proc {
	pid_t pid;			/* -1 once reaped */
	int out_fd;			/* read ends of its stdout and stderr; -1 at EOF */
	int err_fd;
	char out[8192];			/* what it wrote, NUL-terminated (cut when longer) */
	size_t nout;
	char err[16384];
	size_t nerr;
	int status;			/* exit status, 128+N for signal N, -1: none yet */
};

/*
 * Makes a new temp dir /tmp/faultline-test-XXXXXX into out, to be removed
 * by lg_cleanup. Returns 0 or -1.
 */
int lg_tempdir(char *out, size_t len);

/*
 * Starts argv (argv[0] under $FAULTLINE_BIN when it has no slash; the list
 * NULL-terminated) with its stdout and stderr going to pipes. The child is
 * noted so lg_cleanup can kill it if a test ends early. Returns 0 or -1.
 */
int lg_spawn(struct lg_proc *p, const char *const argv[]);

/*
 * lg_spawn, but the child's stderr is a pseudo-terminal (err_fd its master
 * side, in raw mode): to the child, stderr is a terminal.
 */
int lg_spawn_tty(struct lg_proc *p, const char *const argv[]);

/*
 * Reads the child's stderr until needle appears in it or timeout_ms pass.
 * Returns true when it appeared.
 */
bool lg_await_stderr(struct lg_proc *p, const char *needle, double timeout_ms);

/*
 * Reads both pipes until the child closes them, then reaps it, all within
 * timeout_s (after which it is killed). Returns the exit status, 128+N for
 * death by signal N, or -1 on timeout.
 */
int lg_wait(struct lg_proc *p, double timeout_s);

/*
 * Runs loadgen with args (NULL-terminated; no argv[0]) followed by
 * "--no-progress" and, when out_dir is not NULL, "--out out_dir", to
 * completion within timeout_s. Returns the exit status (or -1) and leaves
 * stdout and stderr in p.
 */
int lg_run(struct lg_proc *p, const char *out_dir, const char *const args[], double timeout_s);

/*
 * Kills every child lg_spawn started that is still running and removes
 * every dir lg_tempdir made. For a suite's teardown.
 */
void lg_cleanup(void);

/* Reads OUT_DIR/requests.csv. Returns 0 or -1. */
int lg_requests(const char *out_dir, struct csv_table *t);

/* Reads and parses OUT_DIR/summary.json, or NULL. Free with cJSON_Delete. */
cJSON *lg_summary(const char *out_dir);

/*
 * A number in a JSON document by a path of object keys joined with '/'
 * ("latency_ms/corrected/p99"), or NaN when absent or not a number.
 */
double lg_json_num(const cJSON *root, const char *path);

/* A string in a JSON document by a '/' path, or NULL. */
const char *lg_json_str(const cJSON *root, const char *path);

/* Field (row, col) as a number; NaN when empty, missing or not a number. */
double lg_num(const struct csv_table *t, size_t row, const char *col);

/*
 * The numbers of a column, empty fields skipped, into a malloc'ed array
 * (*vals; free it). Returns how many.
 */
size_t lg_column(const struct csv_table *t, const char *col, double **vals);

/* The data rows whose column col equals value. */
size_t lg_count(const struct csv_table *t, const char *col, const char *value);

/* The data row whose column col equals value, or 0 when none. */
size_t lg_find(const struct csv_table *t, const char *col, const char *value);

/*
 * The p-th percentile (0 < p <= 100) of n values by nearest rank: the
 * smallest value such that ceil(p/100 × n) values are <= it. Sorts v.
 * NaN when n is 0.
 */
double lg_percentile(double *v, size_t n, double p);

/* ---- a stub chat completions server, in this process ---- */

#define STUB_MAX_REQUESTS 16

/* How the stub answers a chat request. */
enum stub_answer {
	STUB_PLAIN,		/* a whole chat completion (usage 7 in, 3 out) */
	STUB_DONE_OPEN,		/* an event stream: one content chunk and "data: [DONE]",
				 * then the response is never ended */
	STUB_KEEPALIVE,		/* an event stream: one content chunk, then only
				 * ": keepalive" comments, every 100 ms; never [DONE],
				 * never ended */
};

struct stub_server {
	uv_loop_t loop;
	uv_async_t wake;		/* asks the loop thread to stop */
	uv_timer_t keepalive;		/* STUB_KEEPALIVE: writes the comments */
	pthread_t thread;
	struct http_server *srv;
	char addr[64];			/* 127.0.0.1:PORT */
	const struct http_kv *resp_headers;	/* sent with every answer */
	size_t nresp;
	enum stub_answer answer;
	bool running;
	/* Streams left open (loop thread only); NULL once the client left. */
	struct http_exchange *open[STUB_MAX_REQUESTS];

	pthread_mutex_t mu;
	unsigned requests;		/* under mu */
	/* The first STUB_MAX_REQUESTS requests' headers, "name: value\n" each. */
	char headers[STUB_MAX_REQUESTS][4096];
	char bodies[STUB_MAX_REQUESTS][1024];
	unsigned comments;		/* keepalive comments written; under mu */
};

/*
 * Starts a server on 127.0.0.1 (a free port, in s->addr) on a thread of
 * its own that answers every request with a non-streaming chat completion
 * (usage 7 in, 3 out) and the n headers given (kept, not copied). Returns
 * 0 or -1.
 */
int stub_start(struct stub_server *s, const struct http_kv *headers, size_t n);

/* Like stub_start (no extra headers), taking request bodies of up to 4 MiB. */
int stub_start_big(struct stub_server *s);

/*
 * Like stub_start, but every chat request is answered as answer says
 * (the n headers go on every answer). The streams it leaves open are
 * closed by stub_stop. Returns 0 or -1.
 */
int stub_start_answer(struct stub_server *s, enum stub_answer answer,
		      const struct http_kv *headers, size_t n);

/*
 * Stops the server, joins its thread and closes its loop. Returns 0 when
 * the loop closed clean, else -1.
 */
int stub_stop(struct stub_server *s);

/*
 * The value of header name (case-insensitive) in request i (0-based) as the
 * server received it, copied to out; NULL when absent.
 */
const char *stub_header(struct stub_server *s, unsigned i, const char *name, char *out,
			size_t len);

/* ---- a server that answers with bytes a test wrote, in this process ---- */

/* One piece of a canned answer: written pause_ms after the one before. */
struct raw_part {
	unsigned pause_ms;
	bool chunk;			/* framed as one HTTP/1.1 chunk (size line, CRLF) */
	const char *bytes;		/* NUL-terminated; as they are unless chunk */
};

struct raw_server {
	pthread_t thread;
	int listen_fd;
	int wake[2];			/* a byte on wake[1] stops the thread */
	char addr[64];			/* 127.0.0.1:PORT */
	const struct raw_part *parts;	/* kept, not copied */
	size_t nparts;
	bool running;
	pthread_mutex_t mu;
	unsigned requests;		/* requests answered; under mu */
};

/*
 * Starts a blocking TCP server on 127.0.0.1 (a free port, in s->addr) on a
 * thread of its own: for each connection it reads one request (its headers
 * and a Content-Length body), writes the n parts — status line, headers,
 * chunks, trailers: whatever the test spells out, a part marked chunk
 * framed as one chunk — each after its pause, then closes the connection. For answers http_server
 * does not write (a chunked trailer). Returns 0 or -1.
 */
int raw_start(struct raw_server *s, const struct raw_part *parts, size_t n);

/* Stops the thread (mid-answer too) and closes the sockets. Returns 0 or -1. */
int raw_stop(struct raw_server *s);

/* Requests answered so far. */
unsigned raw_requests(struct raw_server *s);

#endif
