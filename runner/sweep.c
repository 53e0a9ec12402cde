/*
 * sweep: a scenario over a grid of values, each point a whole chaos run in
 * its own folder; the plan and the points' statuses in sweep.json, the
 * figures in sweep.csv, both rewritten after every point; resume; and
 * chaos report / chaos gate over a sweep folder.
 */
#include "runner/sweep.h"
#include "runner/stamp.h"
#include "runner/sweep_verdict.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/clock.h"
#include "common/json.h"
#include "runner/gate.h"
#include "runner/outfile.h"
#include "runner/report.h"
#include "runner/run.h"
#include "runner/scenario.h"

static const char *const status_names[] = { "pending", "done", "failed" };

/* The signal that asked the sweep to stop between points; 0: none. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

/* SIGINT, SIGTERM and SIGHUP between points (chaos_run has its own while it runs). */
static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Whether dir is a sweep folder (sweep.h). */
bool sweep_is_dir(const char *dir)
{
	char *path = buf_aprintf("%s/%s", dir, SWEEP_FILE);
	bool yes = path && exists(path);

	free(path);
	return yes;
}

/* Frees the sweep (sweep.h). */
void sweep_free(struct sweep *s)
{
	size_t i;

	for (i = 0; s->dirs && i < s->plan.npoints; i++)
		free(s->dirs[i]);
	free(s->dirs);
	for (i = 0; s->csv_rows && i < s->plan.npoints; i++)
		free(s->csv_rows[i]);
	free(s->csv_rows);
	free(s->status);
	free(s->elapsed_s);
	vary_plan_free(&s->plan);
	cJSON_Delete(s->base);
	cJSON_Delete(s->knee);
	cJSON_Delete(s->best);
	free(s->dir);
	free(s->name);
	free(s->scenario_file);
	free(s->only_setup);
	memset(s, 0, sizeof(*s));
}

/* The points' folder names and statuses (all pending), once the plan is whole. */
static int make_points(struct sweep *s, char *err)
{
	size_t n = s->plan.npoints;
	size_t i;

	s->dirs = calloc(n, sizeof(*s->dirs));
	s->status = calloc(n, sizeof(*s->status));
	s->elapsed_s = calloc(n, sizeof(*s->elapsed_s));
	if (!s->dirs || !s->status || !s->elapsed_s)
		goto out_oom;
	for (i = 0; i < n; i++) {
		s->dirs[i] = vary_dir_name(&s->plan, i);
		s->status[i] = SWEEP_PENDING;
		s->elapsed_s[i] = NAN;
		if (!s->dirs[i])
			goto out_oom;
	}
	return 0;
out_oom:
	snprintf(err, CFG_ERR_LEN, "out of memory");
	return -ENOMEM;
}

/* ---- sweep.json ---- */

