/*
 * records: the one definition of every on-disk record format and of the
 * results folder's layout — what loadgen, mockprov and the gateway write
 * and what the runner reads back:
 *
 *   requests.csv / requests.jsonl  loadgen's row a request: req_columns,
 *                                  in order; outcome one of enum outcome
 *   mock-NAME.csv                  a mock provider's row a request
 *                                  (chat completions and model listings):
 *                                  mock_columns, in order; outcome one of
 *                                  enum mock_outcome, kind one of enum
 *                                  mock_kind
 *   events.jsonl                   the gateway's breaker changes, one JSON
 *                                  object a line: event_keys; from and to
 *                                  one of enum breaker_state's names
 *
 * and the names of the files in a run directory (STAMP/SETUP/run-K/) and a
 * stamp directory. Writers build their rows from these tables and readers
 * look their columns up in them, so the two cannot drift apart. Pure.
 */
#ifndef FAULTLINE_RECORDS_H
#define FAULTLINE_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct row;	/* common/recfile.h */

/* ---- the results layout ---- */

#define REC_REQUESTS_CSV "requests.csv"		/* loadgen's, in a run dir */
#define REC_REQUESTS_JSONL "requests.jsonl"	/* loadgen's, the same rows */
#define REC_EVENTS "events.jsonl"		/* the gateway's breaker changes */
#define REC_SUMMARY "summary.json"		/* a run's or a stamp's figures */
#define REC_LOADGEN_SUMMARY "loadgen-summary.json"	/* loadgen's summary.json, renamed */
#define REC_SIM "sim.json"			/* a simulated run's model, in its run dir */
#define REC_SCENARIO "scenario.json"		/* the stamp's copy of the scenario */
#define REC_REPORT "report.md"			/* the stamp's report */
#define REC_PLOTS_DIR "plots"			/* STAMP/plots: the PNGs */
#define REC_PLOTS_DATA_DIR "plots/data"		/* STAMP/plots/data: their data */
#define REC_TMP_SUFFIX ".tmp"			/* a file not yet whole */
#define REC_RUN_DIR_FMT "%s/%s/run-%u"		/* STAMP, SETUP, K (from 1) */
#define REC_MOCK_FILE_FMT "mock-%s.csv"		/* a provider's log: NAME */

/*
 * A provider's log name, "mock-NAME.csv", into out (len bytes). Returns 0,
 * or -ENAMETOOLONG when it does not fit.
 */
int rec_mock_file(const char *provider, char *out, size_t len);

/*
 * Whether name is a provider's log ("mock-NAME.csv", NAME not empty); with
 * provider not NULL, NAME is copied there (len bytes, cut to fit).
 */
bool rec_mock_file_parse(const char *name, char *provider, size_t len);

/*
 * Whether name is a per-request record file its writer did not finish:
 * requests.csv.tmp or mock-NAME.csv.tmp.
 */
bool rec_unfinished(const char *name);

/* ---- requests.csv / requests.jsonl ---- */

/* The columns, in file order. */
enum req_col {
	REQ_ID,
	REQ_STREAM_NAME,
	REQ_CLASS,
	REQ_TENANT,
	REQ_FEATURE,
	REQ_STREAMING,
	REQ_SCHED_MS,
	REQ_START_MS,
	REQ_TTFT_MS,
	REQ_END_MS,
	REQ_LATENCY_MS,
	REQ_SERVICE_MS,
	REQ_STATUS,
	REQ_OUTCOME,
	REQ_ERROR,
	REQ_PROVIDER,
	REQ_ATTEMPTS,
	REQ_HEDGED,
	REQ_RETRIES,
	REQ_TOKENS_IN,
	REQ_TOKENS_OUT,
	REQ_MAX_GAP_MS,
	REQ_COST_USD,
	REQ_DEGRADED,		/* added last: readers find columns by name */
	REQ_NCOLS
};

/* The column names, indexed by enum req_col. */
extern const char *const req_columns[REQ_NCOLS];

