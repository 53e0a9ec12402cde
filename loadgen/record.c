/*
 * record: requests.csv, requests.jsonl and summary.json (the columns and
 * file names are common/records.h's).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loadgen/mix.h"
#include "loadgen/record.h"

#include "loadgen/run.h"

#define RECORD_BUF (1u << 18)

/* Creates dir and its missing parents. Returns 0 or -errno. */
static int make_dirs(const char *dir)
{
	char path[4096];
	size_t len = strlen(dir);
	size_t i;

	if (len == 0 || len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, len + 1);
	for (i = 1; i <= len; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0777) && errno != EEXIST)
			return -errno;
		path[i] = dir[i];
	}
	return 0;
}

static char *join(const char *dir, const char *name)
{
	size_t len = strlen(dir) + strlen(name) + 2;
	char *p = malloc(len);

	if (p)
		snprintf(p, len, "%s/%s", dir, name);
	return p;
}

static int open_file(struct recfile *f, const char *dir, const char *name)
{
	char *path = join(dir, name);
	int rc;

	if (!path)
		return -ENOMEM;
	rc = recfile_open(f, path, false, NULL);
	free(path);
	return rc;
}

int recorder_open(struct recorder *r, const char *dir, const char *const *stream_names,
		  size_t nstreams, char *err, size_t errlen)
{
	const char *what = dir;
	int rc;

	memset(r, 0, sizeof(*r));
	r->stream_names = stream_names;
	r->nstreams = nstreams;
	r->dir = strdup(dir);
	r->by_stream = calloc(nstreams ? nstreams : 1, sizeof(*r->by_stream));
	r->corrected = malloc(sizeof(struct hist));
	r->uncorrected = malloc(sizeof(struct hist));
	r->ttft = malloc(sizeof(struct hist));
	r->send_lag = malloc(sizeof(struct hist));
	if (!r->dir || !r->by_stream || !r->corrected || !r->uncorrected || !r->ttft ||
	    !r->send_lag) {
		rc = -ENOMEM;
		goto out_err;
	}
	hist_init(r->corrected);
	hist_init(r->uncorrected);
	hist_init(r->ttft);
	hist_init(r->send_lag);
	rc = make_dirs(dir);
	if (rc)
		goto out_err;
	what = REC_REQUESTS_CSV;
	rc = open_file(&r->csv, dir, REC_REQUESTS_CSV);
	if (rc)
		goto out_err;
	what = REC_REQUESTS_JSONL;
	rc = open_file(&r->jsonl, dir, REC_REQUESTS_JSONL);
	if (rc) {
		recfile_abandon(&r->csv);
		goto out_err;
	}
	/*
	 * Large buffers: a row is written per request, a syscall per 256 KiB
	 * (glibc ignores the size unless given the buffer).
	 */
	r->csv_buf = malloc(RECORD_BUF);
	r->jsonl_buf = malloc(RECORD_BUF);
	if (r->csv_buf)
		setvbuf(r->csv.fp, r->csv_buf, _IOFBF, RECORD_BUF);
	if (r->jsonl_buf)
		setvbuf(r->jsonl.fp, r->jsonl_buf, _IOFBF, RECORD_BUF);
	rc = row_header(&r->row, req_columns, REQ_NCOLS);
	/* Without the keys made once, rows are the same, only slower. */
	if (!rc)
		(void)row_names(&r->row, req_columns, REQ_NCOLS);
	if (!rc)
		rc = recfile_write(&r->csv, r->row.b.data, r->row.b.len);
	if (rc) {
		recorder_abandon(r);
		goto out_err;
	}
	return 0;
out_err:
	snprintf(err, errlen, "cannot write results in %s (%s): %s", dir, what, strerror(-rc));
	return rc;
}

/* Adds a whole number, or an empty field (JSON null) when it is negative. */
static void row_count(struct row *w, const char *name, int64_t v)
{
	if (v >= 0)
		row_int(w, name, v);
	else
		row_str(w, name, NULL);
}

