/*
 * hub: a workers gateway's supervisor as the hub of its workers — one
 * Unix socket to each (hubmsg.h's frames), over which it keeps what the
 * workers share: the breakers' store (each target's last change, kept
 * until its expiry, told to every other worker as it comes; the probe
 * locks, taken only when free, expiring, and freed at once when their
 * holder dies), the health checker's verdicts and the budgets' use
 * (handed to every other worker), and views of the whole gateway (a
 * worker's gather: every other worker asked for its view, the answers
 * handed back together once all are in, or after HUB_GATHER_MS).
 */
#ifndef FAULTLINE_GATEWAY_HUB_H
#define FAULTLINE_GATEWAY_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/list.h"

/* How long a gather waits for the other workers' views. */
#define HUB_GATHER_MS 1000

struct hub_conn;

/* What the hub tells its owner. */
struct hub_ops {
	void (*on_ready)(void *arg, unsigned no);	/* worker no is serving */
};

struct hub {
	uv_loop_t *loop;
	unsigned n;			/* workers, numbered 1 to n */
	struct hub_conn **conn;		/* each worker's socket, by no - 1; NULL: none */
	uint64_t *restarts;		/* each worker's sockets after its first */
	uint64_t *attached;		/* each worker's sockets so far */
	struct hub_ops ops;
	void *arg;
	struct hub_entry *entries;	/* the store's values */
	size_t nentries;
	size_t capentries;
	struct hub_lock *locks;		/* the probe locks held */
	size_t nlocks;
	size_t caplocks;
	struct list gathers;		/* struct hub_gather, oldest first */
	uint64_t next_gid;
	uv_timer_t gather_timer;	/* the oldest gather's end */
	uint64_t relayed;		/* messages handed on */
	bool closed;
};

/* Sets up h for n workers on loop. Returns 0 or -ENOMEM. */
int hub_init(struct hub *h, uv_loop_t *loop, unsigned n, const struct hub_ops *ops, void *arg);

/*
 * Worker no's socket (a new worker, or one started again): the hub reads
 * and writes fd from now on (and owns it). A socket the worker had
 * before is dropped first (hub_detach). Returns 0 or a libuv error code
 * (fd then closed).
 */
int hub_attach(struct hub *h, unsigned no, int fd);

/*
 * Worker no is gone (it exited): its socket is closed, the probe locks it
 * held are free at once, gathers stop waiting for it, and its own are
 * dropped. Nothing when it has none.
 */
void hub_detach(struct hub *h, unsigned no);

/*
 * The supervisor's lines of /metrics: faultline_workers, and per worker
 * faultline_worker_up (1: it answered the gather of answered[no - 1]) and
 * faultline_worker_restarts_total. Returns 0 or -ENOMEM.
 */
int hub_metrics(const struct hub *h, const bool *answered, struct buf *b);

/* Closes every socket and the timer (the loop must run for them to close). */
void hub_close(struct hub *h);

/* Frees what h holds once the loop has closed its handles. */
void hub_free(struct hub *h);

#endif
