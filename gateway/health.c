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
	return h->healthy ? c->interval_ms : c->unhealthy_interval_ms;
}

double health_next_due(const struct health *h, const struct health_config *c, double due_ms,
		       double now)
{
	double next = due_ms + health_next_ms(h, c);

	return next > now ? next : now;
}