/* Adds one record's fields in column order (common/records.h), as CSV or JSON. */
static void build_row(struct row *w, const struct recorder *r, const struct record *rec,
		      bool json)
{
	const char *const *c = req_columns;

	row_begin(w, json);
	row_str(w, c[REQ_ID], rec->id);
	row_str(w, c[REQ_STREAM_NAME],
		rec->stream < r->nstreams ? r->stream_names[rec->stream] : NULL);
	row_str(w, c[REQ_CLASS], rec->class_name);
	row_str(w, c[REQ_TENANT], rec->tenant);
	row_str(w, c[REQ_FEATURE], rec->feature);
	row_bool(w, c[REQ_STREAMING], rec->streaming);
	row_num(w, c[REQ_SCHED_MS], rec->sched_ms, 3);
	row_num(w, c[REQ_START_MS], rec->start_ms, 3);
	row_num(w, c[REQ_TTFT_MS], rec->ttft_ms, 3);
	row_num(w, c[REQ_END_MS], rec->end_ms, 3);
	row_num(w, c[REQ_LATENCY_MS], rec->end_ms - rec->sched_ms, 3);
	row_num(w, c[REQ_SERVICE_MS], rec->end_ms - rec->start_ms, 3);
	row_count(w, c[REQ_STATUS], rec->status > 0 ? rec->status : -1);
	row_str(w, c[REQ_OUTCOME], outcome_name(rec->outcome));
	row_str(w, c[REQ_ERROR], rec->error && rec->error[0] ? rec->error : NULL);
	row_str(w, c[REQ_PROVIDER], rec->provider);
	row_count(w, c[REQ_ATTEMPTS], rec->attempts);
	row_count(w, c[REQ_HEDGED], rec->hedged);
	row_int(w, c[REQ_RETRIES], rec->retries);
	row_count(w, c[REQ_TOKENS_IN], rec->tokens_in);
	row_count(w, c[REQ_TOKENS_OUT], rec->tokens_out);
	row_num(w, c[REQ_MAX_GAP_MS], rec->max_gap_ms, 3);
	row_num(w, c[REQ_COST_USD], rec->cost_usd, 6);
	row_str(w, c[REQ_DEGRADED], rec->degraded && rec->degraded[0] ? rec->degraded : NULL);
}

static void count(struct recorder *r, const struct record *rec)
{
	r->requests++;
	r->outcomes[rec->outcome]++;
	r->status[rec->status > 0 && rec->status < 600 ? rec->status : 0]++;
	if (rec->stream < r->nstreams) {
		r->by_stream[rec->stream].requests++;
		if (rec->outcome == OUT_OK)
			r->by_stream[rec->stream].ok++;
	}
	r->retries += (uint64_t)rec->retries;
	r->resends += (uint64_t)rec->resends;
	if (rec->retries > 0)
		r->retried++;
	if (rec->tokens_in > 0)
		r->tokens_in += rec->tokens_in;
	if (rec->tokens_out > 0)
		r->tokens_out += rec->tokens_out;
	if (!isnan(rec->cost_usd)) {
		r->cost_usd += rec->cost_usd;
		r->with_cost++;
	}
	if (rec->degraded && rec->degraded[0]) {
		int d = req_degraded_from_name(rec->degraded);

		if (d >= 0)
			r->degraded[d]++;
		else
			r->degraded_other++;
	}
	if (rec->outcome != OUT_OK && rec->end_ms - rec->sched_ms < REQ_INSTANT_ERROR_MS)
		r->instant_errors++;
	hist_record_ms(r->corrected, rec->end_ms - rec->sched_ms);
	hist_record_ms(r->uncorrected, rec->end_ms - rec->start_ms);
	hist_record_ms(r->send_lag, rec->start_ms - rec->sched_ms);
	if (!isnan(rec->ttft_ms))
		hist_record_ms(r->ttft, rec->ttft_ms);
}

