/*
 * plot: turns a stamp's summaries and first runs into gnuplot data files
 * (meta.gp and the .dat files) and runs the plots/ scripts over them, one
 * gnuplot child a plot (runner/gnuplot.c).
 */
#include "runner/plot.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/json.h"
#include "common/recfile.h"
#include "common/records.h"
#include "runner/outfile.h"
#include "runner/stats.h"
#include "runner/gnuplot.h"
#include "runner/rundata.h"
#include "runner/scenario.h"
#include "runner/stamp.h"

const char *const plot_names[PLOT_COUNT] = { "answered", "latency", "breakers", "phases" };

struct plot {
	const struct stamp *st;		/* the summary and the scenario */
	const char *scripts;
	const struct plot_run *runs;	/* first runs already loaded (plot_summary) */
	size_t nruns;
	char *err;
	bool write_failed;		/* err is about a file that could not be written */
	char *out_dir;			/* STAMP/plots */
	char *data_dir;			/* STAMP/plots/data */
	struct buf meta;		/* meta.gp being built */
	char **prov;			/* providers seen, colour order (1-based in gnuplot) */
	size_t nprov;
};

/* The summary's setups in order, as a cJSON child list. */
#define for_each_setup(pl, s) for ((s) = (pl)->st->setups->child; (s); (s) = (s)->next)

static int errorf(struct plot *pl, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int errorf(struct plot *pl, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pl->err, CFG_ERR_LEN, fmt, ap);
	va_end(ap);
	return rc;
}

/* A path, however long, as a malloc'ed string; NULL (err says so) when out of memory. */
static char *path_of(struct plot *pl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static char *path_of(struct plot *pl, const char *fmt, ...)
{
	struct buf b = { 0 };
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc) {
		buf_free(&b);
		errorf(pl, -ENOMEM, "out of memory");
		return NULL;
	}
	return buf_steal(&b);
}


/* meta.gp: "array NAME[n] = [...]" (gnuplot arrays cannot be empty: n 0 makes one NaN). */
static void meta_array_begin(struct plot *pl, const char *name, size_t n)
{
	buf_printf(&pl->meta, "array %s[%zu] = [", name, n ? n : 1);
}

static void meta_array_end(struct plot *pl, size_t n)
{
	buf_puts(&pl->meta, n ? "]\n" : "NaN]\n");
}

static void meta_sep(struct plot *pl, size_t i)
{
	if (i)
		buf_puts(&pl->meta, ", ");
}

/* Writes b to path through path.tmp and a rename (outfile_write). */
static int write_file(struct plot *pl, const char *path, const struct buf *b)
{
	int rc = outfile_write(path, b->data ? b->data : "", b->len, pl->err, CFG_ERR_LEN);

	if (rc)
		pl->write_failed = true;
	return rc;
}

/* Writes b to DATA_DIR/NAME (NAME: "answered-SETUP.dat", …) through write_file. */
static int write_data(struct plot *pl, const struct buf *b, const char *name, const char *setup)
{
	char *path = setup ? path_of(pl, "%s/%s-%s.dat", pl->data_dir, name, setup) :
		     path_of(pl, "%s/%s", pl->data_dir, name);
	int rc = -ENOMEM;

	if (path)
		rc = write_file(pl, path, b);
	free(path);
	return rc;
}

static int make_dir(struct plot *pl, const char *path)
{
	if (mkdir(path, 0755) && errno != EEXIST)
		return errorf(pl, -errno, "%s: cannot make the directory: %s", path,
			      strerror(errno));
	return 0;
}


/* ---- the summary and the scenario ---- */

static const struct sc_setup *scenario_setup(const struct plot *pl, const char *name)
{
	size_t i;

	for (i = 0; i < pl->st->sc->nsetups; i++) {
		if (strcmp(pl->st->sc->setups[i].name, name) == 0)
			return &pl->st->sc->setups[i];
	}
	return NULL;
}

/* ---- shared variables: titles, setups, fault windows ---- */

