/*
 * health: a provider's active health check as a state machine — fall
 * failed checks in a row make it unhealthy, rise passed checks in a row
 * healthy again — and how soon the next check is due (faster while
 * unhealthy). Pure: the caller runs the checks and feeds their results.
 */
#ifndef FAULTLINE_GATEWAY_HEALTH_H
#define FAULTLINE_GATEWAY_HEALTH_H

#include <stdbool.h>

/* What a check asks. */
enum health_request {
	HEALTH_MODELS,		/* GET BASE_URL/models */
	HEALTH_COMPLETION,	/* POST BASE_URL/chat/completions, max_tokens 1 */
};

struct health_config {
	bool enabled;
	double interval_ms;		/* between checks while healthy */
	double unhealthy_interval_ms;	/* between checks while unhealthy */
	double timeout_ms;		/* one check's whole time */
	unsigned fall;			/* failed checks in a row that make it unhealthy */
	unsigned rise;			/* passed checks in a row that make it healthy */
	enum health_request request;
};

struct health {
	bool healthy;			/* it starts healthy */
	bool suspect;			/* a breaker of the provider is not closed */
	unsigned fails;			/* failed checks in a row */
	unsigned passes;		/* passed checks in a row */
};

/* What one check's result changed. */
enum health_change {
	HEALTH_SAME,
	HEALTH_DOWN,		/* it just became unhealthy */
	HEALTH_UP,		/* it just became healthy again */
};

/* Starts h healthy. */
void health_init(struct health *h);

/* Takes one check's result (ok: it passed). */
enum health_change health_result(struct health *h, const struct health_config *c, bool ok);

/*
 * The wait before the next check: interval_ms; unhealthy_interval_ms
 * while unhealthy, and while suspect when it is the shorter.
 */
double health_next_ms(const struct health *h, const struct health_config *c);

/*
 * Whether a breaker of the provider is open or half-open (suspect) — on
 * traffic's evidence or the checks' own. While it is, the checks run at
 * unhealthy_interval_ms when that is the shorter (HAProxy's "on-error
 * fastinter"): a provider that
 * failed requests is confirmed down, and seen back, at the fast cadence,
 * not at interval_ms. Returns when the next check is due, the one due at
 * due_ms given: now, when it has just become suspect and that check is
 * later; due_ms otherwise (a check in flight is the caller's to wait for).
 */
double health_suspect(struct health *h, bool suspect, double due_ms, double now);

/*
 * When the check after one due at due_ms is due, at now: its interval
 * (health_next_ms) after the last one's due time — not after its answer,
 * so the checks keep to their grid however long each takes — or now when
 * that has passed (a check slower than the interval).
 */
double health_next_due(const struct health *h, const struct health_config *c, double due_ms,
		       double now);

#endif
