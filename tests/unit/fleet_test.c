/*
 * fleet: the replicas' shared-state messages — which changes are shared,
 * the JSON round trip and what a malformed message is, how another
 * replica's open and close apply (with clocks that differ between
 * replicas), stale messages, the sync rule and stored messages' lifetimes.
 * Times are numbers.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "common/buf.h"
#include "gateway/breaker.h"
#include "gateway/fleet.h"

static struct breaker_config config(void)
{
	struct breaker_config cfg = breaker_config_default();

	cfg.consecutive_failures = 3;
	cfg.failure_ratio = 0;
	cfg.cooldown_ms = 2000;
	cfg.cooldown_jitter = 0;
	cfg.half_open_probes = 1;
	return cfg;
}

/* A breaker tripped by 3 failures at t = 100 ms of its own clock. */
static void tripped(struct breaker *b, struct breaker_change *chg)
{
	struct breaker_config cfg = config();
	int i;

	breaker_init(b, &cfg, 0);
	for (i = 0; i < 3; i++)
		breaker_record(b, 100, false, 10, 0, NULL, chg);
	cr_assert(chg->changed);
}

Test(fleet, opens_and_closes_are_shared_half_opens_are_not, .timeout = 10)
{
	struct breaker_change chg;
	struct fleet_msg m;
	struct breaker b;
	uint64_t probe;

	tripped(&b, &chg);
	/* The breaker's clock reads 100 when the wall clock reads 1,000,100. */
	cr_assert(fleet_msg_of_change(&m, "r1", 0x1234, "primary", "m", &b, &chg, 100, 1000100));
	cr_assert_str_eq(m.replica, "r1");
	cr_assert_eq(m.instance, 0x1234);
	cr_assert_str_eq(m.provider, "primary");
	cr_assert_str_eq(m.model, "m");
	cr_assert_eq(m.to, BREAKER_OPEN);
	cr_assert_float_eq(m.t_unix_ms, 1000100, 1e-9);
	cr_assert_float_eq(m.until_unix_ms, 1002100, 1e-9, "the open's end on the wall clock");
	cr_assert_str_eq(m.reason, "3 consecutive failures");
	fleet_msg_free(&m);

	cr_assert_eq(breaker_admit(&b, 2100, &probe, &chg), BREAKER_ADMIT_PROBE);
	cr_assert(chg.changed);
	cr_assert_not(fleet_msg_of_change(&m, "r1", 0x1234, "primary", "m", &b, &chg, 2100, 1002100),
		      "a half-open was shared");
	breaker_record(&b, 2200, true, 10, probe, NULL, &chg);
	cr_assert(fleet_msg_of_change(&m, "r1", 0x1234, "primary", "m", &b, &chg, 2200, 1002200));
	cr_assert_eq(m.to, BREAKER_CLOSED);
	cr_assert_float_eq(m.until_unix_ms, 0, 1e-9);
	fleet_msg_free(&m);

	chg.changed = false;
	cr_assert_not(fleet_msg_of_change(&m, "r1", 0x1234, "primary", "m", &b, &chg, 2200, 1002200));
	chg.changed = true;
	/* Names of any length go whole (a target's key holds them: no room to cut them to). */
	char longname[3000];
	struct buf text = { 0 };
	struct fleet_msg back;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	cr_assert(fleet_msg_of_change(&m, "r1", 0x1234, longname, longname, &b, &chg, 2200,
				      1002200));
	cr_assert_str_eq(m.provider, longname);
	cr_assert_eq(fleet_msg_encode(&m, &text), 0);
	cr_assert_eq(fleet_msg_decode(text.data, text.len, &back), 0);
	cr_assert_str_eq(back.provider, longname);
	cr_assert_str_eq(back.model, longname);
	fleet_msg_free(&back);
	fleet_msg_free(&m);
	buf_free(&text);
}