static void meta_common(struct plot *pl)
{
	const cJSON *s;
	const cJSON *w = NULL;
	char tail[256];
	size_t n = 0;
	size_t i;

	snprintf(tail, sizeof(tail), "%s, time scale %g", pl->st->name, pl->st->scale);
	buf_puts(&pl->meta, "# faultline chaos plot variables (written by chaos plot)\n");
	gnuplot_meta_str(&pl->meta, "scenario", pl->st->name);
	gnuplot_meta_num(&pl->meta, "time_scale", pl->st->scale);
	gnuplot_meta_str(&pl->meta, "title_tail", tail);
	gnuplot_meta_num(&pl->meta, "duration_s", pl->st->sc->duration_ms / 1000);
	for_each_setup(pl, s)
		n++;
	s = pl->st->setups->child;
	w = cJSON_GetObjectItemCaseSensitive(s, "window_ms");
	gnuplot_meta_num(&pl->meta, "window_s", cJSON_IsNumber(w) ? w->valuedouble / 1000 : 5 * pl->st->scale);
	gnuplot_meta_num(&pl->meta, "nsetups", (double)n);
	meta_array_begin(pl, "setup_name", n);
	i = 0;
	for_each_setup(pl, s) {
		meta_sep(pl, i++);
		gnuplot_quote(&pl->meta, s->string);
	}
	meta_array_end(pl, n);
}

struct window {
	double from_s;
	double to_s;
	bool kill;
	int row;		/* the label's row at the top, so near labels do not overlap */
	char label[160];
};

/* Label rows at the top of a plot: 3, the later ones wrap round. */
#define LABEL_ROWS 3

/*
 * Gives each window's label the first row where no earlier label stands
 * within a tenth of the timeline of it (labels are centred on their
 * windows, and about that wide).
 */
static void label_rows(struct window *w, size_t n, double duration_s)
{
	double near = duration_s / 10;
	size_t i;
	size_t j;

	for (i = 0; i < n; i++) {
		double mid = (w[i].from_s + w[i].to_s) / 2;
		int row;

		for (row = 0; row < LABEL_ROWS; row++) {
			for (j = 0; j < i; j++) {
				double other = (w[j].from_s + w[j].to_s) / 2;

				if (w[j].row == row && fabs(other - mid) < near)
					break;
			}
			if (j == i)
				break;
		}
		w[i].row = row < LABEL_ROWS ? row : (int)(i % LABEL_ROWS);
	}
}

/*
 * Adds the windows of the fault array faults to *w (*n of *cap), each
 * labelled "WHO: KIND" (and its probability below 1). Returns 0 or -ENOMEM.
 */
static int add_fault_windows(const cJSON *faults, const char *who, struct window **w,
			     size_t *n, size_t *cap)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, faults) {
		const cJSON *from = cJSON_GetObjectItemCaseSensitive(f, "from_s");
		const cJSON *to = cJSON_GetObjectItemCaseSensitive(f, "to_s");
		const cJSON *prob = cJSON_GetObjectItemCaseSensitive(f, "probability");
		const char *kind = json_get_string(f, "kind");
		char extra[48] = "";

		if (!cJSON_IsNumber(from) || !cJSON_IsNumber(to))
			continue;
		if (*n == *cap) {
			struct window *nw = realloc(*w, (*cap = *cap ? 2 * *cap : 8) * sizeof(**w));

			if (!nw)
				return -ENOMEM;
			*w = nw;
		}
		if (cJSON_IsNumber(prob) && prob->valuedouble < 1)
			snprintf(extra, sizeof(extra), " (p %g)", prob->valuedouble);
		(*w)[*n].from_s = from->valuedouble;
		(*w)[*n].to_s = to->valuedouble;
		(*w)[*n].kill = false;
		snprintf((*w)[*n].label, sizeof((*w)[*n].label), "%s: %s%s", who,
			 kind ? kind : "fault", extra);
		(*n)++;
	}
	return 0;
}

/*
 * Every provider's fault windows, every group's (once, as "group NAME"),
 * and every kill → restart (or → end).
 */
