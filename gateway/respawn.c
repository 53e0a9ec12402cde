/*
 * respawn: the supervisor's restart back-off (respawn.h).
 */
#include "gateway/respawn.h"

double respawn_delay_ms(struct respawn *r, double lived_ms)
{
	double wait = RESPAWN_FIRST_MS;
	unsigned i;

	if (lived_ms >= RESPAWN_STABLE_MS) {
		r->quick = 0;
		return 0;
	}
	for (i = 0; i < r->quick && wait < RESPAWN_MAX_MS; i++)
		wait *= 2;
	r->quick++;
	return wait < RESPAWN_MAX_MS ? wait : RESPAWN_MAX_MS;
}