/* The sweep as sweep.json holds it: the plan, then every point's status. */
static cJSON *plan_json(const struct sweep *s)
{
	cJSON *top = cJSON_CreateObject();
	cJSON *vary = cJSON_CreateArray();
	cJSON *points = cJSON_CreateArray();
	bool ok = top && vary && points;
	size_t i;
	size_t j;

	ok = ok && json_put(top, "scenario", cJSON_CreateString(s->name));
	ok = ok && json_put(top, "scenario_file", cJSON_CreateString(s->scenario_file));
	ok = ok && json_put(top, "time_scale", cJSON_CreateNumber(s->scale));
	ok = ok && json_put(top, "repeat", cJSON_CreateNumber(s->repeat));
	if (s->sim)
		ok = ok && json_put(top, "sim", cJSON_CreateTrue());
	ok = ok && json_put(top, "setup", s->only_setup ? cJSON_CreateString(s->only_setup) :
			    cJSON_CreateNull());
	for (j = 0; j < s->plan.n && ok; j++) {
		cJSON *v = cJSON_CreateObject();

		ok = v && cJSON_AddItemToArray(vary, v);
		ok = ok && json_put(v, "path", cJSON_CreateString(s->plan.v[j].path));
		ok = ok && json_put(v, "values", cJSON_Duplicate(s->plan.v[j].values, true));
	}
	for (i = 0; i < s->plan.npoints && ok; i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON *values = cJSON_CreateObject();

		ok = p && cJSON_AddItemToArray(points, p);
		ok = ok && json_put(p, "index", cJSON_CreateNumber((double)(i + 1)));
		ok = ok && json_put(p, "dir", cJSON_CreateString(s->dirs[i]));
		for (j = 0; j < s->plan.n && ok && values; j++)
			ok = json_put(values, s->plan.v[j].path,
				      cJSON_Duplicate(vary_value(&s->plan, i, j), true));
		ok = ok && json_put(p, "values", values);
		values = NULL;
		ok = ok && json_put(p, "status", cJSON_CreateString(status_names[s->status[i]]));
		if (ok && !isnan(s->elapsed_s[i]))
			ok = json_put(p, "elapsed_s", cJSON_CreateNumber(s->elapsed_s[i]));
		cJSON_Delete(values);
	}
	ok = ok && json_put(top, "vary", vary);
	vary = NULL;
	ok = ok && json_put(top, "points", points);
	points = NULL;
	if (ok && s->knee)
		ok = json_put(top, "knee", cJSON_Duplicate(s->knee, true));
	if (ok && s->best)
		ok = json_put(top, "best", cJSON_Duplicate(s->best, true));
	cJSON_Delete(vary);
	cJSON_Delete(points);
	if (!ok) {
		cJSON_Delete(top);
		return NULL;
	}
	return top;
}

/* Writes DIR/sweep.json (through sweep.json.tmp). Returns 0 or -errno with err. */
static int save_plan(const struct sweep *s, char *err)
{
	cJSON *top = plan_json(s);
	char *path = buf_aprintf("%s/%s", s->dir, SWEEP_FILE);
	int rc = -ENOMEM;

	if (top && path)
		rc = outfile_write_json(path, top, err, CFG_ERR_LEN);
	else
		snprintf(err, CFG_ERR_LEN, "cannot write %.200s/%s: out of memory", s->dir,
			 SWEEP_FILE);
	free(path);
	cJSON_Delete(top);
	return rc;
}

/* A sweep.json member that must be there, of the kind check says. */
static const cJSON *member(const cJSON *top, const char *key, cJSON_bool (*check)(const cJSON *),
			   const char *what, const char *file, char *err, int *rc)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(top, key);

	if (*rc)
		return NULL;
	if (!check(v)) {
		snprintf(err, CFG_ERR_LEN, "%.200s: %s: expected %s", file, key, what);
		*rc = -EINVAL;
		return NULL;
	}
	return v;
}

/* The points' statuses as sweep.json says, checked against the plan's folders. */
static int load_points(struct sweep *s, const cJSON *points, const char *file, char *err)
{
	const cJSON *p;
	size_t i = 0;
	size_t k;

	if (cJSON_GetArraySize(points) != (int)s->plan.npoints) {
		snprintf(err, CFG_ERR_LEN, "%.200s: points: expected the %zu points of its vary, "
			 "got %d", file, s->plan.npoints, cJSON_GetArraySize(points));
		return -EINVAL;
	}
	cJSON_ArrayForEach(p, points) {
		const char *d = json_get_string(p, "dir");
		const char *st = json_get_string(p, "status");
		const cJSON *el = cJSON_GetObjectItemCaseSensitive(p, "elapsed_s");

		if (!d || strcmp(d, s->dirs[i]) != 0) {
			snprintf(err, CFG_ERR_LEN, "%.200s: points[%zu].dir: expected \"%s\" (from its "
				 "vary), got %s%.100s%s", file, i, s->dirs[i], d ? "\"" : "",
				 d ? d : "none", d ? "\"" : "");
			return -EINVAL;
		}
		for (k = 0; st && k < 3 && strcmp(st, status_names[k]); k++)
			;
		if (!st || k == 3) {
			snprintf(err, CFG_ERR_LEN, "%.200s: points[%zu].status: expected pending, "
				 "done or failed", file, i);
			return -EINVAL;
		}
		s->status[i] = (enum sweep_status)k;
		if (cJSON_IsNumber(el))
			s->elapsed_s[i] = el->valuedouble;
		i++;
	}
	return 0;
}