static int collect_faults(struct plot *pl, struct window **out, size_t *n)
{
	struct window *w = NULL;
	size_t cap = 0;
	const cJSON *p;
	char who[96];
	size_t i;
	size_t j;

	*n = 0;
	cJSON_ArrayForEach(p, pl->st->sc->providers) {
		const char *pname = json_get_string(p, "name");

		if (add_fault_windows(cJSON_GetObjectItemCaseSensitive(p, "faults"),
				      pname ? pname : "?", &w, n, &cap))
			goto out_nomem;
	}
	cJSON_ArrayForEach(p, pl->st->sc->groups) {
		snprintf(who, sizeof(who), "group %.64s", p->string);
		if (add_fault_windows(cJSON_GetObjectItemCaseSensitive(p, "faults"), who, &w, n,
				      &cap))
			goto out_nomem;
	}
	for (i = 0; i < pl->st->sc->nactions; i++) {
		const struct sc_action *a = &pl->st->sc->actions[i];
		double end = pl->st->sc->duration_ms;
		bool restarted = false;

		if (a->kind != SC_KILL)
			continue;
		for (j = i + 1; j < pl->st->sc->nactions; j++) {
			if (scenario_action_same_target(&pl->st->sc->actions[j], a) &&
			    pl->st->sc->actions[j].kind == SC_RESTART) {
				end = pl->st->sc->actions[j].at_ms;
				restarted = true;
				break;
			}
		}
		if (*n == cap) {
			struct window *nw = realloc(w, (cap = cap ? 2 * cap : 8) * sizeof(*w));

			if (!nw)
				goto out_nomem;
			w = nw;
		}
		w[*n].from_s = a->at_ms / 1000;
		w[*n].to_s = end / 1000;
		w[*n].kill = true;
		if (a->target == SC_TARGET_PROVIDER)
			snprintf(w[*n].label, sizeof(w[*n].label), "%s: killed%s",
				 pl->st->sc->provider_names[a->provider],
				 restarted ? "" : " (no restart)");
		else if (a->target == SC_TARGET_REPLICA)
			snprintf(w[*n].label, sizeof(w[*n].label), "gateway r%u: killed%s",
				 a->replica, restarted ? "" : " (no restart)");
		else
			snprintf(w[*n].label, sizeof(w[*n].label), "redis: killed%s",
				 restarted ? "" : " (no restart)");
		(*n)++;
	}
	label_rows(w, *n, pl->st->sc->duration_ms / 1000);
	*out = w;
	return 0;

out_nomem:
	free(w);
	return errorf(pl, -ENOMEM, "out of memory");
}

static int meta_faults(struct plot *pl)
{
	struct window *w = NULL;
	size_t n;
	size_t i;
	int rc = collect_faults(pl, &w, &n);

	if (rc)
		return rc;
	gnuplot_meta_num(&pl->meta, "nfaults", (double)n);
	meta_array_begin(pl, "fault_from", n);
	for (i = 0; i < n; i++) {
		meta_sep(pl, i);
		gnuplot_num(&pl->meta, w[i].from_s);
	}
	meta_array_end(pl, n);
	meta_array_begin(pl, "fault_to", n);
	for (i = 0; i < n; i++) {
		meta_sep(pl, i);
		gnuplot_num(&pl->meta, w[i].to_s);
	}
	meta_array_end(pl, n);
	meta_array_begin(pl, "fault_kill", n);
	for (i = 0; i < n; i++) {
		meta_sep(pl, i);
		buf_puts(&pl->meta, w[i].kill ? "1" : "0");
	}
	meta_array_end(pl, n);
	meta_array_begin(pl, "fault_row", n);
	for (i = 0; i < n; i++) {
		meta_sep(pl, i);
		buf_printf(&pl->meta, "%d", w[i].row);
	}
	meta_array_end(pl, n);
	meta_array_begin(pl, "fault_label", n);
	for (i = 0; i < n; i++) {
		meta_sep(pl, i);
		gnuplot_quote(&pl->meta, w[i].label);
	}
	meta_array_end(pl, n);
	free(w);
	return 0;
}

/* ---- answered share per window ---- */

/* A window's answered share (%) over one class of requests (mean over runs). */
static double class_answered(const cJSON *w, const char *cls)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w,
								"classes"), cls);

	return 100 * stats_mean(c, "answered_share", NULL);
}

