/*
 * run_int: what runner/run.c (a run's sequence, its stop, its folder and
 * results) and runner/launch.c (the processes of a run: starting them,
 * their readiness, their lines and exits) share and no one else uses: the
 * run's state, struct chaos, with its children, and the functions each
 * file calls in the other. run__ names are run.c's, launch_ names
 * launch.c's.
 */
#ifndef FAULTLINE_RUNNER_RUN_INT_H
#define FAULTLINE_RUNNER_RUN_INT_H

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/curl_uv.h"
#include "runner/proc.h"
#include "runner/run.h"
#include "runner/rundata.h"
#include "runner/scenario.h"
#include "sim/world.h"

#define READY_TIMEOUT_MS 30000		/* a child's "ready", a URL's 2xx */
#define LOAD_MARGIN_MS 50		/* loadgen starts at least this long before t0 */
#define CLOCK_STEP_MS 20		/* a wall-clock step this large is said (child_t0) */

enum role { ROLE_MOCK, ROLE_SETUP, ROLE_LOAD, ROLE_REDIS };

/* Why a child was signalled, which decides what exit is right for it. */
enum stop_kind {
	STOP_NONE,			/* not signalled: it must not exit (loadgen: with 0) */
	STOP_ACTION,			/* a kill action: any exit */
	STOP_END,			/* the run's stop: programs exit 0 after SIGTERM */
};

struct chaos;

/* One child of a run (its process, once started, lives in p until closed). */
struct child {
	struct proc *p;			/* NULL: not started, or closed */
	struct chaos *ch;
	enum role role;
	size_t index;			/* ROLE_MOCK: the provider; ROLE_SETUP: the replica, from 0 */
	pid_t pgid;			/* its process group, kept after it exits */
	bool ready;
	bool said_ready;		/* ROLE_SETUP: its "ready" line came, /healthz not yet polled */
	enum stop_kind stop;
	bool restart_pending;		/* a restart action waits for the kill's exit */
	double listen_at_ms;		/* ...whose process listens then (t0 time base) */
	bool killed;			/* down by a kill action, not restarted */
	bool sigkilled;			/* the stop had to SIGKILL its group */
	char addr[128];			/* HOST:PORT it printed */
};

/* A readiness poll: GET url until a 2xx, or the deadline. */
struct poller {
	uv_timer_t timer;
	CURL *easy;
	char *url;
	uint64_t deadline_ns;
	bool in_flight;
	void (*done)(struct chaos *ch, bool ok);
};

/* One `chaos run`: its loop, its options, and the run (setup, repeat) in progress. */
struct chaos {
	uv_loop_t *loop;
	bool over;			/* the results are whole: a signal now is late */
	int late_signal;		/* one that came then; 0: none */
	const struct scenario *sc;
	const struct chaos_opts *o;
	struct curl_uv cu;
	uv_signal_t sigint;
	uv_signal_t sigterm;
	uv_signal_t sighup;
	uv_timer_t timer;		/* actions; while stopping, the stop's poll */
	uv_timer_t start_deadline;	/* at t0: everything must be ready */
	uv_timer_t progress;		/* redraws the progress line */
	bool tty;			/* stderr is a terminal: draw it */
	long progress_off;		/* read so far of requests.csv.tmp */
	uint64_t progress_rows;
	uint64_t progress_errors;
	bool progress_header;		/* the CSV header has been passed */
	struct buf progress_line;	/* a row not yet whole */
	bool progress_drawn;
	uint64_t stop_ns;		/* when the stop began */
	bool sent_sigkill;
	unsigned completed;		/* runs that completed */
	unsigned setup_completed;	/* ...of the setup in progress */
	const char **swapped;		/* into a stamp: the setups whose folders were replaced */
	size_t nswapped;
	uv_timer_t watchdog;		/* the whole run's deadline */
	uv_timer_t waketick;		/* bounds the kernel's timer slack (waketick.h) */
	uv_timer_t ender;		/* runs run_end from the loop, never from a caller */
	struct poller poll;
	int signal;			/* that stopped everything; 0: none */
	int exit_code;

	char *stamp_dir;		/* OUT/NAME/STAMP */

