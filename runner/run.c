/*
 * run: one scenario through its setups. A run's life: run_begin (dir, t0
 * a lead ahead — an external setup's ready_ms more —, one mockprov per
 * provider) → their "ready" lines → the providers' /healthz → the setup
 * (gateway or external, or none; an external one's files, then its
 * command) → its readiness → loadgen on t0 and the action timer →
 * loadgen's exit → run__stop (every child SIGTERMed, SIGKILLed after
 * STOP_GRACE_MS) → run_end (the summary, the rename) → the next run; into
 * an existing stamp (--stamp), a setup's folder replaced once its runs
 * are whole and the stamp's summary made again. The processes and their
 * readiness are launch.c's; their sequence, the stop, the run's folder
 * and its results are here. Anything unexpected — a child exiting early, a setup not ready
 * in time, a signal — goes through run__fail, which stops the run the
 * same way.
 */
#include "runner/run.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/curl_uv.h"
#include "common/json.h"
#include "common/recfile.h"
#include "common/waketick.h"
#include "runner/outfile.h"
#include "runner/plot.h"
#include "runner/report.h"
#include "runner/restamp.h"
#include "runner/run_int.h"
#include "runner/stamp.h"
#include "runner/stats.h"

#define STOP_GRACE_MS 5000		/* SIGTERM, then SIGKILL */
#define STOP_KILLED_MS 2000		/* after SIGKILL, the groups' last chance to go */
#define STOP_POLL_MS 20			/* how often a stop looks for processes left */

static void run_begin(struct chaos *ch);
static void timeline_begin(struct chaos *ch);

/* From a run's start to its t0: CHAOS_LEAD_MS, and an external setup's ready_ms. */
static double run_lead_ms(const struct sc_setup *st)
{
	return CHAOS_LEAD_MS + (st->kind == SC_EXTERNAL ? round(st->ready_ms) : 0);
}

/* ---- files ---- */