static int write_answered(struct plot *pl)
{
	struct buf b = { 0 };
	const cJSON *s;
	bool batch = false;
	int rc = 0;

	for_each_setup(pl, s) {
		const cJSON *w;
		size_t k = 0;

		buf_reset(&b);
		buf_printf(&b, "# setup %s: answered share per window (mean over runs)\n"
			   "# mid_s from_s to_s answered_pct requests interactive_pct batch_pct\n",
			   s->string);
		cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(s, "windows")) {
			const cJSON *from = cJSON_GetObjectItemCaseSensitive(w, "from_ms");
			const cJSON *to = cJSON_GetObjectItemCaseSensitive(w, "to_ms");

			if (!cJSON_IsNumber(from) || !cJSON_IsNumber(to)) {
				rc = errorf(pl, -EINVAL,
					    "%s: setups.%s.windows[%zu]: expected from_ms and to_ms numbers",
					    pl->st->summary_path, s->string, k);
				goto out;
			}
			gnuplot_num(&b, (from->valuedouble + to->valuedouble) / 2000);
			buf_puts(&b, " ");
			gnuplot_num(&b, from->valuedouble / 1000);
			buf_puts(&b, " ");
			gnuplot_num(&b, to->valuedouble / 1000);
			buf_puts(&b, " ");
			gnuplot_num(&b, 100 * stats_mean(w, "answered_share", NULL));
			buf_puts(&b, " ");
			gnuplot_num(&b, stats_mean(w, "requests", NULL));
			buf_puts(&b, " ");
			gnuplot_num(&b, class_answered(w, "interactive"));
			buf_puts(&b, " ");
			gnuplot_num(&b, class_answered(w, "batch"));
			buf_puts(&b, "\n");
			batch = batch || cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(w, "classes"), "batch");
			k++;
		}
		rc = write_data(pl, &b, "answered", s->string);
		if (rc)
			goto out;
	}
	/* With batch requests, the lines are the interactive ones, batch apart. */
	gnuplot_meta_num(&pl->meta, "answered_classes", batch);
out:
	buf_free(&b);
	return rc;
}

/* ---- latency per request (the first run's requests) ---- */

/* The colour index (from 1) of a provider, adding it when new; 0 when out of memory. */
static size_t prov_index(struct plot *pl, const char *name)
{
	char **n;
	size_t i;

	for (i = 0; i < pl->nprov; i++) {
		if (strcmp(pl->prov[i], name) == 0)
			return i + 1;
	}
	n = realloc(pl->prov, (pl->nprov + 1) * sizeof(*n));
	if (!n)
		return 0;
	pl->prov = n;
	pl->prov[pl->nprov] = strdup(name);
	if (!pl->prov[pl->nprov])
		return 0;
	return ++pl->nprov;
}

/*
 * One setup's requests (its run directory's requests.csv, as
 * runner/rundata.c loads it) into b, in the file's order; lo/hi widen to
 * their latencies (> 0).
 */
static int latency_rows(struct plot *pl, const struct rundata *d, const char *primary,
			struct buf *b, double *lo, double *hi)
{
	const struct run_req **by_seq = NULL;
	size_t i;
	int rc = 0;