/* Loads a sweep folder (sweep.h). */
int sweep_load(struct sweep *s, const char *dir, char *err)
{
	char *file = buf_aprintf("%s/%s", dir, SWEEP_FILE);
	char *scpath = buf_aprintf("%s/scenario.json", dir);
	cJSON *top = NULL;
	const cJSON *vary;
	const cJSON *points;
	const cJSON *v;
	const cJSON *setup;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	s->dir = strdup(dir);
	if (!file || !scpath || !s->dir) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	top = json_load_file(file, err, CFG_ERR_LEN);
	if (!top) {
		rc = exists(file) ? -EINVAL : -ENOENT;
		goto out;
	}
	v = member(top, "scenario", cJSON_IsString, "the scenario's name", file, err, &rc);
	if (v)
		s->name = strdup(v->valuestring);
	v = member(top, "scenario_file", cJSON_IsString, "a path", file, err, &rc);
	if (v)
		s->scenario_file = strdup(v->valuestring);
	v = member(top, "time_scale", cJSON_IsNumber, "a number", file, err, &rc);
	if (v)
		s->scale = v->valuedouble;
	if (!rc && !(s->scale > 0 && s->scale <= SC_SCALE_MAX)) {
		snprintf(err, CFG_ERR_LEN, "%.200s: time_scale: expected a number above 0 and at "
			 "most %g", file, SC_SCALE_MAX);
		rc = -EINVAL;
	}
	v = member(top, "repeat", cJSON_IsNumber, "a whole number from 1 to 100", file, err, &rc);
	if (v && (v->valuedouble < 1 || v->valuedouble > 100 ||
		  v->valuedouble != floor(v->valuedouble))) {
		snprintf(err, CFG_ERR_LEN, "%.200s: repeat: expected a whole number from 1 to 100",
			 file);
		rc = -EINVAL;
	}
	if (v && !rc)
		s->repeat = (unsigned)v->valuedouble;
	v = cJSON_GetObjectItemCaseSensitive(top, "sim");
	if (!rc && v && !cJSON_IsBool(v)) {
		snprintf(err, CFG_ERR_LEN, "%.200s: sim: expected true or false", file);
		rc = -EINVAL;
	}
	s->sim = cJSON_IsTrue(v);
	setup = cJSON_GetObjectItemCaseSensitive(top, "setup");
	if (!rc && setup && !cJSON_IsNull(setup) && !cJSON_IsString(setup)) {
		snprintf(err, CFG_ERR_LEN, "%.200s: setup: expected a setup's name or null", file);
		rc = -EINVAL;
	}
	if (!rc && cJSON_IsString(setup))
		s->only_setup = strdup(setup->valuestring);
	vary = member(top, "vary", cJSON_IsArray, "an array of {path, values}", file, err, &rc);
	points = member(top, "points", cJSON_IsArray, "an array of points", file, err, &rc);
	if (rc)
		goto out;
	if (!s->name || !s->scenario_file || (cJSON_IsString(setup) && !s->only_setup)) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	s->base = json_load_file(scpath, err, CFG_ERR_LEN);
	if (!s->base) {
		rc = exists(scpath) ? -EINVAL : -ENOENT;
		goto out;
	}
	cJSON_ArrayForEach(v, vary) {
		char msg[CFG_ERR_LEN];

		rc = vary_add_json(&s->plan, s->base, v, msg, sizeof(msg));
		if (rc) {
			snprintf(err, CFG_ERR_LEN, "%.100s: vary: %.380s", file, msg);
			goto out;
		}
	}
	if (s->plan.n == 0) {
		snprintf(err, CFG_ERR_LEN, "%.200s: vary: expected at least one varied path", file);
		rc = -EINVAL;
		goto out;
	}
	rc = make_points(s, err);
	if (!rc)
		rc = load_points(s, points, file, err);
out:
	cJSON_Delete(top);
	free(scpath);
	free(file);
	return rc;
}

