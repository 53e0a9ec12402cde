/*
 * respond: every answer a chat request gets from the gateway — an
 * upstream's answer passed on, or an error body of the gateway's own
 * (OpenAI's four fields, and the attempts made) — with the headers every
 * chat answer carries; each ends the request (greq_finish).
 */
#ifndef FAULTLINE_GATEWAY_RESPOND_H
#define FAULTLINE_GATEWAY_RESPOND_H

#include <stddef.h>

#include "common/numfmt.h"
#include "common/http_server.h"
#include "gateway/policy.h"

struct gateway;
struct greq;
struct gw_route;
struct gw_target;

/*
 * Puts the headers every chat answer carries into h — x-request-id,
 * x-faultline-attempts (written into attempts, NUMFMT_LEN bytes) and -hedged — and
 * returns how many.
 */
size_t respond_headers(const struct greq *g, struct http_kv *h, char *attempts);

/*
 * Sends an answer with the gateway's headers (x-faultline-provider only
 * when an upstream answered, the cost when some attempt was billed) and
 * ends the request.
 */
void respond(struct greq *g, int status, const char *ctype, const char *body, size_t len,
	     const struct gw_target *answered);

/* A 500 for a request that ran out of memory, or whose transfer could not start. */
void respond_oom(struct greq *g);
void respond_no_transfer(struct greq *g);

/*
 * Answers a POLICY_ANSWER action: the error body it names, with its
 * Retry-After; why says what a gateway_overloaded lacked.
 */
void respond_error(struct greq *g, const struct policy_action *a, const char *why);

/*
 * The client's error for a request refused before any attempt, with the
 * headers every chat answer has; counted under its alias when known.
 */
void respond_refuse(struct gateway *gw, struct http_exchange *ex, struct gw_route *route,
		    const char *id, int status, const char *msg, const char *param,
		    const char *code);

#endif
