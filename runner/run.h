/*
 * run: `chaos run` — replays a scenario's timeline through each of its
 * setups in turn (and each repeat), on one libuv loop: the providers (one
 * mockprov process each, so a `kill` takes down one provider), the setup
 * (our gateway, another gateway, or nothing for direct calls), loadgen on
 * the shared t0, the scenario's kill/restart actions at their times; then
 * stops everything, computes the run's summary from its per-request files
 * and renames the run's directory from `run-K.tmp` to `run-K`.
 */
#ifndef FAULTLINE_RUNNER_RUN_H
#define FAULTLINE_RUNNER_RUN_H

#include <stdbool.h>

#include "runner/scenario.h"

/* How long before t0 the runner starts a run's processes. */
#define CHAOS_LEAD_MS 2000

struct chaos_opts {
	const char *out_dir;		/* results root ("results") */
	const char *bin_dir;		/* where mockprov, gateway and loadgen are */
	const char *plots_dir;		/* the gnuplot scripts; NULL: no plots */
	const char *only_setup;		/* NULL: every setup */
	unsigned repeat;		/* runs per setup, ≥ 1 */
	bool verbose;			/* a line per run on stderr */
	const char *stamp_dir;		/* the stamp's folder (made when missing); NULL: a
					 * new OUT/NAME/STAMP (a sweep's points give theirs) */
	bool into_stamp;		/* stamp_dir is an existing stamp (--stamp, checked with
					 * restamp_check): each setup run replaces its folder
					 * once its runs are whole, scenario.json becomes the
					 * union of setups, and summary.json, report.md and
					 * plots/ are made again from every setup's files */
	bool no_table;			/* the table and "results:" line not printed on stdout */
	bool sim;			/* simulate each run (sim/world.h) instead of running it */
	bool hold_signals;		/* SIGINT, SIGTERM and SIGHUP left blocked on return,
					 * one that came once the results were whole left
					 * pending: the caller (a sweep) takes them */
};

/*
 * Runs the scenario. Writes OUT/NAME/STAMP/SETUP/run-K/ for each run and
 * OUT/NAME/STAMP/summary.json (every setup's runs combined), and prints
 * the table and where they are (not with o->no_table); with o->stamp_dir,
 * that folder is the stamp instead of a new OUT/NAME/STAMP, and with
 * o->into_stamp its other setups' results stay (see the field). Returns the exit status: 0 when every run completed, 1
 * when one failed (a child crashed, a setup never became ready, a file of
 * it could not be written…: said on stderr with the child's last stderr
 * lines; that run's directory stays run-K.tmp) or a file of the stamp
 * could not be written (left as FILE.tmp), 2 when o->out_dir is too long
 * for the run's paths (said on stderr, nothing made), 130 after SIGINT and
 * 143 after SIGTERM (every child stopped, no run left half-renamed). A
 * signal that comes once the results are whole (while the summary, report
 * and plots are written) leaves them whole and is answered after: 128 + N,
 * or with o->hold_signals, left pending and blocked for the caller.
 */
int chaos_run(const struct scenario *sc, const struct chaos_opts *o);

/*
 * Whether chaos_run runs setup i of sc: --setup's alone when given; into
 * an existing stamp with setups added from files, those alone; else every
 * one (chaos sim then leaves out external setups).
 */
bool chaos_setup_selected(const struct scenario *sc, const struct chaos_opts *o, size_t i);

#endif
