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
