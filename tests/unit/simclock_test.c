/*
 * call_timer_fire: the modelled machine's timers — whole milliseconds,
 * one draw of noise per process and millisecond, carried forward so no
 * timer fires before one due earlier; a pure function of its inputs.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "sim/call.h"

Test(simclock, without_noise_a_timer_fires_when_its_millisecond_is_over)
{
	struct sim_clock k = { .answer_ms = 0.25, .jitter_ms = 0, .seed = 1, .stream = 7 };

	cr_assert_float_eq(call_timer_fire(&k, 100.3), 101.25, 1e-9);
	cr_assert_float_eq(call_timer_fire(&k, 100.0), 101.25, 1e-9, "due on a whole ms: its end");
	cr_assert_float_eq(call_timer_fire(&k, 100.999), 101.25, 1e-9);
	cr_assert(isinf(call_timer_fire(&k, INFINITY)));
	cr_assert(isnan(call_timer_fire(&k, NAN)));
}

Test(simclock, timers_of_one_millisecond_fire_together_and_never_out_of_order)
{
	struct sim_clock k = { .answer_ms = 0.3, .jitter_ms = 0.6, .seed = 42, .stream = 9 };
	double prev = -1;
	double sum = 0;
	double lo = INFINITY;
	int n = 0;
	int i;

	for (i = 0; i < 20000; i++) {
		double due = 1000 + i * 0.25;
		double f = call_timer_fire(&k, due);

		cr_assert_geq(f, floor(due) + 1 + 0.3, "due %.2f fired at %.3f: early", due, f);
		cr_assert_geq(f, prev, "due %.2f fired at %.3f, before one due earlier (%.3f)",
			      due, f, prev);
		if (i % 4)
			cr_assert_float_eq(f, prev, 1e-12, "one millisecond, two instants");
		else {
			sum += f - (floor(due) + 1 + 0.3);
			lo = fmin(lo, f - (floor(due) + 1 + 0.3));
			n++;
		}
		prev = f;
	}
	/* The carried draw: an exponential of mean 0.6, maxed with those before less 1, 2… ms. */
	cr_assert_float_eq(sum / n, 0.67, 0.05, "mean lateness %.3f", sum / n);
	cr_assert_lt(lo, 0.05);
}

Test(simclock, the_noise_is_the_seeds_and_the_streams)
{
	struct sim_clock a = { .answer_ms = 0, .jitter_ms = 0.6, .seed = 5, .stream = 1 };
	struct sim_clock b = a;
	struct sim_clock c = a;
	int same = 0;
	int i;

	c.stream = 2;
	for (i = 0; i < 100; i++) {
		double due = 500 + i * 3.5;

		cr_assert_float_eq(call_timer_fire(&a, due), call_timer_fire(&b, due), 1e-12);
		same += call_timer_fire(&a, due) == call_timer_fire(&c, due);
	}
	cr_assert_lt(same, 5, "another stream drew the same noise %d times in 100", same);
}
