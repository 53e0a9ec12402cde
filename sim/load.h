/*
 * load: loadgen in the simulation — its schedule (loadgen/schedule.c),
 * its streams and their draws (loadgen/mix.c), its per-attempt watchdog
 * (--timeout to the first token or answer, --stall-timeout after it,
 * --max-time in all), its outcomes and retries (loadgen/outcome.c,
 * common/backoff.c), a closed loop's think after an error
 * (sched_closed_free_at) and its records (loadgen/record.c: requests.csv,
 * requests.jsonl and summary.json), sending modelled calls to one server.
 */
#ifndef FAULTLINE_SIM_LOAD_H
#define FAULTLINE_SIM_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"
#include "loadgen/record.h"
#include "loadgen/run.h"
#include "loadgen/schedule.h"
#include "sim/call.h"
#include "sim/evq.h"

struct sim_lreq;

struct sim_load {
	const struct lg_config *cfg;
	struct evq *q;
	const struct sim_net *net;
	struct sim_server *target;
	struct sched sched;
	struct rng rng_stream;
	struct rng rng_retry;
	struct recorder rec;
	const char **stream_names;
	struct sim_timer next;		/* the next arrival, or closed-loop client's start */
	struct sim_lreq **slots;	/* every request slot made */
	struct sim_lreq **idle;		/* of them, the free ones */
	size_t nidle;
	size_t nslots;
	size_t maxslots;
	size_t in_flight;
	size_t thinking;		/* closed loop: clients in --error-think (not in flight) */
	int64_t clients;		/* closed loop: clients begun (ramp-up) */
	uint64_t next_n;
	uint64_t started_in_window;
	uint64_t delayed;		/* sent late for want of a free slot */
	bool starved;
	bool over;			/* no more requests will start */
	int write_err;			/* the errno a record write failed with; 0: none */
};

/*
 * Starts the load of cfg (kept) against target at the queue's now (t0 =
 * 0), its records opened in cfg->out_dir. Returns 0 or a negative errno
 * with the reason in err.
 */
int load_start(struct sim_load *l, const struct lg_config *cfg, struct evq *q,
	       const struct sim_net *net, struct sim_server *target, char *err, size_t errlen);

/* Whether every request has been sent and recorded. */
bool load_done(const struct sim_load *l);

/*
 * Writes summary.json and renames the records into place (t0_unix_ms:
 * what the summary says t0 was). Returns 0 or a negative errno with the
 * reason in err.
 */
int load_finish(struct sim_load *l, char *err, size_t errlen);

/* Frees what l holds. */
void load_free(struct sim_load *l);

#endif
