/*
 * gather: a workers gateway's views of itself made whole, whichever worker
 * a client's connection landed on — every worker's /metrics text summed
 * into one, and their /admin/breakers documents into one. Pure: texts in,
 * text out.
 */
#ifndef FAULTLINE_GATEWAY_GATHER_H
#define FAULTLINE_GATEWAY_GATHER_H

#include <stddef.h>

#include "common/buf.h"

/* One worker's view. */
struct gather_part {
	unsigned worker;	/* 1 to N */
	const char *text;	/* NUL-terminated; NULL: none */
};

/*
 * The Prometheus text of the whole gateway from parts[0..n) (parts[0]:
 * the worker answering), into out: each sample of a counter or histogram
 * is the sum of the workers' samples with the same name and labels (a
 * series only some workers have is summed over those), and so is each
 * gauge's, but for the gauges that say a state every worker shares
 * (gather_state_gauges) — the answering worker's value (the first part
 * that has it), or for faultline_shared_state_up the lowest (up only when
 * every worker's link is). Families come in parts[0]'s order, with their
 * HELP and TYPE lines, then faultline_worker_requests_total{worker="K"}
 * (the chat requests each worker answered: its faultline_requests_total
 * summed), then sup (the supervisor's own lines; NULL: none) as it is.
 * Returns 0 or -ENOMEM.
 */
int gather_metrics(struct buf *out, const struct gather_part *parts, size_t n, const char *sup);

/*
 * The names of the gauges gather_metrics does not sum, NULL-terminated:
 * a breaker's state, a provider's health verdict, the shared state's link.
 */
extern const char *const gather_state_gauges[];

/*
 * The /admin/breakers document of the whole gateway from parts[0..n)
 * (parts[0]: the worker answering), into out: parts[0]'s, each breaker's
 * "totals" and "window" counts, probes_in_flight and probes_succeeded
 * summed over the workers' breaker of the same provider and model, with
 * "workers": [{"worker", "state", "consecutive_failures"}, …] (each
 * worker's own view of it), and a top-level "workers": the number of
 * workers in it. A part that is not such a document is left out. Returns
 * 0, -EINVAL when parts[0] is not one, or -ENOMEM.
 */
int gather_breakers(struct buf *out, const struct gather_part *parts, size_t n);

#endif
