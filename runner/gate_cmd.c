/*
 * gate_cmd: `chaos gate` as a command — the verdicts as a table, and the
 * files: it loads the stamp's summary and scenario, judges them
 * (gate_evaluate, gate.c), and checks and writes baselines.
 */
#include "runner/gate.h"
#include "runner/gate_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cfg.h"
#include "common/json.h"
#include "common/records.h"
#include "runner/outfile.h"
#include "runner/stamp.h"
#include "runner/stats.h"
#include "runner/table.h"

/* ---- the table ---- */

static void fmt_num(char *out, size_t len, double v)
{
	if (isnan(v))
		snprintf(out, len, "-");
	else
		snprintf(out, len, "%.6g", v);
}

static const char *op_text(enum gate_op op)
{
	switch (op) {
	case GATE_LE:
		return "<=";
	case GATE_GE:
		return ">=";
	case GATE_NEAR:
		return "within";
	}
	return "?";
}

/* The printed cells of one check. */
struct row {
	const char *cell[9];
	char value[32];
	char bound[72];
};

static void row_of(const struct gate_check *c, struct row *w)
{
	char tol[32];

	fmt_num(w->value, sizeof(w->value), c->value);
	fmt_num(w->bound, sizeof(w->bound), c->bound);
	if (c->op == GATE_NEAR && !isnan(c->bound)) {
		fmt_num(tol, sizeof(tol), c->tolerance);
		snprintf(w->bound + strlen(w->bound), sizeof(w->bound) - strlen(w->bound),
			 "+-%s", tol);
	}
	w->cell[0] = c->pass ? "PASS" : "FAIL";
	w->cell[1] = c->source;
	w->cell[2] = c->setup;
	w->cell[3] = c->phase;
	w->cell[4] = c->figure;
	w->cell[5] = w->value;
	w->cell[6] = isnan(c->value) && isnan(c->bound) ? "-" : op_text(c->op);
	w->cell[7] = w->bound;
	w->cell[8] = c->note;
}

void gate_print(FILE *fp, const struct gate_result *r)
{
	struct table t = { .ncols = 9 };
	struct row w;
	size_t i;

	for (i = 0; i < r->n; i++) {
		row_of(&r->checks[i], &w);
		if (table_add(&t, w.cell))
			break;
	}
	table_print(fp, &t, 1u << 5);	/* the value right-aligned, the rest left */
	table_free(&t);
	fprintf(fp, "%zu checks, %zu failed\n", r->n, r->failed);
}

/* ---- the command ---- */

/* The default tolerances, written out. */
static cJSON *default_tolerances(void)
{
	cJSON *tol = cJSON_CreateObject();
	cJSON *abs_tol = cJSON_AddObjectToObject(tol, "absolute");

	if (!abs_tol ||
	    !cJSON_AddNumberToObject(abs_tol, "error_rate", GATE_TOL_ERROR_RATE) ||
	    !cJSON_AddNumberToObject(abs_tol, "answered_share", GATE_TOL_ANSWERED_SHARE) ||
	    !cJSON_AddNumberToObject(abs_tol, "fallback_share", GATE_TOL_FALLBACK_SHARE) ||
	    !cJSON_AddNumberToObject(tol, "relative", GATE_TOL_RELATIVE) ||
	    !cJSON_AddNumberToObject(tol, "floor_ms", GATE_TOL_FLOOR_MS)) {
		cJSON_Delete(tol);
		return NULL;
	}
	return tol;
}

/* The summary as a baseline file: a copy with the default tolerances written out. */
static int save_baseline(const cJSON *summary, const char *path, char *err)
{
	cJSON *copy = cJSON_Duplicate(summary, 1);
	cJSON *tol = default_tolerances();
	int rc;

	if (!copy || !tol)
		goto out_oom;
	cJSON_DeleteItemFromObjectCaseSensitive(copy, "tolerances");
	if (!cJSON_AddItemToObject(copy, "tolerances", tol))
		goto out_oom;
	tol = NULL;
	rc = outfile_write_json(path, copy, err, CFG_ERR_LEN);
	goto out_free;
out_oom:
	snprintf(err, CFG_ERR_LEN, "out of memory");
	rc = -ENOMEM;
out_free:
	cJSON_Delete(tol);
	cJSON_Delete(copy);
	return rc;
}

int gate_command(const char *stamp_dir, const char *baseline_path, const char *save_path,
		 const char *objective_setups, FILE *out)
{
	struct scenario sc = { 0 };
	struct gate_result r = { 0 };
	char sum_path[4200];
	char scn_path[4200];
	char err[CFG_ERR_LEN];
	cJSON *summary = NULL;
	cJSON *baseline = NULL;
	const char *name;
	const cJSON *setups;
	double scale;
	int status = 2;
	int rc;

	if (stamp_path(sum_path, sizeof(sum_path), stamp_dir, REC_SUMMARY) ||
	    stamp_path(scn_path, sizeof(scn_path), stamp_dir, REC_SCENARIO)) {
		fprintf(stderr, "chaos gate: %.200s: path too long\n", stamp_dir);
		return 2;
	}
	summary = json_load_file(sum_path, err, sizeof(err));
	if (!summary)
		goto out_err;
	rc = gate__check_head(summary, sum_path, &name, &scale, &setups, err);
	if (rc)
		goto out_err;
	rc = scenario_load(scn_path, scale, &sc, err);
	if (rc)
		goto out_err;
	if (baseline_path) {
		baseline = json_load_file(baseline_path, err, sizeof(err));
		if (!baseline)
			goto out_err;
	}
	rc = gate__evaluate(&sc, summary, sum_path, objective_setups, baseline, baseline_path,
			    &r, err);
	if (rc)
		goto out_err;
	if (save_path) {
		rc = gate__check_as_baseline(summary, sum_path, err);
		if (rc)
			goto out_err;
		if (save_baseline(summary, save_path, err)) {
			status = 1;	/* a file not written: the command did not do its work */
			fprintf(stderr, "chaos gate: %s\n", err);
			goto out_free;
		}
		fprintf(out, "baseline saved: %s\n", save_path);
	}
	gate_print(out, &r);
	status = r.failed ? 1 : 0;
	goto out_free;
out_err:
	fprintf(stderr, "chaos gate: %s\n", err);
out_free:
	gate_result_free(&r);
	scenario_free(&sc);
	cJSON_Delete(baseline);
	cJSON_Delete(summary);
	return status;
}
