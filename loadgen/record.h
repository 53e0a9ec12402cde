/*
 * record: loadgen's results — one row per finished request in
 * requests.csv and requests.jsonl (common/records.h's columns, in order), and
 * summary.json: counts by outcome, status and degraded mark, the achieved rate, and
 * latency, time-to-first-token and send-lag percentiles from histograms
 * fed by the same records. Every file is written under a temporary name and
 * renamed when the run is complete.
 */
#ifndef FAULTLINE_RECORD_H
#define FAULTLINE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hist.h"
#include "loadgen/outcome.h"
#include "common/recfile.h"

/* One finished request. Absent values: NaN, -1, NULL or 0 as noted. */
struct record {
	const char *id;
	size_t stream;		/* index into the recorder's stream names */
	const char *class_name;
	const char *tenant;
	const char *feature;
	bool streaming;
	double sched_ms;	/* intended send, ms after t0 */
	double start_ms;	/* actual send of the first attempt */
	double ttft_ms;		/* first token, ms after start; NaN: none */
	double end_ms;
	long status;		/* last attempt's HTTP status; 0: none */
	enum outcome outcome;
	const char *error;	/* NULL or "" when none */
	const char *provider;	/* NULL: header absent */
	int64_t attempts;	/* -1: header absent */
	int hedged;		/* 0/1; -1: header absent */
	int retries;		/* loadgen's own and libcurl's re-sends */
	int resends;		/* of retries, libcurl's re-sends (not a column) */
	int64_t tokens_in;	/* -1: unknown */
	int64_t tokens_out;	/* -1: unknown */
	double max_gap_ms;	/* NaN: not a stream */
	double cost_usd;	/* NaN: header absent */
	const char *degraded;	/* NULL: header absent */
};

struct mix;

/* What summary.json says about the run itself. */
struct run_info {
	const struct mix *mix;		/* the request streams */
	int64_t t0_unix_ms;
	uint64_t seed;
	bool closed_loop;
	const char *arrival;		/* open loop */
	double rate_per_s;		/* open loop: total target rate */
	int64_t concurrency;		/* closed loop */
	double ramp_up_ms;		/* closed loop: over which the clients begin */
	double error_think_ms;		/* closed loop: a client's wait after a request not ok */
	double duration_ms;
	const char *const *targets;
	size_t ntargets;
	int64_t retries;		/* --retries */
	uint64_t started_in_window;	/* first attempts sent in [0, duration) */
	uint64_t unfinished;		/* in flight when interrupted */
	bool interrupted;
	double elapsed_ms;		/* t0 to the end of the run (or the signal) */
	double window_ms;		/* the sending window the rates are per: the
					 * duration, or less when a signal cut it */
	int64_t connections;		/* open loop: --connections; 0: closed loop */
	uint64_t delayed_by_connections; /* sent late for want of a free slot */
};

/*
 * info's fields that cfg decides (the mix, t0, seed, loop, arrival, rate,
 * concurrency, duration and sending window, targets, retries), the rest
 * zero: the run's counts are the caller's.
 */
struct lg_config;
void run_info_of(const struct lg_config *cfg, struct run_info *info);

struct stream_stats {
	uint64_t requests;
	uint64_t ok;
};

struct recorder {
	struct recfile csv;
	struct recfile jsonl;
	char *csv_buf;			/* stdio buffers of the two files */
	char *jsonl_buf;
	struct row row;
	char *dir;
	const char *const *stream_names;
	size_t nstreams;
	struct stream_stats *by_stream;
	uint64_t requests;
	uint64_t outcomes[OUT_COUNT];
	uint64_t status[600];		/* by HTTP status; [0]: none */
	uint64_t retries;
	uint64_t retried;		/* requests with retries > 0 */
	uint64_t resends;		/* of retries, libcurl's re-sends */
	int64_t tokens_in;
	int64_t tokens_out;
	double cost_usd;
	uint64_t with_cost;
	uint64_t degraded[DEGRADED_COUNT];	/* by mark (static, cache) */
	uint64_t degraded_other;	/* any other value of the header */
	uint64_t instant_errors;	/* not ok within REQ_INSTANT_ERROR_MS of sched */
	struct hist *corrected;		/* end - sched */
	struct hist *uncorrected;	/* end - start */
	struct hist *ttft;
	struct hist *send_lag;		/* start - sched */
};

/*
 * Opens DIR/requests.csv.tmp and DIR/requests.jsonl.tmp (creating DIR when
 * missing) and writes the CSV header. stream_names (kept, not copied) name
 * the streams records refer to by index. Returns 0 or a negative errno with
 * a message in err.
 */
int recorder_open(struct recorder *r, const char *dir, const char *const *stream_names,
		  size_t nstreams, char *err, size_t errlen);

/* Writes a record's rows and counts it. Returns 0 or a negative errno. */
int recorder_add(struct recorder *r, const struct record *rec);

/* Pushes written rows to the kernel. Returns 0 or a negative errno. */
int recorder_flush(struct recorder *r);

/*
 * Writes summary.json and renames the three files into place. Returns 0 or
 * a negative errno with a message in err; the recorder is closed either way
 * (free it with recorder_free).
 */
int recorder_finish(struct recorder *r, const struct run_info *info, char *err,
		    size_t errlen);

/* Removes the unfinished files (a run that could not start). */
void recorder_abandon(struct recorder *r);

/*
 * Closes the record files where a write failed, leaving them as
 * requests.csv.tmp and requests.jsonl.tmp: what they hold is kept, and
 * their names say they are not whole.
 */
void recorder_keep_short(struct recorder *r);

/* Frees the recorder's memory. */
void recorder_free(struct recorder *r);

#endif
