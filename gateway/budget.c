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
	b->deposits = b->takes = 0;
}

void budget_deposit(struct budget *b, const struct gw_budget *cfg, double now_ms)
{
	b->tokens += cfg->ratio;
	b->deposits++;
	refill(b, cfg, now_ms);
}

bool budget_take(struct budget *b, const struct gw_budget *cfg, double now_ms)
{
	refill(b, cfg, now_ms);
	if (b->tokens < 1)
		return false;
	b->tokens -= 1;
	b->takes++;
	return true;
}

void budget_apply_others(struct budget *b, const struct gw_budget *cfg, uint64_t deposits,
			 uint64_t takes, double now_ms)
{
	b->tokens += cfg->ratio * (double)deposits - (double)takes;
	refill(b, cfg, now_ms);
	if (b->tokens < 0)
		b->tokens = 0;
}
