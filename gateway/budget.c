/*
 * budget: the retry and hedge token bucket.
 */
#include "gateway/budget.h"

static void refill(struct budget *b, const struct gw_budget *cfg, double now_ms)
{
	if (now_ms > b->last_ms) {
		b->tokens += cfg->min_per_second * (now_ms - b->last_ms) / 1000;
		b->last_ms = now_ms;
	}
	if (b->tokens > cfg->burst)
		b->tokens = cfg->burst;
}

void budget_init(struct budget *b, const struct gw_budget *cfg, double now_ms)
{
	b->tokens = cfg->burst;
	b->last_ms = now_ms;
}

void budget_deposit(struct budget *b, const struct gw_budget *cfg, double now_ms)
{
	b->tokens += cfg->ratio;
	refill(b, cfg, now_ms);
}

bool budget_take(struct budget *b, const struct gw_budget *cfg, double now_ms)
{
	refill(b, cfg, now_ms);
	if (b->tokens < 1)
		return false;
	b->tokens -= 1;
	return true;
}
