/*
 * compare: a real stamp's figures against a simulated one's, each
 * difference against its bound (rules in compare.h); the command, the
 * table and the JSON file are in compare_cmd.c.
 */
#include "runner/compare.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/json.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* A figure compared, and its allowance: max(rel × |real|, abs, floor_ms × scale). */
struct cmp_figure {
	const char *key;	/* member of the phase's CFIGURES */
	const char *sub;	/* member of that, or NULL */
	const char *figure;	/* as printed */
	double rel;
	double abs;
	double floor_ms;
	int attempts;		/* 1: a count of attempts; 2: attempts per request (floor: one attempt) */
};

static const struct cmp_figure cmp_figures[] = {
	{ "answered_share", NULL, "answered_share", 0, COMPARE_SHARE_ABS, 0, 0 },
	{ "latency_ms", "p50", "latency_ms.p50", COMPARE_RELATIVE, 0, COMPARE_LATENCY_FLOOR_MS, 0 },
	{ "latency_ms", "p95", "latency_ms.p95", COMPARE_RELATIVE, 0, COMPARE_LATENCY_FLOOR_MS, 0 },
	{ "attempts_per_request", NULL, "attempts_per_request", COMPARE_RELATIVE, 0, 0, 2 },
	{ "duplicate_work", "attempts", "duplicate_work.attempts", COMPARE_RELATIVE, 0, 0, 1 },
	{ "time_to_open_ms", NULL, "time_to_open_ms", COMPARE_RELATIVE, 0, COMPARE_OPEN_FLOOR_MS, 0 },
};

/* One side of a comparison: a stamp's summary file, for messages. */
struct side {
	const struct stamp *st;
	const char *file;
	const char *who;	/* "the real run" or "the sim" */
};

static int oom(char *err)
{
	snprintf(err, CFG_ERR_LEN, "out of memory");
	return -ENOMEM;
}

/* Appends a row (copying setup and phase) to r. */
static int push(struct compare_result *r, const struct compare_row *row, const char *setup,
		const char *phase)
{
	struct compare_row k = *row;

	if (buf_grow_array((void **)&r->rows, &r->cap, r->n + 1, sizeof(*r->rows)))
		return -ENOMEM;
	k.setup = strdup(setup);
	k.phase = strdup(phase);
	if (!k.setup || !k.phase) {
		free(k.setup);
		free(k.phase);
		return -ENOMEM;
	}
	r->rows[r->n++] = k;
	if (!k.pass)
		r->failed++;
	return 0;
}

/* A failed row for a setup or phase one stamp lacks. */
static int push_missing(struct compare_result *r, const char *setup, const char *phase,
			const struct side *lacking)
{
	struct compare_row row = {
		.figure = "-", .real = NAN, .sim = NAN, .diff = NAN, .allowed = NAN,
	};

	snprintf(row.note, sizeof(row.note), "%s missing in %s",
		 strcmp(phase, "-") == 0 ? "setup" : "phase", lacking->who);
	return push(r, &row, setup, phase);
}

/* ---- reading the summaries ---- */

/*
 * The mean of a phase's figure key (key.sub when sub is not NULL): a
 * combined figure {"mean", …}, or null or absent (NAN).
 */
static int read_mean(const cJSON *phase, const struct cmp_figure *f, const char *file,
		     const char *path, double *out, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(phase, f->key);
	const cJSON *m;
	char where[300];
	char got[96];

	*out = NAN;
	snprintf(where, sizeof(where), "%.200s.%.64s", path, f->figure);
	if (f->sub && v && !cJSON_IsNull(v)) {
		if (!cJSON_IsObject(v)) {
			cfg_describe(v, got, sizeof(got));
			return cfg_error(err, file, path, f->key, "expected an object or null, "
					 "got %s", got);
		}
		v = cJSON_GetObjectItemCaseSensitive(v, f->sub);
	}
	if (!v || cJSON_IsNull(v))
		return 0;
	m = cJSON_GetObjectItemCaseSensitive(v, "mean");
	if (!cJSON_IsObject(v) || !cJSON_IsNumber(m) || !isfinite(m->valuedouble)) {
		cfg_describe(v, got, sizeof(got));
		return cfg_error(err, file, where, NULL, "expected a combined figure {\"mean\", "
				 "\"stddev\", \"min\", \"max\", \"n\"} or null, got %s", got);
	}
	*out = m->valuedouble;
	return 0;
}