	by_seq = calloc(d->nreqs ? d->nreqs : 1, sizeof(*by_seq));
	if (!by_seq) {
		rc = errorf(pl, -ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < d->nreqs; i++)
		by_seq[d->reqs[i].seq - 1] = &d->reqs[i];
	for (i = 0; i < d->nreqs; i++) {
		const struct run_req *r = by_seq[i];
		bool ok = r->outcome == OUT_OK;
		const char *prov = r->provider ? r->provider : "";
		size_t pi = 0;

		if (isnan(r->latency_ms))
			continue;	/* no latency: nothing to place */
		/* As in stats: an ok answer with no provider column is the primary's. */
		if (!*prov && ok)
			prov = primary;
		if (*prov) {
			pi = prov_index(pl, prov);
			if (!pi) {
				rc = errorf(pl, -ENOMEM, "out of memory");
				goto out;
			}
		}
		if (r->latency_ms > 0 && (r->latency_ms < *lo || !isfinite(*lo)))
			*lo = r->latency_ms;
		if (r->latency_ms > *hi || !isfinite(*hi))
			*hi = r->latency_ms;
		gnuplot_num(b, r->sched_ms / 1000);
		buf_puts(b, " ");
		gnuplot_num(b, r->latency_ms);
		buf_printf(b, " %zu %d ", pi, ok);
		gnuplot_dat_str(b, pi ? prov : "none");
		buf_puts(b, " ");
		gnuplot_dat_str(b, outcome_name(r->outcome));
		buf_puts(b, "\n");
	}
out:
	free(by_seq);
	return rc;
}

/* The setup's first run as plot_summary was given it, or NULL. */
static const struct plot_run *given_run(const struct plot *pl, const char *setup)
{
	size_t i;

	for (i = 0; i < pl->nruns; i++) {
		if (strcmp(pl->runs[i].setup, setup) == 0)
			return &pl->runs[i];
	}
	return NULL;
}

/*
 * One setup's latency rows: from the requests plot_summary was given, or
 * else from its first run's requests.csv (*run: that run's number, 0 when
 * there is none).
 */
static int setup_latency(struct plot *pl, const char *setup, const char *primary,
			 unsigned *run, struct buf *b, double *lo, double *hi)
{
	const struct plot_run *given = given_run(pl, setup);
	struct rundata d = { 0 };
	char *dir = NULL;
	int rc = 0;

	*run = given ? given->k : stamp_first_run(pl->st, setup, &dir);
	buf_printf(b, "# setup %s, run %u: every request\n"
		   "# t_s latency_ms provider_index ok provider outcome\n", setup, *run);
	if (given) {
		rc = latency_rows(pl, given->rows, primary, b, lo, hi);
	} else if (*run) {
		rc = rundata_load_requests(&d, dir, pl->err);
		if (!rc)
			rc = latency_rows(pl, &d, primary, b, lo, hi);
	}
	rundata_free(&d);
	free(dir);
	return rc;
}

static int write_latency(struct plot *pl)
{
	struct buf b = { 0 };
	struct buf runs = { 0 };
	double lo = NAN;
	double hi = NAN;
	const cJSON *s;
	size_t i = 0;
	size_t k;
	int rc = 0;

	/* The scenario's providers first, so colours follow the file's order. */
	for (k = 0; k < pl->st->sc->nproviders; k++) {
		if (!prov_index(pl, pl->st->sc->provider_names[k]))
			return errorf(pl, -ENOMEM, "out of memory");
	}
	for_each_setup(pl, s) {
		const char *primary = json_get_string(s, "primary");
		unsigned run;

		buf_reset(&b);
		rc = setup_latency(pl, s->string, primary ? primary : "", &run, &b, &lo, &hi);
		if (rc)
			goto out;
		buf_printf(&runs, "%s%u", i++ ? ", " : "", run);
		rc = write_data(pl, &b, "latency", s->string);
		if (rc)
			goto out;
	}
	meta_array_begin(pl, "lat_run", i);
	buf_puts(&pl->meta, runs.data ? runs.data : "");
	meta_array_end(pl, i);
	/* Whole decades around the data, at least one. */
	if (!isfinite(lo) || !isfinite(hi) || hi <= 0) {
		lo = 1;
		hi = 1000;
	}
	gnuplot_meta_num(&pl->meta, "lat_lo", pow(10, floor(log10(lo))));
	gnuplot_meta_num(&pl->meta, "lat_hi", pow(10, ceil(log10(hi * 1.01))));
out:
	buf_free(&b);
	buf_free(&runs);
	return rc;
}

/* The providers seen in the requests and breaker events, in colour order. */
static void meta_providers(struct plot *pl)
{
	size_t k;

	gnuplot_meta_num(&pl->meta, "nprov", (double)pl->nprov);
	meta_array_begin(pl, "prov_name", pl->nprov);
	for (k = 0; k < pl->nprov; k++) {
		meta_sep(pl, k);
		gnuplot_quote(&pl->meta, pl->prov[k]);
	}
	meta_array_end(pl, pl->nprov);
}

/* ---- breaker state per target ---- */

/* A state's value in breakers-SETUP.dat: 0 closed, 1 half-open, 2 open; -1 none. */
static int state_value(const char *s)
{
	return event_state_from_name(s);
}

/*
 * The target an event is about: "provider/model", or the provider alone;
 * a replica's ("replica": "r2", a replicated setup's) "provider/model r2",
 * each replica's breaker a line of its own.
 */
static void event_target(const cJSON *e, char *out, size_t len)
{
	const char *p = json_get_string(e, "provider");
	const char *m = json_get_string(e, "model");
	const char *r = json_get_string(e, "replica");

	snprintf(out, len, "%s%s%s%s%s", p ? p : "?", m ? "/" : "", m ? m : "", r ? " " : "",
		 r ? r : "");
}

/* A replica's number from its name ("r2": 2); 0 for none. */
static size_t replica_number(const cJSON *e)
{
	const char *r = json_get_string(e, "replica");

	return r && r[0] == 'r' ? (size_t)strtoul(r + 1, NULL, 10) : 0;
}

/*
 * One setup's step blocks into b, a block a target in first-seen order;
 * the targets' names are appended to names and their providers' colour
 * indexes to colors (meta.gp array items).
 */
static int breaker_blocks(struct plot *pl, const char *setup, const cJSON *events,
			  struct buf *b, struct buf *names, struct buf *colors, size_t *ntargets)
{
	double end_s = pl->st->sc->duration_ms / 1000;
	char target[256];
	char other[256];
	const cJSON *e;
	const cJSON *f;
	size_t i = 0;