	/* The run in progress. */
	const struct sc_setup *st;
	size_t setup_index;
	unsigned k;			/* repeat, from 1 */
	char *dir;			/* STAMP/SETUP/run-K.tmp (into a stamp: SETUP.new~) */
	char *final_dir;		/* STAMP/SETUP/run-K */
	int64_t t0;
	double lead_ms;			/* from the run's start to t0 */
	int64_t clock_step_said;	/* the wall clock's step last said (child_t0); 0: none */
	struct timebase tb;		/* t0's, for the actions' timer */
	struct sim_stats sim;		/* the simulated runs', added up */
	uint64_t sim_ns;		/* the wall time they took (sim_run alone) */
	struct child *mocks;		/* one per provider */
	int *ports;
	char **urls;			/* http://HOST:PORT/v1 per provider */
	size_t mocks_ready;
	size_t healthz_next;		/* the provider being polled */
	/*
	 * The setup's processes: one for a gateway (setup[K-1] its replica K
	 * when it has several) or an external setup, none for a direct one.
	 */
	struct child setup[SC_REPLICAS_MAX];
	size_t nsetup;			/* of setup[] in use this run */
	size_t setup_lines;		/* replicas whose "ready" line came (they boot at once) */
	size_t setup_next;		/* the replica whose /healthz is polled (one by one) */
	int ext_port;			/* an external setup's {port}; 0: none yet */
	struct child redis;		/* shared_state redis: the run's redis-server */
	int redis_port;			/* its port, kept for a restart; 0: none */
	char *redis_url;		/* redis://127.0.0.1:PORT/0 */
	char *key_prefix;		/* faultline:RUN: — the run's own keys */
	struct child load;
	char *target;			/* loadgen's --target (not replicated); NULL: not known yet */
	size_t *action_order;		/* the scenario's actions as carried out (launch_plan_actions) */
	size_t next_action;		/* into action_order */
	bool stopping;
	bool failed;
	struct buf why;			/* why the run failed */
	bool log_failed;		/* a child's log could not be written */
	struct buf log_error;		/* the first such: what, and why */
	cJSON **runs;			/* this setup's summaries so far */
	size_t nruns;
	cJSON *combined;		/* setup name → stats_combine */

	/*
	 * The requests of each setup's first completed run, loaded once for
	 * its summary and kept for the plots (plot_summary): rows is the run
	 * in progress's, first_rows[i] / first_k[i] setup i's (first_k 0:
	 * none yet).
	 */
	struct rundata rows;
	struct rundata *first_rows;
	unsigned *first_k;
};

/* ---- run.c ---- */

/*
 * Fails the run in progress — the first reason given is the one said —
 * and stops it (run__stop).
 */
void run__fail(struct chaos *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Every child's group gets SIGTERM; the run ends once they are gone. */
void run__stop(struct chaos *ch);


/* ---- launch.c ---- */

/* Closes the child's process (which has exited); its memory goes when closed. */
void launch_child_close(struct child *c);

/*
 * Signals the child's whole group, whether or not the child itself is
 * still there: what it started (a wrapper's server, workers) must go too.
 * why says which exit is then right for it.
 */
void launch_child_stop(struct child *c, int sig, enum stop_kind why);

/* Whether any process of the child's group is left (its leader may have gone). */
bool launch_group_alive(const struct child *c);

/* Whether anything of the run is left: a child not yet reaped, or a process of a group. */
bool launch_any_left(const struct chaos *ch);

/*
 * Starts provider i's mockprov (on ch->ports[i] when known), its config
 * written first; it listens at listen_at_ms on the t0 time base (a
 * restart's time), or at once when that is negative.
 */
void launch_mock(struct chaos *ch, size_t i, double listen_at_ms);

/*
 * How long before a restart's time its process is started (wall time,
 * never scaled), so that it is ready to listen at the time itself.
 */
#define RESTART_LEAD_MS 500.0

/*
 * The order the scenario's actions are carried out in, by the time each
 * is (a restart's process RESTART_LEAD_MS early, never before the kill it
 * follows), ties in the scenario's order: sc->nactions indices into order.
 */
void launch_plan_actions(const struct scenario *sc, size_t *order);

/*
 * Fails the run because the external setup has not answered its
 * ready_url by t0: the message names the URL and ready_ms, with the
 * setup's last stderr lines.
 */
void launch_external_late(struct chaos *ch);

/*
 * What the run still waits for before loadgen can start (the step a
 * missed t0 is stuck at), said onto out: "waiting for provider p's
 * /healthz (http://…)", "waiting for the setup's ready_url …". Returns the
 * child waited for (its stderr tail says why), or NULL.
 */
const struct child *launch_pending_step(struct chaos *ch, struct buf *out);

/* A port free on 127.0.0.1 now, for an external gateway's {port}; -1 when none. */
int launch_free_port(void);

/* curl_uv's callback for the run's one kind of transfer: a readiness poll. */
void launch_on_poll_done(struct curl_uv *cu, CURL *easy, CURLcode code);

/* Clears the terminal's progress line, if it is drawn. */
void launch_progress_clear(struct chaos *ch);

/*
 * Every child of the run — providers, the setup's processes, Redis,
 * loadgen — in turn: fn(c, arg) for each (started or not).
 */
void launch_each_child(struct chaos *ch, void (*fn)(struct child *c, void *arg), void *arg);

/* What a child is called in messages: "mockprov primary", "gateway r2", "redis-server"… */
void launch_child_name(const struct chaos *ch, const struct child *c, char *out, size_t len);

/*
 * Fails the run with the child's last stderr lines, kept in memory: they
 * are there even when its log (named for the rest) could not be written.
 */
void launch_fail_with_tail(struct chaos *ch, const struct child *c, const char *what);

#endif