/* Says why the run failed (the first reason stays: see run__fail). */
static void set_why(struct chaos *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_why(struct chaos *ch, const char *fmt, ...)
{
	va_list ap;

	buf_reset(&ch->why);
	va_start(ap, fmt);
	buf_vprintf(&ch->why, fmt, ap);
	va_end(ap);
}

/* The reason set_why gave, or the one thing that stops it giving one. */
static const char *why_text(const struct chaos *ch)
{
	return ch->why.len ? ch->why.data : "out of memory";
}

/* ---- stopping ---- */

static void end_soon(struct chaos *ch);

/* left_names's step: the child, when its group is still there. */
static void add_left_name(struct child *c, void *arg)
{
	struct buf *out = arg;
	char name[96];

	if (!launch_group_alive(c))
		return;
	launch_child_name(c->ch, c, name, sizeof(name));
	buf_printf(out, "%s%s", out->len ? ", " : "", name);
}

/* Which children's groups are still there, for a message, onto out. */
static void left_names(struct chaos *ch, struct buf *out)
{
	launch_each_child(ch, add_left_name, out);
}

/* Signals a child's group, for a run's end (launch_each_child's step). */
static void stop_child_end(struct child *c, void *arg)
{
	c->restart_pending = false;
	launch_child_stop(c, *(const int *)arg, STOP_END);
}

/* Every child's group gets sig, for the run's end. */
static void stop_all(struct chaos *ch, int sig)
{
	launch_each_child(ch, stop_child_end, &sig);
}

/*
 * While stopping, every STOP_POLL_MS: the run ends once nothing of it is
 * left; STOP_GRACE_MS after the SIGTERM, what is left gets SIGKILL (and
 * the run fails: a program that does not stop when asked loses records);
 * STOP_KILLED_MS later the run ends whatever is left, saying so.
 */
static void on_stop_poll(uv_timer_t *t)
{
	struct chaos *ch = t->data;
	double ms = (double)(clock_mono_ns() - ch->stop_ns) / 1e6;
	struct buf names = { 0 };

	if (!launch_any_left(ch)) {
		end_soon(ch);
		goto out;
	}
	if (ms >= STOP_GRACE_MS && !ch->sent_sigkill) {
		ch->sent_sigkill = true;
		left_names(ch, &names);
		run__fail(ch, "%s did not stop within %d ms of SIGTERM",
			 names.len ? names.data : "a child", STOP_GRACE_MS);
		stop_all(ch, SIGKILL);
	} else if (ms >= STOP_GRACE_MS + STOP_KILLED_MS) {
		left_names(ch, &names);
		fprintf(stderr, "chaos: %s still has processes after SIGKILL (zombies?)\n",
			names.len ? names.data : "a child");
		end_soon(ch);
		goto out;
	}
	uv_timer_start(&ch->timer, on_stop_poll, STOP_POLL_MS, 0);
out:
	buf_free(&names);
}

/* Every child's group gets SIGTERM; on_stop_poll ends the run when they are gone. */
void run__stop(struct chaos *ch)
{

	if (ch->stopping)
		return;
	ch->stopping = true;
	ch->stop_ns = clock_mono_ns();
	uv_timer_stop(&ch->progress);
	launch_progress_clear(ch);
	ch->sent_sigkill = false;
	uv_timer_stop(&ch->watchdog);
	uv_timer_stop(&ch->start_deadline);
	if (ch->poll.in_flight) {
		curl_uv_remove(&ch->cu, ch->poll.easy);
		ch->poll.in_flight = false;
	}
	uv_timer_stop(&ch->poll.timer);
	stop_all(ch, SIGTERM);
	uv_timer_start(&ch->timer, on_stop_poll, 0, 0);
}

/* Fails the run: the first reason given is the one said; then the stop. */
void run__fail(struct chaos *ch, const char *fmt, ...)
{
	va_list ap;

	if (!ch->failed) {
		ch->failed = true;
		buf_reset(&ch->why);
		va_start(ap, fmt);
		buf_vprintf(&ch->why, fmt, ap);
		va_end(ap);
	}
	run__stop(ch);
}

static void on_watchdog(uv_timer_t *t)
{
	struct chaos *ch = t->data;

	run__fail(ch, "the run did not end within its deadline");
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct chaos *ch = s->data;

	if (ch->over) {
		/* The results are whole: answered once they are closed (chaos_run). */
		if (!ch->late_signal)
			ch->late_signal = signum;
		return;
	}
	if (ch->signal && ch->stopping) {
		/* A second one: no grace. */
		stop_all(ch, SIGKILL);
		return;
	}
	if (!ch->signal)
		ch->signal = signum;
	run__fail(ch, "stopped by %s", signum == SIGINT ? "SIGINT" : signum == SIGHUP ? "SIGHUP"
							      : "SIGTERM");
}

/*
 * At t0 the load must have started: the run fails naming the step still
 * pending, with the log of the process it waits for.
 */
static void on_start_deadline(uv_timer_t *t)
{
	struct chaos *ch = t->data;
	const struct child *c;
	struct buf step = { 0 };
	char *what;

	if (ch->load.p || ch->stopping)
		return;
	c = launch_pending_step(ch, &step);
	what = buf_aprintf("was not ready by t0 (%.0f ms after the run began): loadgen not "
			   "started, %s", ch->lead_ms, step.len ? step.data : "");
	if (c && c->p && what)
		launch_fail_with_tail(ch, c, what);
	else
		run__fail(ch, "the run could not start by t0 (%.0f ms after it began): loadgen not "
			  "started: %s", ch->lead_ms, step.len ? step.data : "out of memory");
	free(what);
	buf_free(&step);
}

/* ---- the end of a run, and the next ---- */

/*
 * A provider killed and not restarted leaves mock-NAME.csv.tmp (mockprov
 * renames its log on a clean stop). Its rows up to the kill are whole —
 * mockprov hands them to the kernel every loop turn — so the file is
 * finished here, as mockprov would have.
 */
static int finish_mock_logs(struct chaos *ch)
{
	char *tmp = NULL;
	char *done = NULL;
	size_t i;
	int rc = 0;

	for (i = 0; i < ch->sc->nproviders && !rc; i++) {
		if (!ch->mocks[i].killed)
			continue;	/* stopped cleanly: mockprov finished its own log */
		free(done);
		free(tmp);
		done = buf_aprintf("%s/mock-%s.csv", ch->dir, ch->sc->provider_names[i]);
		tmp = buf_aprintf("%s/mock-%s.csv.tmp", ch->dir, ch->sc->provider_names[i]);
		if (!done || !tmp) {
			set_why(ch, "out of memory");
			rc = -ENOMEM;
		} else if (access(tmp, F_OK) == 0 && access(done, F_OK) != 0 && rename(tmp, done)) {
			rc = -errno;
			set_why(ch, "cannot rename %s to %s: %s", tmp, done, strerror(-rc));
		}
	}
	free(done);
	free(tmp);
	return rc;
}

static int summarise(struct chaos *ch)
{
	char err[CFG_ERR_LEN];
	char *path = buf_aprintf("%s/summary.json", ch->dir);
	char *lg = buf_aprintf("%s/loadgen-summary.json", ch->dir);
	cJSON *sum = NULL;
	cJSON **runs;
	int rc;

	if (!path || !lg) {
		rc = -ENOMEM;
		goto out;
	}
	/* loadgen's own summary keeps its name apart from the run's. */
	if (rename(path, lg) && errno != ENOENT) {
		rc = -errno;
		set_why(ch, "cannot rename %s to %s: %s", path, lg, strerror(-rc));
		goto out;
	}
	rc = finish_mock_logs(ch);
	if (rc)
		goto out;
	/* The setup's first completed run keeps its requests for the plots. */
	rc = report_summarise_run(ch->sc, ch->st, ch->dir, ch->k, ch->t0, &sum,
				  ch->o->plots_dir && !ch->o->into_stamp &&
				  !ch->first_k[ch->setup_index] ? &ch->rows : NULL, err);
	if (rc) {
		set_why(ch, "summary: %s", err);
		goto out;
	}
	rc = outfile_write_json(path, sum, err, sizeof(err));
	if (rc) {
		cJSON_Delete(sum);
		set_why(ch, "%s", err);
		goto out;
	}
	runs = realloc(ch->runs, (ch->nruns + 1) * sizeof(*runs));
	if (!runs) {
		cJSON_Delete(sum);
		rc = -ENOMEM;
		goto out;
	}
	ch->runs = runs;
	ch->runs[ch->nruns++] = sum;
out:
	free(lg);
	free(path);
	return rc;
}

static void free_runs(struct chaos *ch)
{
	size_t i;

	for (i = 0; i < ch->nruns; i++)
		cJSON_Delete(ch->runs[i]);
	free(ch->runs);
	ch->runs = NULL;
	ch->nruns = 0;
}

/* After this setup's last run: its runs combined under the stamp's summary. */
static void combine_setup(struct chaos *ch)
{
	cJSON *c = stats_combine(ch->runs, ch->nruns);

	if (c)
		cJSON_AddItemToObject(ch->combined, ch->st->name, c);
	free_runs(ch);
}

/*
 * Into an existing stamp, after a setup's last run: its new folder takes
 * the old one's place when every run of it completed (and scenario.json
 * then says how they were made); otherwise the old one stays, and the new
 * runs stay in SETUP.new~ for a look.
 */
static void replace_setup(struct chaos *ch)
{
	const char *name = ch->st->name;
	char err[CFG_ERR_LEN];
	const char **more;
	int rc;

	if (ch->setup_completed < ch->o->repeat) {
		fprintf(stderr, "chaos: %s / %s: %u of %u runs completed: %s/%s kept as it was "
			"(the new runs are in %s/%s" RESTAMP_NEW_SUFFIX ")\n", ch->sc->name, name,
			ch->setup_completed, ch->o->repeat, ch->stamp_dir, name, ch->stamp_dir, name);
		return;
	}
	more = realloc(ch->swapped, (ch->nswapped + 1) * sizeof(*more));
	if (!more) {
		fprintf(stderr, "chaos: %s / %s: out of memory\n", ch->sc->name, name);
		ch->exit_code = 1;
		return;
	}
	ch->swapped = more;
	rc = restamp_swap(ch->stamp_dir, name, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "chaos: %s / %s: %s\n", ch->sc->name, name, err);
		ch->exit_code = 1;
		return;
	}
	if (rc > 0)	/* in place; the old runs left behind: said, not fatal */
		fprintf(stderr, "chaos: %s / %s: warning: %s\n", ch->sc->name, name, err);
	ch->swapped[ch->nswapped++] = name;
	if (restamp_write_scenario(ch->stamp_dir, ch->sc, true, ch->swapped, ch->nswapped, err,
				   sizeof(err))) {
		fprintf(stderr, "chaos: %s\n", err);
		ch->exit_code = 1;
		return;
	}
	if (ch->o->verbose)
		fprintf(stderr, "chaos: %s / %s: replaced %s/%s\n", ch->sc->name, name,
			ch->stamp_dir, name);
}

