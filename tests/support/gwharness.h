/*
 * gwharness: what the gateway integration tests share — starting a real
 * bin/gateway on a config written to a temp dir and waiting for its
 * "listening HOST:PORT" and "ready" lines, signalling and reaping it,
 * running it to completion on a bad config, making chat requests to it,
 * and reading what it exposes: the Prometheus text of /metrics, the JSON
 * of /admin/breakers, the events file, and OpenAI-style error bodies. Also
 * a few reads of mockprov's admin API (in-flight and request counts), the
 * events a test waits on.
 *
 * Every gateway started here is noted, so gw_cleanup (a suite's teardown)
 * kills the ones still running and removes their temp dirs even when an
 * assertion ended the test early.
 */
#ifndef FAULTLINE_GWHARNESS_H
#define FAULTLINE_GWHARNESS_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tests/support/harness.h"

/* A bin/gateway run as a child. */
struct gw_proc {
	pid_t pid;			/* -1 once reaped (or never started) */
	int out_fd;			/* its stdout; -1 once closed */
	char dir[64];			/* temp dir: config, events, stderr */
	char config_path[128];
	char events_path[128];		/* DIR/events.jsonl */
	char err_path[128];		/* its stderr, as a file */
	char addr[64];			/* the HOST:PORT it printed */
	char out[4096];			/* its stdout so far */
	size_t nout;
	int status;			/* exit status, 128+N for signal N; -1: none yet */
};

/* How gw_start runs it. Every field may be left zero. */
struct gw_opts {
	const char *const *args;	/* more flags, NULL-terminated */
	const char *const *env;		/* "NAME=VALUE" set, or "NAME" unset, in the child */
	const char *listen;		/* --listen; NULL: 127.0.0.1:0 */
	const char *log_level;		/* --log-level; NULL: warn */
	bool no_events;			/* leave --events out */
	double ready_ms;		/* how long to wait for "ready"; 0: 10 s */
};

/*
 * Writes config_json to a new temp dir and starts the gateway on it with
 * --config FILE --listen 127.0.0.1:0 --events DIR/events.jsonl --log-level
 * warn (as o says), its stderr going to DIR/stderr.log, then waits for
 * "listening HOST:PORT" and "ready" on its stdout. Returns 0, or -1 (its
 * stderr is printed).
 */
int gw_start(struct gw_proc *g, const char *config_json, const struct gw_opts *o);

/* Sends sig to a running gateway. Returns 0, or -1 when it is not running. */
int gw_signal(struct gw_proc *g, int sig);

/*
 * Waits up to timeout_ms for the gateway to exit and reaps it. Returns its
 * exit status (128+N for signal N), or -1 on timeout (it is left running).
 */
int gw_wait(struct gw_proc *g, double timeout_ms);

/*
 * Sends sig and waits up to timeout_ms for the exit; past that it is
 * killed. Returns the exit status, or -1 when it had to be killed.
 */
int gw_stop(struct gw_proc *g, int sig, double timeout_ms);

/* "http://HOST:PORT" + path into out. Returns out. */
char *gw_url(const struct gw_proc *g, const char *path, char *out, size_t len);

/* What the gateway wrote to stderr so far, into out (NUL-terminated). Returns out. */
char *gw_stderr(const struct gw_proc *g, char *out, size_t len);

/*
 * Writes config_json to a new temp dir (its path into config_path) and runs
 * the gateway with --config FILE and args (NULL-terminated, may be NULL)
 * to completion within timeout_ms, env applied as in gw_opts, stdout
 * dropped and stderr captured into err. Returns the exit status, or -1
 * (killed at the timeout).
 */
int gw_run(const char *config_json, const char *const args[], const char *const env[],
	   char *config_path, size_t pathlen, char *err, size_t errlen, double timeout_ms);

/*
 * Stops every gateway gw_start or gw_run left running — SIGTERM, a second
 * SIGTERM after 1 s, SIGKILL after another — and removes their temp dirs.
 */
void gw_cleanup(void);

/* ---- requests ---- */