	*ntargets = 0;
	cJSON_ArrayForEach(e, events) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "t_ms");
		const char *from = json_get_string(e, "from");
		const char *to = json_get_string(e, "to");

		if (!cJSON_IsNumber(t) || !from || !to || state_value(from) < 0 ||
		    state_value(to) < 0)
			return errorf(pl, -EINVAL,
				      "%s: setups.%s.breaker_transitions[0][%zu]: expected t_ms and "
				      "from/to of closed, half_open, open",
				      pl->st->summary_path, setup, i);
		if (t->valuedouble / 1000 > end_s)
			end_s = t->valuedouble / 1000;
		i++;
	}
	i = 0;
	cJSON_ArrayForEach(e, events) {
		bool seen = false;
		int state;

		event_target(e, target, sizeof(target));
		for (f = events->child; f != e; f = f->next) {
			event_target(f, other, sizeof(other));
			if (strcmp(other, target) == 0)
				seen = true;
		}
		if (seen)
			continue;
		/* A new target: its whole step line, from its first "from" at 0. */
		if ((*ntargets)++)
			buf_puts(b, "\n\n");
		buf_printf(b, "# target %s\n# t_s state to\n", target);
		state = state_value(json_get_string(e, "from"));
		buf_printf(b, "0 %d \"start\"\n", state);
		for (f = e; f; f = f->next) {
			event_target(f, other, sizeof(other));
			if (strcmp(other, target))
				continue;
			state = state_value(json_get_string(f, "to"));
			gnuplot_num(b, cJSON_GetObjectItemCaseSensitive(f, "t_ms")->valuedouble / 1000);
			buf_printf(b, " %d ", state);
			gnuplot_dat_str(b, json_get_string(f, "to"));
			buf_puts(b, "\n");
		}
		gnuplot_num(b, end_s);
		buf_printf(b, " %d \"end\"\n", state);
		if (names->len) {
			buf_puts(names, ", ");
			buf_puts(colors, ", ");
		}
		gnuplot_quote(names, target);
		/* A replica's line in the next colour after the last replica's. */
		buf_printf(colors, "%zu", prov_index(pl, json_get_string(e, "provider") ?
						      json_get_string(e, "provider") : "?") +
			   (replica_number(e) ? replica_number(e) - 1 : 0));
		i++;
	}
	return 0;
}

static int write_breakers(struct plot *pl)
{
	struct buf b = { 0 };
	struct buf panels = { 0 };
	struct buf counts = { 0 };
	struct buf firsts = { 0 };
	struct buf runs = { 0 };
	struct buf names = { 0 };
	struct buf colors = { 0 };
	char *dir;
	const cJSON *s;
	size_t npanels = 0;
	size_t first = 1;
	int rc = 0;

	for_each_setup(pl, s) {
		const struct sc_setup *st = scenario_setup(pl, s->string);
		const cJSON *all = cJSON_GetObjectItemCaseSensitive(s, "breaker_transitions");
		const cJSON *events = cJSON_IsArray(all) ? cJSON_GetArrayItem(all, 0) : NULL;
		size_t ntargets;

		if (events && !cJSON_IsArray(events)) {
			rc = errorf(pl, -EINVAL, "%s: setups.%s.breaker_transitions[0]: expected an array",
				    pl->st->summary_path, s->string);
			goto out;
		}
		/* Gateway setups, and any other that logged breaker changes. */
		if (!(st && st->kind == SC_GATEWAY) && !(events && events->child))
			continue;
		buf_reset(&b);
		buf_printf(&b, "# setup %s: breaker state per target (0 closed, 1 half-open, 2 open)\n",
			   s->string);
		rc = breaker_blocks(pl, s->string, events, &b, &names, &colors, &ntargets);
		if (rc)
			goto out;
		rc = write_data(pl, &b, "breakers", s->string);
		if (rc)
			goto out;
		if (npanels) {
			buf_puts(&panels, ", ");
			buf_puts(&counts, ", ");
			buf_puts(&firsts, ", ");
			buf_puts(&runs, ", ");
		}
		gnuplot_quote(&panels, s->string);
		buf_printf(&counts, "%zu", ntargets);
		buf_printf(&firsts, "%zu", first);
		buf_printf(&runs, "%u", stamp_first_run(pl->st, s->string, &dir));
		free(dir);
		first += ntargets;
		npanels++;
	}
	gnuplot_meta_num(&pl->meta, "brk_panels", (double)npanels);
	meta_array_begin(pl, "brk_setup", npanels);
	buf_puts(&pl->meta, panels.data ? panels.data : "");
	meta_array_end(pl, npanels);
	meta_array_begin(pl, "brk_ntargets", npanels);
	buf_puts(&pl->meta, counts.data ? counts.data : "");
	meta_array_end(pl, npanels);
	meta_array_begin(pl, "brk_first", npanels);
	buf_puts(&pl->meta, firsts.data ? firsts.data : "");
	meta_array_end(pl, npanels);
	meta_array_begin(pl, "brk_run", npanels);
	buf_puts(&pl->meta, runs.data ? runs.data : "");
	meta_array_end(pl, npanels);
	meta_array_begin(pl, "brk_target", first - 1);
	buf_puts(&pl->meta, names.data ? names.data : "");
	meta_array_end(pl, first - 1);
	meta_array_begin(pl, "brk_color", first - 1);
	buf_puts(&pl->meta, colors.data ? colors.data : "");
	meta_array_end(pl, first - 1);
out:
	buf_free(&b);
	buf_free(&panels);
	buf_free(&counts);
	buf_free(&firsts);
	buf_free(&runs);
	buf_free(&names);
	buf_free(&colors);
	return rc;
}

