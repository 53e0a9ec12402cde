/*
 * fault: a provider's fault timeline and the decision it makes for each
 * request. Pure policy: the time and the random state come in as arguments,
 * so the same code runs under a fake clock in the tests.
 *
 * Overlapping windows: the listener is closed while any `down` window is
 * open. Otherwise faults are taken in list order (injected faults first,
 * then the config's). `slow` windows add up and the largest `slow_tokens`
 * wins; a `rate_limit` window spends its budget when the request reaches it;
 * the first other fault that is active (and whose probability draw succeeds)
 * decides how the request is answered, and the faults after it are not
 * consulted (their budgets are not spent).
 */
#ifndef FAULTLINE_FAULT_H
#define FAULTLINE_FAULT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"

enum fault_kind {
	FAULT_DOWN,
	FAULT_HANG,
	FAULT_STATUS,
	FAULT_SLOW,
	FAULT_SLOW_TOKENS,
	FAULT_STALL,
	FAULT_TRUNCATE,
	FAULT_ERROR_EVENT,
	FAULT_RESET,
	FAULT_MALFORMED,
	FAULT_RATE_LIMIT,
	FAULT_BAD_CONTENT,
	FAULT_NKINDS,
};

/* Token-bucket state of a rate_limit window; full when the window opens. */
struct rate_state {
	bool started;
	double last_ms;
	double requests;	/* available */
	double tokens;		/* available */
};

struct fault {
	enum fault_kind kind;
	double from_ms;		/* t0-relative, inclusive */
	double to_ms;		/* exclusive */
	double probability;	/* 0 < p ≤ 1 */
	bool injected;		/* from the admin API */
	int64_t status;		/* status */
	double retry_after_s;	/* status; < 0: no header */
	double add_ms;		/* slow */
	double token_ms;	/* slow_tokens */
	int64_t after_tokens;	/* stall, truncate, error_event */
	int64_t after_bytes;	/* reset */
	double rpm;		/* rate_limit; 0: no request budget */
	double tpm;		/* rate_limit; 0: no token budget */
	int violation;		/* bad_content: an enum contract_violation */
	const char *group;	/* the group whose faults it came with (the config's), or NULL */
	struct rate_state rate;
};

/*
 * What the active faults do to one request. decider and rate point into the
 * fault list given to fault_decide: valid until that list changes, so a
 * caller that keeps the decision across events copies what it needs.
 */
struct fault_decision {
	const struct fault *decider;	/* the fault that shapes the answer, or NULL */
	double add_ms;			/* extra time before the first token */
	double token_ms;		/* replaces the token interval when ≥ 0 */
	char applied[96];		/* kinds that applied, joined by '+' */

	/* rate_limit: set when a window was active for this request. */
	const struct fault *rate;
	double rate_rpm;		/* copies of rate's budgets (0 when none) */
	double rate_tpm;
	double rate_requests_left;
	double rate_tokens_left;
	double rate_reset_requests_s;	/* until the request budget is full */
	double rate_reset_tokens_s;
	double retry_after_s;		/* when the decider is rate_limit */
};

/* The config name of a kind ("down", "slow_tokens"…). */
const char *fault_kind_name(enum fault_kind kind);

/* True while the window of f holds t_ms. */
bool fault_active(const struct fault *f, double t_ms);

/* True when a `down` window holds t_ms. */
bool fault_down_at(const struct fault *faults, size_t n, double t_ms);

/*
 * The first window edge (a from or to) strictly after t_ms among the faults
 * of kind `kind` (or all kinds with kind = FAULT_NKINDS); INFINITY if none.
 */
double fault_next_edge(const struct fault *faults, size_t n, double t_ms,
		       enum fault_kind kind);

/*
 * Drops the injected faults whose window has ended by now_ms (to_ms ≤
 * now_ms), moving the rest together in their order; the config's faults
 * stay whatever their times, as they are the timeline as written. Returns
 * how many faults are left.
 */
size_t fault_prune_expired(struct fault *faults, size_t n, double now_ms);

/*
 * Decides what happens to a request arriving at t_ms that would cost
 * `token_cost` tokens (prompt + max output) against a rate_limit budget.
 * Draws probabilities from rng and spends rate_limit budgets (in faults).
 * A negative token_cost marks a request no budget counts (GET /v1/models).
 */
void fault_decide(struct fault *faults, size_t n, double t_ms, double token_cost,
		  struct rng *rng, struct fault_decision *out);

/*
 * Parses one fault object (config or admin API) into f. file and path name
 * it in errors. Returns 0, or -EINVAL with the message in err
 * (CFG_ERR_LEN bytes).
 */
int fault_parse(const cJSON *obj, const char *file, const char *path,
		struct fault *f, char *err);

/* Adds f's settings to a JSON object (for the admin API's state). */
void fault_to_json(const struct fault *f, double now_ms, cJSON *obj);

/*
 * The fault keys' tables — those every fault has, then each kind's —
 * as sections under path (e.g. "providers[].faults[]"). Fills at most max
 * entries of out and returns how many there are.
 */
struct cfg_section;
size_t fault_config_sections(const char *path, struct cfg_section *out, size_t max);

#endif