/*
 * After a completed run: its requests (ch->rows, when summarise kept them)
 * become its setup's first run's, for the plots.
 */
static void keep_first_rows(struct chaos *ch)
{
	if (ch->first_k[ch->setup_index] || !ch->rows.reqs)
		return;
	rundata_keep_requests(&ch->rows);
	ch->first_rows[ch->setup_index] = ch->rows;
	ch->first_k[ch->setup_index] = ch->k;
	memset(&ch->rows, 0, sizeof(ch->rows));
}

static void run_cleanup(struct chaos *ch)
{
	size_t i;

	for (i = 0; i < ch->sc->nproviders; i++)
		launch_child_close(&ch->mocks[i]);
	for (i = 0; i < SC_REPLICAS_MAX; i++)
		launch_child_close(&ch->setup[i]);
	launch_child_close(&ch->redis);
	launch_child_close(&ch->load);
	uv_timer_stop(&ch->timer);
	uv_timer_stop(&ch->start_deadline);
}

static void run_next(struct chaos *ch);

static void run_end(struct chaos *ch)
{
	bool ok = !ch->failed;

	if (!ch->st)
		return;
	run_cleanup(ch);
	if (ok && ch->log_failed) {
		/* A child's log is one of the run's files: the run is not whole without it. */
		set_why(ch, "%s", ch->log_error.len ? ch->log_error.data : "a child's log could "
			"not be written");
		ok = false;
	}
	if (ok && summarise(ch))
		ok = false;
	if (ok && rename(ch->dir, ch->final_dir)) {
		set_why(ch, "cannot rename %s: %s", ch->dir, strerror(errno));
		ok = false;
	}
	if (!ok) {
		fprintf(stderr, "chaos: %s / %s / run %u failed: %s\n  (its files: %s)\n",
			ch->sc->name, ch->st->name, ch->k, why_text(ch), ch->dir ? ch->dir : "none");
		ch->exit_code = 1;
	} else {
		ch->completed++;
		ch->setup_completed++;
		keep_first_rows(ch);
		if (ch->o->verbose)
			fprintf(stderr, "chaos: %s / %s / run %u done: %s\n", ch->sc->name,
				ch->st->name, ch->k, ch->final_dir);
	}
	rundata_free(&ch->rows);
	if (ch->signal) {
		ch->exit_code = 128 + ch->signal;
		free_runs(ch);
		return;		/* the loop runs out of work */
	}
	if (ch->k == ch->o->repeat) {
		combine_setup(ch);
		if (ch->o->into_stamp)
			replace_setup(ch);
	}
	run_next(ch);
}

