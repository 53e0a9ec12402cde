/*
 * run: one load run — the schedule, the requests in flight through libcurl
 * on a libuv loop, client retries, streams watched for their first token
 * and for silence, every finished request recorded, and the progress line.
 */
#ifndef FAULTLINE_RUN_H
#define FAULTLINE_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/backoff.h"
#include "loadgen/mix.h"
#include "loadgen/schedule.h"

/* loadgen's random streams of its seed (the schedule's are schedule.c's). */
#define LG_RNG_STREAMING (1ull << 40)	/* which requests stream */
#define LG_RNG_RETRY ((1ull << 40) + 1)	/* retry backoff jitter */

/* A run's settings, from the command line and the mix file. */
struct lg_config {
	char **targets;			/* full endpoint URLs */
	size_t ntargets;
	double duration_ms;
	double rate;			/* open loop: total requests per second */
	enum arrival arrival;
	int64_t concurrency;		/* > 0: closed loop with that many clients */
	double ramp_up_ms;		/* closed loop: client k begins k * this / concurrency in */
	double error_think_ms;		/* closed loop: a client waits this after a request not ok */
	struct mix mix;
	double timeout_ms;		/* answer (or first token) within this */
	double stall_timeout_ms;	/* a stream's longest silence */
	double max_time_ms;		/* hard cap on any attempt */
	int64_t retries;
	struct backoff backoff;
	int64_t connections;		/* requests in progress at most */
	int64_t max_requests;		/* 0: no cap */
	const char **headers;		/* extra "Name: value" for every request */
	size_t nheaders;
	const char *id_prefix;
	int64_t t0_unix_ms;
	uint64_t seed;
	const char *out_dir;
	bool progress;			/* draw the live line on stderr */
};

/*
 * cfg with loadgen's defaults (no targets, no mix, t0 0): 30 s timeout,
 * constant arrivals, 1,024 connections, backoff 100 ms up to 5 s, seed 1;
 * the stall timeout and max time NAN until lg_config_derive.
 */
void lg_config_init(struct lg_config *cfg);

/*
 * The settings that follow from others, once the command line and the
 * mix are in: an open loop over a mix whose streams give rates runs at
 * their sum; the stall timeout defaults to the timeout, the max time to
 * ten timeouts.
 */
void lg_config_derive(struct lg_config *cfg);

/*
 * Runs the load to the end (or until SIGINT/SIGTERM) and writes the results
 * into cfg->out_dir. Returns the exit status: 0 for a complete run, 128+N
 * when signal N cut it short (results written all the same), 1 when it
 * could not run or write its results (message on stderr).
 */
int run_load(const struct lg_config *cfg);

#endif