/* A setup's "phases" object, or an error naming it. */
static int get_phases(const struct side *s, const cJSON *setup, const cJSON **phases,
		      char *err)
{
	char path[200];
	char got[96];

	snprintf(path, sizeof(path), "setups.%.120s", setup->string);
	*phases = cJSON_GetObjectItemCaseSensitive(setup, "phases");
	if (!cJSON_IsObject(*phases)) {
		cfg_describe(*phases, got, sizeof(got));
		return cfg_error(err, s->file, path, "phases", "expected an object of phases, "
				 "got %s", got);
	}
	return 0;
}

/* ---- the figures ---- */

static bool within(double diff, double allowed, double real)
{
	return fabs(diff) <= allowed + 1e-9 * fmax(1, fabs(real));
}

/* The allowance of f for real at scale, and which term gave it, in note. */
static double allowance(const struct cmp_figure *f, double real, double scale,
			double requests, char *note, size_t len)
{
	double rel = f->rel * fabs(real);
	double floor = f->floor_ms * scale;
	double one = f->attempts == 1 ? 1 : f->attempts == 2 && requests > 0 ? 1 / requests : 0;

	if (f->abs > 0) {
		snprintf(note, len, "%g pp", f->abs * 100);
		return f->abs;
	}
	if (one > rel) {
		/* Under 20 attempts 5% is less than one: a count cannot come closer than that. */
		snprintf(note, len, "1 attempt%s", f->attempts == 2 ? " (per request)" : "");
		return one;
	}
	if (f->floor_ms > 0 && floor > rel) {
		snprintf(note, len, "%g ms x %g", f->floor_ms, scale);
		return floor;
	}
	snprintf(note, len, "%g%% of real", f->rel * 100);
	return rel;
}

/* Every figure of one phase both stamps have. */
static int compare_phase(struct compare_result *r, const struct side *real,
			 const struct side *sim, const char *setup, const cJSON *rp,
			 const cJSON *sp, const char *phase, char *err)
{
	static const struct cmp_figure answered = { "latency_ms", "count", "latency_ms.count", 0,
						     0, 0, 0 };
	static const struct cmp_figure requests = { "requests", NULL, "requests", 0, 0, 0, 0 };
	char rpath[300];
	double rn = NAN;	/* answered requests (latency_ms.count), NAN when not given */
	double sn = NAN;
	double nreq = NAN;	/* the real phase's requests */
	size_t i;
	int rc;

	snprintf(rpath, sizeof(rpath), "setups.%.120s.phases.%.120s", setup, phase);
	rc = read_mean(rp, &answered, real->file, rpath, &rn, err);
	if (!rc)
		rc = read_mean(sp, &answered, sim->file, rpath, &sn, err);
	if (!rc)
		rc = read_mean(rp, &requests, real->file, rpath, &nreq, err);
	if (rc)
		return rc;
	for (i = 0; i < NELEM(cmp_figures); i++) {
		const struct cmp_figure *f = &cmp_figures[i];
		struct compare_row row = { .figure = f->figure, .diff = NAN, .allowed = NAN };

		/* Too few answers for percentiles (compare.h); a count not given: compared. */
		if (strcmp(f->key, "latency_ms") == 0 && (rn < COMPARE_MIN_ANSWERED ||
							  sn < COMPARE_MIN_ANSWERED))
			continue;
		rc = read_mean(rp, f, real->file, rpath, &row.real, err);
		if (!rc)
			rc = read_mean(sp, f, sim->file, rpath, &row.sim, err);
		if (rc)
			return rc;
		if (isnan(row.real) && isnan(row.sim))
			continue;
		if (isnan(row.real) || isnan(row.sim)) {
			snprintf(row.note, sizeof(row.note), "no value in %s",
				 isnan(row.sim) ? sim->who : real->who);
		} else {
			row.diff = row.sim - row.real;
			row.allowed = allowance(f, row.real, real->st->scale, nreq, row.note,
						sizeof(row.note));
			row.pass = within(row.diff, row.allowed, row.real);
		}
		if (push(r, &row, setup, phase))
			return oom(err);
	}
	return 0;
}