/* ---- percentiles per phase ---- */

static int write_phases(struct plot *pl)
{
	static const char *const pct[3] = { "p50", "p95", "p99" };
	struct buf b = { 0 };
	double lo = NAN;
	double hi = NAN;
	const cJSON *s;
	size_t i;
	size_t j;
	size_t k;
	int rc;

	buf_puts(&b, "# ok requests' latency percentiles per phase and setup (mean over runs)\n"
		 "# phase_index setup_index p50_ms p95_ms p99_ms ok phase setup\n");
	for (i = 0; i < pl->st->sc->nphases; i++) {
		j = 0;
		for_each_setup(pl, s) {
			const cJSON *phases = cJSON_GetObjectItemCaseSensitive(s, "phases");
			const cJSON *ph = cJSON_GetObjectItemCaseSensitive(phases, pl->st->sc->phases[i].name);

			buf_printf(&b, "%zu %zu", i + 1, ++j);
			for (k = 0; k < 3; k++) {
				double v = stats_mean(ph, "latency_ms", pct[k]);

				buf_puts(&b, " ");
				gnuplot_num(&b, v);
				if (v > 0 && (v < lo || !isfinite(lo)))
					lo = v;
				if (v > hi || !isfinite(hi))
					hi = v;
			}
			buf_puts(&b, " ");
			gnuplot_num(&b, stats_mean(ph, "ok", NULL));
			buf_puts(&b, " ");
			gnuplot_dat_str(&b, pl->st->sc->phases[i].name);
			buf_puts(&b, " ");
			gnuplot_dat_str(&b, s->string);
			buf_puts(&b, "\n");
		}
	}
	rc = write_data(pl, &b, "phases.dat", NULL);
	buf_free(&b);
	if (rc)
		return rc;
	gnuplot_meta_num(&pl->meta, "nphases", (double)pl->st->sc->nphases);
	meta_array_begin(pl, "phase_name", pl->st->sc->nphases);
	for (i = 0; i < pl->st->sc->nphases; i++) {
		meta_sep(pl, i);
		gnuplot_quote(&pl->meta, pl->st->sc->phases[i].name);
	}
	meta_array_end(pl, pl->st->sc->nphases);
	/* No bar at all (no setup answered in any phase): the script draws no values. */
	gnuplot_meta_num(&pl->meta, "ph_none", !isfinite(lo) || !isfinite(hi));
	if (!isfinite(lo) || !isfinite(hi)) {
		lo = 1;
		hi = 1000;
	}
	/* A log scale once the bars span more than a factor of 20. */
	gnuplot_meta_num(&pl->meta, "ph_log", hi / lo > 20);
	gnuplot_meta_num(&pl->meta, "ph_lo", hi / lo > 20 ? pow(10, floor(log10(lo))) : 0);
	gnuplot_meta_num(&pl->meta, "ph_hi", hi / lo > 20 ? pow(10, ceil(log10(hi * 1.5))) : hi * 1.18);
	return 0;
}