/* What a client saw of a request (DESIGN.md's words). */
enum outcome {
	OUT_OK,
	OUT_HTTP_ERROR,
	OUT_TIMEOUT,
	OUT_REFUSED,
	OUT_RESET,
	OUT_TRUNCATED,
	OUT_STALLED,
	OUT_INVALID,
	OUT_COUNT
};

/* The outcome's name as it appears in requests.csv; "?" when out of range. */
const char *outcome_name(enum outcome o);

/* The outcome named s, or -1 when s names none. */
int outcome_from_name(const char *s);

/* A request's class (requests.csv's class column; empty: interactive). */
enum req_class {
	CLASS_INTERACTIVE,
	CLASS_BATCH,
	CLASS_COUNT
};

/* The class's name: "interactive" or "batch"; "?" when out of range. */
const char *req_class_name(enum req_class c);

/* The class named s, or -1 when s names none. */
int req_class_from_name(const char *s);

/*
 * The degraded column: how a gateway marked a degraded answer (its
 * x-faultline-degraded header) — a fixed fallback answer ("static") or
 * one from its answer cache ("cache"); empty when it did not.
 */
enum req_degraded {
	DEGRADED_STATIC,
	DEGRADED_CACHE,
	DEGRADED_COUNT
};

/* The mark's name: "static" or "cache"; "?" when out of range. */
const char *req_degraded_name(enum req_degraded d);

/* The mark named s, or -1 when s names none. */
int req_degraded_from_name(const char *s);

/*
 * An instant error: a request not ok whose latency_ms (end_ms − sched_ms)
 * is under this many ms — a refused connection or a 5xx that came back at
 * once, what makes a closed loop spin. Counted as instant_errors by
 * loadgen's summary and the runner's figures; measured, never scaled.
 */
#define REQ_INSTANT_ERROR_MS 1.0

/* How requests.csv's error column starts when the server sent an SSE error event. */
#define REQ_ERROR_EVENT_PREFIX "error event"

/* ---- mock-NAME.csv ---- */

/* The columns, in file order. */
enum mock_col {
	MOCK_T_MS,
	MOCK_REQUEST_ID,
	MOCK_STREAMING,
	MOCK_FAULT,
	MOCK_STATUS,
	MOCK_TTFT_MS,
	MOCK_DUR_MS,
	MOCK_TOKENS_OUT,
	MOCK_OUTCOME,
	MOCK_KIND,
	MOCK_NCOLS
};

/* The column names, indexed by enum mock_col. */
extern const char *const mock_columns[MOCK_NCOLS];

/* How a request ended at a mock provider. */
enum mock_outcome {
	MOCK_COMPLETED,
	MOCK_CLIENT_ABORTED,
	MOCK_FAULTED,
	MOCK_OUTCOME_COUNT
};

/* The mock outcome's name as it appears in mock-NAME.csv; "?" when out of range. */
const char *mock_outcome_name(enum mock_outcome o);

/* The mock outcome named s, or -1 when s names none. */
int mock_outcome_from_name(const char *s);

/*
 * What a mock row's request asked (the kind column): a chat completion
 * (POST …/chat/completions) or a model listing (GET …/models, what a
 * gateway's health check asks by default). A log without the column is
 * all chat rows.
 */
enum mock_kind {
	MOCK_KIND_CHAT,
	MOCK_KIND_MODELS,
	MOCK_KIND_COUNT
};

/* The kind's name as it appears in mock-NAME.csv: "chat" or "models"; "?" when out of range. */
const char *mock_kind_name(enum mock_kind k);

/* The kind named s, or -1 when s names none. */
int mock_kind_from_name(const char *s);

/*
 * How the x-request-id of a gateway's health check starts
 * ("health-check-PROVIDER-N"): a chat row whose request_id starts so is a
 * check, not a user's request (the runner's stats count it as one).
 */
#define REC_CHECK_ID_PREFIX "health-check-"

/* Whether a mock row of kind k with request id (may be NULL) is a health check. */
bool rec_mock_is_check(enum mock_kind k, const char *request_id);

