/*
 * restamp: what a stamp's scenario.json holds — the scenario as written
 * with the setups --add-setup files added — and a run into an existing
 * stamp (`chaos run SCENARIO --stamp STAMP`): the checks that it is the
 * same scenario at the same time scale, the stamp's scenario.json made
 * the union of its setups and the run's, and a setup's folder replaced by
 * its new runs (written into STAMP/SETUP.new~) only once they are whole.
 */
#ifndef FAULTLINE_RUNNER_RESTAMP_H
#define FAULTLINE_RUNNER_RESTAMP_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "runner/scenario.h"

/* What a setup's new runs' folder is called while they are written: SETUP + this. */
#define RESTAMP_NEW_SUFFIX ".new~"

/*
 * The scenario as written (unscaled: sc->written, as it was loaded) with the
 * setups sc->added appended and its name stated (the copy's file name no
 * longer gives it): what a new stamp's scenario.json holds. Returns a new
 * cJSON object; NULL with the reason in err (errlen bytes).
 */
cJSON *restamp_run_doc(const struct scenario *sc, char *err, size_t errlen);

/*
 * Whether a run of sc can go into the existing stamp stamp_dir, replacing
 * the setups called names (n of them: those it runs): the stamp has a
 * scenario.json naming sc's scenario, as written but for its setups (every
 * other top-level key the same), its runs were made at sc's time
 * scale (stamp_scale; a stamp with no run yet takes any) and simulated
 * exactly when sim is, and the union of its setups and this run's loads
 * (restamp_write_scenario's document, checked as scenario_load checks a
 * file). Returns 0, or -EINVAL with the reason in err (CFG_ERR_LEN bytes),
 * naming the stamp.
 */
int restamp_check(const char *stamp_dir, const struct scenario *sc, bool sim,
		  const char *const *names, size_t n, char *err);

/*
 * Adds the setup called name from the stamp's scenario.json to sc
 * (scenario_add_setup_json), for --setup NAME of a setup an earlier
 * --add-setup put there. Returns 0, -ENOENT when the stamp has no such
 * setup, or another negative errno with the reason in err (CFG_ERR_LEN
 * bytes).
 */
int restamp_add_stamp_setup(struct scenario *sc, const char *stamp_dir, const char *name,
			    char *err);

/*
 * Writes STAMP/scenario.json: with merge, this run's document
 * (restamp_run_doc) whose setups are the stamp's, in their order — each
 * called one of done (ndone: the setups whose new runs replaced the
 * stamp's) as this run has it —, then this run's that the stamp lacks;
 * without merge, this run's document alone (a new stamp). Written whole
 * (outfile). Returns 0, or a negative errno with the reason in err
 * (errlen bytes).
 */
int restamp_write_scenario(const char *stamp_dir, const struct scenario *sc, bool merge,
			   const char *const *done, size_t ndone, char *err, size_t errlen);

/*
 * Puts STAMP/SETUP.new~ (complete: every run renamed run-K) in the place
 * of STAMP/SETUP — exchanged in one step where the file system can
 * (renameat2's RENAME_EXCHANGE), else renamed aside first — and removes
 * the old folder. Returns 0; 1 when the new runs are in place but the
 * old ones could not be removed (err says where they are left); or a
 * negative errno with the reason in err (errlen bytes), the old folder
 * then where it was when it can be.
 */
int restamp_swap(const char *stamp_dir, const char *setup, char *err, size_t errlen);

/* Removes path and everything under it, following no symbolic link. Returns 0 or -errno. */
int restamp_remove_tree(const char *path);

#endif
