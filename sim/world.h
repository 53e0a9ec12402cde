/*
 * world: one simulated run — a scenario's providers (sim/mock.c), one of
 * its setups, its load (sim/load.c) and its kill/restart actions on one
 * virtual clock (sim/evq.c), from t0 to the last request's record —
 * writing into a run folder the files a real run's programs write there
 * (requests.csv, requests.jsonl, loadgen's summary.json, mock-NAME.csv and,
 * for a gateway, events.jsonl), and sim.json: the model it ran with. No process, socket or wall clock: the same
 * scenario, setup, repeat and seed give byte-identical files.
 */
#ifndef FAULTLINE_SIM_WORLD_H
#define FAULTLINE_SIM_WORLD_H

#include <stdint.h>

#include "runner/scenario.h"
#include "sim/call.h"

/* A simulated run's t0 (Unix ms: 2026-01-01T00:00:00Z), the same for every run. */
#define SIM_T0_UNIX_MS 1767225600000LL

/*
 * The random stream of provider i's machine noise (sim.jitter_ms) is
 * SIM_NOISE_STREAM + i of run k's seed (the scenario's + k − 1, as
 * loadgen's: a machine is never the same twice, while mockprov and the
 * gateway draw from the scenario's seed in every run): far from the streams
 * mockprov, loadgen and the gateway draw from, so the noise never moves
 * one of their draws.
 */
#define SIM_NOISE_STREAM 0x51A0000ULL

/* The gateway's timers' noise: a stream past every provider's. */
#define SIM_GW_NOISE_STREAM (SIM_NOISE_STREAM + 0x10000ULL)

/* What one simulated run did, for the speed figure. */
struct sim_stats {
	uint64_t requests;		/* loadgen's requests */
	uint64_t upstream;		/* chat completions the providers saw */
	uint64_t events;		/* events the clock ran */
	double virtual_ms;		/* t0 to the last record */
};

/*
 * Simulates run k (from 1) of setup st of sc into dir (which exists).
 * Returns 0, or a negative errno with the reason in err (CFG_ERR_LEN
 * bytes): a setup the simulator cannot model (an external gateway), a file
 * that could not be written.
 */
int sim_run(const struct scenario *sc, const struct sc_setup *st, unsigned k, const char *dir,
	    struct sim_stats *stats, char *err);

#endif