/* A minimal chat request body for alias (one user message, 14 characters). */
const char *gw_chat_body(const char *alias, char *out, size_t len);

/*
 * POSTs a chat request for alias to the gateway's /v1/chat/completions,
 * with the extra headers (NULL-terminated, may be NULL) and a client
 * timeout of timeout_ms. Returns http_do's result.
 */
int gw_chat(const struct gw_proc *g, const char *alias, const char *const *headers,
	    double timeout_ms, struct http_result *r);

/* GETs path from the gateway (timeout 3 s). Returns http_do's result. */
int gw_get(const struct gw_proc *g, const char *path, struct http_result *r);

/* A response header's value as a number; NaN when absent or not a number. */
double gw_header_num(const struct http_result *r, const char *name);

/*
 * Parses an OpenAI-style error body: an object whose "error" object has a
 * non-empty "message" string, a non-empty "type" string and a "code" key
 * (a string or null). Returns the parsed document (delete it), or NULL
 * when the body is not that.
 */
cJSON *gw_error_doc(const char *body);

/* A string member of a JSON object, or NULL. */
const char *gw_json_str(const cJSON *obj, const char *key);

/* A number member of a JSON object, or NaN. */
double gw_json_num(const cJSON *obj, const char *key);

/* ---- what the gateway exposes ---- */

/*
 * One sample of a Prometheus text exposition: the value of the line whose
 * metric name is name and whose label set is exactly labels, written
 * "k=v,k=v" in any order ("" for none; values may not hold ',' or '=').
 * NaN when there is no such line.
 */
double gw_metric(const char *text, const char *name, const char *labels);

/*
 * The sum of the values of every sample of name whose labels include all
 * of labels ("k=v,…", "" for any). Returns the sum; *n (may be NULL) gets
 * how many samples matched.
 */
double gw_metric_sum(const char *text, const char *name, const char *labels, size_t *n);

/*
 * The samples of name whose labels include all of labels, in the order
 * listed: up to cap values into vals and, for each, its label key's value
 * into keyvals (each 32 bytes, "" when it has none). Returns how many
 * matched.
 */
size_t gw_metric_series(const char *text, const char *name, const char *labels,
			const char *key, char (*keyvals)[32], double *vals, size_t cap);

/*
 * Polls the gateway's /metrics until the sample (name, exactly labels, as
 * gw_metric reads it) equals want, or timeout_ms passed. Returns the last
 * value read (NaN when the sample was absent), so a caller can say what it
 * saw.
 */
double gw_metric_wait(const struct gw_proc *g, const char *name, const char *labels,
		      double want, double timeout_ms);

/* gw_metric_wait, for a sample that only grows: until it is at least want. */
double gw_metric_wait_min(const struct gw_proc *g, const char *name, const char *labels,
			  double want, double timeout_ms);

/* The gateway's resident set (VmRSS of /proc/PID/status) in KiB, or -1. */
long gw_rss_kb(const struct gw_proc *g);

/*
 * A chat request made on a thread of its own: a client that waits while
 * the test goes on. gw_bg_start starts it (asserting the thread started),
 * gw_bg_join waits for it; r is then its result (free it with
 * http_result_free, or hand it to a gw_held).
 */
struct gw_bg {
	pthread_t thread;
	bool running;			/* started and not yet joined */
	const struct gw_proc *g;
	char alias[64];
	char hrid[160];			/* "x-request-id: …" */
	char extra[160];		/* one more header line, "" for none */
	double timeout_ms;
	struct http_result r;
	int rc;				/* gw_chat's */
};

/* Starts b: a chat request for alias to g with x-request-id rid and extra (may be NULL). */
void gw_bg_start(struct gw_bg *b, const struct gw_proc *g, const char *alias, const char *rid,
		 const char *extra, double timeout_ms);

/* Waits for b's request to end (nothing when it is not running). */
void gw_bg_join(struct gw_bg *b);

/* GET /admin/breakers, parsed (delete it); NULL when not 200 JSON. */
cJSON *gw_breakers(const struct gw_proc *g);

/* The breaker of (provider, model) in an /admin/breakers document, or NULL. */
const cJSON *gw_breaker(const cJSON *doc, const char *provider, const char *model);