Test(fleet, a_message_round_trips_and_bad_ones_are_refused, .timeout = 10)
{
	struct fleet_msg m = { .to = BREAKER_OPEN, .t_unix_ms = 1796404142360.236,
			       .until_unix_ms = 1796404144360.5, .instance = 0xfedcba9876543210ull };
	struct fleet_msg back;
	struct buf b = { 0 };
	static const char *const bad[] = {
		"",
		"not json",
		"[]",
		"{\"replica\":\"r1\",\"instance\":\"00000000000000ab\",\"provider\":\"p\",\"model\":\"m\",\"to\":\"open\","
		"\"t_unix_ms\":1,\"reason\":\"x\"}",	/* an open without its end */
		"{\"replica\":\"r1\",\"instance\":\"00000000000000ab\",\"provider\":\"p\",\"model\":\"m\",\"to\":\"half_open\","
		"\"t_unix_ms\":1,\"reason\":\"x\"}",
		"{\"replica\":\"\",\"instance\":\"00000000000000ab\",\"provider\":\"p\",\"model\":\"m\",\"to\":\"closed\","
		"\"t_unix_ms\":1,\"reason\":\"x\"}",
		"{\"replica\":\"r1\",\"instance\":\"00000000000000ab\",\"provider\":\"p\",\"model\":\"m\",\"to\":\"closed\","
		"\"t_unix_ms\":\"1\",\"reason\":\"x\"}",
		"{\"replica\":\"r1\",\"instance\":\"00000000000000ab\",\"provider\":7,\"model\":\"m\",\"to\":\"closed\","
		"\"t_unix_ms\":1,\"reason\":\"x\"}",
		"{\"replica\":\"r1\",\"provider\":\"p\",\"model\":\"m\",\"to\":\"closed\","
		"\"t_unix_ms\":1,\"reason\":\"x\"}",	/* no instance */
		"{\"replica\":\"r1\",\"instance\":\"00ab\",\"provider\":\"p\",\"model\":\"m\","
		"\"to\":\"closed\",\"t_unix_ms\":1,\"reason\":\"x\"}",
		"{\"replica\":\"r1\",\"instance\":\"00000000000000zz\",\"provider\":\"p\","
		"\"model\":\"m\",\"to\":\"closed\",\"t_unix_ms\":1,\"reason\":\"x\"}",
	};
	size_t i;

	strcpy(m.replica, "r-1.a");
	m.provider = (char *)"pri\"mary";	/* built by hand: not freed */
	m.model = (char *)"mock/small";
	strcpy(m.reason, "3 consecutive failures");
	cr_assert_eq(fleet_msg_encode(&m, &b), 0);
	cr_assert_eq(fleet_msg_decode(b.data, b.len, &back), 0, "%s", b.data);
	cr_assert_str_eq(back.replica, m.replica);
	cr_assert_eq(back.instance, m.instance);
	cr_assert_str_eq(back.provider, m.provider);
	cr_assert_str_eq(back.model, m.model);
	cr_assert_eq(back.to, BREAKER_OPEN);
	cr_assert_float_eq(back.t_unix_ms, m.t_unix_ms, 1e-3);
	cr_assert_float_eq(back.until_unix_ms, m.until_unix_ms, 1e-3);
	cr_assert_str_eq(back.reason, m.reason);
	fleet_msg_free(&back);
	/* Not NUL-terminated where it ends: only len bytes are read. */
	cr_assert_neq(fleet_msg_decode(b.data, b.len - 1, &back), 0);
	buf_free(&b);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_neq(fleet_msg_decode(bad[i], strlen(bad[i]), &back), 0, "took %s", bad[i]);
}

/*
 * Another replica's open applies on this replica's clock: its end is the
 * same instant on the wall clock; a close closes; an older change than
 * the breaker's state, or an open already over, is stale.
 */
