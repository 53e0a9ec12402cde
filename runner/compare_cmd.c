/*
 * compare_cmd: `chaos compare` as a command — loads the two stamps,
 * compares them (compare_evaluate, compare.c), prints the rows as a table
 * and writes them as JSON with --json.
 */
#include "runner/compare.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"
#include "common/json.h"
#include "runner/outfile.h"
#include "runner/table.h"

/* ---- the table ---- */

static void fmt_num(char *out, size_t len, double v)
{
	if (isnan(v))
		snprintf(out, len, "-");
	else
		snprintf(out, len, "%.6g", v);
}

void compare_print(FILE *fp, const struct compare_result *r)
{
	static const char *const head[] = { "setup", "phase", "figure", "real", "sim", "diff",
					    "allowed", "verdict", "note" };
	struct table t = { .ncols = 9 };
	char real[32];
	char sim[32];
	char diff[32];
	char allowed[32];
	size_t i;
	int rc;

	rc = table_add(&t, head);
	for (i = 0; i < r->n && !rc; i++) {
		const struct compare_row *w = &r->rows[i];
		const char *row[9] = { w->setup, w->phase, w->figure, real, sim, diff, allowed,
				       w->pass ? "PASS" : "FAIL", w->note };

		fmt_num(real, sizeof(real), w->real);
		fmt_num(sim, sizeof(sim), w->sim);
		if (w->diff > 0)
			snprintf(diff, sizeof(diff), "+%.6g", w->diff);
		else
			fmt_num(diff, sizeof(diff), w->diff);
		fmt_num(allowed, sizeof(allowed), w->allowed);
		rc = table_add(&t, row);
	}
	/* The numbers right-aligned (real, sim, diff, allowed). */
	table_print(fp, &t, 0xfu << 3);
	table_free(&t);
	fprintf(fp, "%zu checks, %zu failed\n", r->n, r->failed);
}

/* ---- the JSON file ---- */

static cJSON *num_or_null(double v)
{
	return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

/* The rows as a JSON document (docs/results-format.md), or NULL when out of memory. */
static cJSON *rows_json(const struct stamp *real, const struct stamp *sim, bool simulated,
			const struct compare_result *r)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *rows = cJSON_CreateArray();
	bool ok = true;
	size_t i;

	ok &= json_put(root, "real", cJSON_CreateString(real->dir));
	ok &= json_put(root, "sim", cJSON_CreateString(sim->dir));
	ok &= json_put(root, "scenario", cJSON_CreateString(real->name));
	ok &= json_put(root, "time_scale", cJSON_CreateNumber(real->scale));
	ok &= json_put(root, "simulated", cJSON_CreateBool(simulated));
	ok &= json_put(root, "checks", cJSON_CreateNumber((double)r->n));
	ok &= json_put(root, "failed", cJSON_CreateNumber((double)r->failed));
	for (i = 0; ok && rows && i < r->n; i++) {
		const struct compare_row *w = &r->rows[i];
		cJSON *o = cJSON_CreateObject();

		ok &= json_put(o, "setup", cJSON_CreateString(w->setup));
		ok &= json_put(o, "phase", cJSON_CreateString(w->phase));
		ok &= json_put(o, "figure", cJSON_CreateString(w->figure));
		ok &= json_put(o, "real", num_or_null(w->real));
		ok &= json_put(o, "sim", num_or_null(w->sim));
		ok &= json_put(o, "diff", num_or_null(w->diff));
		ok &= json_put(o, "allowed", num_or_null(w->allowed));
		ok &= json_put(o, "pass", cJSON_CreateBool(w->pass));
		ok &= json_put(o, "note", cJSON_CreateString(w->note));
		ok = ok && cJSON_AddItemToArray(rows, o);
		if (!ok)
			cJSON_Delete(o);
	}
	ok &= json_put(root, "rows", rows);
	if (!ok) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* ---- the command ---- */

/* Whether a stamp's summary says "simulated": true. */
static bool is_simulated(const struct stamp *s)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s->summary, "simulated"));
}

int compare_command(const char *real_dir, const char *sim_dir, const char *only_setup,
		    const char *json_path, FILE *out)
{
	struct stamp real = { 0 };
	struct stamp sim = { 0 };
	struct compare_result r = { 0 };
	char err[CFG_ERR_LEN];
	cJSON *doc = NULL;
	int status = 2;

	if (stamp_load(&real, real_dir, err) || stamp_load(&sim, sim_dir, err) ||
	    compare_evaluate(&real, &sim, only_setup, &r, err)) {
		fprintf(stderr, "chaos compare: %s\n", err);
		goto out_free;
	}
	if (!is_simulated(&sim))
		fprintf(out, "note: %s is not marked \"simulated\": true: comparing two stamps "
			"as they are\n", sim.summary_path);
	if (is_simulated(&real))
		fprintf(out, "note: %s, the real side, is marked \"simulated\": true\n",
			real.summary_path);
	compare_print(out, &r);
	status = r.failed ? 1 : 0;
	if (!json_path)
		goto out_free;
	doc = rows_json(&real, &sim, is_simulated(&sim), &r);
	if (!doc)
		snprintf(err, sizeof(err), "%s: out of memory", json_path);
	if (!doc || outfile_write_json(json_path, doc, err, sizeof(err))) {
		status = 1;	/* a file not written: the command did not do its work */
		fprintf(stderr, "chaos compare: %s\n", err);
	}
out_free:
	cJSON_Delete(doc);
	compare_result_free(&r);
	stamp_free(&sim);
	stamp_free(&real);
	return status;
}
