/*
 * breaker: a per-target circuit breaker as a pure state machine. The window
 * is a ring of time buckets indexed by floor(now / width); a slot whose
 * index has fallen out of the last `buckets` indices counts for nothing and
 * is cleared when its time comes round again. Every state change goes
 * through set_state(), which fills the caller's breaker_change.
 */
#include "gateway/breaker.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Bucket indices are kept well inside int64_t, so index - buckets cannot wrap. */
#define BUCKET_INDEX_LIMIT 4e18

struct breaker_config breaker_config_default(void)
{
	struct breaker_config cfg = {
		.enabled = true,
		.consecutive_failures = 5,
		.failure_ratio = 0.5,
		.window_ms = 10000,
		.buckets = 10,
		.min_requests = 20,
		.slow_ms = 0,
		.slow_ratio = 0.5,
		.latency_budget_ms = 0,
		.latency_percentile = 95,
		.cooldown_ms = 5000,
		.cooldown_multiplier = 2,
		.cooldown_max_ms = 60000,
		.cooldown_jitter = 0.2,
		.half_open_probes = 3,
	};

	return cfg;
}

/* Writes the message for a bad field and returns -EINVAL. */
static int config_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* 0 (off) or a ratio in (0, 1]; false for NaN. */
static bool ratio_ok(double v)
{
	return v >= 0 && v <= 1;
}

int breaker_config_check(const struct breaker_config *cfg, char *err, size_t errlen)
{
	if (!ratio_ok(cfg->failure_ratio))
		return config_error(err, errlen,
				    "failure_ratio: expected 0 (off) or a number in (0, 1], got %g",
				    cfg->failure_ratio);
	if (cfg->buckets < 1 || cfg->buckets > BREAKER_MAX_BUCKETS)
		return config_error(err, errlen, "buckets: expected 1 to %d, got %u",
				    BREAKER_MAX_BUCKETS, cfg->buckets);
	/* A bucket of at least 1 ms; an hour's window is plenty for a breaker. */
	if (!(cfg->window_ms >= cfg->buckets && cfg->window_ms <= 3600000))
		return config_error(err, errlen,
				    "window_ms: expected %u (1 ms per bucket) to 3600000, got %g",
				    cfg->buckets, cfg->window_ms);
	if (!(cfg->slow_ms >= 0 && isfinite(cfg->slow_ms)))
		return config_error(err, errlen,
				    "slow_ms: expected 0 (off) or a finite number > 0, got %g",
				    cfg->slow_ms);
	if (!ratio_ok(cfg->slow_ratio))
		return config_error(err, errlen,
				    "slow_ratio: expected 0 (off) or a number in (0, 1], got %g",
				    cfg->slow_ratio);
	if (!(cfg->latency_budget_ms >= 0 && isfinite(cfg->latency_budget_ms)))
		return config_error(err, errlen,
				    "latency_budget_ms: expected 0 (off) or a finite number > 0, got %g",
				    cfg->latency_budget_ms);
	if (!(cfg->latency_percentile >= 50 && cfg->latency_percentile <= 99.9))
		return config_error(err, errlen,
				    "latency_percentile: expected a number in [50, 99.9], got %g",
				    cfg->latency_percentile);
	if (!(cfg->cooldown_ms > 0 && isfinite(cfg->cooldown_ms)))
		return config_error(err, errlen,
				    "cooldown_ms: expected a finite number > 0, got %g",
				    cfg->cooldown_ms);
	if (!(cfg->cooldown_multiplier >= 1 && isfinite(cfg->cooldown_multiplier)))
		return config_error(err, errlen,
				    "cooldown_multiplier: expected a finite number >= 1, got %g",
				    cfg->cooldown_multiplier);
	if (!(cfg->cooldown_max_ms >= cfg->cooldown_ms && isfinite(cfg->cooldown_max_ms)))
		return config_error(err, errlen,
				    "cooldown_max_ms: expected a finite number >= cooldown_ms (%g), got %g",
				    cfg->cooldown_ms, cfg->cooldown_max_ms);
	if (!(cfg->cooldown_jitter >= 0 && cfg->cooldown_jitter < 1))
		return config_error(err, errlen,
				    "cooldown_jitter: expected a number in [0, 1), got %g",
				    cfg->cooldown_jitter);
	if (cfg->half_open_probes < 1)
		return config_error(err, errlen, "half_open_probes: expected >= 1, got %u",
				    cfg->half_open_probes);
	return 0;
}

const char *breaker_state_name(enum breaker_state s)
{
	switch (s) {
	case BREAKER_CLOSED:
		return "closed";
	case BREAKER_OPEN:
		return "open";
	case BREAKER_HALF_OPEN:
		return "half_open";
	}
	return "unknown";
}

