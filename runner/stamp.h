/*
 * stamp: the one module that knows a results stamp's layout — STAMP/
 * summary.json (the combined summary), scenario.json (the scenario's copy),
 * report.md, plots/, and SETUP/run-K/ with each run's files (their names:
 * common/records.h) — and loads a stamp's summary and scenario once for
 * the command that works on it (plot; report and gate find their files
 * through it).
 */
#ifndef FAULTLINE_RUNNER_STAMP_H
#define FAULTLINE_RUNNER_STAMP_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "runner/scenario.h"

/* A stamp's summary and scenario, loaded (stamp_load) or lent (stamp_use). */
struct stamp {
	const char *dir;
	char *summary_path;		/* STAMP/summary.json, for messages (owned) */
	const cJSON *summary;
	const cJSON *setups;		/* the summary's "setups" object (≥ 1 setup) */
	const char *name;		/* the scenario's, from the summary */
	double scale;			/* the summary's time_scale */
	const struct scenario *sc;	/* loaded at that time scale */
	cJSON *own_summary;		/* what stamp_load loaded (stamp_use: NULL) */
	struct scenario own_sc;
};

/*
 * STAMP/NAME into out (len bytes). Returns 0, or -ENAMETOOLONG when it
 * does not fit.
 */
int stamp_path(char *out, size_t len, const char *stamp_dir, const char *name);

/* STAMP/SETUP/run-K into out (len bytes). Returns 0 or -ENAMETOOLONG. */
int stamp_run_dir(char *out, size_t len, const char *stamp_dir, const char *setup, unsigned k);

/*
 * STAMP/NAME as a malloc'ed string, however long (the caller frees it);
 * NULL when out of memory.
 */
char *stamp_path_alloc(const char *stamp_dir, const char *name);

/* STAMP/SETUP/run-K as a malloc'ed string; NULL when out of memory. */
char *stamp_run_dir_alloc(const char *stamp_dir, const char *setup, unsigned k);

/* mkdir -p: path and the folders above it, 0755. Returns 0 or -errno. */
int stamp_mkdir_p(const char *path);

/*
 * Makes a new stamp folder OUT/NAME/STAMPsuffix — STAMP the time now, UTC,
 * 20261201T221933Z; suffix "" for a run, "-sweep" for a sweep — or, when
 * another runner took it, STAMPsuffix-2… (up to -99): the parents with
 * -p, the stamp itself alone, so two runners never share one. Returns 0
 * with the malloc'ed path in *dir; -EEXIST when every name was taken,
 * -ENOMEM, or mkdir's -errno (*dir then the path it tried, or NULL).
 */
int stamp_make_new(const char *out_dir, const char *name, const char *suffix, char **dir);

/*
 * Loads STAMP/summary.json and checks its head — scenario (a string),
 * time_scale (in (0, SC_SCALE_MAX]), setups (an object with a setup, each
 * with a "windows" array) — then STAMP/scenario.json at that time scale.
 * Returns 0; a negative errno with a message in err (CFG_ERR_LEN bytes)
 * naming the file: -ENOENT for a missing file, -EINVAL for one that does
 * not hold what it should, -ENAMETOOLONG for a stamp whose files' paths
 * would be longer than the system takes (PATH_MAX), -ENOMEM. Free s with stamp_free whatever the result.
 */
int stamp_load(struct stamp *s, const char *stamp_dir, char *err);

/*
 * The same from a summary and scenario already in memory (lent: they must
 * outlive s), with the same checks of the summary. Returns 0, -EINVAL,
 * -ENAMETOOLONG or -ENOMEM.
 */
int stamp_use(struct stamp *s, const char *stamp_dir, const cJSON *summary,
	      const struct scenario *sc, char *err);

/* Frees what stamp_load loaded; s is left empty. */
void stamp_free(struct stamp *s);

/*
 * The first completed run of a setup (1 to the summary's "repeat", at most
 * 100): its number, with its directory in *dir (malloc'ed: the caller
 * frees it); 0 with *dir NULL when none is there (or memory runs out).
 */
unsigned stamp_first_run(const struct stamp *s, const char *setup, char **dir);

/*
 * The time scale a stamp ran at: its summary.json's time_scale, or else
 * the first of probe's setups' SETUP/run-1/summary.json that has one; NAN
 * when none does.
 */
double stamp_scale(const char *stamp_dir, const struct scenario *probe);

/* Whether the stamp's runs were simulated: some setup's run-1 has a sim.json. */
bool stamp_simulated(const char *stamp_dir, const struct scenario *sc);

#endif
