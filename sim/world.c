/*
 * world: one simulated run (world.h) — the providers from the scenario's
 * own mockprov config, the load from loadcfg_of (what loadgen would be
 * told), the actions on the clock, and the setup between them.
 */
#include "sim/world.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "mockprov/config.h"
#include "common/records.h"
#include "runner/loadcfg.h"
#include "runner/outfile.h"
#include "sim/evq.h"
#include "sim/gw.h"
#include "sim/load.h"
#include "sim/mock.h"

struct world {
	const struct scenario *sc;
	const struct sc_setup *st;
	const char *dir;
	struct evq q;
	struct sim_net net;
	struct mock_config mcfg;
	struct sim_mock *mocks;
	size_t nmocks;			/* started */
	struct sim_gw gw;
	bool gw_started;
	struct sim_load load;
	bool load_started;
	struct lg_config lcfg;
	char id_prefix[96];
	unsigned k;			/* the run, from 1 */
	struct sim_timer action;
	size_t next_action;
	char *why;			/* an action's failure */
};

static void on_action(struct sim_timer *t)
{
	struct world *w = (struct world *)((char *)t - offsetof(struct world, action));
	const struct sc_action *a = &w->sc->actions[w->next_action++];
	char err[CFG_ERR_LEN];

	if (a->target != SC_TARGET_PROVIDER)
		;	/* a replica's or Redis's: of a setup not simulated (scenario_sim_check) */
	else if (a->kind == SC_KILL)
		mock_kill(&w->mocks[a->provider]);
	else if (mock_restart(&w->mocks[a->provider], w->sc->sim.restart_ms, err) && !w->why)
		w->why = strdup(err);
	if (w->next_action < w->sc->nactions)
		evq_at(&w->q, &w->action, w->sc->actions[w->next_action].at_ms);
}

/* A modelled process's timers in run k (sim/call.h): the scenario's sim block, run k's seed, noise stream. */
static struct sim_clock world_clock(const struct scenario *sc, unsigned k, uint64_t stream)
{
	return (struct sim_clock){ .answer_ms = sc->sim.answer_ms, .jitter_ms = sc->sim.jitter_ms,
				   .seed = sc->seed + k - 1, .stream = stream };
}

/* The providers, from the config a real run gives mockprov (one process each). */
static int start_mocks(struct world *w, char *err)
{
	const struct scenario *sc = w->sc;
	char *text = scenario_mock_config(sc, NULL);
	cJSON *root = text ? cJSON_Parse(text) : NULL;
	size_t i;
	int rc;

	free(text);
	if (!root) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	rc = mock_config_from_json(root, sc->path, &w->mcfg, err);
	cJSON_Delete(root);
	if (rc)
		return rc;
	w->mocks = calloc(w->mcfg.nproviders ? w->mcfg.nproviders : 1, sizeof(*w->mocks));
	if (!w->mocks) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < w->mcfg.nproviders; i++) {
		struct sim_clock clock = world_clock(sc, w->k, SIM_NOISE_STREAM + i);

		rc = mock_start(&w->mocks[i], &w->q, &w->mcfg.providers[i], sc->seed, &clock,
				w->dir, err);
		w->nmocks = i + 1;
		if (rc)
			return rc;
	}
	return 0;
}

/* The server the load sends to. */
static struct sim_server *setup_target(struct world *w, char *err)
{
	switch (w->st->kind) {
	case SC_DIRECT:
	case SC_CLIENT_RETRY:
		return &w->mocks[w->st->provider].srv;
	case SC_GATEWAY: {
		struct sim_server **servers = calloc(w->nmocks ? w->nmocks : 1, sizeof(*servers));
		struct sim_clock clock = world_clock(w->sc, w->k, SIM_GW_NOISE_STREAM);
		size_t i;
		int rc;

		if (!servers) {
			snprintf(err, CFG_ERR_LEN, "out of memory");
			return NULL;
		}
		for (i = 0; i < w->nmocks; i++)
			servers[i] = &w->mocks[i].srv;
		rc = gw_start(&w->gw, w->sc, w->st, &w->q, &w->net, &clock, servers, w->dir, err);
		free(servers);
		w->gw_started = true;
		return rc ? NULL : &w->gw.srv;
	}
	case SC_EXTERNAL:
	default:
		snprintf(err, CFG_ERR_LEN, "setup %s: an external gateway cannot be simulated: the "
			 "simulator runs faultline's own gateway code, and knows nothing of another's",
			 w->st->name);
		return NULL;
	}
}

/* More events than this at one virtual instant: the model is looping without time moving. */
#define SIM_MAX_SAME_INSTANT 10000000ull

/*
 * Runs the clock until the last request is recorded. A real run's
 * watchdog budget bounds it in virtual time: past it, or with nothing left
 * to happen and requests unrecorded, the model is wrong and the run fails.
 */
