/*
 * waketick: the repeating wake that bounds the kernel's timer slack
 * (waketick.h).
 */
#include "common/waketick.h"

static void on_tick(uv_timer_t *t)
{
	(void)t;
}

int waketick_start(uv_loop_t *loop, uv_timer_t *t)
{
	int rc = uv_timer_init(loop, t);

	if (rc)
		return rc;
	rc = uv_timer_start(t, on_tick, WAKETICK_MS, WAKETICK_MS);
	uv_unref((uv_handle_t *)t);
	return rc;
}
