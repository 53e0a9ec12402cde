/*
 * lgconfig: loadgen's settings' defaults and the ones derived from others
 * (run.h), shared by loadgen's command line and the chaos simulator, so a
 * simulated load is the load loadgen would run.
 */
#include "loadgen/run.h"

#include <math.h>

void lg_config_init(struct lg_config *cfg)
{
	*cfg = (struct lg_config){
		.arrival = ARRIVAL_CONSTANT,
		.timeout_ms = 30000,
		.stall_timeout_ms = NAN,
		.max_time_ms = NAN,
		.backoff = { .base_ms = 100, .cap_ms = 5000 },
		.connections = 1024,
		.id_prefix = "",
		.seed = 1,
	};
}

void lg_config_derive(struct lg_config *cfg)
{
	if (cfg->concurrency == 0 && cfg->mix.by_rate)
		cfg->rate = mix_total_rate(&cfg->mix);
	if (isnan(cfg->stall_timeout_ms))
		cfg->stall_timeout_ms = cfg->timeout_ms;
	if (isnan(cfg->max_time_ms))
		cfg->max_time_ms = 10 * cfg->timeout_ms;
}