/* ---- planning ---- */

/*
 * Loads every point's scenario as chaos run would (scenario_load_json at
 * the sweep's scale), so a value the loader refuses stops the sweep before
 * anything runs. Returns 0, or -EINVAL with err naming the point.
 */
static int check_points(const struct sweep *s, const char *only_setup, char *err)
{
	char msg[CFG_ERR_LEN];
	size_t i;
	size_t k;
	int rc = 0;

	for (i = 0; i < s->plan.npoints && !rc; i++) {
		char *label = vary_label(&s->plan, i);
		cJSON *doc = vary_scenario(&s->plan, s->base, i, msg, sizeof(msg));
		struct scenario sc;

		if (!label || !doc) {
			snprintf(err, CFG_ERR_LEN, "out of memory");
			rc = -ENOMEM;
		} else if (scenario_load_json(doc, s->scenario_file, s->scale, &sc, msg)) {
			snprintf(err, CFG_ERR_LEN, "point %zu (%.100s): %.380s", i + 1, label, msg);
			rc = -EINVAL;
		} else {
			for (k = 0; only_setup && k < sc.nsetups &&
				    strcmp(sc.setups[k].name, only_setup); k++)
				;
			if (only_setup && k == sc.nsetups) {
				snprintf(err, CFG_ERR_LEN, "--setup: point %zu (%.200s) has no setup "
					 "called \"%.64s\"", i + 1, label, only_setup);
				rc = -EINVAL;
			}
			if (!rc && s->sim && scenario_sim_check(&sc, only_setup, msg)) {
				snprintf(err, CFG_ERR_LEN, "--sim: point %zu (%.60s): %.380s", i + 1,
					 label, msg);
				rc = -EINVAL;
			}
			scenario_free(&sc);
		}
		cJSON_Delete(doc);
		free(label);
	}
	return rc;
}

/* Makes OUT/NAME/STAMP-sweep (STAMP-sweep-2… when taken) into s->dir. */
static int make_sweep_dir(struct sweep *s, const char *out_dir)
{
	return stamp_make_new(out_dir, s->name, "-sweep", &s->dir);
}

/* A new sweep's plan: the scenario, the scale, the grid. Returns an exit status. */
static int plan_new(struct sweep *s, const struct sweep_opts *o)
{
	char err[CFG_ERR_LEN];
	struct scenario sc;
	size_t i;

	memset(s, 0, sizeof(*s));
	s->scale = o->scale;
	s->repeat = o->repeat;
	s->sim = o->sim;
	if (o->ci_scale && scenario_ci_scale(o->scenario_path, &s->scale, err))
		goto out_bad;
	if (scenario_load(o->scenario_path, s->scale, &sc, err))
		goto out_bad;
	s->name = strdup(sc.name);
	scenario_free(&sc);
	s->scenario_file = strdup(o->scenario_path);
	s->only_setup = o->only_setup ? strdup(o->only_setup) : NULL;
	s->base = json_load_file(o->scenario_path, err, sizeof(err));
	if (!s->base)
		goto out_bad;
	/* The copies are not called by the scenario's file name: they say theirs. */
	if (!s->name || !s->scenario_file || (o->only_setup && !s->only_setup) ||
	    (!cJSON_GetObjectItemCaseSensitive(s->base, "name") &&
	     !cJSON_AddStringToObject(s->base, "name", s->name))) {
		fprintf(stderr, "chaos: out of memory\n");
		return 1;
	}
	for (i = 0; i < o->nvary; i++) {
		if (vary_add(&s->plan, s->base, o->vary[i], err, sizeof(err)))
			goto out_bad;
	}
	if (make_points(s, err) || check_points(s, o->only_setup, err))
		goto out_bad;
	return 0;
out_bad:
	fprintf(stderr, "chaos: sweep: %s\n", err);
	return 2;
}

