/*
 * launch_plan_actions: the order the runner carries a scenario's actions
 * out in — a restart's process RESTART_LEAD_MS ahead of its time, never
 * before the kill it follows, ties in the scenario's order.
 */
#include <criterion/criterion.h>

#include "runner/run_int.h"

/* Asserts that the six actions acts are carried out in the order want. */
static void assert_plan(struct sc_action *acts, const size_t *want)
{
	struct scenario sc = { .actions = acts, .nactions = 6 };
	size_t order[6];
	size_t i;

	launch_plan_actions(&sc, order);
	for (i = 0; i < 6; i++)
		cr_assert_eq(order[i], want[i], "position %zu: action %zu, not %zu", i, order[i],
			     want[i]);
}

Test(actions, a_restart_goes_ahead_but_not_before_its_kill)
{
	struct sc_action acts[] = {
		{ .at_ms = 1000, .kind = SC_KILL, .provider = 0 },
		{ .at_ms = 1200, .kind = SC_RESTART, .provider = 0 },	/* 200 ms after: at the kill */
		{ .at_ms = 2000, .kind = SC_KILL, .provider = 1 },
		{ .at_ms = 2800, .kind = SC_KILL, .provider = 0 },
		{ .at_ms = 3000, .kind = SC_RESTART, .provider = 1 },	/* at 2500: before the 2800 kill */
		{ .at_ms = 3100, .kind = SC_RESTART, .provider = 0 },	/* at 2800: with its kill, after it */
	};
	static const size_t want[] = { 0, 1, 2, 4, 3, 5 };

	assert_plan(acts, want);
	cr_assert_eq(RESTART_LEAD_MS, 500);
}

/*
 * A gateway replica or Redis has no --listen-at: its restart is carried
 * out at its own time, after a provider's restart that goes ahead of it;
 * a replica's kill and restart are matched by replica, not by provider.
 */
Test(actions, a_replica_or_redis_restart_is_not_started_ahead)
{
	struct sc_action acts[] = {
		{ .at_ms = 1000, .kind = SC_KILL, .target = SC_TARGET_REPLICA, .replica = 2 },
		{ .at_ms = 1100, .kind = SC_KILL, .target = SC_TARGET_PROVIDER, .provider = 0 },
		{ .at_ms = 1150, .kind = SC_KILL, .target = SC_TARGET_REDIS },
		{ .at_ms = 1800, .kind = SC_RESTART, .target = SC_TARGET_REPLICA, .replica = 2 },
		{ .at_ms = 1900, .kind = SC_RESTART, .target = SC_TARGET_REDIS },
		{ .at_ms = 2000, .kind = SC_RESTART, .target = SC_TARGET_PROVIDER,
		  .provider = 0 },	/* at 1500: ahead of both */
	};
	static const size_t want[] = { 0, 1, 2, 5, 3, 4 };

	assert_plan(acts, want);
	cr_assert(scenario_action_same_target(&acts[0], &acts[3]));
	cr_assert_not(scenario_action_same_target(&acts[0], &acts[1]),
		      "replica 2 and provider 0 are not one process");
	cr_assert(scenario_action_same_target(&acts[2], &acts[4]));
}
