/*
 * health: fall and rise counting.
 */
#include "gateway/health.h"

void health_init(struct health *h)
{
	*h = (struct health){ .healthy = true };
}

enum health_change health_result(struct health *h, const struct health_config *c, bool ok)
{
	if (ok) {
		h->fails = 0;
		h->passes++;
		if (!h->healthy && h->passes >= c->rise) {
			h->healthy = true;
			return HEALTH_UP;
		}
		return HEALTH_SAME;
	}
	h->passes = 0;
	h->fails++;
	if (h->healthy && h->fails >= c->fall) {
		h->healthy = false;
		return HEALTH_DOWN;
	}
	return HEALTH_SAME;
}

double health_next_ms(const struct health *h, const struct health_config *c)
{
	if (!h->healthy)
		return c->unhealthy_interval_ms;
	if (h->suspect && c->unhealthy_interval_ms < c->interval_ms)
		return c->unhealthy_interval_ms;
	return c->interval_ms;
}

double health_suspect(struct health *h, bool suspect, double due_ms, double now)
{
	bool was = h->suspect;

	h->suspect = suspect;
	return suspect && !was && due_ms > now ? now : due_ms;
}

double health_next_due(const struct health *h, const struct health_config *c, double due_ms,
		       double now)
{
	double next = due_ms + health_next_ms(h, c);

	return next > now ? next : now;
}
