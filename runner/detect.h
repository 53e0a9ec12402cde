/*
 * detect: the detection study — how soon a failed provider is found out,
 * by its breaker (passive: request results), its health checks (active)
 * or both. What the textbook predicts from a setup's config, the
 * scenario's load rate and the failing provider's fault (detect_predict,
 * pure, the formulas in docs/chaos.md's "Detection"), and the report's
 * Detection table, which sets each setup's measured figures (a stamp's
 * combined summary) beside that prediction.
 */
#ifndef FAULTLINE_RUNNER_DETECT_H
#define FAULTLINE_RUNNER_DETECT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "runner/scenario.h"

/* The failing provider's fault, as the formulas tell them apart. */
enum detect_fault_kind {
	DETECT_REFUSED,		/* down: connections refused */
	DETECT_HANG,		/* requests read and never answered */
	DETECT_ERROR_STATUS,	/* a 5xx answer */
	DETECT_SLOW_TOKENS,	/* tokens slower than usual */
	DETECT_STALL,		/* a stream that goes silent after some tokens */
	DETECT_OTHER,		/* anything else: not modelled */
};

struct detect_fault {
	enum detect_fault_kind kind;
	double probability;	/* (0, 1]: the share of requests and checks it hits */
	double answer_ms;	/* ERROR_STATUS: when the error is answered; SLOW_TOKENS:
				 * when the slow answer ends; STALL: when the last token
				 * before the silence is sent (ms after arrival) */
	bool committed;		/* STALL: a token was sent before the silence */
	bool streaming;		/* the load streams (every request) */
};

/* The passive side: the breaker's consecutive-failures rule and the attempt's time caps. */
struct detect_passive {
	bool on;			/* breaker enabled and consecutive_failures > 0 */
	unsigned threshold;		/* consecutive_failures */
	double timeout_ms;		/* the provider's timeout_ms, capped by the deadline */
	double first_token_timeout_ms;	/* streams: until the first content */
	double stall_timeout_ms;	/* streams: the longest silence after the commit */
};

/* The active side: the provider's health_check. */
struct detect_active {
	bool on;
	double interval_ms;
	double timeout_ms;
	unsigned fall;
	bool completion;	/* request "completion" rather than GET /models */
};

/* Why a method gives no number. */
enum detect_none {
	DETECT_HAS_VALUE,	/* ms holds the prediction */
	DETECT_OFF,		/* the method is not configured */
	DETECT_NEVER,		/* the method cannot see this fault */
	DETECT_UNMODELLED,	/* the formulas do not cover it */
};

struct detect_value {
	double ms;		/* NAN unless why is DETECT_HAS_VALUE */
	enum detect_none why;
};

struct detect_prediction {
	struct detect_value passive;
	struct detect_value active;
	struct detect_value both;	/* the smaller of the two that have a value */
};

/*
 * The expected number of independent trials, each failing with
 * probability p in (0, 1], until k ≥ 1 fail in a row:
 * (1 − p^k) / ((1 − p) p^k), which is k when p is 1.
 */
double detect_trials_to_run(double p, unsigned k);

/*
 * Predicts T_detect (ms after the fault starts) of each method for the
 * fault f under a load of rate_per_s requests a second (≤ 0: not an open
 * loop, so no passive prediction). Pure.
 */
void detect_predict(const struct detect_passive *pa, const struct detect_active *ac,
		    const struct detect_fault *f, double rate_per_s, struct detect_prediction *out);

/*
 * The prediction for setup st of the loaded scenario sc (which has a
 * detection block): its gateway config read with the gateway's own loader,
 * the primary's first fault overlapping the fault phase. A setup that is
 * not a gateway gets DETECT_OFF for every method. Returns 0, or -ENOMEM.
 */
int detect_predict_setup(const struct scenario *sc, const struct sc_setup *st,
			 struct detect_prediction *out);

/*
 * Prints the Detection table of a stamp's combined summary (nothing when
 * sc has no detection block): one row per setup, as plain columns or
 * (markdown) a section "## Detection" with a table.
 */
void detect_table(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown);

#endif
