/*
 * replicas: the figures of a gateway setup run as replicas — several
 * gateway processes, loadgen sending to each in turn, each writing its
 * own events-rK.jsonl — from a run's loaded records (runner/rundata.h):
 * the requests that waited out the primary's per-attempt timeout, per
 * replica and in all; each replica's breaker transitions and first
 * opening; the spread of those openings; and the recovery probes that
 * overlapped. Pure: rows in, numbers out; no files, no clock.
 *
 * Which replica a request went to is not recorded anywhere: it follows
 * from loadgen's documented round robin (docs/loadgen.md, --target:
 * request N to target (N − 1) mod R + 1), N being the number that ends
 * the request's id (loadgen's --id-prefix, then N). A client retry goes
 * to the same target.
 */
#ifndef FAULTLINE_RUNNER_REPLICAS_H
#define FAULTLINE_RUNNER_REPLICAS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "runner/rundata.h"

/* Of a primary row's dur_ms, the share of the timeout that counts as waiting it out. */
#define REPLICAS_TIMEOUT_SHARE 0.95

/*
 * The replica (1..nreplicas) request id went to: its trailing number N,
 * (N − 1) mod nreplicas + 1. 0 when the id ends in no number or
 * nreplicas is 0.
 */
unsigned replicas_of_request(const char *id, unsigned nreplicas);

/*
 * Whether a mock row is an attempt that waited out a per-attempt timeout
 * of timeout_ms: a user's chat row (not a health check) that got no
 * status line (status 0) and lasted at least REPLICAS_TIMEOUT_SHARE of
 * the timeout (the gateway gave up on it, and the provider saw the close
 * a moment later). False when timeout_ms is not a number above 0.
 */
bool replicas_row_paid_timeout(const struct run_mrow *m, double timeout_ms);

/*
 * Marks each request of d that paid the primary's timeout (run_req's
 * paid_timeout): a row of the primary's log (provider primary) for it
 * passes replicas_row_paid_timeout.
 */
void replicas_mark_paid(struct rundata *d, const char *primary, double timeout_ms);

/*
 * The time from the first replica's first breaker opening (an event to
 * "open", local or remote, any provider, as time_to_open_ms counts them)
 * within events[0, n) to the last replica's first, over replicas
 * 1..nreplicas; NAN when some replica has none (or nreplicas < 1).
 */
double replicas_open_spread(const struct run_event *events, size_t n, unsigned nreplicas);

/*
 * The recovery probes that overlapped: each interval a replica's breaker
 * spent half-open by its own (local) change — from an event to
 * "half_open" whose origin is local (or not given) to that replica's next
 * event of the same provider and model, or for ever — is compared with
 * every other replica's of the same provider and model; pairs that
 * overlap are counted. all[0, nall) is every event of the run (sorted by
 * time), which the intervals' ends are found in; only intervals that
 * start within [from_ms, to_ms) count.
 */
size_t replicas_probe_overlaps(const struct run_event *all, size_t nall, double from_ms,
			       double to_ms);

/*
 * The replica figures of one range, added to o: "timeout_paid" (requests
 * reqs[0, nreqs) marked paid), "replica_open_spread_ms"
 * (replicas_open_spread over events[0, nev), null when none),
 * "probe_overlaps", and "replicas": {"rK": {"requests", "timeout_paid",
 * "transitions", "opens", "time_to_open_ms"}} per replica (the time from
 * origin_ms to its first opening, null when none). Returns false when out
 * of memory.
 */
bool replicas_figures(const struct rundata *d, const struct run_req *reqs, size_t nreqs,
		      const struct run_event *events, size_t nev, unsigned nreplicas,
		      double from_ms, double to_ms, double origin_ms, cJSON *o);

#endif