/* ---- running ---- */

/*
 * A point's folder left without a summary (a killed sweep, a failed
 * point) is moved aside to POINT.partial-N before it runs again.
 */
static int move_aside(const struct sweep *s, size_t i, char *err)
{
	char *from = buf_aprintf("%s/%s", s->dir, s->dirs[i]);
	char *to = NULL;
	int n;
	int rc = 0;

	if (!from)
		goto out_oom;
	if (!exists(from))
		goto out;
	for (n = 1; n < 1000; n++) {
		free(to);
		to = buf_aprintf("%s.partial-%d", from, n);
		if (!to)
			goto out_oom;
		if (!exists(to))
			break;
	}
	if (rename(from, to)) {
		rc = -errno;
		snprintf(err, CFG_ERR_LEN, "cannot move %.200s aside to %.200s: %s", from, to,
			 strerror(-rc));
	}
	goto out;
out_oom:
	snprintf(err, CFG_ERR_LEN, "out of memory");
	rc = -ENOMEM;
out:
	free(to);
	free(from);
	return rc;
}

/* Whether point i has its stamp's summary.json. */
static bool point_has_summary(const struct sweep *s, size_t i)
{
	char *path = buf_aprintf("%s/%s/summary.json", s->dir, s->dirs[i]);
	bool yes = path && exists(path);

	free(path);
	return yes;
}

/* How long point i should take: the last points' mean, or the scenario's scaled length. */
static double point_estimate_s(const struct sweep *s, const struct scenario *sc, double done_s,
			       size_t ndone)
{
	size_t setups = s->only_setup ? 1 : sc->nsetups;

	if (ndone)
		return done_s / (double)ndone;
	return (double)(setups * s->repeat) * (sc->duration_ms + CHAOS_LEAD_MS + 1000) / 1000;
}

