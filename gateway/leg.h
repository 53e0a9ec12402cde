/*
 * leg: one upstream transfer of a chat request (leg.c).
 */
#ifndef FAULTLINE_GATEWAY_LEG_H
#define FAULTLINE_GATEWAY_LEG_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

#include "gateway/policy.h"

struct greq;
struct leg;

/*
 * Starts the attempt a POLICY_START action names, in its leg slot, with
 * its watchdog. Returns 0 when the transfer is out; else -ENOMEM or -EIO
 * (no transfer could be added): it is not counted, and when no other leg
 * is in flight the client has had its 500.
 */
int leg_start(struct greq *g, const struct policy_action *a);

/*
 * Counts what l holds of its upstream answer (the body, or the events not
 * yet written) in the gateway's buffered bytes. Returns false when that
 * takes them past upstream_body_budget_bytes.
 */
bool leg_hold(struct leg *l);

/* The leg's transfer is off curl: off in the policy, and nothing held against the budget. */
void leg_off(struct leg *l);

/*
 * The facts of l's ended transfer (code: curl's result) at now, into *r,
 * and a 2xx completion's usage into *tin, *tout. Returns why the gateway
 * itself could not carry it (r->local), or NULL.
 */
const char *leg_result(struct leg *l, CURLcode code, double now, struct policy_result *r,
		       int64_t *tin, int64_t *tout);

/*
 * Counts a leg whose transfer is over (leg_off) without a result of its
 * own: cancelled, billed for what it had cost; a loser (lost: another leg
 * won) goes to the policy as such, any other just gives its probe back.
 */
void leg_cancelled(struct leg *l, bool lost);

/* Takes back a leg still in flight (outside libcurl's callbacks), as leg_cancelled says. */
void leg_cancel(struct leg *l, bool lost);

/* Marks l lost and takes it back at the next loop turn (from inside libcurl). */
void leg_doom(struct leg *l);

/* Gives a leg's easy handle back once its transfer is over. */
void leg_put(struct leg *l);

#endif