/* Empties the window: every slot holds nothing and no real index. */
static void window_clear(struct breaker *b)
{
	unsigned i;

	for (i = 0; i < BREAKER_MAX_BUCKETS; i++) {
		memset(&b->bucket[i], 0, sizeof(b->bucket[i]));
		b->bucket[i].index = INT64_MIN;
	}
	b->latest_bucket = -(int64_t)BUCKET_INDEX_LIMIT;
}

/* The bucket index of now_ms, never before the latest one seen. */
static int64_t bucket_index(const struct breaker *b, double now_ms)
{
	double q = floor(now_ms / (b->cfg.window_ms / b->cfg.buckets));
	int64_t idx;

	if (!(q > -BUCKET_INDEX_LIMIT))
		q = -BUCKET_INDEX_LIMIT;
	if (q > BUCKET_INDEX_LIMIT)
		q = BUCKET_INDEX_LIMIT;
	idx = (int64_t)q;
	return idx > b->latest_bucket ? idx : b->latest_bucket;
}

/* Whether the slot holding bucket `index` is in the window ending at `now`. */
static bool bucket_live(const struct breaker *b, int64_t index, int64_t now)
{
	return index <= now && index > now - (int64_t)b->cfg.buckets;
}

static void window_add(struct breaker *b, double now_ms, bool success, bool slow, bool late)
{
	int64_t idx = bucket_index(b, now_ms);
	int64_t n = b->cfg.buckets;
	struct breaker_bucket *bk = &b->bucket[((idx % n) + n) % n];

	if (bk->index != idx) {
		memset(bk, 0, sizeof(*bk));
		bk->index = idx;
	}
	bk->requests++;
	bk->failures += !success;
	bk->slow += slow;
	bk->late += late;
	b->latest_bucket = idx;
}

struct breaker_counts breaker_window(const struct breaker *b, double now_ms)
{
	struct breaker_counts c = { 0 };
	int64_t now = bucket_index(b, now_ms);
	unsigned i;

	for (i = 0; i < b->cfg.buckets; i++) {
		if (!bucket_live(b, b->bucket[i].index, now))
			continue;
		c.requests += b->bucket[i].requests;
		c.failures += b->bucket[i].failures;
		c.slow += b->bucket[i].slow;
		c.late += b->bucket[i].late;
	}
	return c;
}

void breaker_init(struct breaker *b, const struct breaker_config *cfg, double now_ms)
{
	memset(b, 0, sizeof(*b));
	b->cfg = *cfg;
	if (b->cfg.buckets < 1)
		b->cfg.buckets = 1;
	if (b->cfg.buckets > BREAKER_MAX_BUCKETS)
		b->cfg.buckets = BREAKER_MAX_BUCKETS;
	b->state = BREAKER_CLOSED;
	b->since_ms = now_ms;
	b->open_until_ms = now_ms;
	b->last_failure_ms = -INFINITY;
	window_clear(b);
}

static void change_clear(struct breaker_change *chg)
{
	if (chg)
		memset(chg, 0, sizeof(*chg));
}

/* The one place the state changes: records when, and tells the caller why. */
static void set_state(struct breaker *b, enum breaker_state to, double now_ms,
		      struct breaker_change *chg, const char *fmt, ...)
{
	va_list ap;

	if (chg) {
		chg->changed = true;
		chg->from = b->state;
		chg->to = to;
		va_start(ap, fmt);
		vsnprintf(chg->reason, sizeof(chg->reason), fmt, ap);
		va_end(ap);
	}
	b->state = to;
	b->since_ms = now_ms;
	b->changes++;
	b->probes_in_flight = 0;
	b->probes_succeeded = 0;
}

/*
 * The cooldown of trip number b->trips: min(cap, base × multiplier^(trips−1)),
 * drawn uniformly within ± jitter of that, then capped again.
 */
static double next_cooldown(const struct breaker *b, struct rng *r)
{
	const struct breaker_config *cfg = &b->cfg;
	double c = cfg->cooldown_ms * pow(cfg->cooldown_multiplier, (double)b->trips - 1);
	double j = cfg->cooldown_jitter;

	if (!(c <= cfg->cooldown_max_ms))
		c = cfg->cooldown_max_ms;
	if (j > 0)
		c = rng_range(r, c * (1 - j), c * (1 + j));
	if (c > cfg->cooldown_max_ms)
		c = cfg->cooldown_max_ms;
	return c;
}

/* Opens (or reopens) b for the next cooldown; reason is already formatted. */
static void trip(struct breaker *b, double now_ms, struct rng *r,
		 struct breaker_change *chg, const char *reason)
{
	b->trips++;
	b->cooldown_ms = next_cooldown(b, r);
	b->open_until_ms = now_ms + b->cooldown_ms;
	set_state(b, BREAKER_OPEN, now_ms, chg, "%s", reason);
}

