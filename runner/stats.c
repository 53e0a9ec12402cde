/*
 * stats: a run's summary from its result files — the records loaded once
 * (runner/rundata.c), then the figures over them (runner/figures.c) — and
 * the small readers of summaries. The layout is in stats.h; combining
 * repeats is runner/combine.c.
 */
#include "runner/stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/cfg.h"
#include "runner/figures.h"
#include "runner/rundata.h"

int stats_compute(const struct stats_input *in, cJSON **out, char *err)
{
	return stats_compute_keep(in, out, NULL, err);
}

int stats_compute_keep(const struct stats_input *in, cJSON **out, struct rundata *rows,
		       char *err)
{
	struct rundata d = { 0 };
	int rc;

	*out = NULL;
	err[0] = '\0';
	if (rows)
		memset(rows, 0, sizeof(*rows));
	rc = figures_check(in, err);
	if (rc)
		return rc;
	rc = rundata_load(&d, in->run_dir, in->t0_unix_ms, err);
	if (!rc)
		rc = figures_summary(&d, in, out);
	if (rc == -ENOMEM && !err[0])
		snprintf(err, CFG_ERR_LEN, "%s: out of memory", in->run_dir);
	if (!rc && rows) {
		*rows = d;
		memset(&d, 0, sizeof(d));
	}
	rundata_free(&d);
	return rc;
}

void stats_window_key(double window_ms, char *out, size_t len)
{
	snprintf(out, len, "%.15g", window_ms);
}

double stats_mean(const cJSON *fig, const char *key, const char *sub)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(fig, key);

	if (sub)
		v = cJSON_GetObjectItemCaseSensitive(v, sub);
	v = cJSON_GetObjectItemCaseSensitive(v, "mean");
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}
