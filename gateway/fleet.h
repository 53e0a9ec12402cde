/*
 * fleet: what gateway replicas tell each other about their breakers, and
 * what a replica does with it — the shared-state protocol, pure. A
 * replica whose breaker opens or closes by its own evidence publishes the
 * change (a fleet_msg) and stores it under the target's key; the others
 * apply it to their own breaker of that target (fleet_apply), newest
 * change first: a message older than the breaker's current state is
 * stale and ignored. Times in messages are Unix epoch ms, so that
 * replicas with their own monotonic clocks agree on them (replicas of one
 * fleet share a wall clock, as NTP-synced hosts do). The I/O — Redis,
 * pub/sub, the probe lock — is shared.c's and redis_link.c's; this file
 * reads no clock and does no I/O.
 */
#ifndef FAULTLINE_GATEWAY_FLEET_H
#define FAULTLINE_GATEWAY_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "gateway/breaker.h"

/* Room for a replica's name, its NUL included (config: 1–63 bytes). */
#define FLEET_REPLICA_LEN 64

/*
 * One replica's breaker change, as published and stored. The provider's
 * and the model's names are the message's own, whatever their length
 * (fleet_msg_free); a message built by hand may point them elsewhere and
 * is then not freed.
 */
struct fleet_msg {
	char replica[FLEET_REPLICA_LEN];	/* the replica whose breaker changed */
	uint64_t instance;			/* its process: a replica restarted under the
						 * same name is another instance, whose old
						 * messages are not its own */
	char *provider;
	char *model;				/* "" for none */
	enum breaker_state to;			/* BREAKER_OPEN or BREAKER_CLOSED */
	double t_unix_ms;			/* when it changed there */
	double until_unix_ms;			/* open: when its open ends; else 0 */
	char reason[BREAKER_REASON_LEN];	/* its own reason */
};

/* What fleet_apply did with a message. */
enum fleet_verdict {
	FLEET_APPLIED,		/* the breaker changed state (chg says how) */
	FLEET_HELD,		/* an open breaker was kept open longer, or already agreed */
	FLEET_STALE,		/* older than the breaker's state, or an open already over */
	FLEET_IGNORED,		/* not a change a replica applies (disabled breaker) */
};

/* Frees the names of a message built or decoded here (and clears them); NULL ones are left. */
void fleet_msg_free(struct fleet_msg *m);

/*
 * Builds the message for a local change chg of breaker b (of provider and
 * model) by replica at now_ms (the breaker's clock) and now_unix_ms.
 * Returns false when the change is not one replicas share: only opens
 * (to open) and closes (to closed) are; a half-open is the probing
 * replica's own (or a replica name too long, or out of memory). A message
 * built is to be freed (fleet_msg_free).
 */
bool fleet_msg_of_change(struct fleet_msg *m, const char *replica, uint64_t instance,
			 const char *provider, const char *model, const struct breaker *b,
			 const struct breaker_change *chg, double now_ms, double now_unix_ms);

/*
 * Builds the message that states b's open (for a replica that (re)connects
 * with an open newer than the stored state): open until its end, as of
 * when it opened. Returns false for a breaker that is not open, or as
 * fleet_msg_of_change.
 */
bool fleet_msg_of_state(struct fleet_msg *m, const char *replica, uint64_t instance,
			const char *provider, const char *model, const struct breaker *b,
			double now_ms, double now_unix_ms);

/* The message as one line of JSON (no newline). Returns 0 or -ENOMEM. */
int fleet_msg_encode(const struct fleet_msg *m, struct buf *out);

/*
 * Parses a message (len bytes, need not be NUL-terminated). Returns 0 (m
 * to be freed: fleet_msg_free), or -EINVAL when it is not one (or memory
 * ran out): not JSON, a key missing or of the wrong type, a replica name
 * too long, a state other than open and closed, a time that is not
 * finite.
 */
int fleet_msg_decode(const char *text, size_t len, struct fleet_msg *m);

/*
 * Applies another replica's message m to b at now_ms (the breaker's clock;
 * now_unix_ms the same instant on the wall clock): an open opens b until
 * the message's end (or holds an open one that long), a close closes it —
 * unless the change is older than b's current state (b->since_ms: a state
 * applied from a message is dated by the message, so three replicas agree
 * on which of two changes is newer; a breaker that never changed, as in a
 * replica just started, holds no evidence and takes any change), or an
 * open is already over. The
 * change's reason is "REPLICA: REASON". chg is filled as by the breaker's
 * own calls.
 */
enum fleet_verdict fleet_apply(struct breaker *b, const struct fleet_msg *m, double now_ms,
			       double now_unix_ms, struct breaker_change *chg);

/*
 * Whether b holds an open newer than the stored message (NULL: none
 * stored), so a replica that (re)connects publishes it: b is open, and
 * nothing is stored or the stored change is a close made before b opened.
 * A closed breaker is never published this way: a replica that has just
 * started is closed for want of evidence, not because it saw the provider
 * answer, and must not close the fleet's breakers.
 */
bool fleet_local_newer(const struct breaker *b, const struct fleet_msg *stored, double now_ms,
		       double now_unix_ms);

/*
 * How long a stored message stays, in ms: an open until its end plus
 * lock_ms (the time a probe may take); a close 10 minutes (a replica back
 * from a disconnection learns that the open it holds is over). At least 1.
 */
double fleet_store_ttl_ms(const struct fleet_msg *m, double now_unix_ms, double lock_ms);

/* The Redis keys and channel, under prefix: PREFIX breaker:P/M, PREFIX probe:P/M, PREFIX breakers. */
int fleet_breaker_key(struct buf *out, const char *prefix, const char *provider,
		      const char *model);
int fleet_lock_key(struct buf *out, const char *prefix, const char *provider,
		   const char *model);
int fleet_channel(struct buf *out, const char *prefix);

#endif
