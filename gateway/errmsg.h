/*
 * errmsg: the message of an error answer of the gateway's own — the
 * words a client reads in error.message — from the policy's action and the
 * request's attempts. Pure: respond.c sends it, the simulator (sim/gw.c)
 * records the same words.
 */
#ifndef FAULTLINE_GATEWAY_ERRMSG_H
#define FAULTLINE_GATEWAY_ERRMSG_H

#include "common/buf.h"
#include "gateway/config.h"
#include "gateway/policy.h"

/*
 * Appends to b the message for a (a POLICY_ANSWER) on a request of model
 * alias whose policy state is st: the deadline, no provider available or
 * every attempt failed, then each attempt ("P/M: outcome (HTTP s, N ms)");
 * or the overload (why names what was lacking; NULL: "unknown"), the full
 * or timed-out batch queue, the stopping gateway. Returns 0 or -ENOMEM.
 */
int errmsg_write(struct buf *b, const struct policy_action *a, const struct policy_state *st,
		 const struct gw_config *cfg, const char *alias, const char *why);

/* The 404's message for a model no alias names, the name cut to 128 bytes: into msg (len bytes). */
void errmsg_unknown_model(char *msg, size_t len, const char *model);

#endif
