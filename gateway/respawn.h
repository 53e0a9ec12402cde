/*
 * respawn: how soon a workers gateway's supervisor starts a worker again
 * after it died — at once when it had run a while (a crash, a kill), with
 * a doubling wait when it keeps dying soon after its start (a crash loop
 * must not spin). Pure: the caller passes how long the worker lived.
 */
#ifndef FAULTLINE_GATEWAY_RESPAWN_H
#define FAULTLINE_GATEWAY_RESPAWN_H

/* A worker that ran this long before dying was not crash-looping. */
#define RESPAWN_STABLE_MS 10000.0
/* The wait after the first death that came sooner, doubled for each next one. */
#define RESPAWN_FIRST_MS 100.0
/* No wait is longer. */
#define RESPAWN_MAX_MS 10000.0

/* One worker slot's deaths soon after a start, in a row. */
struct respawn {
	unsigned quick;
};

/*
 * A worker of the slot died after living lived_ms: returns the wait
 * before it is started again — 0 when it lived RESPAWN_STABLE_MS or more
 * (the count starts over), else RESPAWN_FIRST_MS doubled for each earlier
 * such death in a row, at most RESPAWN_MAX_MS.
 */
double respawn_delay_ms(struct respawn *r, double lived_ms);

#endif