/* One row of mock-NAME.csv. Absent values: NULL or NaN as noted. */
struct mock_record {
	double t_ms;			/* arrival, ms after t0 */
	const char *request_id;		/* x-request-id; NULL: none */
	bool streaming;
	const char *fault;		/* the faults applied ("" when none) */
	int64_t status;			/* the HTTP status answered; 0: none */
	double ttft_ms;			/* NaN: no token sent */
	double dur_ms;
	int64_t tokens_out;
	enum mock_outcome outcome;
	enum mock_kind kind;
};

/*
 * Builds m's CSV row (newline included) in r, the columns in mock_columns'
 * order. Returns 0, or -ENOMEM when the row could not be built whole.
 */
int mock_record_row(struct row *r, const struct mock_record *m);

/* ---- events.jsonl ---- */

/* The keys of an event line. */
enum event_key {
	EVENT_T_UNIX_MS,	/* number: Unix time in ms (with decimals) */
	EVENT_PROVIDER,		/* string */
	EVENT_MODEL,		/* string; may be absent or null */
	EVENT_FROM,		/* string: a breaker_state name */
	EVENT_TO,		/* string: a breaker_state name */
	EVENT_REASON,		/* string; may be absent or null */
	/* Written only by replicas that share breakers (gateway shared_state redis): */
	EVENT_REPLICA,		/* string: the replica that wrote the line */
	EVENT_ORIGIN,		/* string: "local" (its own evidence) or "remote" */
	EVENT_PEER,		/* string, remote only: the replica whose change it follows */
	EVENT_VIA,		/* string, remote only: "pubsub", "hub" or "sync" */
	/* Written only by a gateway of several workers (workers: N): */
	EVENT_WORKER,		/* number: the worker (1 to N) that wrote the line */
	EVENT_NKEYS
};

/* The key names, indexed by enum event_key, in the order the gateway writes them. */
extern const char *const event_keys[EVENT_NKEYS];

/*
 * Who wrote an events line, when replicas share their breakers: the
 * replica, and for a change another replica made (peer not NULL) that
 * replica and how it was heard (via).
 */
struct event_source {
	const char *replica;
	const char *peer;	/* NULL: the replica's own change */
	const char *via;	/* with peer: "pubsub", "hub" or "sync" */
	unsigned worker;	/* the worker that wrote it, 1 to N; 0: not one of several */
};

/*
 * Builds one events.jsonl line (newline included) into line: a breaker of
 * provider/model (model may be NULL) went from → to for reason (may be
 * NULL) at t_unix_ms (written to the microsecond); src (NULL: not shared)
 * adds replica, origin and, for a remote change, peer and via, and worker
 * when it is one of several. Returns 0
 * or -ENOMEM.
 */
struct buf;
int event_line(struct buf *line, double t_unix_ms, const char *provider, const char *model,
	       const char *from, const char *to, const char *reason,
	       const struct event_source *src);

/*
 * The key an events line has when it is not a breaker change, and its
 * one value so far: an answer that broke its request's output contract.
 * Readers of breaker changes skip every line with this key.
 */
#define EVENT_KIND_KEY "event"
#define EVENT_CONTRACT_VIOLATION "contract_violation"

/*
 * Builds one contract-violation line (newline included) into line:
 * {"t_unix_ms", "event": "contract_violation", "provider", "model",
 * "request_id", "why"} and, with src, "replica". Returns 0 or -ENOMEM.
 */
int event_contract_line(struct buf *line, double t_unix_ms, const char *provider,
			const char *model, const char *request_id, const char *why,
			const struct event_source *src);

/* A breaker's state, as events.jsonl's from and to name it (the plots' 0, 1, 2). */
enum event_state {
	EVENT_CLOSED = 0,
	EVENT_HALF_OPEN = 1,
	EVENT_OPEN = 2,
	EVENT_NSTATES
};

/* The state's name: "closed", "half_open" or "open"; "?" when out of range. */
const char *event_state_name(enum event_state s);

/*
 * The state named s ("half-open" is taken for "half_open" too), or -1
 * when s names none.
 */
int event_state_from_name(const char *s);

#endif
