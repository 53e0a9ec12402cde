/*
 * health: fall and rise counting from the start, a pass that breaks a run
 * of failures (and the other way round), and the interval while healthy
 * and unhealthy.
 */
#include <criterion/criterion.h>

#include "gateway/health.h"

static const struct health_config cfg = {
	.enabled = true, .interval_ms = 5000, .unhealthy_interval_ms = 1000,
	.timeout_ms = 500, .fall = 3, .rise = 2, .request = HEALTH_MODELS,
};

Test(health, falls_after_fall_failures_in_a_row, .timeout = 10)
{
	struct health h;

	health_init(&h);
	cr_assert(h.healthy);
	cr_assert_eq(health_next_ms(&h, &cfg), 5000);
	cr_assert_eq(health_result(&h, &cfg, false), HEALTH_SAME);
	cr_assert_eq(health_result(&h, &cfg, false), HEALTH_SAME);
	cr_assert_eq(health_result(&h, &cfg, true), HEALTH_SAME, "a pass breaks the run");
	cr_assert_eq(health_result(&h, &cfg, false), HEALTH_SAME);
	cr_assert_eq(health_result(&h, &cfg, false), HEALTH_SAME);
	cr_assert_eq(health_result(&h, &cfg, false), HEALTH_DOWN);
	cr_assert_not(h.healthy);
	cr_assert_eq(health_next_ms(&h, &cfg), 1000, "checked faster while unhealthy");
	cr_assert_eq(health_result(&h, &cfg, false), HEALTH_SAME, "down once, not again");
}

Test(health, rises_after_rise_passes_in_a_row, .timeout = 10)
{
	struct health h;
	int i;

	health_init(&h);
	for (i = 0; i < 3; i++)
		health_result(&h, &cfg, false);
	cr_assert_not(h.healthy);
	cr_assert_eq(health_result(&h, &cfg, true), HEALTH_SAME);
	cr_assert_eq(health_result(&h, &cfg, false), HEALTH_SAME, "a failure breaks the run");
	cr_assert_eq(health_result(&h, &cfg, true), HEALTH_SAME);
	cr_assert_eq(health_result(&h, &cfg, true), HEALTH_UP);
	cr_assert(h.healthy);
	cr_assert_eq(health_next_ms(&h, &cfg), 5000);
	cr_assert_eq(health_result(&h, &cfg, true), HEALTH_SAME, "up once, not again");
}

Test(health, the_next_check_keeps_to_the_grid, .timeout = 10)
{
	struct health_config c = { .enabled = true, .interval_ms = 1000, .unhealthy_interval_ms = 10,
				   .timeout_ms = 500, .fall = 1, .rise = 1 };
	struct health h;

	health_init(&h);
	/* Due at 0, answered at 3.7: the next is due at 1000, not 1003.7. */
	cr_assert_float_eq(health_next_due(&h, &c, 0, 3.7), 1000, 1e-9);
	cr_assert_float_eq(health_next_due(&h, &c, 59000, 59001.9), 60000, 1e-9);
	/* A check slower than its interval: the next at once. */
	cr_assert_float_eq(health_next_due(&h, &c, 0, 1400), 1400, 1e-9);
	/* Unhealthy: the short interval. */
	health_result(&h, &c, false);
	cr_assert_float_eq(health_next_due(&h, &c, 2000, 2001), 2010, 1e-9);
}

Test(health, a_suspect_provider_is_checked_at_once_then_faster, .timeout = 10)
{
	struct health h;
	double due;

	health_init(&h);
	/* A breaker opened at 1200 with the next check due at 5000: at once. */
	due = health_suspect(&h, true, 5000, 1200);
	cr_assert_float_eq(due, 1200, 1e-9);
	cr_assert(h.healthy, "suspect is not unhealthy");
	cr_assert_eq(health_next_ms(&h, &cfg), 1000, "checked at the fast cadence while suspect");
	cr_assert_float_eq(health_next_due(&h, &cfg, 1200, 1210), 2200, 1e-9);
	/* Still suspect (another breaker's change): the due time stays. */
	due = health_suspect(&h, true, 2200, 1500);
	cr_assert_float_eq(due, 2200, 1e-9);
	/* A check already due earlier keeps its time. */
	health_suspect(&h, false, 0, 0);
	due = health_suspect(&h, true, 900, 1000);
	cr_assert_float_eq(due, 900, 1e-9);
	/* Every breaker closed again: the due time stays, the next interval is the slow one. */
	due = health_suspect(&h, false, 2200, 2000);
	cr_assert_float_eq(due, 2200, 1e-9);
	cr_assert_eq(health_next_ms(&h, &cfg), 5000);
	/* An unhealthy_interval_ms longer than interval_ms does not slow a suspect one down. */
	{
		struct health_config slow = cfg;

		slow.unhealthy_interval_ms = 9000;
		health_suspect(&h, true, 0, 0);
		cr_assert_eq(health_next_ms(&h, &slow), 5000);
	}
}