static int run_clock(struct world *w, char *err)
{
	const struct scenario *sc = w->sc;
	double budget = sc->duration_ms + sc->load.timeout_ms * 11 + 30000;

	if (w->st->kind == SC_CLIENT_RETRY)
		budget += w->st->retries * (sc->load.timeout_ms +
					    fmax(5000 * sc->scale, w->st->retry_backoff_ms));
	double last = -1;
	uint64_t still = 0;		/* events run at the instant `last` */

	while (!load_done(&w->load) && !w->why) {
		double at = evq_next_at(&w->q);

		if (isinf(at) || at > budget) {
			snprintf(err, CFG_ERR_LEN, "the simulated run did not end by %.0f ms of "
				 "virtual time (%zu requests in flight)", isinf(at) ? w->q.now : budget,
				 w->load.in_flight);
			return -EIO;
		}
		still = at == last ? still + 1 : 0;
		last = at;
		/* Time must move: a model that re-arms at its own instant for ever is wrong. */
		if (still > SIM_MAX_SAME_INSTANT) {
			snprintf(err, CFG_ERR_LEN, "the simulated run stopped making progress at %.3f ms "
				 "of virtual time (%llu events at that instant)", at,
				 (unsigned long long)still);
			return -EIO;
		}
		evq_run(&w->q, at);
	}
	return 0;
}

/* DIR/sim.json: the run was simulated, and with which model constants. */
static int write_model(const struct scenario *sc, const char *dir, char *err)
{
	char *path = buf_aprintf("%s/" REC_SIM, dir);
	cJSON *top = cJSON_CreateObject();
	bool ok = top && cJSON_AddTrueToObject(top, "simulated") &&
		  cJSON_AddNumberToObject(top, "t0_unix_ms", (double)SIM_T0_UNIX_MS);
	cJSON *model = ok ? cJSON_AddObjectToObject(top, "model") : NULL;
	int rc = -ENOMEM;

	snprintf(err, CFG_ERR_LEN, "cannot write %s/" REC_SIM ": out of memory", dir);
	if (path && model &&
	    cJSON_AddNumberToObject(model, "latency_ms", sc->sim.latency_ms) &&
	    cJSON_AddNumberToObject(model, "refused_ms", sc->sim.refused_ms) &&
	    cJSON_AddNumberToObject(model, "answer_ms", sc->sim.answer_ms) &&
	    cJSON_AddNumberToObject(model, "jitter_ms", sc->sim.jitter_ms) &&
	    cJSON_AddNumberToObject(model, "gateway_ms", sc->sim.gateway_ms) &&
	    cJSON_AddNumberToObject(model, "restart_ms", sc->sim.restart_ms))
		rc = outfile_write_json(path, top, err, CFG_ERR_LEN);
	cJSON_Delete(top);
	free(path);
	return rc;
}

int sim_run(const struct scenario *sc, const struct sc_setup *st, unsigned k, const char *dir,
	    struct sim_stats *stats, char *err)
{
	struct world w = { .sc = sc, .st = st, .k = k, .dir = dir };
	struct sim_server *target;
	char target_name[64];
	char *targets[1] = { target_name };
	size_t i;
	int rc;

	evq_init(&w.q);
	w.net = (struct sim_net){ .latency_ms = sc->sim.latency_ms, .refused_ms = sc->sim.refused_ms };
	memset(stats, 0, sizeof(*stats));
	rc = start_mocks(&w, err);
	if (rc)
		goto out;
	target = setup_target(&w, err);
	if (!target) {
		rc = -EINVAL;
		goto out;
	}
	rc = loadcfg_of(sc, st, k, &w.lcfg, w.id_prefix, sizeof(w.id_prefix), err);
	if (rc)
		goto out;
	snprintf(target_name, sizeof(target_name), "sim:%s",
		 st->kind == SC_GATEWAY ? "gateway" : sc->provider_names[st->provider]);
	w.lcfg.targets = targets;
	w.lcfg.ntargets = 1;
	w.lcfg.t0_unix_ms = SIM_T0_UNIX_MS;
	w.lcfg.out_dir = dir;
	w.action.fn = on_action;
	if (sc->nactions)
		evq_at(&w.q, &w.action, sc->actions[0].at_ms);
	rc = load_start(&w.load, &w.lcfg, &w.q, &w.net, target, err, CFG_ERR_LEN);
	w.load_started = true;
	if (rc)
		goto out;
	rc = run_clock(&w, err);
	if (rc)
		goto out;
	if (w.why) {
		snprintf(err, CFG_ERR_LEN, "%s", w.why);
		rc = -EIO;
		goto out;
	}
	if (w.gw_started && w.gw.err) {
		rc = gw_finish(&w.gw, err);
		goto out;
	}
	stats->requests = w.load.next_n;
	stats->virtual_ms = w.q.now;
	rc = load_finish(&w.load, err, CFG_ERR_LEN);
	if (!rc && w.gw_started)
		rc = gw_finish(&w.gw, err);
	for (i = 0; i < w.nmocks && !rc; i++) {
		stats->upstream += w.mocks[i].requests;
		rc = mock_finish(&w.mocks[i], err);
	}
	stats->events = w.q.fired;
	if (!rc)
		rc = write_model(sc, dir, err);
out:
	if (w.load_started)
		load_free(&w.load);
	if (w.gw_started)
		gw_free(&w.gw);
	evq_stop(&w.q, &w.action);
	for (i = 0; i < w.nmocks; i++)
		mock_free(&w.mocks[i]);
	free(w.mocks);
	mock_config_free(&w.mcfg);
	mix_free(&w.lcfg.mix);
	free(w.why);
	evq_free(&w.q);
	return rc;
}