/* Closes b; reason is already formatted. */
static void close_breaker(struct breaker *b, double now_ms, struct breaker_change *chg,
			  const char *reason)
{
	set_state(b, BREAKER_CLOSED, now_ms, chg, "%s", reason);
	b->trips = 0;
	b->consecutive_failures = 0;
	window_clear(b);
}

/*
 * Whether more than 1 − pct/100 of requests were late. pct/100 is inexact
 * in binary (1 − 90/100 is 0.09999999999999998, 100 − 99.9 is
 * 0.09999999999999432), so a share exactly at the line, 2 late of 20 at
 * p90, would count as over it: the line gets a relative slack of 1e-9, far
 * below any real difference between whole counts.
 */
static bool late_share_over(uint64_t late, uint64_t requests, double pct)
{
	double line = (double)requests * (100 - pct) / 100;

	return (double)late > line + 1e-9 * (line + 1);
}

/*
 * Closed: writes the first rule that holds into reason and returns true.
 * The ratio rules need min_requests results (at least one) in the window.
 */
static bool rule_holds(const struct breaker *b, double now_ms, char *reason, size_t len)
{
	const struct breaker_config *cfg = &b->cfg;
	struct breaker_counts w;
	uint64_t min_requests = cfg->min_requests > 0 ? cfg->min_requests : 1;
	double ratio;

	if (cfg->consecutive_failures > 0 &&
	    b->consecutive_failures >= cfg->consecutive_failures) {
		snprintf(reason, len, "%llu consecutive failure%s",
			 (unsigned long long)b->consecutive_failures,
			 b->consecutive_failures == 1 ? "" : "s");
		return true;
	}
	if (cfg->failure_ratio <= 0 && !(cfg->slow_ms > 0 && cfg->slow_ratio > 0) &&
	    !(cfg->latency_budget_ms > 0))
		return false;
	w = breaker_window(b, now_ms);
	if (w.requests < min_requests)
		return false;
	ratio = (double)w.failures / (double)w.requests;
	if (cfg->failure_ratio > 0 && ratio >= cfg->failure_ratio) {
		snprintf(reason, len, "failure ratio %.2f >= %.2f over %g s (%llu requests)",
			 ratio, cfg->failure_ratio, cfg->window_ms / 1000,
			 (unsigned long long)w.requests);
		return true;
	}
	ratio = (double)w.slow / (double)w.requests;
	if (cfg->slow_ms > 0 && cfg->slow_ratio > 0 && ratio >= cfg->slow_ratio) {
		snprintf(reason, len,
			 "slow calls %.2f >= %.2f (over %g ms) over %g s (%llu requests)",
			 ratio, cfg->slow_ratio, cfg->slow_ms, cfg->window_ms / 1000,
			 (unsigned long long)w.requests);
		return true;
	}
	if (cfg->latency_budget_ms > 0 &&
	    late_share_over(w.late, w.requests, cfg->latency_percentile)) {
		snprintf(reason, len, "p%g latency over the %g ms budget over %g s "
			 "(%llu of %llu requests late)", cfg->latency_percentile,
			 cfg->latency_budget_ms, cfg->window_ms / 1000, (unsigned long long)w.late,
			 (unsigned long long)w.requests);
		return true;
	}
	return false;
}

enum breaker_verdict breaker_admit(struct breaker *b, double now_ms, uint64_t *probe,
				   struct breaker_change *chg)
{
	change_clear(chg);
	*probe = 0;
	if (!b->cfg.enabled || b->state == BREAKER_CLOSED)
		return BREAKER_ADMIT;
	if (b->state == BREAKER_OPEN) {
		if (now_ms < b->open_until_ms) {
			b->totals.rejected++;
			return BREAKER_REJECT;
		}
		if (b->gate_ms > 0) {	/* another replica probes: wait for its verdict */
			b->open_until_ms = now_ms + b->gate_ms;
			b->totals.rejected++;
			return BREAKER_REJECT;
		}
		set_state(b, BREAKER_HALF_OPEN, now_ms, chg, "cooldown %.0f ms over",
			  b->cooldown_ms);
		b->round++;
	}
	if (b->probes_in_flight >= b->cfg.half_open_probes) {
		b->totals.rejected++;
		return BREAKER_REJECT;
	}
	b->probes_in_flight++;
	*probe = b->round;
	return BREAKER_ADMIT_PROBE;
}

/* Counts one result everywhere, whatever the state. */
static void count_result(struct breaker *b, double now_ms, bool success, bool slow, bool late)
{
	b->totals.requests++;
	b->totals.slow += slow;
	b->totals.late += late;
	if (success) {
		b->consecutive_failures = 0;
	} else {
		b->totals.failures++;
		b->consecutive_failures++;
		b->last_failure_ms = now_ms;
	}
	window_add(b, now_ms, success, slow, late);
}