int recorder_add(struct recorder *r, const struct record *rec)
{
	int rc;

	build_row(&r->row, r, rec, false);
	rc = row_end(&r->row);
	if (!rc)
		rc = recfile_write(&r->csv, r->row.b.data, r->row.b.len);
	if (rc)
		return rc;
	build_row(&r->row, r, rec, true);
	rc = row_end(&r->row);
	if (!rc)
		rc = recfile_write(&r->jsonl, r->row.b.data, r->row.b.len);
	if (rc)
		return rc;
	count(r, rec);
	return 0;
}

int recorder_flush(struct recorder *r)
{
	int rc = recfile_flush(&r->csv);

	if (!rc)
		rc = recfile_flush(&r->jsonl);
	return rc;
}

static double round3(double v)
{
	return round(v * 1000.0) / 1000.0;
}

static cJSON *add_num(cJSON *obj, const char *name, double v)
{
	if (isnan(v) || isinf(v))
		return cJSON_AddNullToObject(obj, name);
	return cJSON_AddNumberToObject(obj, name, v);
}

/* The percentile block of a histogram. */
static cJSON *percentiles(const struct hist *h)
{
	static const struct { const char *name; double p; } ps[] = {
		{ "p50", 50 }, { "p75", 75 }, { "p90", 90 }, { "p95", 95 }, { "p99", 99 },
		{ "p99.9", 99.9 }, { "p99.99", 99.99 },
	};
	cJSON *o = cJSON_CreateObject();
	size_t i;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "count", (double)h->count);
	add_num(o, "min", round3(hist_min_ms(h)));
	add_num(o, "mean", round3(hist_mean_ms(h)));
	for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
		add_num(o, ps[i].name, round3(hist_percentile_ms(h, ps[i].p)));
	add_num(o, "max", round3(hist_max_ms(h)));
	return o;
}

/* A stream's settings: how it was sent. */
static void add_stream_settings(cJSON *st, const struct run_info *in,
				const struct mix_stream *ms)
{
	if (in->mix->by_rate) {
		cJSON_AddNumberToObject(st, "rate_per_s", ms->rate);
		if (!in->closed_loop)
			cJSON_AddStringToObject(st, "arrival", ms->arrival == ARRIVAL_POISSON ?
						"poisson" : ms->arrival == ARRIVAL_CONSTANT ?
						"constant" : in->arrival);
	} else {
		cJSON_AddNumberToObject(st, "share", ms->share);
	}
	cJSON_AddStringToObject(st, "class", ms->class_name);
	cJSON_AddStringToObject(st, "tenant", ms->tenant);
	cJSON_AddStringToObject(st, "feature", ms->feature);
	cJSON_AddNumberToObject(st, "stream_p", ms->stream_p);
}

