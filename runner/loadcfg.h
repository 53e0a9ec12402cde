/*
 * loadcfg: the load a scenario gives one run of a setup, as loadgen's own
 * settings (struct lg_config): the one place the scenario's load block,
 * the setup's client retries and the run's seed and id prefix become
 * loadgen's — the runner's command line for loadgen is printed from it,
 * and the simulator runs it.
 */
#ifndef FAULTLINE_RUNNER_LOADCFG_H
#define FAULTLINE_RUNNER_LOADCFG_H

#include "loadgen/run.h"
#include "runner/scenario.h"

/*
 * Fills cfg for run k (from 1) of setup st: duration, timeouts, rate or
 * concurrency (with its ramp-up and error think time), arrival, retries and backoff (client_retry), seed (the
 * scenario's + k − 1), id prefix "SETUP-K-" (in idbuf, idlen bytes), the
 * mix (the scenario's, or one stream from the load's model, stream share
 * and token counts), then lg_config_derive. Targets, t0 and out_dir are
 * the caller's. Returns 0, or -EINVAL / -ENOMEM with the reason in err
 * (CFG_ERR_LEN bytes); cfg->mix is then empty. Free with mix_free.
 */
int loadcfg_of(const struct scenario *sc, const struct sc_setup *st, unsigned k,
	       struct lg_config *cfg, char *idbuf, size_t idlen, char *err);

#endif
