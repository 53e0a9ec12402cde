/*
 * rundata: one run directory's per-request records, loaded once — loadgen's
 * requests.csv, the providers' mock-NAME.csv and the gateway's events.jsonl
 * (their formats: common/records.h; how strictly they are read: stats.h) —
 * into plain rows sorted by time, for the figures (runner/figures.c) and
 * the plots to share. The only module of the runner that reads these
 * files.
 */
#ifndef FAULTLINE_RUNNER_RUNDATA_H
#define FAULTLINE_RUNNER_RUNDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/records.h"

/*
 * What a gateway answered with when nothing healthy could answer: the
 * requests.csv column degraded (common/records.h's enum req_degraded,
 * each one up; the response's x-faultline-degraded).
 */
enum run_degraded {
	RUN_NOT_DEGRADED,	/* empty, or no such column: a provider's answer (or none) */
	RUN_DEGRADED_STATIC,	/* "static": the alias's static completion */
	RUN_DEGRADED_CACHE,	/* "cache": the last good answer to the same request */
	RUN_DEGRADED_OTHER,	/* any other mark (another gateway's word), as loadgen counts it */
	RUN_DEGRADED_COUNT
};

/* The column's word for d: "static", "cache" ("" for RUN_NOT_DEGRADED). */
const char *run_degraded_name(enum run_degraded d);

/* The mock fault of an answer that broke its request's response_format. */
#define RUN_BAD_CONTENT_FAULT "bad_content"

/*
 * How an ok answer's provider is known (runner/attrib.h): the provider
 * column (the gateway's x-faultline-provider, authoritative), the
 * answering row found in the mock logs, or neither.
 */
enum run_attrib {
	RUN_ATTRIB_NONE,	/* not an ok answer of a provider, or none found */
	RUN_ATTRIB_HEADER,	/* the provider column */
	RUN_ATTRIB_MOCK_LOG,	/* the answering mock row (joined by id or by timing) */
	RUN_ATTRIB_COUNT
};

/* How a mock row was joined to a request of requests.csv (runner/attrib.h). */
enum run_join {
	RUN_JOIN_NONE,		/* to none */
	RUN_JOIN_ID,		/* its request_id is the request's id */
	RUN_JOIN_TIMING,	/* by time: no id to go by (attrib_join) */
};

struct run_mrow;

/* One row of requests.csv. Strings are owned; provider is NULL when empty. */
struct run_req {
	size_t seq;		/* row number in the file (from 1), for stable order */
	size_t line;		/* where the row starts, for messages */
	char *id;
	char *provider;
	char *tenant;
	char *feature;
	char *stream_name;	/* the mix stream's name; "" when empty or no column */
	double sched_ms;
	double end_ms;		/* NAN: none */
	double latency_ms;	/* NAN: none */
	double cost_read;	/* cost_usd as read; NAN: none */
	double tokens_in;	/* NAN: none */
	double tokens_out;	/* NAN: none */
	enum req_class cls;
	int status;		/* -1: none */
	enum outcome outcome;
	bool streaming;		/* streaming = 1 */
	bool error_event;	/* error starts with REQ_ERROR_EVENT_PREFIX */
	enum run_degraded degraded;	/* the degraded column */
	double ttft_ms;		/* NAN: none */
	double max_gap_ms;	/* NAN: none */
	double start_ms;	/* the first attempt's send; NAN: empty or no column */
	double attempts;	/* the attempts column (a gateway's count); NAN: none */
	double retries;		/* the retries column (loadgen's re-sends); NAN: none */
	/* Filled by the figures (figures_prepare), not by the loader: */
	double cost_usd;	/* cost_read, else priced from the tokens; NAN: none */
	size_t upstream;	/* mock rows with this request's id */
	size_t duplicates;	/* of them, those whose work was discarded */
	bool by_primary;	/* ok and answered by the primary */
	bool paid_timeout;	/* waited out the primary's timeout (replicas_mark_paid) */
	bool broken;		/* ok, and its answering row broke the contract (bad_content) */
	struct run_mrow *answer;	/* its answering mock row (attrib_join); NULL: none found */
	const char *answered_by;	/* an ok answer's provider: the column, else the
					 * answering row's; NULL: not ok, degraded or unknown */
	enum run_attrib attrib;	/* where answered_by came from */
	size_t refused;		/* attempts that reached no mock log (refused connections) */
};