static cJSON *build_summary(const struct recorder *r, const struct run_info *in)
{
	cJSON *s = cJSON_CreateObject();
	cJSON *o;
	cJSON *lat;
	char key[16];
	uint64_t errors;
	size_t i;

	if (!s)
		return NULL;
	cJSON_AddNumberToObject(s, "t0_unix_ms", (double)in->t0_unix_ms);
	cJSON_AddNumberToObject(s, "seed", (double)in->seed);
	cJSON_AddStringToObject(s, "mode", in->closed_loop ? "closed" : "open");
	if (in->closed_loop) {
		cJSON_AddNumberToObject(s, "concurrency", (double)in->concurrency);
		cJSON_AddNumberToObject(s, "ramp_up_ms", in->ramp_up_ms);
		cJSON_AddNumberToObject(s, "error_think_ms", in->error_think_ms);
	} else {
		cJSON_AddStringToObject(s, "arrival", in->arrival);
		add_num(s, "rate_target_per_s", in->rate_per_s);
	}
	cJSON_AddNumberToObject(s, "duration_s", in->duration_ms / 1000.0);
	o = cJSON_AddArrayToObject(s, "targets");
	for (i = 0; o && i < in->ntargets; i++)
		cJSON_AddItemToArray(o, cJSON_CreateString(in->targets[i]));
	cJSON_AddNumberToObject(s, "retries_allowed", (double)in->retries);
	cJSON_AddNumberToObject(s, "requests", (double)r->requests);
	cJSON_AddNumberToObject(s, "unfinished", (double)in->unfinished);
	cJSON_AddBoolToObject(s, "interrupted", in->interrupted);
	cJSON_AddNumberToObject(s, "elapsed_s", round3(in->elapsed_ms) / 1000.0);
	add_num(s, "window_s", round3(in->window_ms) / 1000.0);
	add_num(s, "achieved_rate_per_s", in->window_ms > 0 ?
		round3(in->started_in_window * 1000.0 / in->window_ms) : NAN);
	add_num(s, "ok_per_s", in->window_ms > 0 ?
		round3(r->outcomes[OUT_OK] * 1000.0 / in->window_ms) : NAN);
	if (!in->closed_loop) {
		cJSON_AddNumberToObject(s, "connections", (double)in->connections);
		cJSON_AddNumberToObject(s, "delayed_by_connections",
					(double)in->delayed_by_connections);
	}

	o = cJSON_AddObjectToObject(s, "outcomes");
	for (i = 0; o && i < OUT_COUNT; i++)
		cJSON_AddNumberToObject(o, outcome_name((enum outcome)i), (double)r->outcomes[i]);
	errors = r->requests - r->outcomes[OUT_OK];
	cJSON_AddNumberToObject(s, "errors", (double)errors);
	add_num(s, "error_rate", r->requests ? (double)errors / (double)r->requests : NAN);
	cJSON_AddNumberToObject(s, "instant_errors", (double)r->instant_errors);
	o = cJSON_AddObjectToObject(s, "status");
	for (i = 0; o && i < 600; i++) {
		if (!r->status[i])
			continue;
		snprintf(key, sizeof(key), "%zu", i);
		cJSON_AddNumberToObject(o, i ? key : "none", (double)r->status[i]);
	}
	o = cJSON_AddObjectToObject(s, "streams");
	for (i = 0; o && i < r->nstreams; i++) {
		cJSON *st = cJSON_AddObjectToObject(o, r->stream_names[i]);

		if (!st)
			continue;
		cJSON_AddNumberToObject(st, "requests", (double)r->by_stream[i].requests);
		cJSON_AddNumberToObject(st, "ok", (double)r->by_stream[i].ok);
		if (in->mix && i < in->mix->n)
			add_stream_settings(st, in, &in->mix->streams[i]);
	}
	o = cJSON_AddObjectToObject(s, "retries");
	if (o) {
		cJSON_AddNumberToObject(o, "total", (double)r->retries);
		cJSON_AddNumberToObject(o, "requests_retried", (double)r->retried);
		cJSON_AddNumberToObject(o, "resends", (double)r->resends);
	}
	lat = cJSON_AddObjectToObject(s, "latency_ms");
	if (lat) {
		cJSON_AddItemToObject(lat, "corrected", percentiles(r->corrected));
		cJSON_AddItemToObject(lat, "uncorrected", percentiles(r->uncorrected));
	}
	cJSON_AddItemToObject(s, "ttft_ms", percentiles(r->ttft));
	cJSON_AddItemToObject(s, "send_lag_ms", percentiles(r->send_lag));
	o = cJSON_AddObjectToObject(s, "tokens");
	if (o) {
		cJSON_AddNumberToObject(o, "in", (double)r->tokens_in);
		cJSON_AddNumberToObject(o, "out", (double)r->tokens_out);
	}
	add_num(s, "cost_usd", r->with_cost ? round(r->cost_usd * 1e6) / 1e6 : NAN);
	o = cJSON_AddObjectToObject(s, "degraded");
	for (i = 0; o && i < DEGRADED_COUNT; i++)
		cJSON_AddNumberToObject(o, req_degraded_name((enum req_degraded)i),
					(double)r->degraded[i]);
	if (o)
		cJSON_AddNumberToObject(o, "other", (double)r->degraded_other);
	return s;
}

