/*
 * proxy: the steps of a chat request that the other shell files hand back
 * to proxy.c, where the policy's decisions are carried out.
 */
#ifndef FAULTLINE_GATEWAY_PROXY_H
#define FAULTLINE_GATEWAY_PROXY_H

#include <curl/curl.h>

#include "gateway/policy.h"

struct greq;
struct leg;

/*
 * Carries out a policy action for g: starts an attempt (and arms its
 * hedge), waits out a backoff, joins the queue, or answers; why says what
 * a gateway_overloaded answer lacked (NULL otherwise).
 */
void proxy_act(struct greq *g, const struct policy_action *a, const char *why);

/* A leg's transfer ended (code): curl finished it, or its watchdog cut it. */
void proxy_leg_end(struct leg *l, CURLcode code);

#endif
