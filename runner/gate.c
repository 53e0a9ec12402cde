/*
 * gate: judges a stamp's combined summary against the scenario's
 * expectations and a saved baseline (rules in gate.h), prints the verdicts
 * (gate_print and gate_command, the command, are in gate_cmd.c).
 */
#include "runner/gate.h"
#include "runner/gate_int.h"
#include "runner/objective.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/json.h"
#include "common/records.h"
#include "runner/outfile.h"
#include "runner/stamp.h"
#include "runner/stats.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* A combined figure (runner/stats.h's CFIGURES member): has is false for null. */
struct fig {
	bool has;
	double mean;
	double min;
	double max;
	double n;		/* runs it was a number in */
};

/* A setup of a combined summary, checked. */
struct setup_v {
	const char *name;
	double runs;
	const cJSON *phases;	/* object: phase name → CFIGURES */
};

struct tolerances {
	double relative;
	double floor_ms;
	double error_rate;
	double answered_share;
	double fallback_share;
};

static const struct cfg_key tol_keys[] = {
	{ "relative", CFG_NUM, offsetof(struct tolerances, relative), false,
	  GATE_TOL_RELATIVE, 0, 100, NULL, NULL },
	{ "absolute", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "floor_ms", CFG_NUM, offsetof(struct tolerances, floor_ms), false,
	  GATE_TOL_FLOOR_MS, 0, 1e9, NULL, NULL },
};

static const struct cfg_key tol_abs_keys[] = {
	{ "error_rate", CFG_NUM, offsetof(struct tolerances, error_rate), false,
	  GATE_TOL_ERROR_RATE, 0, 1, NULL, NULL },
	{ "answered_share", CFG_NUM, offsetof(struct tolerances, answered_share), false,
	  GATE_TOL_ANSWERED_SHARE, 0, 1, NULL, NULL },
	{ "fallback_share", CFG_NUM, offsetof(struct tolerances, fallback_share), false,
	  GATE_TOL_FALLBACK_SHARE, 0, 1, NULL, NULL },
};

/* An expect bound: its field in struct sc_expect and the figure it bounds. */
struct expect_bound {
	size_t offset;
	const char *key;	/* member of the phase's CFIGURES */
	const char *sub;	/* member of that (latency_ms), or NULL */
	const char *figure;	/* as printed */
	enum gate_op op;
	const char *none;	/* NULL: no value fails; else no value holds, with this note */
};

