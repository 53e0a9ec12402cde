/*
 * loadcfg: a scenario's load as loadgen's settings (loadcfg.h).
 */
#include "runner/loadcfg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "common/cfg.h"

int loadcfg_of(const struct scenario *sc, const struct sc_setup *st, unsigned k,
	       struct lg_config *cfg, char *idbuf, size_t idlen, char *err)
{
	const struct sc_load *l = &sc->load;
	const struct mix_defaults d = {
		.model = l->model,
		.stream_p = l->stream_p,
		.prompt_tokens = l->prompt_tokens,
		.max_tokens = l->max_tokens,
	};
	bool oom = false;
	cJSON *mix;
	int rc;

	lg_config_init(cfg);
	cfg->duration_ms = sc->duration_ms;
	cfg->timeout_ms = l->timeout_ms;
	cfg->stall_timeout_ms = l->stall_timeout_ms;
	cfg->seed = sc->seed + k - 1;
	snprintf(idbuf, idlen, "%s-%u-", st->name, k);
	cfg->id_prefix = idbuf;
	if (l->concurrency) {
		cfg->concurrency = l->concurrency;
		cfg->ramp_up_ms = l->ramp_up_ms;
		cfg->error_think_ms = l->error_think_ms;
	} else {
		cfg->rate = l->rate;	/* 0 when the mix's streams give rates */
		cfg->arrival = l->arrival == SC_ARRIVAL_POISSON ? ARRIVAL_POISSON : ARRIVAL_CONSTANT;
	}
	if (st->kind == SC_CLIENT_RETRY) {
		cfg->retries = st->retries;
		cfg->backoff.base_ms = st->retry_backoff_ms;
		/* loadgen's 5 s cap, scaled, and never under the backoff itself. */
		cfg->backoff.cap_ms = fmax(5000 * sc->scale, st->retry_backoff_ms);
	}
	mix = scenario_loadgen_mix(sc, st, &oom);
	if (oom) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	rc = mix ? mix_from_json(&cfg->mix, mix, sc->path, &d, err) : mix_default(&cfg->mix, &d);
	cJSON_Delete(mix);
	if (rc == -ENOMEM)
		snprintf(err, CFG_ERR_LEN, "out of memory");
	if (rc)
		return rc;
	lg_config_derive(cfg);
	return 0;
}