Test(fleet, another_replicas_changes_apply_newest_first, .timeout = 10)
{
	struct breaker_config cfg = config();
	struct breaker_change chg;
	struct fleet_msg m = { .to = BREAKER_OPEN };
	struct breaker b;
	uint64_t probe;

	strcpy(m.replica, "r1");
	strcpy(m.reason, "3 consecutive failures");
	/* This replica's breaker clock reads 5,000 when the wall clock reads 1,000,000. */
	breaker_init(&b, &cfg, 4000);
	m.t_unix_ms = 999990;		/* 10 ms ago */
	m.until_unix_ms = 1001990;
	cr_assert_eq(fleet_apply(&b, &m, 5000, 1000000, &chg), FLEET_APPLIED);
	cr_assert_eq(chg.to, BREAKER_OPEN);
	cr_assert_str_eq(chg.reason, "r1: 3 consecutive failures");
	cr_assert_float_eq(b.open_until_ms, 6990, 1e-6);
	cr_assert_eq(breaker_admit(&b, 6989, &probe, &chg), BREAKER_REJECT);

	m.until_unix_ms = 1003000;	/* r1's probe failed: a longer open */
	m.t_unix_ms = 1001000;
	cr_assert_eq(fleet_apply(&b, &m, 6000, 1001000, &chg), FLEET_HELD);
	cr_assert_not(chg.changed);
	cr_assert_float_eq(b.open_until_ms, 8000, 1e-6);

	m.to = BREAKER_CLOSED;
	m.t_unix_ms = 1002500;
	strcpy(m.reason, "1 probe succeeded");
	cr_assert_eq(fleet_apply(&b, &m, 7500, 1002500, &chg), FLEET_APPLIED);
	cr_assert_eq(chg.to, BREAKER_CLOSED);
	cr_assert_eq(b.state, BREAKER_CLOSED);

	/* An open made before this close arrives late: stale. */
	m.to = BREAKER_OPEN;
	m.t_unix_ms = 1002400;
	m.until_unix_ms = 1004400;
	cr_assert_eq(fleet_apply(&b, &m, 7600, 1002600, &chg), FLEET_STALE);
	cr_assert_eq(b.state, BREAKER_CLOSED);
	/* An open whose end has passed: stale too. */
	m.t_unix_ms = 1002700;
	m.until_unix_ms = 1002750;
	cr_assert_eq(fleet_apply(&b, &m, 7800, 1002800, &chg), FLEET_STALE);
	cr_assert_eq(b.state, BREAKER_CLOSED);

	/* A replica started after that open (its breaker new at 7,700) still takes it. */
	breaker_init(&b, &cfg, 7700);
	m.t_unix_ms = 1002400;
	m.until_unix_ms = 1004400;
	cr_assert_eq(fleet_apply(&b, &m, 7800, 1002800, &chg), FLEET_APPLIED,
		     "a fresh breaker refused an open made before it started");
	cr_assert_float_eq(b.open_until_ms, 9400, 1e-6);

	cfg.enabled = false;
	breaker_init(&b, &cfg, 0);
	m.until_unix_ms = 1009000;
	cr_assert_eq(fleet_apply(&b, &m, 7800, 1002800, &chg), FLEET_IGNORED);
}

