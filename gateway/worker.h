/*
 * worker: one worker process of a gateway of several (workers: N) — its
 * end of the Unix socket to the supervisor's hub (hub.h), and what goes
 * over it: the breakers' store (shared.h: opens and closes told to the
 * other workers, the probe lock, the stored states read at start), the
 * health checks' verdicts (worker 1 checks, the others take its
 * verdicts), the retry budget's use (sent every WORKER_BUDGET_MS, the
 * others' added to this worker's copy of each alias's bucket), and the
 * whole gateway's /metrics and /admin/breakers (gathered from every
 * worker through the hub, gather.h). The messages are hubmsg.h's.
 */
#ifndef FAULTLINE_GATEWAY_WORKER_H
#define FAULTLINE_GATEWAY_WORKER_H

#include <stdbool.h>
#include <stddef.h>

#include "common/http_server.h"

struct gateway;
struct health;
struct shared;
struct worker;

/* How often a worker tells the others its budget use (and so their lag). */
#define WORKER_BUDGET_MS 50

/* A view of the whole gateway (worker_gather). */
enum worker_view {
	WORKER_VIEW_METRICS,	/* GET /metrics */
	WORKER_VIEW_BREAKERS,	/* GET /admin/breakers */
};

/*
 * Starts worker no (1 to n) of gw on fd, its socket to the hub (the
 * worker then owns it). on_lost(gw) runs, from the loop, if the hub goes
 * away (the supervisor died): the worker should drain and stop. Returns
 * the link, or NULL with a message in err (256 bytes).
 */
struct worker *worker_start(struct gateway *gw, int fd, unsigned no, unsigned n,
			    void (*on_lost)(struct gateway *gw), char *err);

/*
 * The breakers shared with the other workers through the hub (shared.h),
 * up at once. Returns it, or NULL with a message in err (256 bytes).
 */
struct shared *worker_shared(struct worker *w, char *err);

/* Tells the hub the worker serves (its listener is open). */
void worker_ready(struct worker *w);

/* Whether health checks run here (worker 1; the others take its verdicts). */
bool worker_checks(const struct worker *w);

/*
 * The health checker's verdict on provider after a check (ok: it passed;
 * st: the provider's health after it; slow: it failed by running out of
 * time), for the other workers.
 */
void worker_health(struct worker *w, size_t provider, bool ok, const struct health *st,
		   bool slow);

/*
 * Answers ex with view of the whole gateway: every worker's, asked through
 * the hub, and this one's, made whole (gather.h) once they are in (the hub
 * waits a second at most for a worker). HEAD gets the headers alone.
 */
void worker_gather(struct worker *w, struct http_exchange *ex, enum worker_view view);

/*
 * Closes the link (the loop must run for it to close): pending store
 * calls are told the store is lost, views still being gathered are not
 * answered. NULL is ignored.
 */
void worker_close(struct worker *w);

/* Frees w once the loop has closed its handles. NULL is ignored. */
void worker_free(struct worker *w);

#endif