static const struct expect_bound expect_bounds[] = {
	{ offsetof(struct sc_expect, error_rate_max), "error_rate", NULL, "error_rate", GATE_LE,
	  NULL },
	{ offsetof(struct sc_expect, answered_min), "answered_share", NULL, "answered_share",
	  GATE_GE, NULL },
	{ offsetof(struct sc_expect, answered_max), "answered_share", NULL, "answered_share",
	  GATE_LE, NULL },
	{ offsetof(struct sc_expect, latency_p50_ms_max), "latency_ms", "p50", "latency_ms.p50",
	  GATE_LE, NULL },
	{ offsetof(struct sc_expect, latency_p95_ms_max), "latency_ms", "p95", "latency_ms.p95",
	  GATE_LE, NULL },
	{ offsetof(struct sc_expect, latency_p99_ms_max), "latency_ms", "p99", "latency_ms.p99",
	  GATE_LE, NULL },
	{ offsetof(struct sc_expect, time_to_open_ms_max), "time_to_open_ms", NULL,
	  "time_to_open_ms", GATE_LE, NULL },
	{ offsetof(struct sc_expect, time_to_primary_ms_max), "time_to_primary_ms", NULL,
	  "time_to_primary_ms", GATE_LE, NULL },
	{ offsetof(struct sc_expect, time_to_primary_ms_min), "time_to_primary_ms", NULL,
	  "time_to_primary_ms", GATE_GE, NULL },
	{ offsetof(struct sc_expect, opens_min), "opens", NULL, "opens", GATE_GE, NULL },
	{ offsetof(struct sc_expect, opens_max), "opens", NULL, "opens", GATE_LE, NULL },
	{ offsetof(struct sc_expect, fallback_share_max), "fallback_share", NULL,
	  "fallback_share", GATE_LE, NULL },
	{ offsetof(struct sc_expect, fallback_share_min), "fallback_share", NULL,
	  "fallback_share", GATE_GE, NULL },
	{ offsetof(struct sc_expect, silent_breaks_max), "silent_breaks", NULL, "silent_breaks",
	  GATE_LE, NULL },
	{ offsetof(struct sc_expect, stalls_max), "stalls", NULL, "stalls", GATE_LE, NULL },
	{ offsetof(struct sc_expect, max_gap_ms_max), "max_gap_ms", NULL, "max_gap_ms", GATE_LE, NULL },
	{ offsetof(struct sc_expect, ttft_p95_ms_max), "ttft_ms", "p95", "ttft_ms.p95", GATE_LE, NULL },
	{ offsetof(struct sc_expect, extra_requests_max), "extra_requests", NULL, "extra_requests",
	  GATE_LE, NULL },
	{ offsetof(struct sc_expect, duplicate_share_max), "duplicate_share", NULL,
	  "duplicate_share", GATE_LE, NULL },
	{ offsetof(struct sc_expect, cost_per_answered_max), "cost_per_answered", NULL,
	  "cost_per_answered", GATE_LE, NULL },
	{ offsetof(struct sc_expect, timeout_paid_max), "timeout_paid", NULL, "timeout_paid",
	  GATE_LE, NULL },
	{ offsetof(struct sc_expect, replica_open_spread_ms_max), "replica_open_spread_ms", NULL,
	  "replica_open_spread_ms", GATE_LE, NULL },
	{ offsetof(struct sc_expect, probe_overlaps_max), "probe_overlaps", NULL,
	  "probe_overlaps", GATE_LE, NULL },
	{ offsetof(struct sc_expect, broken_answers_max), "contract", "reached_clients",
	  "contract.reached_clients", GATE_LE, NULL },
	{ offsetof(struct sc_expect, broken_answers_min), "contract", "reached_clients",
	  "contract.reached_clients", GATE_GE, NULL },
	{ offsetof(struct sc_expect, contract_violations_min), "contract", "violations",
	  "contract.violations", GATE_GE, NULL },
	{ offsetof(struct sc_expect, degraded_min), "degraded_answers", NULL, "degraded_answers",
	  GATE_GE, NULL },
	{ offsetof(struct sc_expect, error_latency_ms_max), "error_latency_ms", "max",
	  "error_latency_ms.max", GATE_LE, "no unanswered request" },
	{ offsetof(struct sc_expect, transitions_min), "transitions", NULL, "transitions",
	  GATE_GE, NULL },
	{ offsetof(struct sc_expect, transitions_max), "transitions", NULL, "transitions",
	  GATE_LE, NULL },
	{ offsetof(struct sc_expect, fallback_spend_usd_max), "fallback_spend_usd", NULL,
	  "fallback_spend_usd", GATE_LE, NULL },
};

/* A bound comparing the setup with the entry's relative_to: this / other (− 1). */
struct relative_bound {
	size_t offset;
	const char *key;
	const char *sub;
	const char *figure;
	double minus;		/* 1 for an overhead, 0 for a ratio */
};

static const struct relative_bound relative_bounds[] = {
	{ offsetof(struct sc_expect, latency_p99_ratio_max), "latency_ms", "p99",
	  "latency_p99_ratio", 0 },
	{ offsetof(struct sc_expect, cost_overhead_max), "cost_per_answered", NULL,
	  "cost_overhead", 1 },
	{ offsetof(struct sc_expect, timeout_paid_ratio_max), "timeout_paid", NULL,
	  "timeout_paid_ratio", 0 },
};

enum base_rule { BASE_ABOVE, BASE_BELOW, BASE_RELATIVE, BASE_NEAR };

/* A figure compared with the baseline, and how. */
struct base_figure {
	const char *key;
	const char *sub;
	const char *figure;
	enum base_rule rule;
};

static const struct base_figure base_figures[] = {
	{ "error_rate", NULL, "error_rate", BASE_ABOVE },
	{ "answered_share", NULL, "answered_share", BASE_BELOW },
	{ "latency_ms", "p50", "latency_ms.p50", BASE_RELATIVE },
	{ "latency_ms", "p95", "latency_ms.p95", BASE_RELATIVE },
	{ "latency_ms", "p99", "latency_ms.p99", BASE_RELATIVE },
	{ "time_to_open_ms", NULL, "time_to_open_ms", BASE_RELATIVE },
	{ "fallback_share", NULL, "fallback_share", BASE_NEAR },
};

