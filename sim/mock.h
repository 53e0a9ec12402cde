/*
 * mock: a mock provider in the simulation — mockprov's own fault decisions
 * (mockprov/fault.c) and timing plans (mockprov/timing.c), drawn from the
 * same seeded streams mockprov draws from, answering modelled calls
 * (sim/call.h) in virtual time, and its log, mock-NAME.csv, in mockprov's
 * columns (common/records.h). A kill resets the calls in flight and
 * refuses new ones until the restart, which starts the process's state
 * over (its random streams and rate-limit budgets) and continues the log;
 * a down window closes the listener (refusing connections, resetting
 * those in flight) and opens it again at its edges, as mockprov does —
 * on its edge timer, as late as the machine's timers are, so a request
 * that comes in between is read and reset as a `down` fault.
 *
 * Planned times (a token, a whole answer) come as late as the machine's
 * timers do (call_timer_fire: mockprov's libuv timers fire on the loop's
 * millisecond ticks, and a little after). What is simpler than
 * mockprov (docs/chaos.md): a reset fault's byte budget is judged against
 * sizes estimated per token; a slow client never holds a stream back.
 */
#ifndef FAULTLINE_SIM_MOCK_H
#define FAULTLINE_SIM_MOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/list.h"
#include "common/recfile.h"
#include "common/rng.h"
#include "mockprov/config.h"
#include "mockprov/fault.h"
#include "sim/call.h"
#include "sim/evq.h"

struct sim_mock {
	struct sim_server srv;		/* its calls' server (first: the call's server is this) */
	struct evq *q;
	const struct provider_cfg *cfg;
	uint64_t seed;
	struct fault *faults;		/* the config's, with their rate-limit state */
	struct rng rng_faults;
	struct rng rng_jitter;
	struct rng rng_models;
	bool killed;
	struct sim_timer edge;		/* the next down window's edge, as late as a timer is */
	double edge_at;			/* the edge it is armed for */
	bool listening;			/* the listener is open (a down window closes it at its edge) */
	struct sim_timer boot;		/* a restart's: it listens again */
	struct sim_clock clock;		/* its timers' lateness (the machine's, not mockprov's streams) */
	char *dir;			/* the run's folder, for its log */
	struct list inflight;		/* struct sim_mreq */
	struct recfile log;
	struct row row;
	int log_err;			/* the errno a log write failed with; 0: none */
	uint64_t requests;		/* chat completions answered or not, for the speed figure */
};

/*
 * Starts provider cfg (kept, not copied) at the queue's now, its log
 * DIR/mock-NAME.csv.tmp opened (or continued, after a kill). Its timers
 * (planned answers and tokens, down windows' edges) fire as clock says. Returns 0 or
 * a negative errno with the reason in err (CFG_ERR_LEN bytes).
 */
int mock_start(struct sim_mock *m, struct evq *q, const struct provider_cfg *cfg,
	       uint64_t seed, const struct sim_clock *clock, const char *dir, char *err);

/* The process is killed: every call in flight is reset, unlogged; nothing listens. */
void mock_kill(struct sim_mock *m);

/*
 * The process starts again after a kill, listening after_ms later (until
 * then it refuses): its state anew, its log continued. Returns 0, or a
 * negative errno with the reason in err (memory).
 */
int mock_restart(struct sim_mock *m, double after_ms, char *err);

/*
 * The run is over: the calls still in flight end as a stopped mockprov's
 * do, and the log is renamed into place (a killed one's too: the runner
 * finishes it). Returns 0 or a negative errno with the reason in err.
 */
int mock_finish(struct sim_mock *m, char *err);

/* Frees what m holds (after mock_finish, or on an error path). */
void mock_free(struct sim_mock *m);

#endif