/* "1h02m", "3m05s", "42s": a duration for the progress line, into out. */
static void say_duration(double s, char *out, size_t len)
{
	long t = lround(s);

	if (t >= 3600)
		snprintf(out, len, "%ldh%02ldm", t / 3600, t / 60 % 60);
	else if (t >= 60)
		snprintf(out, len, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(out, len, "%lds", t);
}

/* A point about to run: the sweep, its index, and its scenario once loaded. */
struct point_run {
	const struct sweep *s;
	size_t i;
	struct scenario sc;		/* the point's, loaded from its scenario.json */
};

/*
 * Writes point i's scenario into its folder and loads it from there (so
 * the stamp's scenario.json is the point's, as chaos run copies it).
 * Returns 0, or 1 with the reason on stderr.
 */
static int prepare_point(struct point_run *pr)
{
	const struct sweep *s = pr->s;
	char err[CFG_ERR_LEN];
	char *dir = buf_aprintf("%s/%s", s->dir, s->dirs[pr->i]);
	char *path = buf_aprintf("%s/%s/scenario.json", s->dir, s->dirs[pr->i]);
	cJSON *doc = vary_scenario(&s->plan, s->base, pr->i, err, sizeof(err));
	int rc = 1;

	memset(&pr->sc, 0, sizeof(pr->sc));
	if (!dir || !path || !doc) {
		fprintf(stderr, "chaos: sweep: point %zu: out of memory\n", pr->i + 1);
		goto out;
	}
	rc = stamp_mkdir_p(dir);
	if (rc) {
		fprintf(stderr, "chaos: sweep: cannot make %s: %s\n", dir, strerror(-rc));
		rc = 1;
		goto out;
	}
	rc = 1;
	if (outfile_write_json(path, doc, err, sizeof(err))) {
		fprintf(stderr, "chaos: sweep: %s\n", err);
		goto out;
	}
	if (scenario_load(path, s->scale, &pr->sc, err)) {
		fprintf(stderr, "chaos: sweep: %s\n", err);
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(doc);
	free(path);
	free(dir);
	return rc;
}

/* Runs point i into its folder. Returns chaos_run's exit status (1 when it could not start). */
static int run_point(const struct sweep *s, const struct sweep_opts *o, size_t i)
{
	struct point_run pr = { .s = s, .i = i };
	/*
	 * A simulated point takes milliseconds, and gnuplot a good part of a
	 * second: its own plots are left to `chaos plot POINT` (the sweep's
	 * are drawn at the end either way).
	 */
	struct chaos_opts co = { .out_dir = o->out_dir, .bin_dir = o->bin_dir,
				 .plots_dir = s->sim ? NULL : o->plots_dir,
				 .only_setup = s->only_setup, .repeat = s->repeat,
				 .verbose = !o->quiet && !s->sim, .no_table = true, .sim = s->sim };
	char *dir = buf_aprintf("%s/%s", s->dir, s->dirs[i]);
	sigset_t stops;
	int rc = 1;

	if (!dir) {
		fprintf(stderr, "chaos: sweep: out of memory\n");
		return 1;
	}
	co.stamp_dir = dir;
	co.hold_signals = true;
	/* A signal before the run: it stays pending (chaos_run answers those that come later). */
	if (prepare_point(&pr) == 0)
		rc = stop_signal ? 128 + stop_signal : chaos_run(&pr.sc, &co);
	/*
	 * chaos_run's libuv signal handlers are gone, and it left the three
	 * blocked (one that came once the point's results were whole pending):
	 * the sweep's own handlers take over, then take what is pending.
	 */
	catch_signals();
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_UNBLOCK, &stops, NULL);
	scenario_free(&pr.sc);
	free(dir);
	return rc;
}

/* The run of every point not done, with progress. Returns the exit status. */
static int run_points(struct sweep *s, const struct sweep_opts *o)
{
	char err[CFG_ERR_LEN];
	char took[32];
	char left[32];
	char so_far[32];
	struct scenario probe;
	cJSON *doc;
	uint64_t start = clock_mono_ns();
	double done_s = 0;
	size_t ndone = 0;
	size_t todo = 0;
	size_t i;
	int status = 0;
	int rc;

	for (i = 0; i < s->plan.npoints; i++)
		todo += s->status[i] != SWEEP_DONE;
	/* The first point's scenario, for the first estimate; checked already. */
	doc = vary_scenario(&s->plan, s->base, 0, err, sizeof(err));
	rc = doc ? scenario_load_json(doc, s->scenario_file, s->scale, &probe, err) : -ENOMEM;
	cJSON_Delete(doc);
	if (rc) {
		fprintf(stderr, "chaos: sweep: %s\n", rc == -ENOMEM ? "out of memory" : err);
		return 1;
	}
	for (i = 0; i < s->plan.npoints && !stop_signal; i++) {
		uint64_t t = clock_mono_ns();
		char *label;

		if (s->status[i] == SWEEP_DONE)
			continue;
		label = vary_label(&s->plan, i);
		say_duration((double)(t - start) / 1e9, so_far, sizeof(so_far));
		say_duration(point_estimate_s(s, &probe, done_s, ndone) * (double)(todo - ndone),
			     left, sizeof(left));
		if (!o->quiet)
			fprintf(stderr, "chaos: sweep: point %zu of %zu (%s): %s so far, about %s "
				"left\n", i + 1, s->plan.npoints, label ? label : "?", so_far, left);
		rc = move_aside(s, i, err);
		if (rc) {
			fprintf(stderr, "chaos: sweep: %s\n", err);
			free(label);
			status = 1;
			break;
		}
		rc = run_point(s, o, i);
		s->elapsed_s[i] = (double)(clock_mono_ns() - t) / 1e9;
		if (rc > 128) {
			/* Stopped in the middle: the point stays pending, its folder partial. */
			s->elapsed_s[i] = NAN;
			status = rc;
			free(label);
			break;
		}
		s->status[i] = rc == 0 ? SWEEP_DONE : SWEEP_FAILED;
		if (rc)
			status = 1;
		done_s += s->elapsed_s[i];
		ndone++;
		say_duration(s->elapsed_s[i], took, sizeof(took));
		if (!o->quiet)
			fprintf(stderr, "chaos: sweep: point %zu of %zu (%s) %s in %s: %s/%s\n", i + 1,
				s->plan.npoints, label ? label : "?", rc ? "FAILED" : "done", took,
				s->dir, s->dirs[i]);
		free(label);
		if (save_plan(s, err) || sweep_csv_write(s, err)) {
			fprintf(stderr, "chaos: sweep: %s\n", err);
			status = 1;
			break;
		}
	}
	if (stop_signal && status < 128)
		status = 128 + stop_signal;
	scenario_free(&probe);
	return status;
}

/* Resuming: the sweep folder's plan, its unfinished points pending again. */
static int plan_resume(struct sweep *s, const struct sweep_opts *o)
{
	char err[CFG_ERR_LEN];
	size_t i;
	int rc = sweep_load(s, o->resume_dir, err);

	if (!rc)
		rc = check_points(s, s->only_setup, err);
	if (rc) {
		fprintf(stderr, "chaos: sweep --resume: %s\n", err);
		return 2;
	}
	/* Kept: a point done with its summary; a failed or partial one runs again. */
	for (i = 0; i < s->plan.npoints; i++) {
		if (s->status[i] != SWEEP_DONE || !point_has_summary(s, i)) {
			s->status[i] = SWEEP_PENDING;
			s->elapsed_s[i] = NAN;
		}
	}
	return 0;
}

/* Writes the sweep's copy of its base scenario (unscaled, with its name). */
static int save_base(const struct sweep *s, char *err)
{
	char *path = buf_aprintf("%s/scenario.json", s->dir);
	int rc = -ENOMEM;

	if (path)
		rc = outfile_write_json(path, s->base, err, CFG_ERR_LEN);
	else
		snprintf(err, CFG_ERR_LEN, "out of memory");
	free(path);
	return rc;
}

/* `chaos sweep` (sweep.h). */
int sweep_command(const struct sweep_opts *o)
{
	struct sweep s;
	char err[CFG_ERR_LEN];
	int status;
	int rc;

	stop_signal = 0;
	status = o->resume_dir ? plan_resume(&s, o) : plan_new(&s, o);
	if (status)
		goto out;
	if (!o->resume_dir) {
		rc = make_sweep_dir(&s, o->out_dir);
		if (rc) {
			fprintf(stderr, "chaos: sweep: %scannot make %s: %s\n",
				rc == -ENAMETOOLONG ? "--out: " : "", s.dir ? s.dir : o->out_dir,
				strerror(-rc));
			status = rc == -ENAMETOOLONG ? 2 : 1;
			goto out;
		}
		if (save_base(&s, err)) {
			fprintf(stderr, "chaos: sweep: %s\n", err);
			status = 1;
			goto out;
		}
	}
	if (save_plan(&s, err)) {
		fprintf(stderr, "chaos: sweep: %s\n", err);
		status = 1;
		goto out;
	}
	catch_signals();
	status = run_points(&s, o);
	if (status < 128 && sweep_csv_write(&s, err)) {
		fprintf(stderr, "chaos: sweep: %s\n", err);
		status = 1;
	}
	if (status < 128)
		sweep_table_print(stdout, &s);
	if (status < 128 && sweep_conclude(&s, o->plots_dir, stdout, err)) {
		fprintf(stderr, "chaos: sweep: %s\n", err);
		status = 1;
	}
	if (save_plan(&s, err)) {
		fprintf(stderr, "chaos: sweep: %s\n", err);
		if (status < 128)
			status = 1;
	}
	if (status < 128) {
		printf("sweep: %s (sweep.csv, sweep.json, a folder per point)\n", s.dir);
	} else {
		fprintf(stderr, "chaos: sweep stopped by %s; go on with: chaos sweep --resume %s\n",
			status == 128 + SIGINT ? "SIGINT" : status == 128 + SIGHUP ? "SIGHUP" :
			"SIGTERM", s.dir);
	}
out:
	sweep_free(&s);
	return status;
}

/* ---- report and gate over a sweep ---- */

/* Report over each point, then sweep.csv (sweep.h). */
int sweep_report_command(const char *dir, FILE *out)
{
	char err[CFG_ERR_LEN];
	struct sweep s;
	FILE *sink = fopen("/dev/null", "w");
	size_t i;
	int status = 0;

	if (sweep_load(&s, dir, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		status = 2;
		goto out;
	}
	for (i = 0; i < s.plan.npoints; i++) {
		char *point = buf_aprintf("%s/%s", dir, s.dirs[i]);
		int rc;

		if (!point || !point_has_summary(&s, i)) {
			free(point);
			continue;
		}
		rc = report_command(point, sink ? sink : stderr);
		if (rc > status)
			status = rc;
		free(point);
	}
	if (sweep_csv_write(&s, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		if (status < 1)
			status = 1;
	}
	sweep_table_print(out, &s);
	if (sweep_conclude(&s, NULL, out, err) || save_plan(&s, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		if (status < 1)
			status = 1;
	}
out:
	if (sink)
		fclose(sink);
	sweep_free(&s);
	return status;
}

/* Plots of a sweep (sweep.h). */
int sweep_plot_command(const char *dir, const char *plots_dir, FILE *out)
{
	char err[CFG_ERR_LEN];
	struct sweep s;
	int status = 0;

	if (sweep_load(&s, dir, err)) {
		fprintf(stderr, "chaos: plot: %s\n", err);
		status = 2;
	} else if (sweep_conclude(&s, plots_dir, out, err)) {
		fprintf(stderr, "chaos: plot: %s\n", err);
		status = 2;
	}
	sweep_free(&s);
	return status;
}

/* Prints text's lines on out, each prefixed with "PREFIX: ". */
static void print_prefixed(FILE *out, const char *prefix, const char *text)
{
	const char *line = text;

	while (*line) {
		const char *nl = strchr(line, '\n');
		int len = nl ? (int)(nl - line) : (int)strlen(line);

		fprintf(out, "%s: %.*s\n", prefix, len, line);
		line += len + (nl ? 1 : 0);
	}
}

/* Gate over each done point (sweep.h). */
int sweep_gate_command(const char *dir, const char *objective_setups, FILE *out)
{
	char err[CFG_ERR_LEN];
	struct sweep s;
	size_t i;
	int status = 0;

	if (sweep_load(&s, dir, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		status = 2;
		goto out;
	}
	for (i = 0; i < s.plan.npoints; i++) {
		char *point = buf_aprintf("%s/%s", dir, s.dirs[i]);
		char *text = NULL;
		size_t len = 0;
		FILE *mem;
		int rc;

		if (!point) {
			status = 2;
			break;
		}
		if (s.status[i] != SWEEP_DONE || !point_has_summary(&s, i)) {
			/* The gate does not pass what it did not measure. */
			fprintf(out, "%s: FAIL: not gated: the point is %s\n", s.dirs[i],
				status_names[s.status[i]]);
			if (status == 0)
				status = 1;
			free(point);
			continue;
		}
		mem = open_memstream(&text, &len);
		rc = mem ? gate_command(point, NULL, NULL, objective_setups, mem) : 2;
		if (mem)
			fclose(mem);
		if (text)
			print_prefixed(out, s.dirs[i], text);
		if (rc == 2 || (rc == 1 && status == 0))
			status = rc;
		free(text);
		free(point);
	}
out:
	sweep_free(&s);
	return status;
}