/* ---- verdicts ---- */

/* Whether value stands in relation op to bound, allowing for rounding. */
static bool holds(enum gate_op op, double value, double bound, double tolerance)
{
	double slack = 1e-9 * fmax(1, fabs(bound));

	switch (op) {
	case GATE_LE:
		return value <= bound + slack;
	case GATE_GE:
		return value >= bound - slack;
	case GATE_NEAR:
		return fabs(value - bound) <= tolerance + slack;
	}
	return false;
}

/* Appends a copy of c (with its own setup and phase strings) to r. */
static int push(struct gate_result *r, const struct gate_check *c, const char *setup,
		const char *phase)
{
	struct gate_check *grown;
	struct gate_check k = *c;

	if ((r->n & (r->n - 1)) == 0) {
		grown = realloc(r->checks, (r->n ? 2 * r->n : 8) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		r->checks = grown;
	}
	k.setup = strdup(setup);
	k.phase = strdup(phase);
	if (!k.setup || !k.phase) {
		free(k.setup);
		free(k.phase);
		return -ENOMEM;
	}
	r->checks[r->n++] = k;
	if (!k.pass)
		r->failed++;
	return 0;
}

/* A failed check for something missing in the run: no figure, no value. */
static int push_missing(struct gate_result *r, const char *source, const char *setup,
			const char *phase, const char *note)
{
	struct gate_check c = {
		.source = source, .figure = "-", .op = GATE_LE, .bound = NAN, .value = NAN,
		.pass = false,
	};

	snprintf(c.note, sizeof(c.note), "%s", note);
	return push(r, &c, setup, phase);
}

/* What the verdicts of e are called: "expect", or the objective's. */
static const char *src(const struct sc_expect *e)
{
	return e->source ? e->source : "expect";
}

static int oom(char *err)
{
	snprintf(err, CFG_ERR_LEN, "out of memory");
	return -ENOMEM;
}

/* ---- reading a combined summary ---- */

static int want_number(const cJSON *obj, const char *key, const char *file, const char *path,
		       double *out, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	char got[96];

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
		cfg_describe(v, got, sizeof(got));
		return cfg_error(err, file, path, key, "expected a number, got %s", got);
	}
	*out = v->valuedouble;
	return 0;
}

/*
 * Reads the figure key (key.sub when sub is not NULL) of a phase's CFIGURES
 * at path: {"mean","stddev","min","max","n"} or null (f->has false).
 */
static int get_fig(const cJSON *phase, const char *key, const char *sub, const char *file,
		   const char *path, struct fig *f, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(phase, key);
	char outer[300];
	char where[400];
	char got[96];
	int rc;

	memset(f, 0, sizeof(*f));
	if (sub) {
		if (cJSON_IsNull(v))
			return 0;
		if (!cJSON_IsObject(v)) {
			cfg_describe(v, got, sizeof(got));
			return cfg_error(err, file, path, key, "expected an object of percentiles "
					 "{\"p50\", …} or null, got %s", got);
		}
		snprintf(outer, sizeof(outer), "%.200s.%.64s", path, key);
		path = outer;
		key = sub;
		v = cJSON_GetObjectItemCaseSensitive(v, sub);
	}
	if (cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v)) {
		cfg_describe(v, got, sizeof(got));
		return cfg_error(err, file, path, key, "expected a combined figure {\"mean\", "
				 "\"stddev\", \"min\", \"max\", \"n\"} or null, got %s", got);
	}
	snprintf(where, sizeof(where), "%.300s.%.64s", path, key);
	rc = want_number(v, "mean", file, where, &f->mean, err);
	if (!rc)
		rc = want_number(v, "min", file, where, &f->min, err);
	if (!rc)
		rc = want_number(v, "max", file, where, &f->max, err);
	if (!rc)
		rc = want_number(v, "n", file, where, &f->n, err);
	if (!rc && !(f->n >= 1))
		rc = cfg_error(err, file, where, "n", "expected a count of runs of 1 or more, "
			       "got %g", f->n);
	f->has = rc == 0;
	return rc;
}