static void on_ender(uv_timer_t *t)
{
	run_end(t->data);
}

/* run_end on the next loop turn: a run never ends inside the call that stopped it. */
static void end_soon(struct chaos *ch)
{
	uv_timer_start(&ch->ender, on_ender, 0, 0);
}

/* The next (setup, repeat), or the end. */
static void run_next(struct chaos *ch)
{
	const struct scenario *sc = ch->sc;

	if (ch->st && ch->k < ch->o->repeat) {
		ch->k++;
		run_begin(ch);
		return;
	}
	for (ch->setup_index = ch->st ? ch->setup_index + 1 : 0; ch->setup_index < sc->nsetups;
	     ch->setup_index++) {
		ch->st = &sc->setups[ch->setup_index];
		if (ch->o->sim && ch->st->kind == SC_EXTERNAL) {
			if (ch->o->verbose && !ch->o->only_setup)
				fprintf(stderr, "chaos: %s / %s: an external gateway, not simulated\n",
					sc->name, ch->st->name);
			continue;
		}
		if (chaos_setup_selected(sc, ch->o, ch->setup_index)) {
			ch->k = 1;
			ch->setup_completed = 0;
			run_begin(ch);
			return;
		}
	}
	/* Every run is over: the loop runs out of work once the handles close. */
}

/*
 * How fast the simulation went, on stderr: requests of virtual time per
 * second of wall time, the runs' files included (not the summaries,
 * report and plots, which a real run makes the same way).
 */
static void sim_speed_line(const struct chaos *ch)
{
	double wall_s = (double)ch->sim_ns / 1e9;

	fflush(stdout);		/* after the table, on a terminal that shows both */
	fprintf(stderr, "chaos: simulated %llu requests (%llu upstream, %llu events) over %.1f s "
		"of timelines in %.3f s: %.0f requests/s\n", (unsigned long long)ch->sim.requests,
		(unsigned long long)ch->sim.upstream, (unsigned long long)ch->sim.events,
		ch->sim.virtual_ms / 1000, wall_s,
		wall_s > 0 ? (double)ch->sim.requests / wall_s : 0);
}

/* The run in virtual time: its files at once, then the same end as a real run's. */
static void run_simulated(struct chaos *ch)
{
	char err[CFG_ERR_LEN];
	struct sim_stats st;
	uint64_t start = clock_mono_ns();

	ch->t0 = SIM_T0_UNIX_MS;
	if (sim_run(ch->sc, ch->st, ch->k, ch->dir, &st, err)) {
		ch->failed = true;
		set_why(ch, "%s", err);
	}
	ch->sim_ns += clock_mono_ns() - start;
	ch->sim.requests += st.requests;
	ch->sim.upstream += st.upstream;
	ch->sim.events += st.events;
	ch->sim.virtual_ms += st.virtual_ms;
	ch->stopping = true;
	end_soon(ch);
}

/* Removes STAMP/SETUP.new~ before a setup's new runs go there. Returns 0 or -errno. */
static int remove_leftover(struct chaos *ch)
{
	char *path = buf_aprintf("%s/%s" RESTAMP_NEW_SUFFIX, ch->stamp_dir, ch->st->name);
	int rc = path ? restamp_remove_tree(path) : -ENOMEM;

	free(path);
	return rc;
}

