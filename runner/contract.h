/*
 * contract: broken answers — completions that came back 200 and well
 * formed but broke the request's response_format (mockprov's bad_content
 * fault) — from a run's loaded records (runner/rundata.h): how many a
 * provider sent, how many reached the client, and how many the gateway
 * caught, by its log (events.jsonl's contract_violation lines) and by the
 * difference. Pure: rows in, numbers out; no files, no clock.
 *
 * Which upstream answer a client got is not recorded anywhere; it follows
 * from the join of the mock logs with requests.csv: the answering row of
 * an ok request is the last chat row (by time) for its id at the provider
 * its provider column names (empty: the caller's primary — a direct
 * setup's provider). A degraded answer (runner/rundata.h's run_degraded)
 * came from no provider and has no answering row.
 */
#ifndef FAULTLINE_RUNNER_CONTRACT_H
#define FAULTLINE_RUNNER_CONTRACT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "runner/rundata.h"

/*
 * Marks each request of d whose answer broke the contract (run_req's
 * broken): an ok, not degraded request whose answering row (above; an
 * empty provider column meaning primary) has bad_content.
 */
void contract_mark_broken(struct rundata *d, const char *primary);

/* The requests a range's contract figures are over. */
struct contract_range {
	size_t r0, r1;		/* the range's requests: d->reqs[r0, r1) */
	double from_ms, to_ms;	/* the range, for violation lines joined to no request */
	const char *primary;	/* where an ok request with an empty provider went */
	/* Whether request r counts (a class or stream filter); NULL: every one. */
	bool (*counted)(const void *arg, const struct run_req *r);
	const void *arg;
};

/*
 * The "contract" block of one range, added to o:
 *   {"violations":  chat rows (not checks) of the range's counted requests
 *                   whose fault names bad_content, any provider, any time,
 *    "reached_clients": the range's counted requests marked broken,
 *    "caught":      violations − reached_clients,
 *    "gateway_violations": contract_violation lines of the range's counted
 *                   requests (joined on request_id; a line joined to none
 *                   counts by its time, and only with no filter) — null
 *                   when the run's files hold no such line at all,
 *    "by_provider": {NAME: {"violations", "reached_clients", "caught",
 *                   "gateway_violations"}} — every provider with a log, 0
 *                   included, then any other a line names}
 * Returns false when out of memory.
 */
bool contract_figures(const struct rundata *d, const struct contract_range *rg, cJSON *o);

#endif