/* Checks a member v of a "setups" object into s. */
static int get_setup(const cJSON *v, const char *file, struct setup_v *s, char *err)
{
	char path[200];
	char got[96];
	int rc;

	snprintf(path, sizeof(path), "setups.%.120s", v->string);
	s->name = v->string;
	if (!cJSON_IsObject(v)) {
		cfg_describe(v, got, sizeof(got));
		return cfg_error(err, file, path, NULL, "expected a setup's combined figures "
				 "(an object), got %s", got);
	}
	rc = want_number(v, "runs", file, path, &s->runs, err);
	if (rc)
		return rc;
	if (!(s->runs >= 1) || s->runs != floor(s->runs))
		return cfg_error(err, file, path, "runs", "expected a whole number of runs, 1 or "
				 "more, got %g", s->runs);
	s->phases = cJSON_GetObjectItemCaseSensitive(v, "phases");
	if (!cJSON_IsObject(s->phases)) {
		cfg_describe(s->phases, got, sizeof(got));
		return cfg_error(err, file, path, "phases", "expected an object of phases, got %s",
				 got);
	}
	return 0;
}

/* A phase of a checked setup, or NULL; -EINVAL in *rc when it is not an object. */
static const cJSON *get_phase(const struct setup_v *s, const char *name, const char *file,
			      char *path, size_t pathlen, int *rc, char *err)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(s->phases, name);
	char got[96];

	*rc = 0;
	snprintf(path, pathlen, "setups.%.120s.phases.%.64s", s->name, name);
	if (p && !cJSON_IsObject(p)) {
		cfg_describe(p, got, sizeof(got));
		*rc = cfg_error(err, file, path, NULL, "expected a phase's combined figures "
				"(an object), got %s", got);
		return NULL;
	}
	return p;
}

/*
 * The top of a combined summary or baseline: an object with "scenario" (a
 * string), "time_scale" (a number above 0) and "setups" (an object).
 */
int gate__check_head(const cJSON *root, const char *file, const char **scenario,
		     double *scale, const cJSON **setups, char *err)
{
	const cJSON *v;
	char got[96];
	int rc;

	if (!cJSON_IsObject(root)) {
		cfg_describe(root, got, sizeof(got));
		return cfg_error(err, file, NULL, NULL, "expected an object (a stamp's combined "
				 "summary.json), got %s", got);
	}
	v = cJSON_GetObjectItemCaseSensitive(root, "scenario");
	if (!cJSON_IsString(v)) {
		cfg_describe(v, got, sizeof(got));
		return cfg_error(err, file, NULL, "scenario", "expected the scenario's name "
				 "(a string), got %s", got);
	}
	*scenario = v->valuestring;
	rc = want_number(root, "time_scale", file, NULL, scale, err);
	if (rc)
		return rc;
	if (!(*scale > 0))
		return cfg_error(err, file, NULL, "time_scale", "expected a number above 0, got %g",
				 *scale);
	*setups = cJSON_GetObjectItemCaseSensitive(root, "setups");
	if (!cJSON_IsObject(*setups)) {
		cfg_describe(*setups, got, sizeof(got));
		return cfg_error(err, file, NULL, "setups", "expected an object of setups, got %s",
				 got);
	}
	return 0;
}