/*
 * The events file read whole: a JSON array of the lines' objects (delete
 * it). NULL when a line is not a JSON object; an empty array when the
 * file is absent or empty.
 */
cJSON *gw_events(const struct gw_proc *g);

/* ---- mockprov's admin API ---- */

/* A number of provider prov in mockprov's GET /state ("in_flight", "requests"…), or NaN. */
double gw_mock_state(const struct mock_proc *m, const char *prov, const char *key);

/*
 * Polls mockprov's /state until prov's key equals want (the event a test
 * waits for: a request has arrived, or every request has ended). Returns
 * false on timeout.
 */
bool gw_mock_wait(const struct mock_proc *m, const char *prov, const char *key, double want,
		  double timeout_ms);

/*
 * POSTs a fault to mockprov's /faults (a JSON object with "provider" and
 * "duration_s"). Returns the HTTP status (201 when injected), or -1.
 */
long gw_mock_inject(const struct mock_proc *m, const char *fault_json);

/* Makes mockprov's provider "primary" answer 503 from now on, for duration_s; asserts it took. */
void gw_mock_primary_fails(const struct mock_proc *m, double duration_s);

/* "http://HOST:PORT/v1" of a mock provider, the base_url a gateway config names. */
char *gw_mock_base(const struct mock_proc *m, const char *prov, char *out, size_t len);

/*
 * Expands a JSON template written with single quotes, so configs read
 * plainly in C: every ' becomes ", every @NAME@ becomes the base_url of
 * mock provider NAME of m (gw_mock_base), and @@ a literal @. Returns out,
 * or NULL when a name is unknown (or m is NULL) or out is too small.
 */
char *gw_template(char *out, size_t len, const char *tmpl, const struct mock_proc *m);

/* ---- configs ---- */

/*
 * The configs of a fallback fixture: mockprov with a healthy provider
 * "secondary" and one faulty provider per gw_fallback_add, and a gateway
 * whose alias NAME sends to provider NAME, then to the secondary. Built
 * with gw_fallback_begin, gw_fallback_add for each provider, then
 * gw_fallback_end; mock and gw are then templates for gw_template.
 */
struct gw_fallback {
	char mock[4096];
	char gw[8192];
	char models[4096];	/* the "models" entries so far */
	size_t nmock, ngw, nmodels;
	size_t nprov;
	bool overflow;
};

/*
 * Starts a fallback fixture: secondary_mock is the secondary's mockprov
 * fields after its name and listen ("'ttft_ms':20,…"), gw_head the
 * gateway's keys before "providers", each with a comma after it ("" for
 * none), secondary_gw the secondary's provider fields after base_url, each
 * with a comma before it ("" for none).
 */
void gw_fallback_begin(struct gw_fallback *f, const char *secondary_mock, const char *gw_head,
		       const char *secondary_gw);

/*
 * Adds provider (and alias) name: its mockprov fields after name and
 * listen, its faults (the inside of mockprov's "faults" array) and its
 * gateway provider fields after base_url, each with a comma before it
 * ("" for none).
 */
void gw_fallback_add(struct gw_fallback *f, const char *name, const char *mock_fields,
		     const char *faults, const char *gw_fields);

/*
 * Ends the fixture: gw_extra is the gateway's keys between "providers" and
 * "models", each with a comma before it ("" for none). Returns 0, or -1
 * when a config did not fit.
 */
int gw_fallback_end(struct gw_fallback *f, const char *gw_extra);

/*
 * ---- a test's fixtures ----
 *
 * What the gateway suites' tests share to start things and read them,
 * asserting as they go (with Criterion: call these only from a test). A
 * test file keeps its own struct gw_held, struct mock_proc and struct
 * gw_proc and passes them in; its teardown calls gw_held_free.
 */

#define GW_HELD_MAX 64
#define GW_HELD_TABLES 16

/* What a test reads and holds until its suite's teardown. */
struct gw_held {
	struct http_result results[GW_HELD_MAX];
	size_t nresults;
	cJSON *docs[GW_HELD_MAX];
	size_t ndocs;
	struct csv_table tables[GW_HELD_TABLES];
	size_t ntables;
};