/* ---- breaker transitions ---- */

/*
 * The first run's events of a setup: breaker_transitions[0] (absent, or
 * an empty list of runs: none), each checked to have provider, from and to.
 */
static int first_run_events(const struct side *s, const cJSON *setup, const cJSON **events,
			    char *err)
{
	const cJSON *bt = cJSON_GetObjectItemCaseSensitive(setup, "breaker_transitions");
	const cJSON *e;
	char path[300];
	char got[96];
	int k = 0;

	*events = NULL;
	snprintf(path, sizeof(path), "setups.%.120s", setup->string);
	if (!bt)
		return 0;
	if (!cJSON_IsArray(bt) || (bt->child && !cJSON_IsArray(bt->child))) {
		cfg_describe(bt, got, sizeof(got));
		return cfg_error(err, s->file, path, "breaker_transitions", "expected a list per "
				 "run of event lists ([[{\"provider\", \"from\", \"to\", …}, …], …]), "
				 "got %s", got);
	}
	*events = bt->child;
	snprintf(path, sizeof(path), "setups.%.120s.breaker_transitions[0]", setup->string);
	cJSON_ArrayForEach(e, *events) {
		if (!json_get_string(e, "provider") || !json_get_string(e, "from") ||
		    !json_get_string(e, "to")) {
			cfg_describe(e, got, sizeof(got));
			return cfg_error(err, s->file, path, NULL, "event %d: expected an object with "
					 "provider, from and to (strings), got %s", k, got);
		}
		k++;
	}
	return 0;
}

static bool same_event(const cJSON *a, const cJSON *b)
{
	static const char *const keys[] = { "provider", "from", "to" };
	size_t i;

	for (i = 0; i < NELEM(keys); i++) {
		if (strcmp(json_get_string(a, keys[i]), json_get_string(b, keys[i])) != 0)
			return false;
	}
	return true;
}

/* "primary closed->open", or "nothing" for no event. */
static void event_text(const cJSON *e, char *out, size_t len)
{
	if (!e)
		snprintf(out, len, "nothing");
	else
		snprintf(out, len, "%.40s %.10s->%.10s", json_get_string(e, "provider"),
			 json_get_string(e, "from"), json_get_string(e, "to"));
}

/* The transitions row of a setup both stamps have. */
static int compare_transitions(struct compare_result *r, const struct side *real,
			       const struct side *sim, const cJSON *rs, const cJSON *ss,
			       char *err)
{
	struct compare_row row = {
		.figure = "breaker_transitions", .diff = NAN, .allowed = NAN, .pass = true,
	};
	const cJSON *re;
	const cJSON *se;
	const cJSON *a;
	const cJSON *b;
	char ta[80];
	char tb[80];
	int k = 1;
	int rc;

	rc = first_run_events(real, rs, &re, err);
	if (!rc)
		rc = first_run_events(sim, ss, &se, err);
	if (rc)
		return rc;
	row.real = re ? cJSON_GetArraySize(re) : 0;
	row.sim = se ? cJSON_GetArraySize(se) : 0;
	if (row.real == 0 && row.sim == 0)
		return 0;
	a = re ? re->child : NULL;
	b = se ? se->child : NULL;
	while (a && b && same_event(a, b)) {
		a = a->next;
		b = b->next;
		k++;
	}
	if (a || b) {
		row.pass = false;
		event_text(a, ta, sizeof(ta));
		event_text(b, tb, sizeof(tb));
		snprintf(row.note, sizeof(row.note), "run 1, event %d: real %.64s, sim %.64s", k, ta, tb);
	} else {
		snprintf(row.note, sizeof(row.note), "run 1: same sequence");
	}
	return push(r, &row, rs->string, "-") ? oom(err) : 0;
}

/* ---- setups ---- */