static bool same_scale(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* ---- expectations ---- */

/* The verdict on a figure f against c's bound, judging the worst run. */
static void judge_fig(struct gate_check *c, const struct fig *f, double runs)
{
	if (!f->has) {
		snprintf(c->note, sizeof(c->note), "no value");
		return;
	}
	c->value = c->op == GATE_LE ? f->max : f->min;
	if (f->n < runs) {
		snprintf(c->note, sizeof(c->note), "no value in %.0f of %.0f runs", runs - f->n,
			 runs);
		return;
	}
	c->pass = holds(c->op, c->value, c->bound, 0);
	if (runs > 1)
		snprintf(c->note, sizeof(c->note), "worst of %.0f runs", runs);
}

/* window_answered_min: the worst window of the entry's length in the phase. */
static int judge_window(struct gate_result *r, const struct sc_expect *e,
			const struct setup_v *s, const cJSON *phase, const char *phase_name,
			const char *file, const char *path, char *err)
{
	const cJSON *aw = cJSON_GetObjectItemCaseSensitive(phase, "answered_windows");
	struct gate_check c = {
		.source = src(e), .figure = "window_answered_share", .op = GATE_GE,
		.bound = e->window_answered_min, .value = NAN,
	};
	char key[40];
	char where[400];
	const cJSON *blk;
	struct fig worst;
	struct fig from;
	struct fig nwin;
	int rc;

	stats_window_key(e->window_ms, key, sizeof(key));
	blk = cJSON_GetObjectItemCaseSensitive(aw, key);
	if (!cJSON_IsObject(blk)) {
		snprintf(c.note, sizeof(c.note), "no %g s windows in the summary",
			 e->window_ms / 1000);
		return push(r, &c, s->name, phase_name) ? oom(err) : 0;
	}
	snprintf(where, sizeof(where), "%.300s.answered_windows.%s", path, key);
	rc = get_fig(blk, "worst_share", NULL, file, where, &worst, err);
	if (!rc)
		rc = get_fig(blk, "worst_from_ms", NULL, file, where, &from, err);
	if (!rc)
		rc = get_fig(blk, "windows", NULL, file, where, &nwin, err);
	if (rc)
		return rc;
	judge_fig(&c, &worst, s->runs);
	if (!worst.has)
		snprintf(c.note, sizeof(c.note), "no %g s window of the phase had a request",
			 e->window_ms / 1000);
	else if (worst.n >= s->runs && from.has && from.min == from.max)
		snprintf(c.note, sizeof(c.note), "worst %g s window %g-%g s of %.0f%s",
			 e->window_ms / 1000, from.min / 1000, (from.min + e->window_ms) / 1000,
			 nwin.max, s->runs > 1 ? ", worst run" : "");
	return push(r, &c, s->name, phase_name) ? oom(err) : 0;
}

/* One check per bound e gives, for one setup's phase. */
static int judge_expect(struct gate_result *r, const struct sc_expect *e,
			const struct setup_v *s, const cJSON *phase, const char *phase_name,
			const char *file, const char *path, char *err)
{
	size_t i;
	int rc;

	for (i = 0; i < NELEM(expect_bounds); i++) {
		const struct expect_bound *b = &expect_bounds[i];
		double bound = *(const double *)((const char *)e + b->offset);
		struct gate_check c = {
			.source = src(e), .figure = b->figure, .op = b->op, .bound = bound,
			.value = NAN,
		};
		struct fig f;

		if (isnan(bound))
			continue;
		rc = get_fig(phase, b->key, b->sub, file, path, &f, err);
		if (rc)
			return rc;
		judge_fig(&c, &f, s->runs);
		if (b->none && !f.has) {
			c.pass = true;		/* nothing to bound: it holds */
			snprintf(c.note, sizeof(c.note), "%s", b->none);
		} else if (b->none && f.n < s->runs) {
			c.pass = holds(c.op, c.value, c.bound, 0);	/* the others had none */
			snprintf(c.note, sizeof(c.note), "%s in %.0f of %.0f runs", b->none,
				 s->runs - f.n, s->runs);
		}
		rc = push(r, &c, s->name, phase_name);
		if (rc)
			return oom(err);
	}
	if (!isnan(e->window_answered_min))
		return judge_window(r, e, s, phase, phase_name, file, path, err);
	return 0;
}

/*
 * The ratio bounds: this setup's figure over the relative_to setup's
 * (other: its phase, of the same class; NULL when the run lacks it),
 * worst case over the runs — this one's largest over the other's smallest.
 */
static int judge_relative(struct gate_result *r, const struct sc_expect *e,
			  const struct setup_v *s, const cJSON *phase, const char *phase_name,
			  const cJSON *other, const char *other_path, const char *file,
			  const char *path, char *err)
{
	size_t i;
	int rc;

	for (i = 0; i < NELEM(relative_bounds); i++) {
		const struct relative_bound *b = &relative_bounds[i];
		double bound = *(const double *)((const char *)e + b->offset);
		struct gate_check c = {
			.source = src(e), .figure = b->figure, .op = GATE_LE, .bound = bound,
			.value = NAN,
		};
		struct fig mine;
		struct fig theirs = { 0 };

		if (isnan(bound))
			continue;
		rc = get_fig(phase, b->key, b->sub, file, path, &mine, err);
		if (!rc && other)
			rc = get_fig(other, b->key, b->sub, file, other_path, &theirs, err);
		if (rc)
			return rc;
		if (!other)
			snprintf(c.note, sizeof(c.note), "vs %.60s: not in the run", e->relative_to);
		else if (!mine.has || !theirs.has || !(theirs.min > 0))
			snprintf(c.note, sizeof(c.note), "vs %.60s: no value", e->relative_to);
		else {
			c.value = mine.max / theirs.min - b->minus;
			c.pass = holds(GATE_LE, c.value, bound, 0);
			snprintf(c.note, sizeof(c.note), "vs %.60s: %.6g / %.6g%s", e->relative_to,
				 mine.max, theirs.min, s->runs > 1 ? ", worst runs" : "");
		}
		rc = push(r, &c, s->name, phase_name);
		if (rc)
			return oom(err);
	}
	return 0;
}

/*
 * A phase's figures narrowed to the entry's class or mix stream:
 * phase.classes[cls] or phase.mix_streams[stream], or phase itself
 * without either. NULL when the run had no request of the class or stream.
 */
static const cJSON *class_of(const cJSON *phase, const struct sc_expect *e, char *path,
			     size_t len)
{
	const char *group = e->cls ? "classes" : "mix_streams";
	const char *name = e->cls ? e->cls : e->stream;
	size_t n = strlen(path);

	if (!name || !phase)
		return phase;
	snprintf(path + n, len - n, ".%s.%.64s", group, name);
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(phase, group),
						name);
}