Test(fleet, on_connecting_only_a_newer_open_is_published, .timeout = 10)
{
	struct breaker_change chg;
	struct fleet_msg stored = { .to = BREAKER_CLOSED };
	struct fleet_msg mine;
	struct breaker b;
	struct breaker_config cfg = config();

	/*
	 * A replica that has just started is closed for want of evidence: it
	 * must not close the fleet's open (nothing stored, or an open stored).
	 */
	breaker_init(&b, &cfg, 0);
	cr_assert_not(fleet_local_newer(&b, NULL, 50, 1000050), "a closed breaker, nothing stored");
	stored.to = BREAKER_OPEN;
	stored.t_unix_ms = 999000;
	cr_assert_not(fleet_local_newer(&b, &stored, 50, 1000050),
		      "a fresh closed breaker would close the stored open");
	cr_assert_not(fleet_msg_of_state(&mine, "r2", 0x99, "primary", "m", &b, 50, 1000050),
		      "a closed state was made a message");

	tripped(&b, &chg);	/* open since 100 (wall 1,000,100) */
	cr_assert(fleet_local_newer(&b, NULL, 200, 1000200), "an open breaker, nothing stored");
	stored.to = BREAKER_CLOSED;
	stored.t_unix_ms = 1000050;
	cr_assert(fleet_local_newer(&b, &stored, 200, 1000200), "an older stored close");
	stored.t_unix_ms = 1000150;
	cr_assert_not(fleet_local_newer(&b, &stored, 200, 1000200), "a newer stored close");
	stored.to = BREAKER_OPEN;
	stored.t_unix_ms = 1000050;
	cr_assert_not(fleet_local_newer(&b, &stored, 200, 1000200), "both open");

	cr_assert(fleet_msg_of_state(&mine, "r2", 0x99, "primary", "m", &b, 200, 1000200));
	cr_assert_eq(mine.to, BREAKER_OPEN);
	cr_assert_eq(mine.instance, 0x99);
	cr_assert_float_eq(mine.t_unix_ms, 1000100, 1e-6, "stamped when it opened");
	cr_assert_float_eq(mine.until_unix_ms, 1002100, 1e-6);
	fleet_msg_free(&mine);
}

/*
 * Three replicas: A opens at 1,000, B closes at 1,003 (its probe passed).
 * C hears A's open at 1,005 and then B's close: the close is newer than
 * the open it follows, not than the moment C applied the open, so C
 * closes as A and B did.
 */
Test(fleet, a_third_replica_orders_changes_by_when_they_were_made, .timeout = 10)
{
	struct breaker_config cfg = config();
	struct breaker_change chg;
	struct fleet_msg open = { .to = BREAKER_OPEN, .t_unix_ms = 1000, .until_unix_ms = 3000 };
	struct fleet_msg close = { .to = BREAKER_CLOSED, .t_unix_ms = 1003 };
	struct breaker c;

	strcpy(open.replica, "A");
	strcpy(close.replica, "B");
	breaker_init(&c, &cfg, 0);
	/* C's breaker clock equals the wall clock here. */
	cr_assert_eq(fleet_apply(&c, &open, 1005, 1005, &chg), FLEET_APPLIED);
	cr_assert_float_eq(c.since_ms, 1000, 1e-9, "dated by the open, not by its arrival");
	cr_assert_eq(fleet_apply(&c, &close, 1006, 1006, &chg), FLEET_APPLIED,
		     "B's later close was taken for stale");
	cr_assert_eq(c.state, BREAKER_CLOSED);
	cr_assert_float_eq(c.since_ms, 1003, 1e-9);
}

Test(fleet, stored_messages_last_while_they_matter, .timeout = 10)
{
	struct fleet_msg m = { .to = BREAKER_OPEN, .until_unix_ms = 1002000 };
	struct buf k = { 0 };

	cr_assert_float_eq(fleet_store_ttl_ms(&m, 1000000, 5000), 7000, 1e-9);
	m.until_unix_ms = 990000;
	cr_assert_float_eq(fleet_store_ttl_ms(&m, 1000000, 5000), 1, 1e-9, "never 0 or less");
	m.to = BREAKER_CLOSED;
	cr_assert_float_eq(fleet_store_ttl_ms(&m, 1000000, 5000), 600000, 1e-9);

	cr_assert_eq(fleet_breaker_key(&k, "fl:", "primary", "m"), 0);
	cr_assert_str_eq(k.data, "fl:breaker:primary/m");
	k.len = 0;
	cr_assert_eq(fleet_lock_key(&k, "fl:", "primary", "m"), 0);
	cr_assert_str_eq(k.data, "fl:probe:primary/m");
	k.len = 0;
	cr_assert_eq(fleet_channel(&k, "fl:"), 0);
	cr_assert_str_eq(k.data, "fl:breakers");
	buf_free(&k);
}