/*
 * Makes OUT_DIR/NAME.png from SCRIPTS/NAME.gp for every plot, two
 * gnuplots at a time (runner/gnuplot.c): they take most of a simulated
 * stamp's second.
 */
static int render_all(struct plot *pl)
{
	struct gnuplot_task t[PLOT_COUNT];
	char *paths[3 * PLOT_COUNT] = { 0 };
	bool write_failed = false;
	int rc = 0;
	size_t i;

	for (i = 0; i < PLOT_COUNT; i++) {
		paths[3 * i] = path_of(pl, "%s/%s.gp", pl->scripts, plot_names[i]);
		paths[3 * i + 1] = path_of(pl, "%s/%s.png", pl->out_dir, plot_names[i]);
		paths[3 * i + 2] = path_of(pl, "%s/%s.log", pl->data_dir, plot_names[i]);
		if (!paths[3 * i] || !paths[3 * i + 1] || !paths[3 * i + 2])
			rc = -ENOMEM;
		t[i] = (struct gnuplot_task){ .script = paths[3 * i], .png = paths[3 * i + 1],
					      .log = paths[3 * i + 2] };
	}
	if (!rc)
		rc = gnuplot_render_all(t, PLOT_COUNT, pl->data_dir, pl->scripts, 2, pl->err,
					&write_failed);
	pl->write_failed = pl->write_failed || write_failed;
	for (i = 0; i < 3 * PLOT_COUNT; i++)
		free(paths[i]);
	return rc;
}

/* Makes the data files and the plots of a loaded stamp (runs: see plot_summary). */
static int plot_make(const struct stamp *st, const struct plot_run *runs, size_t nruns,
		     const char *scripts_dir, char *err, bool *write_failed)
{
	struct plot pl = { .st = st, .scripts = scripts_dir, .runs = runs, .nruns = nruns,
			   .err = err };
	size_t i;
	int rc = -ENOMEM;

	pl.out_dir = path_of(&pl, "%s/" REC_PLOTS_DIR, st->dir);
	pl.data_dir = path_of(&pl, "%s/" REC_PLOTS_DATA_DIR, st->dir);
	if (pl.out_dir && pl.data_dir)
		rc = make_dir(&pl, pl.out_dir);
	if (!rc)
		rc = make_dir(&pl, pl.data_dir);
	if (rc)
		goto out;
	meta_common(&pl);
	rc = meta_faults(&pl);
	if (!rc)
		rc = write_answered(&pl);
	if (!rc)
		rc = write_latency(&pl);
	if (!rc)
		rc = write_breakers(&pl);
	if (!rc)
		rc = write_phases(&pl);
	if (rc)
		goto out;
	meta_providers(&pl);
	if (!pl.meta.data) {
		rc = errorf(&pl, -ENOMEM, "out of memory");
		goto out;
	}
	rc = write_data(&pl, &pl.meta, "meta.gp", NULL);
	if (!rc)
		rc = render_all(&pl);
out:
	for (i = 0; i < pl.nprov; i++)
		free(pl.prov[i]);
	free(pl.prov);
	buf_free(&pl.meta);
	free(pl.out_dir);
	free(pl.data_dir);
	if (write_failed)
		*write_failed = rc && pl.write_failed;
	return rc;
}

int plot_stamp(const char *stamp_dir, const char *scripts_dir, char *err, bool *write_failed)
{
	struct stamp st;
	int rc;

	err[0] = '\0';
	if (write_failed)
		*write_failed = false;
	rc = stamp_load(&st, stamp_dir, err);
	if (!rc)
		rc = plot_make(&st, NULL, 0, scripts_dir, err, write_failed);
	stamp_free(&st);
	return rc;
}

int plot_summary(const char *stamp_dir, const struct scenario *sc, const cJSON *summary,
		 const struct plot_run *runs, size_t nruns, const char *scripts_dir, char *err,
		 bool *write_failed)
{
	struct stamp st;
	int rc;

	err[0] = '\0';
	if (write_failed)
		*write_failed = false;
	rc = stamp_use(&st, stamp_dir, summary, sc, err);
	if (!rc)
		rc = plot_make(&st, runs, nruns, scripts_dir, err, write_failed);
	stamp_free(&st);
	return rc;
}