/* Frees everything h holds and empties it. */
void gw_held_free(struct gw_held *h);

/* A result slot held until teardown (asserts there is room). */
struct http_result *gw_held_result(struct gw_held *h);

/* Holds doc (may be NULL) until teardown (asserts there is room). Returns doc. */
cJSON *gw_held_doc(struct gw_held *h, cJSON *doc);

/* Starts mockprov on a template of its config (gw_template, no @NAME@), asserting it started. */
void gw_mock_start_template(struct mock_proc *m, const char *tmpl);

/*
 * Starts the gateway on a template of its config, @NAME@ naming mock
 * providers of m, with o as gw_start takes it (may be NULL), asserting it
 * started.
 */
void gw_start_template(struct gw_proc *g, const char *tmpl, const struct mock_proc *m,
		       const struct gw_opts *o);

/* GET /metrics, asserted 200. Returns the text, held until teardown. */
const char *gw_metrics_held(const struct gw_proc *g, struct gw_held *h);

/* GET /admin/breakers, asserted JSON. Returns the document, held until teardown. */
const cJSON *gw_breakers_held(const struct gw_proc *g, struct gw_held *h);

/* The breaker of (prov, model) in an /admin/breakers document, asserted present. */
const cJSON *gw_breaker_must(const cJSON *doc, const char *prov, const char *model);

/*
 * Waits until none of provs (NULL-terminated) has a request in flight
 * (each one the gateway abandoned has been seen to end), then stops
 * mockprov with SIGTERM, which completes its logs; asserts both.
 */
void gw_mock_settle(struct mock_proc *m, const char *const *provs);

/*
 * A chat request for alias to g with x-request-id rid (none when NULL) and
 * one more header line extra (may be NULL), held in h until teardown;
 * asserts curl could start it.
 */
struct http_result *gw_chat_held(const struct gw_proc *g, struct gw_held *h, const char *alias,
				 const char *rid, const char *extra, double timeout_ms);

/* A response header's value copied to out, or "(absent)". Returns out or "(absent)". */
const char *gw_header_str(const struct http_result *r, const char *name, char *out, size_t len);

/* Asserts a 200 from provider prov after attempts upstream attempts (what names it). */
void gw_expect_answer(const struct http_result *r, const char *what, const char *prov,
		      int attempts);

/*
 * Asserts a gateway error: status, error.type and error.code, and that
 * error.attempts is an array. Returns the parsed body (held in h).
 */
cJSON *gw_expect_error(struct gw_held *h, const struct http_result *r, const char *what,
		       long status, const char *type, const char *code);

/*
 * Asserts x-faultline-cost-usd = the answer's usage × the answering
 * provider's price per 1k tokens (in, out), plus discarded (the billed
 * estimate of attempts whose answers were discarded; 0 for none), to the
 * header's printed precision. Returns the answer's own part.
 */
double gw_expect_cost(struct gw_held *h, const struct http_result *r, const char *what,
		      double in, double out, double discarded);

/* A mock log's number field (row, col), asserted present and non-empty. */
double gw_row_num(const struct csv_table *t, size_t row, const char *col);

/*
 * DELETE mockprov's /faults (every provider's when prov is NULL). Returns
 * the HTTP status (200 when cleared), or -1.
 */
long gw_mock_clear(const struct mock_proc *m, const char *prov);

/* mock-PROV.csv of a stopped mockprov, asserted to have its header. Held until teardown. */
const struct csv_table *gw_mock_rows(struct gw_held *h, const struct mock_proc *m,
				     const char *prov);

/*
 * The data rows of request rid in a mock log, in order: up to cap of
 * their row numbers into rows. Returns how many there are.
 */
size_t gw_rows_of(const struct csv_table *t, const char *rid, size_t *rows, size_t cap);

/* The only row of rid in mock-PROV.csv t, asserted to be there once. */
size_t gw_row_of(const struct csv_table *t, const char *prov, const char *rid);

#endif