static void run_begin(struct chaos *ch)
{
	const struct scenario *sc = ch->sc;
	const char *suffix;
	double budget;
	size_t i;
	int rc;

	ch->stopping = false;
	ch->failed = false;
	buf_reset(&ch->why);
	ch->log_failed = false;
	buf_reset(&ch->log_error);
	ch->mocks_ready = 0;
	ch->healthz_next = 0;
	ch->next_action = 0;
	free(ch->target);
	ch->target = NULL;
	memset(ch->mocks, 0, sc->nproviders * sizeof(*ch->mocks));
	memset(ch->setup, 0, sizeof(ch->setup));
	ch->nsetup = ch->st->kind == SC_GATEWAY ? ch->st->replicas :
		     ch->st->kind == SC_EXTERNAL ? 1 : 0;
	ch->setup_lines = 0;
	ch->setup_next = 0;
	ch->ext_port = 0;
	memset(&ch->redis, 0, sizeof(ch->redis));
	ch->redis_port = 0;
	free(ch->redis_url);
	free(ch->key_prefix);
	ch->redis_url = ch->key_prefix = NULL;
	memset(&ch->load, 0, sizeof(ch->load));
	for (i = 0; i < sc->nproviders; i++) {
		ch->ports[i] = 0;
		free(ch->urls[i]);
		ch->urls[i] = NULL;
	}
	free(ch->final_dir);
	free(ch->dir);
	/* Into an existing stamp, a setup's new runs go aside until they are all whole. */
	suffix = ch->o->into_stamp ? RESTAMP_NEW_SUFFIX : "";
	ch->final_dir = buf_aprintf("%s/%s%s/run-%u", ch->stamp_dir, ch->st->name, suffix, ch->k);
	ch->dir = buf_aprintf("%s/%s%s/run-%u.tmp", ch->stamp_dir, ch->st->name, suffix, ch->k);
	rc = ch->dir && ch->final_dir ? 0 : -ENOMEM;
	if (!rc && ch->o->into_stamp && ch->k == 1)
		rc = remove_leftover(ch);	/* an earlier attempt's, failed or stopped */
	if (!rc)
		rc = stamp_mkdir_p(ch->dir);
	if (rc) {
		ch->failed = true;
		set_why(ch, "cannot make %s/%s%s/run-%u.tmp: %s", ch->stamp_dir, ch->st->name,
			suffix, ch->k, strerror(-rc));
		ch->stopping = true;
		end_soon(ch);
		return;
	}
	if (ch->o->verbose)
		fprintf(stderr, "chaos: %s / %s / run %u of %u: %.1f s\n", sc->name, ch->st->name,
			ch->k, ch->o->repeat, sc->duration_ms / 1000);
	if (ch->o->sim) {
		run_simulated(ch);
		return;
	}
	/* The last request may take loadgen's max time, and each retry a timeout and a wait. */
	budget = run_lead_ms(ch->st) + sc->duration_ms + sc->load.timeout_ms * 11 + 30000;
	if (ch->st->kind == SC_CLIENT_RETRY)
		budget += ch->st->retries * (sc->load.timeout_ms +
					     fmax(5000 * sc->scale, ch->st->retry_backoff_ms));
	uv_update_time(ch->loop);	/* after the last run's summaries (timeline_begin) */
	uv_timer_start(&ch->watchdog, on_watchdog, (uint64_t)budget, 0);
	timeline_begin(ch);
}

/*
 * t0, the run's lead ahead; the providers on it at once (mockprov waits
 * for a t0 in the future, healthy: the faults are windows after it); the
 * setup once they answer, and the load at t0. An external setup's lead
 * holds its ready_ms too: its command starts once the providers answer,
 * so another gateway's first health checks find them up, and it must
 * answer its ready_url by t0.
 */
static void timeline_begin(struct chaos *ch)
{
	size_t i;

	/*
	 * The loop's cached time stands where the last turn began: before the
	 * previous run's summaries, seconds ago when it recorded 700,000
	 * requests. A deadline counted from it had passed already, and the
	 * next run failed at once, "not ready by t0".
	 */
	uv_update_time(ch->loop);
	ch->lead_ms = run_lead_ms(ch->st);
	ch->clock_step_said = 0;
	ch->t0 = clock_unix_ms() + (int64_t)ch->lead_ms;
	timebase_init(&ch->tb, ch->t0);
	uv_timer_start(&ch->start_deadline, on_start_deadline, (uint64_t)ch->lead_ms, 0);
	for (i = 0; i < ch->sc->nproviders && !ch->stopping; i++)
		launch_mock(ch, i, -1);
}

/* ---- the command ---- */

static void on_closed_quiet(uv_handle_t *h)
{
	(void)h;
}

/* The longest a stamp's name gets: 20261203T201731Z-99. */
#define STAMP_NAME_MAX 19

/*
 * Whether every path of the run (OUT/NAME/STAMP/SETUP/run-K.tmp/FILE, the
 * longest file a provider's mockprov-NAME.json.tmp or loadgen's
 * summary on its way to loadgen-summary.json.tmp) fits in PATH_MAX, so a
 * too long --out is refused at the start, not by each run's first file.
 * Returns the longest path's length.
 */