/* Every phase (real's order, then the sim's others) and the transitions of a setup. */
static int compare_setup(struct compare_result *r, const struct side *real,
			 const struct side *sim, const cJSON *rs, const cJSON *ss, char *err)
{
	const cJSON *rph;
	const cJSON *sph;
	const cJSON *p;
	int rc;

	rc = get_phases(real, rs, &rph, err);
	if (!rc)
		rc = get_phases(sim, ss, &sph, err);
	if (rc)
		return rc;
	cJSON_ArrayForEach(p, rph) {
		const cJSON *q = cJSON_GetObjectItemCaseSensitive(sph, p->string);

		if (!q)
			rc = push_missing(r, rs->string, p->string, sim) ? oom(err) : 0;
		else
			rc = compare_phase(r, real, sim, rs->string, p, q, p->string, err);
		if (rc)
			return rc;
	}
	cJSON_ArrayForEach(p, sph) {
		if (!cJSON_GetObjectItemCaseSensitive(rph, p->string) &&
		    push_missing(r, rs->string, p->string, real))
			return oom(err);
	}
	return compare_transitions(r, real, sim, rs, ss, err);
}

/* One setup by name: compared, or a missing row. */
static int compare_named(struct compare_result *r, const struct side *real,
			 const struct side *sim, const char *name, char *err)
{
	const cJSON *rs = cJSON_GetObjectItemCaseSensitive(real->st->setups, name);
	const cJSON *ss = cJSON_GetObjectItemCaseSensitive(sim->st->setups, name);

	if (rs && ss)
		return compare_setup(r, real, sim, rs, ss, err);
	return push_missing(r, name, "-", rs ? sim : real) ? oom(err) : 0;
}

/* The stamps are of one scenario and one time scale. */
static int check_same_run(const struct side *real, const struct side *sim, char *err)
{
	const struct stamp *a = real->st;
	const struct stamp *b = sim->st;
	double sa = a->scale;
	double sb = b->scale;

	if (strcmp(a->name, b->name) != 0)
		return cfg_error(err, sim->file, NULL, "scenario", "expected the real run's "
				 "scenario \"%.64s\" (%.200s), got \"%.64s\"", a->name, real->file,
				 b->name);
	if (a->sc && b->sc && strcmp(a->sc->name, b->sc->name) != 0)
		return cfg_error(err, sim->st->dir, NULL, "scenario.json", "expected the real "
				 "run's scenario \"%.64s\", got \"%.64s\"", a->sc->name, b->sc->name);
	if (fabs(sa - sb) > 1e-9 * fmax(sa, sb))
		return cfg_error(err, sim->file, NULL, "time_scale", "expected the real run's "
				 "time scale %.10g (%.200s), got %.10g: compare stamps run at one "
				 "scale", sa, real->file, sb);
	return 0;
}

int compare_evaluate(const struct stamp *real, const struct stamp *sim, const char *only_setup,
		     struct compare_result *r, char *err)
{
	struct side rs = { real, real->summary_path, "the real run" };
	struct side ss = { sim, sim->summary_path, "the sim" };
	const cJSON *v;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = check_same_run(&rs, &ss, err);
	if (rc)
		return rc;
	if (only_setup) {
		if (!cJSON_GetObjectItemCaseSensitive(real->setups, only_setup) &&
		    !cJSON_GetObjectItemCaseSensitive(sim->setups, only_setup))
			return cfg_error(err, rs.file, NULL, "setups", "--setup: expected a setup "
					 "called \"%.64s\" in it or in %.200s, found none",
					 only_setup, ss.file);
		rc = compare_named(r, &rs, &ss, only_setup, err);
		goto out;
	}
	cJSON_ArrayForEach(v, real->setups) {
		rc = compare_named(r, &rs, &ss, v->string, err);
		if (rc)
			goto out;
	}
	cJSON_ArrayForEach(v, sim->setups) {
		if (cJSON_GetObjectItemCaseSensitive(real->setups, v->string))
			continue;
		rc = compare_named(r, &rs, &ss, v->string, err);
		if (rc)
			goto out;
	}
out:
	if (rc)
		compare_result_free(r);
	return rc;
}

void compare_result_free(struct compare_result *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		free(r->rows[i].setup);
		free(r->rows[i].phase);
	}
	free(r->rows);
	memset(r, 0, sizeof(*r));
}