/* One row of a mock-NAME.csv. */
struct run_mrow {
	size_t seq;
	double t_ms;
	double tokens;		/* tokens_out; 0 when empty */
	enum mock_outcome outcome;
	enum mock_kind kind;	/* the kind column; chat when the log has none */
	bool check;		/* a health check (rec_mock_is_check), not a user's request */
	int status;		/* the status column; -1: empty or no such column */
	double dur_ms;		/* the dur_ms column; NAN: empty or no such column */
	bool faulted;		/* outcome faulted */
	bool bad_content;	/* the fault column names bad_content (a broken contract) */
	size_t file;		/* index into rundata's mock_files / mock_providers */
	struct run_req *req;	/* the request with its request_id (or, by timing, the
				 * figures' join); NULL: none or a check */
	enum run_join join;	/* how req was found */
	bool unrecorded;	/* its request_id is one of loadgen's (the requests' prefix
				 * and a number) that requests.csv lacks: a request not
				 * finished when loadgen stopped; never joined by timing */
	/* Filled by the figures: */
	bool duplicate;
};

/* How many events-rK.jsonl a run directory may hold (the runner's SC_REPLICAS_MAX). */
#define RUNDATA_REPLICAS_MAX 16

/*
 * One line of events.jsonl, or of a replica's events-rK.jsonl; strings
 * owned, model, reason, replica_name, origin and peer may be NULL.
 */
struct run_event {
	size_t seq;
	unsigned replica;	/* K of events-rK.jsonl; 0: events.jsonl */
	char *replica_name;	/* "replica": the replica that wrote it (shared state) */
	char *origin;		/* "origin": "local" or "remote" (shared state); NULL: local */
	char *peer;		/* "peer": a remote change's replica */
	char *via;		/* "via": how a remote change was heard (pubsub, sync) */
	double t_ms;		/* t_unix_ms − the run's t0 */
	char *provider;
	char *model;
	char *from;
	char *to;
	char *reason;
};

/*
 * A line of events.jsonl (or events-rK.jsonl) that is not a breaker change
 * but a contract violation the gateway caught: "event":
 * "contract_violation", with provider, and model, request_id and why when
 * given. Strings owned; all but provider may be NULL.
 */
struct run_violation {
	size_t seq;
	double t_ms;		/* t_unix_ms − the run's t0 */
	char *provider;
	char *model;
	char *request_id;
	char *why;
	struct run_req *req;	/* the request with its request_id; NULL: none */
};

/* Everything read from a run directory. */
struct rundata {
	struct run_req *reqs;	/* sorted by sched_ms, then seq */
	size_t nreqs;
	struct run_mrow *mrows;	/* sorted by t_ms, then seq */
	size_t nmrows;
	struct run_event *events;	/* sorted by t_ms, then seq */
	size_t nevents;
	struct run_violation *violations;	/* contract_violation lines, sorted by t_ms */
	size_t nviolations;
	size_t other_lines;	/* event lines of another "event" kind: skipped */
	size_t worker_echoes;	/* a workers gateway's lines following another worker's change
				 * ("peer_worker"): skipped, so that a change counts once */
	char **mock_files;	/* names, sorted */
	char **mock_providers;	/* the NAME of each */
	size_t nmock;
	bool have_events;	/* events.jsonl was there */
	unsigned nreplicas;	/* events-r1.jsonl … events-rN.jsonl read; 0: none */
	bool have_class[CLASS_COUNT];	/* some request is of that class */
};

/*
 * Loads run_dir's files into d (zeroed first), events' times taken
 * relative to t0_unix_ms. Returns 0; -ENOENT when the run directory or
 * requests.csv is missing; -EINVAL for a malformed or unfinished file (a
 * leftover requests.csv.tmp or mock-NAME.csv.tmp), a repeated request id;
 * -ENOMEM or another negative errno when reading fails. err (CFG_ERR_LEN
 * bytes) says "PATH:LINE: what" or "PATH: what". d is to be freed with
 * rundata_free whatever the result.
 */
int rundata_load(struct rundata *d, const char *run_dir, int64_t t0_unix_ms, char *err);

/*
 * Loads run_dir's requests.csv alone into d (zeroed first; no mock rows,
 * no events, no check for unfinished files). Returns as rundata_load.
 */
int rundata_load_requests(struct rundata *d, const char *run_dir, char *err);

/*
 * Frees d's mock rows, events and mock file names, keeping its requests
 * (what the plots read): chaos run keeps a run's requests until it plots.
 * The requests' answer and answered_by, which pointed into what is
 * freed, are cleared.
 */
void rundata_keep_requests(struct rundata *d);

/* Frees what rundata_load made; d is left empty. */
void rundata_free(struct rundata *d);

#endif