void breaker_record(struct breaker *b, double now_ms, bool success, double latency_ms,
		    uint64_t probe, struct rng *r, struct breaker_change *chg)
{
	bool slow = b->cfg.slow_ms > 0 && latency_ms > b->cfg.slow_ms;
	bool late = b->cfg.latency_budget_ms > 0 && latency_ms > b->cfg.latency_budget_ms;
	char reason[BREAKER_REASON_LEN];

	change_clear(chg);
	count_result(b, now_ms, success, slow, late);
	if (!b->cfg.enabled)
		return;

	if (b->state == BREAKER_CLOSED) {
		if (rule_holds(b, now_ms, reason, sizeof(reason)))
			trip(b, now_ms, r, chg, reason);
		return;
	}
	/* Only a probe of the current half-open round decides anything now. */
	if (b->state != BREAKER_HALF_OPEN || probe == 0 || probe != b->round)
		return;
	if (b->probes_in_flight > 0)
		b->probes_in_flight--;
	if (!success) {
		trip(b, now_ms, r, chg, "probe failed");
		return;
	}
	b->probes_succeeded++;
	if (b->probes_succeeded >= b->cfg.half_open_probes) {
		unsigned k = b->cfg.half_open_probes;

		snprintf(reason, sizeof(reason), "%u probe%s succeeded", k, k == 1 ? "" : "s");
		close_breaker(b, now_ms, chg, reason);
	}
}

void breaker_record_slow(struct breaker *b, double now_ms, double latency_ms, uint64_t probe,
			 struct rng *r, struct breaker_change *chg)
{
	bool slow = b->cfg.slow_ms > 0 && latency_ms > b->cfg.slow_ms;
	bool late = b->cfg.latency_budget_ms > 0 && latency_ms > b->cfg.latency_budget_ms;
	char reason[BREAKER_REASON_LEN];

	change_clear(chg);
	breaker_release_probe(b, probe);
	if (!slow && !late)
		return;
	b->totals.requests++;
	b->totals.slow += slow;
	b->totals.late += late;
	window_add(b, now_ms, true, slow, late);
	if (b->cfg.enabled && b->state == BREAKER_CLOSED &&
	    rule_holds(b, now_ms, reason, sizeof(reason)))
		trip(b, now_ms, r, chg, reason);
}

void breaker_trip(struct breaker *b, double now_ms, const char *reason, struct rng *r,
		  struct breaker_change *chg)
{
	change_clear(chg);
	if (!b->cfg.enabled || b->state == BREAKER_OPEN)
		return;
	trip(b, now_ms, r, chg, reason);
}

void breaker_wake(struct breaker *b, double now_ms, const char *reason,
		  struct breaker_change *chg)
{
	change_clear(chg);
	if (!b->cfg.enabled || b->state != BREAKER_OPEN)
		return;
	set_state(b, BREAKER_HALF_OPEN, now_ms, chg, "%s", reason);
	b->round++;
}

bool breaker_would_admit(const struct breaker *b, double now_ms)
{
	if (!b->cfg.enabled || b->state == BREAKER_CLOSED)
		return true;
	if (b->state == BREAKER_OPEN)
		return now_ms >= b->open_until_ms && !(b->gate_ms > 0);
	return b->probes_in_flight < b->cfg.half_open_probes;
}

void breaker_release_probe(struct breaker *b, uint64_t probe)
{
	if (b->state == BREAKER_HALF_OPEN && probe != 0 && probe == b->round &&
	    b->probes_in_flight > 0)
		b->probes_in_flight--;
}

void breaker_gate(struct breaker *b, double gate_ms)
{
	b->gate_ms = gate_ms > 0 ? gate_ms : 0;
}

void breaker_open_until(struct breaker *b, double now_ms, double at_ms, double until_ms,
			const char *reason, struct breaker_change *chg)
{
	change_clear(chg);
	if (!b->cfg.enabled || !(until_ms > now_ms))
		return;
	if (b->state == BREAKER_OPEN) {
		if (until_ms > b->open_until_ms)
			b->open_until_ms = until_ms;
		return;
	}
	b->trips++;
	b->cooldown_ms = until_ms - now_ms;
	b->open_until_ms = until_ms;
	set_state(b, BREAKER_OPEN, now_ms, chg, "%s", reason);
	b->since_ms = at_ms < now_ms ? at_ms : now_ms;
}

void breaker_close_now(struct breaker *b, double now_ms, double at_ms, const char *reason,
		       struct breaker_change *chg)
{
	change_clear(chg);
	if (!b->cfg.enabled || b->state == BREAKER_CLOSED)
		return;
	close_breaker(b, now_ms, chg, reason);
	b->since_ms = at_ms < now_ms ? at_ms : now_ms;
}