static size_t longest_path(const struct scenario *sc, const struct chaos_opts *o)
{
	size_t setup = 0;
	size_t file = sizeof("loadgen-summary.json.tmp") - 1;
	size_t i;
	char k[16];

	for (i = 0; i < sc->nsetups; i++) {
		if (strlen(sc->setups[i].name) > setup)
			setup = strlen(sc->setups[i].name);
	}
	for (i = 0; i < sc->nproviders; i++) {
		size_t n = sizeof("mockprov-.json.tmp") - 1 + strlen(sc->provider_names[i]);

		if (n > file)
			file = n;
	}
	snprintf(k, sizeof(k), "%u", o->repeat);
	if (o->into_stamp)
		setup += sizeof(RESTAMP_NEW_SUFFIX) - 1;
	return (o->stamp_dir ? strlen(o->stamp_dir) :
		strlen(o->out_dir) + 1 + strlen(sc->name) + 1 + STAMP_NAME_MAX) + 1 + setup +
	       sizeof("/run-.tmp/") - 1 + strlen(k) + file;
}

/*
 * Makes OUT/NAME/STAMP, a new one (STAMP-2… when taken), into
 * ch->stamp_dir; or the folder o->stamp_dir names, when it does.
 */
static int make_stamp_dir(struct chaos *ch)
{
	if (ch->o->stamp_dir) {
		ch->stamp_dir = strdup(ch->o->stamp_dir);
		return ch->stamp_dir ? stamp_mkdir_p(ch->stamp_dir) : -ENOMEM;
	}
	return stamp_make_new(ch->o->out_dir, ch->sc->name, "", &ch->stamp_dir);
}

/*
 * Keeps the scenario file in the stamp dir, so the results say what ran:
 * as written (unscaled), with its name stated, since the copy's file name
 * no longer gives it, and the setups of --add-setup files; into an
 * existing stamp, with the stamp's setups too (restamp_write_scenario).
 */
static int copy_scenario(const struct chaos *ch, char *err, size_t errlen)
{
	return restamp_write_scenario(ch->stamp_dir, ch->sc, ch->o->into_stamp, NULL, 0, err,
				      errlen);
}

/*
 * The stamp's plots (plot_summary), each setup's first completed run's
 * requests handed over as summarise kept them. Returns as plot_summary.
 */
static int plot_first_runs(const struct chaos *ch, const cJSON *summary, char *err,
			   bool *write_failed)
{
	const struct scenario *sc = ch->sc;
	struct plot_run *runs = calloc(sc->nsetups, sizeof(*runs));
	size_t n = 0;
	size_t i;
	int rc;

	if (!runs) {
		if (write_failed)
			*write_failed = false;
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < sc->nsetups; i++) {
		if (ch->first_k[i])
			runs[n++] = (struct plot_run){ sc->setups[i].name, ch->first_k[i],
						       &ch->first_rows[i] };
	}
	rc = plot_summary(ch->stamp_dir, sc, summary, runs, n, ch->o->plots_dir, err,
			  write_failed);
	free(runs);
	return rc;
}

/* Whether name is an executable file in one of $PATH's folders. */
static bool on_path(const char *name)
{
	const char *path = getenv("PATH");
	const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin";
	char full[PATH_MAX];

	while (*p) {
		size_t len = strcspn(p, ":");

		snprintf(full, sizeof(full), "%.*s/%s", (int)(len ? len : 1), len ? p : ".", name);
		if (access(full, X_OK) == 0)
			return true;
		p += len + (p[len] == ':');
	}
	return false;
}

/*
 * Whether every program the runs need besides faultline's own is there:
 * redis-server for a setup with shared_state redis. Returns 0, or -ENOENT
 * with err (CFG_ERR_LEN bytes) naming the setup.
 */
static int check_programs(const struct scenario *sc, const struct chaos_opts *o, char *err)
{
	size_t i;

	for (i = 0; i < sc->nsetups; i++) {
		const struct sc_setup *st = &sc->setups[i];

		if (!chaos_setup_selected(sc, o, i))
			continue;
		if (st->shared_redis && !on_path("redis-server")) {
			snprintf(err, CFG_ERR_LEN, "%.160s: setups[%zu] \"%.64s\": shared_state "
				 "\"redis\" needs redis-server (Debian's redis-server package), "
				 "and there is none on the PATH", sc->path, i, st->name);
			return -ENOENT;
		}
	}
	return 0;
}

bool chaos_setup_selected(const struct scenario *sc, const struct chaos_opts *o, size_t i)
{
	if (o->only_setup)
		return strcmp(o->only_setup, sc->setups[i].name) == 0;
	if (o->into_stamp && sc->nadded)
		return i >= sc->nsetups - sc->nadded;
	return true;
}

/*
 * Into an existing stamp, once the runs are over: summary.json and
 * report.md made again from every setup's per-request files (chaos
 * report's way), the table printed, the plots drawn again. Returns the
 * exit status it adds: 0, or 1 when a file could not be written.
 */
