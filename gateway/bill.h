/*
 * bill: what a chat request's attempts cost — tokens priced by their
 * provider, added to the request's cost (x-faultline-cost-usd) and to the
 * spend by provider, tenant and feature, and the duplicate spend of
 * answers thrown away.
 */
#ifndef FAULTLINE_GATEWAY_BILL_H
#define FAULTLINE_GATEWAY_BILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct greq;
struct leg;

/*
 * Bills tokens of an attempt on l's provider: added to the request's cost
 * and to the spend by provider, tenant and feature (and to the duplicate
 * spend when the answer was discarded).
 */
void bill_tokens(struct greq *g, const struct leg *l, int64_t in, int64_t out, bool discarded);

/*
 * An attempt whose answer is thrown away: billed as the prompt's estimate
 * and the content it sent, when the upstream took it on — it connected and
 * answered a 2xx, or had answered nothing yet when the gateway stopped
 * waiting (stopped: cut by its timeout, or cancelled). An error status, or
 * a reset or transfer error before any status, costs nothing.
 */
void bill_discarded(struct greq *g, const struct leg *l, bool stopped);

/* What in prompt and out completion tokens cost on provider p, in USD (pure). */
struct gw_provider;
double bill_price(const struct gw_provider *p, int64_t in, int64_t out);

/*
 * Whether a thrown-away attempt is charged (pure): it answered a 2xx, or
 * it had answered nothing yet when the gateway stopped waiting (stopped)
 * and had connected — the upstream took it on.
 */
bool bill_discard_charged(long status, bool stopped, bool connected);

/* The prompt's tokens estimated from its messages' text: bytes / 4, rounded up (pure). */
int64_t bill_prompt_estimate(size_t bytes);

/*
 * The request's cost as x-faultline-cost-usd's value (nine decimals), into
 * out (len bytes: NUMFMT_LEN or more takes any value without printf).
 */
void bill_cost_text(const struct greq *g, char *out, size_t len);

#endif
