/*
 * probe: the providers' active health checks — a timer per provider with
 * a health_check, its transfer on the gateway's health curl_uv, and the
 * breaker trips and wakes its verdicts cause.
 */
#ifndef FAULTLINE_GATEWAY_PROBE_H
#define FAULTLINE_GATEWAY_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/curl_uv.h"

struct gateway;
struct probe;

/* Starts a health check timer for every provider that has one. Returns 0 or -ENOMEM. */
int probe_start_all(struct gateway *gw);

/* hcu's on_done: a health check ended. */
void probe_on_done(struct curl_uv *cu, CURL *easy, CURLcode result);

/* Stops every check (its transfer taken back) and closes the timers. */
void probe_close_all(struct gateway *gw);

/*
 * Another worker's health check of provider (worker.h): its verdict
 * (healthy), whether it failed by running out of time (slow), and the
 * checks in a row that failed and passed, taken as this worker's own —
 * for routing and /metrics; the breakers it moved come through the
 * shared breakers.
 */
void probe_mirror(struct gateway *gw, size_t provider, bool healthy, bool slow, unsigned fails,
		  unsigned passes);

/* Whether the probe's provider is healthy now, and which provider it is. */
bool probe_healthy(const struct probe *p);
size_t probe_provider(const struct probe *p);

#endif