static int remake_stamp(struct chaos *ch)
{
	char err[CFG_ERR_LEN];
	bool write_failed = false;
	FILE *out = ch->o->no_table ? fopen("/dev/null", "w") : stdout;
	int rc;

	rc = report_command(ch->stamp_dir, out ? out : stdout);
	if (out && out != stdout)
		fclose(out);
	if (rc)
		return 1;
	if (ch->o->plots_dir && plot_stamp(ch->stamp_dir, ch->o->plots_dir, err, &write_failed))
		fprintf(stderr, "chaos: no plots: %s\n", err);
	if (!ch->o->no_table)
		printf("results: %s (report.md, summary.json, plots/)\n", ch->stamp_dir);
	return write_failed ? 1 : 0;
}

int chaos_run(const struct scenario *sc, const struct chaos_opts *o)
{
	struct chaos ch = { .sc = sc, .o = o };
	char err[CFG_ERR_LEN];
	sigset_t stops;
	sigset_t old_mask;
	char *path = NULL;
	size_t longest = longest_path(sc, o);
	size_t i;
	int rc;

	if (!o->sim && check_programs(sc, o, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		return 2;
	}
	if (longest >= PATH_MAX) {
		fprintf(stderr, "chaos: --out: %s is too long: the run's files would have paths of up "
			"to %zu bytes, and the system takes at most %d\n",
			o->stamp_dir ? o->stamp_dir : o->out_dir, longest, PATH_MAX - 1);
		return 2;
	}
	/* A simulated stamp is made again, byte for byte, in a moment: no fsync. */
	recfile_set_durable(!o->sim);

	ch.loop = uv_default_loop();
	ch.mocks = calloc(sc->nproviders, sizeof(*ch.mocks));
	ch.ports = calloc(sc->nproviders, sizeof(*ch.ports));
	ch.urls = calloc(sc->nproviders, sizeof(*ch.urls));
	ch.action_order = calloc(sc->nactions ? sc->nactions : 1, sizeof(*ch.action_order));
	if (ch.action_order)
		launch_plan_actions(sc, ch.action_order);
	ch.combined = cJSON_CreateObject();
	ch.first_rows = calloc(sc->nsetups, sizeof(*ch.first_rows));
	ch.first_k = calloc(sc->nsetups, sizeof(*ch.first_k));
	if (!ch.mocks || !ch.ports || !ch.urls || !ch.action_order || !ch.combined ||
	    !ch.first_rows || !ch.first_k) {
		fprintf(stderr, "chaos: out of memory\n");
		ch.exit_code = 1;
		goto out_free;
	}
	rc = make_stamp_dir(&ch);
	if (rc) {
		/* A name longer than the file system takes is a bad --out: exit 2. */
		fprintf(stderr, "chaos: %scannot make %s: %s\n", rc == -ENAMETOOLONG ? "--out: " : "",
			ch.stamp_dir ? ch.stamp_dir : o->out_dir, strerror(-rc));
		ch.exit_code = rc == -ENAMETOOLONG ? 2 : 1;
		goto out_free;
	}
	rc = copy_scenario(&ch, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "chaos: cannot copy %s into %s: %s\n", sc->path, ch.stamp_dir, err);
		ch.exit_code = 1;
		goto out_free;
	}
	if (curl_uv_init(&ch.cu, ch.loop, launch_on_poll_done)) {
		fprintf(stderr, "chaos: cannot set up libcurl\n");
		ch.exit_code = 1;
		goto out_free;
	}
	ch.cu.data = &ch;
	uv_timer_init(ch.loop, &ch.timer);
	uv_timer_init(ch.loop, &ch.watchdog);
	uv_timer_init(ch.loop, &ch.poll.timer);
	uv_timer_init(ch.loop, &ch.ender);
	uv_timer_init(ch.loop, &ch.start_deadline);
	uv_timer_init(ch.loop, &ch.progress);
	waketick_start(ch.loop, &ch.waketick);
	ch.progress.data = &ch;
	ch.tty = o->verbose && isatty(STDERR_FILENO);
	ch.timer.data = ch.watchdog.data = ch.poll.timer.data = ch.ender.data = &ch;
	ch.start_deadline.data = &ch;
	uv_signal_init(ch.loop, &ch.sigint);
	uv_signal_init(ch.loop, &ch.sigterm);
	uv_signal_init(ch.loop, &ch.sighup);
	ch.sigint.data = ch.sigterm.data = ch.sighup.data = &ch;
	uv_signal_start(&ch.sigint, on_signal, SIGINT);
	uv_signal_start(&ch.sigterm, on_signal, SIGTERM);
	/* The children have sessions of their own: a closed terminal reaches only us. */
	uv_signal_start(&ch.sighup, on_signal, SIGHUP);
	/* Signals and the watchdog do not keep the loop alive: the children and timers do. */
	uv_unref((uv_handle_t *)&ch.sigint);
	uv_unref((uv_handle_t *)&ch.sigterm);
	uv_unref((uv_handle_t *)&ch.sighup);
	uv_unref((uv_handle_t *)&ch.watchdog);

	run_next(&ch);
	uv_run(ch.loop, UV_RUN_DEFAULT);

	if (!ch.signal && ch.completed && o->into_stamp) {
		if (remake_stamp(&ch))
			ch.exit_code = 1;
	} else if (ch.signal && o->into_stamp && ch.nswapped) {
		/* Stopped after a setup was replaced: its summary no longer says what is there. */
		fprintf(stderr, "chaos: %s's summary.json and report.md predate the setups "
			"replaced before the stop: run chaos report %s\n", ch.stamp_dir,
			ch.stamp_dir);
	} else if (!ch.signal && ch.completed) {
		cJSON *top = cJSON_CreateObject();

		cJSON_AddStringToObject(top, "scenario", sc->name);
		cJSON_AddNumberToObject(top, "time_scale", sc->scale);
		cJSON_AddNumberToObject(top, "repeat", o->repeat);
		if (o->sim)
			cJSON_AddTrueToObject(top, "simulated");
		cJSON_AddItemToObject(top, "setups", ch.combined);
		ch.combined = NULL;
		path = buf_aprintf("%s/summary.json", ch.stamp_dir);
		if (!path)
			snprintf(err, sizeof(err), "cannot write %s/summary.json: out of memory",
				 ch.stamp_dir);
		if (!path || outfile_write_json(path, top, err, sizeof(err)) ||
		    report_write(ch.stamp_dir, sc, top, err)) {
			fprintf(stderr, "chaos: %s\n", err);
			ch.exit_code = 1;
		} else {
			bool write_failed = false;

			if (!o->no_table)
				report_table(stdout, sc, top, false);
			/*
			 * Plots help a person; a failure to draw them (no gnuplot) is
			 * said, not a failed run; a file that cannot be written is.
			 */
			if (o->plots_dir && plot_first_runs(&ch, top, err, &write_failed))
				fprintf(stderr, "chaos: no plots: %s\n", err);
			if (write_failed)
				ch.exit_code = 1;
			if (!o->no_table)
				printf("results: %s (report.md, summary.json, plots/)\n",
				       ch.stamp_dir);
			if (o->sim && o->verbose)
				sim_speed_line(&ch);
		}
		cJSON_Delete(top);
	}
	/*
	 * A signal that came while the results were written is in libuv's
	 * pipe: take it now, with the three blocked so that none comes between
	 * this and the handlers' closing (which sets them back to the default
	 * action) — it stays pending instead, answered below.
	 */
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, &old_mask);
	ch.over = true;
	/* Referenced, or the loop, with nothing else left alive, would not poll at all. */
	uv_ref((uv_handle_t *)&ch.sigint);
	uv_ref((uv_handle_t *)&ch.sigterm);
	uv_ref((uv_handle_t *)&ch.sighup);
	uv_run(ch.loop, UV_RUN_NOWAIT);
	uv_close((uv_handle_t *)&ch.sigint, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.sigterm, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.sighup, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.start_deadline, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.progress, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.timer, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.watchdog, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.poll.timer, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.ender, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.waketick, on_closed_quiet);
	curl_uv_close(&ch.cu, NULL);
	uv_run(ch.loop, UV_RUN_DEFAULT);
	if (ch.poll.easy)
		curl_easy_cleanup(ch.poll.easy);
	uv_loop_close(ch.loop);