/* Every check of one expect entry against one setup. */
static int expect_setup(struct gate_result *r, const struct scenario *sc,
			const struct sc_expect *e, const struct setup_v *s,
			const struct setup_v *other, const char *file, char *err)
{
	char path[300];
	char opath[300];
	char note[128];
	bool all = strcmp(e->phase, "*") == 0;
	size_t i;
	int rc;

	for (i = 0; i < (all ? sc->nphases : 1); i++) {
		const char *name = all ? sc->phases[i].name : e->phase;
		const cJSON *p = get_phase(s, name, file, path, sizeof(path), &rc, err);
		const cJSON *op = NULL;

		if (!rc && other)
			op = class_of(get_phase(other, name, file, opath, sizeof(opath), &rc, err),
				      e, opath, sizeof(opath));
		if (rc)
			return rc;
		if (!p) {
			rc = push_missing(r, src(e), s->name, name, "no such phase in the run") ?
				oom(err) : 0;
		} else if (!(p = class_of(p, e, path, sizeof(path)))) {
			if (e->cls)
				snprintf(note, sizeof(note), "no %s request in the run", e->cls);
			else
				snprintf(note, sizeof(note), "no request of stream %.64s in the run",
					 e->stream);
			rc = push_missing(r, src(e), s->name, name, note) ? oom(err) : 0;
		} else {
			rc = judge_expect(r, e, s, p, name, file, path, err);
			if (!rc && e->relative_to)
				rc = judge_relative(r, e, s, p, name, op, opath, file, path, err);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int evaluate_expects(struct gate_result *r, const struct scenario *sc,
			    const struct sc_expect *expects, size_t n, const cJSON *setups,
			    const char *file, char *err)
{
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		const struct sc_expect *e = &expects[i];
		const cJSON *ov = e->relative_to ?
			cJSON_GetObjectItemCaseSensitive(setups, e->relative_to) : NULL;
		struct setup_v other;
		const cJSON *v;
		bool matched = false;

		rc = ov ? get_setup(ov, file, &other, err) : 0;
		if (rc)
			return rc;
		cJSON_ArrayForEach(v, setups) {
			struct setup_v s;

			if (fnmatch(e->setup, v->string, 0) != 0)
				continue;
			matched = true;
			rc = get_setup(v, file, &s, err);
			if (!rc)
				rc = expect_setup(r, sc, e, &s, ov ? &other : NULL, file, err);
			if (rc)
				return rc;
		}
		if (!matched && push_missing(r, src(e), e->setup, e->phase,
					     "no such setup in the run"))
			return oom(err);
	}
	return 0;
}

/* The objective as an expectation of the setups matching pattern. */
static int evaluate_objective(struct gate_result *r, const struct scenario *sc,
			      const char *pattern, const cJSON *setups, const char *file,
			      char *err)
{
	struct sc_expect e;
	int rc;

	if (!sc->objective.given) {
		snprintf(err, CFG_ERR_LEN, "%.200s: objective: missing: the scenario states no "
			 "objective to gate on", sc->path ? sc->path : "scenario");
		return -EINVAL;
	}
	if (objective_expect(&sc->objective, pattern, &e))
		return oom(err);
	rc = evaluate_expects(r, sc, &e, 1, setups, file, err);
	objective_expect_free(&e);
	return rc;
}

/* ---- the baseline ---- */

static int get_tolerances(const cJSON *base, const char *file, struct tolerances *t,
			  char *err)
{
	const cJSON *tol = cJSON_GetObjectItemCaseSensitive(base, "tolerances");
	const cJSON *abs_tol;
	cJSON *empty = cJSON_CreateObject();
	int rc;

	if (!empty)
		return oom(err);
	rc = cfg_apply(tol_keys, NELEM(tol_keys), tol ? tol : empty, t, file, "tolerances",
		       err);
	if (rc)
		goto out;
	abs_tol = cJSON_GetObjectItemCaseSensitive(tol, "absolute");
	rc = cfg_apply(tol_abs_keys, NELEM(tol_abs_keys), abs_tol ? abs_tol : empty, t, file,
		       "tolerances.absolute", err);
out:
	cJSON_Delete(empty);
	return rc;
}

/* The rule of f applied to the baseline's b: c's op, bound, tolerance and note. */
static void base_bound(const struct base_figure *f, const struct tolerances *t,
		       const struct fig *b, struct gate_check *c)
{
	switch (f->rule) {
	case BASE_ABOVE:
		c->op = GATE_LE;
		c->bound = b->mean + t->error_rate;
		snprintf(c->note, sizeof(c->note), "baseline %.6g + %.6g", b->mean, t->error_rate);
		break;
	case BASE_BELOW:
		c->op = GATE_GE;
		c->bound = b->mean - t->answered_share;
		snprintf(c->note, sizeof(c->note), "baseline %.6g - %.6g", b->mean,
			 t->answered_share);
		break;
	case BASE_RELATIVE:
		c->op = GATE_LE;
		c->bound = b->mean * (1 + t->relative) + t->floor_ms;
		snprintf(c->note, sizeof(c->note), "baseline %.6g x %.6g + %.6g ms", b->mean,
			 1 + t->relative, t->floor_ms);
		break;
	case BASE_NEAR:
		c->op = GATE_NEAR;
		c->bound = b->mean;
		c->tolerance = t->fallback_share;
		snprintf(c->note, sizeof(c->note), "baseline %.6g +- %.6g", b->mean,
			 t->fallback_share);
		break;
	}
}

/* Prefixes c's note with what. */
static void note_prefix(struct gate_check *c, const char *what)
{
	char old[sizeof(c->note)];

	snprintf(old, sizeof(old), "%s", c->note);
	snprintf(c->note, sizeof(c->note), "%.40s; %.80s", what, old);
}

/* One setup's phase of the baseline against the run's. */
static int baseline_phase(struct gate_result *r, const struct tolerances *t,
			  const struct setup_v *bs, const cJSON *bp, const char *bpath,
			  const char *bfile, const struct setup_v *rs, const cJSON *rp,
			  const char *rpath, const char *rfile, const char *phase_name, char *err)
{
	size_t i;
	int rc;

	for (i = 0; i < NELEM(base_figures); i++) {
		const struct base_figure *f = &base_figures[i];
		struct gate_check c = { .source = "baseline", .figure = f->figure, .value = NAN };
		struct fig b;
		struct fig v;
		char what[64];

		rc = get_fig(bp, f->key, f->sub, bfile, bpath, &b, err);
		if (!rc)
			rc = get_fig(rp, f->key, f->sub, rfile, rpath, &v, err);
		if (rc)
			return rc;
		if (!b.has)
			continue;
		base_bound(f, t, &b, &c);
		if (!v.has) {
			note_prefix(&c, "no value");
		} else {
			c.value = v.mean;
			if (v.n < rs->runs && b.n >= bs->runs) {
				snprintf(what, sizeof(what), "no value in %.0f of %.0f runs",
					 rs->runs - v.n, rs->runs);
				note_prefix(&c, what);
			} else {
				c.pass = holds(c.op, c.value, c.bound, c.tolerance);
			}
		}
		rc = push(r, &c, rs->name, phase_name);
		if (rc)
			return oom(err);
	}
	return 0;
}

/* One setup of the baseline against the run's. */
static int baseline_setup(struct gate_result *r, const struct tolerances *t,
			  const struct setup_v *bs, const char *bfile, const struct setup_v *rs,
			  const char *rfile, char *err)
{
	char bpath[256];
	char rpath[256];
	const cJSON *p;
	int rc;

	cJSON_ArrayForEach(p, bs->phases) {
		const cJSON *bp = get_phase(bs, p->string, bfile, bpath, sizeof(bpath), &rc, err);
		const cJSON *rp;

		if (rc)
			return rc;
		rp = get_phase(rs, p->string, rfile, rpath, sizeof(rpath), &rc, err);
		if (rc)
			return rc;
		if (!rp)
			rc = push_missing(r, "baseline", rs->name, p->string,
					  "phase missing in the run") ? oom(err) : 0;
		else
			rc = baseline_phase(r, t, bs, bp, bpath, bfile, rs, rp, rpath, rfile,
					    p->string, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int evaluate_baseline(struct gate_result *r, const char *run_scenario, double run_scale,
			     const cJSON *run_setups, const char *rfile, const cJSON *base,
			     const char *bfile, char *err)
{
	const char *scenario;
	const cJSON *setups;
	const cJSON *v;
	struct tolerances t;
	double scale;
	int rc;

	rc = gate__check_head(base, bfile, &scenario, &scale, &setups, err);
	if (rc)
		return rc;
	if (strcmp(scenario, run_scenario) != 0)
		return cfg_error(err, bfile, NULL, "scenario", "expected the run's scenario "
				 "\"%.64s\", got \"%.64s\" (a baseline of another scenario)",
				 run_scenario, scenario);
	if (!same_scale(scale, run_scale))
		return cfg_error(err, bfile, NULL, "time_scale", "expected the run's time scale "
				 "%.10g, got %.10g (a baseline holds at the scale it was run at)",
				 run_scale, scale);
	rc = get_tolerances(base, bfile, &t, err);
	if (rc)
		return rc;
	cJSON_ArrayForEach(v, setups) {
		const cJSON *rv = cJSON_GetObjectItemCaseSensitive(run_setups, v->string);
		struct setup_v bs;
		struct setup_v rs;

		rc = get_setup(v, bfile, &bs, err);
		if (rc)
			return rc;
		if (!rv) {
			if (push_missing(r, "baseline", v->string, "-", "setup missing in the run"))
				return oom(err);
			continue;
		}
		rc = get_setup(rv, rfile, &rs, err);
		if (!rc)
			rc = baseline_setup(r, &t, &bs, bfile, &rs, rfile, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the verdicts as a whole ---- */

int gate__evaluate(const struct scenario *sc, const cJSON *summary, const char *sfile,
		   const char *objective_setups, const cJSON *baseline, const char *bfile,
		   struct gate_result *r, char *err)
{
	const char *scenario;
	const cJSON *setups;
	double scale;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = gate__check_head(summary, sfile, &scenario, &scale, &setups, err);
	if (!rc && !same_scale(scale, sc->scale))
		rc = cfg_error(err, sfile, NULL, "time_scale", "expected the time scale the "
			       "scenario was loaded with, %.10g, got %.10g", sc->scale, scale);
	if (!rc)
		rc = evaluate_expects(r, sc, sc->expects, sc->nexpects, setups, sfile, err);
	if (!rc && objective_setups)
		rc = evaluate_objective(r, sc, objective_setups, setups, sfile, err);
	if (!rc && baseline)
		rc = evaluate_baseline(r, scenario, scale, setups, sfile, baseline, bfile, err);
	if (rc)
		gate_result_free(r);
	return rc;
}

int gate_evaluate(const struct scenario *sc, const cJSON *summary, const cJSON *baseline,
		  struct gate_result *r, char *err)
{
	return gate__evaluate(sc, summary, "summary", NULL, baseline, "baseline", r, err);
}

void gate_result_free(struct gate_result *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		free(r->checks[i].setup);
		free(r->checks[i].phase);
	}
	free(r->checks);
	memset(r, 0, sizeof(*r));
}

/*
 * Checks that a summary can serve as a baseline, every setup and phase of
 * it, by comparing it with itself.
 */
int gate__check_as_baseline(const cJSON *summary, const char *file, char *err)
{
	struct gate_result r = { 0 };
	const char *scenario;
	const cJSON *setups;
	double scale;
	int rc;

	rc = gate__check_head(summary, file, &scenario, &scale, &setups, err);
	if (!rc)
		rc = evaluate_baseline(&r, scenario, scale, setups, file, summary, file, err);
	gate_result_free(&r);
	return rc;
}
