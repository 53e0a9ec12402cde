/*
 * provider: one mock provider at run time — its listener, its fault list
 * (the config's windows plus the ones injected through the admin API), the
 * requests in flight and its per-request log DIR/mock-NAME.csv.
 */
#ifndef FAULTLINE_PROVIDER_H
#define FAULTLINE_PROVIDER_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/clock.h"
#include "mockprov/config.h"
#include "mockprov/fault.h"
#include "common/http_server.h"
#include "common/list.h"
#include "common/recfile.h"
#include "common/rng.h"

/* What every provider of the process shares. */
struct mock_env {
	uv_loop_t *loop;
	struct timebase tb;
	const char *log_dir;
	uint64_t seed;
	struct http_server_config http;
	bool stopping;
};

struct mreq;
struct wire;

struct provider {
	uv_timer_t edge_timer;		/* the next `down` window edge */
	const struct provider_cfg *cfg;
	const struct wire *wire;	/* its dialect: what requests and answers look like */
	struct mock_env *env;
	struct http_server *srv;
	struct fault *faults;		/* injected first, then the config's */
	size_t nfaults;
	struct rng rng_faults;		/* fault probabilities of chat requests */
	struct rng rng_jitter;		/* ttft jitter */
	struct rng rng_models;		/* fault probabilities of model listings */
	uint64_t relisten_delay_ms;	/* backoff while the port cannot be had */
	struct recfile log;
	int log_err;			/* errno of the first failed log write; 0 while whole */
	struct row row;
	struct buf content;		/* the whole answer's text, built once */
	size_t *token_off;		/* token k is content[token_off[k] … token_off[k+1]) */
	struct list inflight;		/* requests not yet finished (struct mreq) */
	uint64_t seq;
	uint64_t n_requests;
	uint64_t n_completed;
	uint64_t n_aborted;
	uint64_t n_faulted;
	bool going_down;		/* closing connections for a `down` window */
	bool edge_timer_open;
	char addr_text[64];		/* the bound address, HOST:PORT */
};

/*
 * Starts a provider: opens its log, binds its listener (the port stays
 * reserved by the first bind) and arms its fault timeline. index seeds its
 * own random streams. Returns 0, or a negative code with a message in err
 * (CFG_ERR_LEN bytes); either way the caller ends with provider_stop (with
 * keep_log false after a failure), which releases what was made.
 */
int provider_start(struct provider *p, struct mock_env *env,
		   const struct provider_cfg *cfg, size_t index, char *err);

/*
 * Adds a fault (copied) in front of the list, as the admin API's injections
 * do, and applies a `down` at once. Injected faults that have expired are
 * dropped first. Returns 0 or -ENOMEM.
 */
int provider_inject(struct provider *p, const struct fault *f);

/*
 * Drops the injected faults whose window has ended (the config's stay), so
 * neither the admin API's listing nor memory grows with past injections.
 */
void provider_prune_faults(struct provider *p);

/* Removes every fault, scheduled and injected; a closed listener reopens. */
void provider_clear_faults(struct provider *p);

/*
 * Hands the rows written since the last call to the kernel (each loop
 * iteration), so a kill loses none. A failure is said once on stderr and
 * marks the log incomplete (see provider_stop).
 */
void provider_flush_log(struct provider *p);

/* Adds the provider's state (listener, counts, faults) to obj. */
void provider_state_json(const struct provider *p, cJSON *obj);

/*
 * Stops the provider: closes its listener and connections (requests still
 * open are logged), commits its log — or, without keep_log (a start that
 * failed), removes it; a log that a write failed on is closed under its
 * .tmp name instead — and releases its handles; done is called once all
 * are closed. Returns 0, or a negative errno when the log is not complete
 * under its final name.
 */
int provider_stop(struct provider *p, bool keep_log, void (*done)(void *arg), void *arg);

#endif
