/*
 * budget: an alias's retry and hedge budget — a token bucket that each
 * request fills by a ratio and that a retry or a hedge draws one token
 * from, refilled at a floor rate. Pure: times are the caller's
 * milliseconds, so the tests drive them with a fake clock.
 */
#ifndef FAULTLINE_GATEWAY_BUDGET_H
#define FAULTLINE_GATEWAY_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/config.h"

/* An alias's retry and hedge budget: a token bucket. */
struct budget {
	double tokens;
	double last_ms;			/* when min_per_second last refilled it */
	/* This process's own use, for a workers gateway's others (worker.h), who zero them: */
	uint64_t deposits;		/* requests that deposited */
	uint64_t takes;			/* tokens taken */
};

/* A full bucket at now_ms. */
void budget_init(struct budget *b, const struct gw_budget *cfg, double now_ms);

/* A request arrived: ratio more tokens (and the refill since the last call). */
void budget_deposit(struct budget *b, const struct gw_budget *cfg, double now_ms);

/* Takes one token for a retry or a hedge; false (nothing taken) when there is none. */
bool budget_take(struct budget *b, const struct gw_budget *cfg, double now_ms);

/*
 * Another process's use of the same budget (a workers gateway's other
 * worker: each keeps a copy of the gateway's bucket): deposits requests'
 * ratio in, takes tokens out, with the refill since the last call; the
 * tokens stay within [0, burst]. The own counts are not touched.
 */
void budget_apply_others(struct budget *b, const struct gw_budget *cfg, uint64_t deposits,
			 uint64_t takes, double now_ms);

#endif