out_free:
	free(path);
	free(ch.stamp_dir);
	free(ch.dir);
	free(ch.final_dir);
	free(ch.target);
	free(ch.redis_url);
	free(ch.key_prefix);
	free(ch.poll.url);
	buf_free(&ch.why);
	buf_free(&ch.log_error);
	buf_free(&ch.progress_line);
	free_runs(&ch);
	for (i = 0; ch.urls && i < sc->nproviders; i++)
		free(ch.urls[i]);
	free(ch.urls);
	free(ch.ports);
	free(ch.action_order);
	free(ch.mocks);
	cJSON_Delete(ch.combined);
	rundata_free(&ch.rows);
	for (i = 0; ch.first_rows && i < sc->nsetups; i++)
		rundata_free(&ch.first_rows[i]);
	free(ch.first_rows);
	free(ch.first_k);
	free(ch.swapped);
	if (ch.over && ch.late_signal && o->hold_signals)
		raise(ch.late_signal);	/* pending, blocked: the caller's */
	else if (ch.over && ch.late_signal && ch.exit_code == 0)
		ch.exit_code = 128 + ch.late_signal;
	if (ch.over && !o->hold_signals)
		sigprocmask(SIG_SETMASK, &old_mask, NULL);	/* one still pending acts now */
	recfile_set_durable(true);
	return ch.exit_code;
}