int recorder_finish(struct recorder *r, const struct run_info *info, char *err,
		    size_t errlen)
{
	struct recfile sum;
	cJSON *s = build_summary(r, info);
	char *text = s ? cJSON_Print(s) : NULL;
	char *path = join(r->dir, REC_SUMMARY);
	const char *what = REC_SUMMARY;
	bool kept = true;	/* the records are left as .tmp: every way out but the last */
	int rc = -ENOMEM;

	cJSON_Delete(s);
	if (!text || !path)
		goto out_abandon;
	rc = recfile_open(&sum, path, false, NULL);
	if (rc)
		goto out_abandon;
	rc = recfile_write(&sum, text, strlen(text));
	if (!rc)
		rc = recfile_write(&sum, "\n", 1);
	if (rc) {
		recfile_abandon(&sum);
		goto out_abandon;
	}
	what = REC_REQUESTS_CSV;
	rc = recfile_commit(&r->csv);
	if (rc) {
		recfile_close_short(&r->jsonl);
		recfile_abandon(&sum);
		goto out_err;
	}
	what = REC_REQUESTS_JSONL;
	rc = recfile_commit(&r->jsonl);
	if (rc) {
		recfile_abandon(&sum);
		goto out_err;
	}
	what = REC_SUMMARY;
	kept = false;
	rc = recfile_commit(&sum);
	if (rc)
		goto out_err;
	goto out_free;
out_abandon:
	recorder_keep_short(r);
out_err:
	snprintf(err, errlen, "cannot write %s in %s: %s%s", what, r->dir, strerror(-rc),
		 kept ? "; the records not written whole are left under their .tmp names "
			"(requests.csv.tmp, requests.jsonl.tmp)" : "");
out_free:
	free(text);
	free(path);
	return rc;
}

void recorder_keep_short(struct recorder *r)
{
	if (r->csv.fp)
		recfile_close_short(&r->csv);
	if (r->jsonl.fp)
		recfile_close_short(&r->jsonl);
}

void recorder_abandon(struct recorder *r)
{
	if (r->csv.fp)
		recfile_abandon(&r->csv);
	if (r->jsonl.fp)
		recfile_abandon(&r->jsonl);
}

void recorder_free(struct recorder *r)
{
	/* The files are closed (committed or abandoned) before this. */
	free(r->csv_buf);
	free(r->jsonl_buf);
	row_free(&r->row);
	free(r->dir);
	free(r->by_stream);
	free(r->corrected);
	free(r->uncorrected);
	free(r->ttft);
	free(r->send_lag);
	memset(r, 0, sizeof(*r));
}

void run_info_of(const struct lg_config *cfg, struct run_info *info)
{
	*info = (struct run_info){
		.mix = &cfg->mix,
		.t0_unix_ms = cfg->t0_unix_ms,
		.seed = cfg->seed,
		.closed_loop = cfg->concurrency > 0,
		.arrival = cfg->arrival == ARRIVAL_POISSON ? "poisson" : "constant",
		.rate_per_s = cfg->rate,
		.concurrency = cfg->concurrency,
		.ramp_up_ms = cfg->ramp_up_ms,
		.error_think_ms = cfg->concurrency > 0 ? cfg->error_think_ms : 0,
		.duration_ms = cfg->duration_ms,
		.targets = (const char *const *)cfg->targets,
		.ntargets = cfg->ntargets,
		.retries = cfg->retries,
		.window_ms = cfg->duration_ms,
	};
}
