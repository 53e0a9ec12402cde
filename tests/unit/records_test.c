/*
 * records: each per-request record format read back field for field
 * through its real writer and its real reader — requests.csv and
 * requests.jsonl written by loadgen's recorder, mock-NAME.csv rows built
 * by mockprov's row builder, events.jsonl lines keyed as the gateway
 * writes them — read by the common CSV reader and by the runner's loader
 * (runner/rundata.c); and the names of outcomes, classes, states and
 * files, there and back.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/csv.h"
#include "common/recfile.h"
#include "common/records.h"
#include "loadgen/record.h"
#include "runner/rundata.h"
#include "tests/support/tmpdir.h"

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "records"), 0);
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(records, .init = setup, .fini = teardown, .timeout = 10);
TestSuite(records_names, .timeout = 10);

static const char *const stream_names[] = { "chat", "batch-jobs" };

/* Two requests unlike each other in every column (quotes, commas, newlines, absent values). */
static const struct record recs[] = {
	{
		.id = "r-1,\"quoted\"",
		.stream = 1,
		.class_name = "batch",
		.tenant = "acme, inc",
		.feature = "multi\nline",
		.streaming = true,
		.sched_ms = 1000.125,
		.start_ms = 1000.5,
		.ttft_ms = 12.25,
		.end_ms = 1250.75,
		.status = 200,
		.outcome = OUT_STALLED,
		.error = "error event: stream_stalled",
		.provider = "secondary",
		.attempts = 2,
		.hedged = 1,
		.retries = 1,
		.tokens_in = 17,
		.tokens_out = 5,
		.max_gap_ms = 300.5,
		.cost_usd = 0.000125,
		.degraded = "cache",
	},
	{
		.id = "r-2",
		.stream = 0,
		.class_name = "interactive",
		.tenant = "",
		.feature = "",
		.streaming = false,
		.sched_ms = 20.001,
		.start_ms = 20.5,
		.ttft_ms = NAN,
		.end_ms = 40.25,
		.status = 0,
		.outcome = OUT_REFUSED,
		.error = NULL,
		.provider = NULL,
		.attempts = -1,
		.hedged = -1,
		.retries = 0,
		.tokens_in = -1,
		.tokens_out = -1,
		.max_gap_ms = NAN,
		.cost_usd = NAN,
		.degraded = NULL,
	},
};
#define NRECS (sizeof(recs) / sizeof(recs[0]))

/* The text a number column holds: decimals places, "" for NaN. */
static void num_text(double v, int decimals, char *out, size_t len)
{
	if (isnan(v))
		snprintf(out, len, "%s", "");
	else
		snprintf(out, len, "%.*f", decimals, v);
}

/* What record k's column col should read back as, in the CSV. */
static void expected_field(size_t k, int col, char *out, size_t len)
{
	const struct record *r = &recs[k];

	switch (col) {
	case REQ_ID: snprintf(out, len, "%s", r->id); break;
	case REQ_STREAM_NAME: snprintf(out, len, "%s", stream_names[r->stream]); break;
	case REQ_CLASS: snprintf(out, len, "%s", r->class_name); break;
	case REQ_TENANT: snprintf(out, len, "%s", r->tenant); break;
	case REQ_FEATURE: snprintf(out, len, "%s", r->feature); break;
	case REQ_STREAMING: snprintf(out, len, "%d", r->streaming); break;
	case REQ_SCHED_MS: num_text(r->sched_ms, 3, out, len); break;
	case REQ_START_MS: num_text(r->start_ms, 3, out, len); break;
	case REQ_TTFT_MS: num_text(r->ttft_ms, 3, out, len); break;
	case REQ_END_MS: num_text(r->end_ms, 3, out, len); break;
	case REQ_LATENCY_MS: num_text(r->end_ms - r->sched_ms, 3, out, len); break;
	case REQ_SERVICE_MS: num_text(r->end_ms - r->start_ms, 3, out, len); break;
	case REQ_STATUS:
		snprintf(out, len, "%s", "");
		if (r->status > 0)
			snprintf(out, len, "%ld", r->status);
		break;
	case REQ_OUTCOME: snprintf(out, len, "%s", outcome_name(r->outcome)); break;
	case REQ_ERROR: snprintf(out, len, "%s", r->error ? r->error : ""); break;
	case REQ_PROVIDER: snprintf(out, len, "%s", r->provider ? r->provider : ""); break;
	case REQ_ATTEMPTS:
	case REQ_HEDGED:
	case REQ_TOKENS_IN:
	case REQ_TOKENS_OUT: {
		int64_t v = col == REQ_ATTEMPTS ? r->attempts : col == REQ_HEDGED ? r->hedged :
			    col == REQ_TOKENS_IN ? r->tokens_in : r->tokens_out;

		snprintf(out, len, "%s", "");
		if (v >= 0)
			snprintf(out, len, "%lld", (long long)v);
		break;
	}
	case REQ_RETRIES: snprintf(out, len, "%d", r->retries); break;
	case REQ_MAX_GAP_MS: num_text(r->max_gap_ms, 3, out, len); break;
	case REQ_COST_USD: num_text(r->cost_usd, 6, out, len); break;
	case REQ_DEGRADED: snprintf(out, len, "%s", r->degraded ? r->degraded : ""); break;
	default: cr_assert_fail("column %d", col);
	}
}

/* Writes recs through loadgen's recorder into dir. */
static void write_requests(void)
{
	struct recorder r;
	struct run_info info = { .arrival = "poisson", .duration_ms = 2000, .window_ms = 2000,
				 .elapsed_ms = 2000 };
	size_t k;

	cr_assert_eq(recorder_open(&r, dir, stream_names, 2, err, sizeof(err)), 0, "%s", err);
	for (k = 0; k < NRECS; k++)
		cr_assert_eq(recorder_add(&r, &recs[k]), 0);
	cr_assert_eq(recorder_finish(&r, &info, err, sizeof(err)), 0, "%s", err);
	recorder_free(&r);
}

static void read_file(const char *name, struct buf *b)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(csv_read_file(path, b), 0, "%s", path);
}

Test(records, requests_csv_reads_back_field_for_field, .timeout = 10)
{
	struct buf text = { 0 };
	struct csv c;
	char want[256];
	size_t k;
	int col;

	write_requests();
	read_file(REC_REQUESTS_CSV, &text);
	csv_init(&c, REC_REQUESTS_CSV, text.data, text.len);
	cr_assert_eq(csv_next(&c, err), 1, "%s", err);
	cr_assert_eq(c.nf, REQ_NCOLS);
	for (col = 0; col < REQ_NCOLS; col++)
		cr_assert_str_eq(csv_field(&c, (size_t)col), req_columns[col]);
	for (k = 0; k < NRECS; k++) {
		cr_assert_eq(csv_row(&c, REQ_NCOLS, err), 1, "row %zu: %s", k, err);
		for (col = 0; col < REQ_NCOLS; col++) {
			expected_field(k, col, want, sizeof(want));
			cr_assert_str_eq(csv_field(&c, (size_t)col), want, "row %zu, column %s", k,
					 req_columns[col]);
		}
	}
	cr_assert_eq(csv_row(&c, REQ_NCOLS, err), 0);
	csv_close(&c);
	buf_free(&text);
}

Test(records, requests_jsonl_holds_the_same_fields_in_the_same_order, .timeout = 10)
{
	struct buf text = { 0 };
	const char *line;
	char want[256];
	size_t k = 0;

	write_requests();
	read_file(REC_REQUESTS_JSONL, &text);
	cr_assert_not_null(text.data);
	for (line = text.data; *line; k++) {
		const char *nl = strchr(line, '\n');
		cJSON *o;
		const cJSON *v;
		int col = 0;

		cr_assert_not_null(nl);
		cr_assert_lt(k, NRECS);
		o = cJSON_ParseWithLength(line, (size_t)(nl - line));
		cr_assert_not_null(o, "line %zu", k);
		cJSON_ArrayForEach(v, o) {
			char got[256];

			cr_assert_lt(col, REQ_NCOLS);
			cr_assert_str_eq(v->string, req_columns[col]);
			expected_field(k, col, want, sizeof(want));
			if (cJSON_IsString(v))
				snprintf(got, sizeof(got), "%s", v->valuestring);
			else if (cJSON_IsNull(v))
				snprintf(got, sizeof(got), "%s", "");
			else if (cJSON_IsBool(v))
				snprintf(got, sizeof(got), "%d", cJSON_IsTrue(v));
			else
				num_text(v->valuedouble, col == REQ_COST_USD ? 6 : 3, got,
					 sizeof(got));
			if (cJSON_IsNumber(v) && strchr(want, '.') == NULL)
				snprintf(got, sizeof(got), "%.0f", v->valuedouble);
			cr_assert_str_eq(got, want, "line %zu, key %s", k, req_columns[col]);
			col++;
		}
		cr_assert_eq(col, REQ_NCOLS);
		cJSON_Delete(o);
		line = nl + 1;
	}
	cr_assert_eq(k, NRECS);
	buf_free(&text);
}

/*
 * summary.json counts the degraded marks by name, zeros included, and any
 * other value of the header under "other"; requests without one are not
 * counted.
 */
Test(records, summary_counts_degraded_answers_by_mark, .timeout = 10)
{
	static const char *const marks[] = { "cache", NULL, "cache", "stale", NULL };
	struct run_info info = { .arrival = "constant", .duration_ms = 1000, .window_ms = 1000,
				 .elapsed_ms = 1000 };
	struct recorder r;
	struct buf text = { 0 };
	struct record rec = recs[1];
	cJSON *sum;
	const cJSON *d;
	size_t k;

	cr_assert_eq(recorder_open(&r, dir, stream_names, 2, err, sizeof(err)), 0, "%s", err);
	for (k = 0; k < sizeof(marks) / sizeof(marks[0]); k++) {
		rec.degraded = marks[k];
		cr_assert_eq(recorder_add(&r, &rec), 0);
	}
	cr_assert_eq(recorder_finish(&r, &info, err, sizeof(err)), 0, "%s", err);
	recorder_free(&r);
	read_file(REC_SUMMARY, &text);
	sum = cJSON_Parse(text.data);
	buf_free(&text);
	cr_assert_not_null(sum);
	d = cJSON_GetObjectItemCaseSensitive(sum, "degraded");
	cr_assert(cJSON_IsObject(d));
	cr_assert_eq(cJSON_GetArraySize(d), 3);
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(d, "static")->valueint, 0);
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(d, "cache")->valueint, 2);
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(d, "other")->valueint, 1);
	cJSON_Delete(sum);
}

/* The loaded request of recs[k] (the loader sorts by sched_ms). */
static const struct run_req *loaded(const struct rundata *d, const char *id)
{
	size_t i;

	for (i = 0; i < d->nreqs; i++) {
		if (strcmp(d->reqs[i].id, id) == 0)
			return &d->reqs[i];
	}
	cr_assert_fail("no request %s", id);
	return NULL;
}

/* NaN-aware equality of a value written with decimals places. */
static void expect_num(double got, double want, int decimals, const char *what)
{
	if (isnan(want)) {
		cr_assert(isnan(got), "%s: %g, expected none", what, got);
		return;
	}
	cr_assert_float_eq(got, want, pow(10, -decimals) / 2 + 1e-12, "%s: %g, expected %g",
			   what, got, want);
}

Test(records, the_runner_loads_what_loadgen_wrote, .timeout = 10)
{
	struct rundata d;
	size_t k;

	write_requests();
	cr_assert_eq(rundata_load(&d, dir, 0, err), 0, "%s", err);
	cr_assert_eq(d.nreqs, NRECS);
	/* Sorted by sched_ms: r-2 first. */
	cr_assert_str_eq(d.reqs[0].id, recs[1].id);
	for (k = 0; k < NRECS; k++) {
		const struct record *w = &recs[k];
		const struct run_req *r = loaded(&d, w->id);

		cr_assert_eq(r->seq, k + 1);
		cr_assert_str_eq(r->tenant, w->tenant);
		cr_assert_str_eq(r->feature, w->feature);
		if (w->provider)
			cr_assert_str_eq(r->provider, w->provider);
		else
			cr_assert_null(r->provider);
		cr_assert_str_eq(req_class_name(r->cls), w->class_name);
		cr_assert_eq(r->streaming, w->streaming);
		cr_assert_eq(r->outcome, w->outcome);
		cr_assert_eq(r->status, w->status > 0 ? (int)w->status : -1);
		cr_assert_eq(r->error_event, w->error != NULL);
		expect_num(r->sched_ms, w->sched_ms, 3, "sched_ms");
		expect_num(r->end_ms, w->end_ms, 3, "end_ms");
		expect_num(r->latency_ms, w->end_ms - w->sched_ms, 3, "latency_ms");
		expect_num(r->ttft_ms, w->ttft_ms, 3, "ttft_ms");
		expect_num(r->max_gap_ms, w->max_gap_ms, 3, "max_gap_ms");
		expect_num(r->cost_read, w->cost_usd, 6, "cost_usd");
		expect_num(r->tokens_in, w->tokens_in >= 0 ? (double)w->tokens_in : NAN, 0,
			   "tokens_in");
		expect_num(r->tokens_out, w->tokens_out >= 0 ? (double)w->tokens_out : NAN, 0,
			   "tokens_out");
	}
	cr_assert(d.have_class[CLASS_BATCH]);
	cr_assert(d.have_class[CLASS_INTERACTIVE]);
	rundata_free(&d);
}

static const struct mock_record mocks[] = {
	{ .t_ms = 1001.5, .request_id = "r-1,\"quoted\"", .streaming = true, .fault = "stall",
	  .status = 200, .ttft_ms = 10.125, .dur_ms = 240.5, .tokens_out = 5,
	  .outcome = MOCK_FAULTED },
	{ .t_ms = 21, .request_id = NULL, .streaming = false, .fault = "",
	  .status = 0, .ttft_ms = NAN, .dur_ms = 0.25, .tokens_out = 0,
	  .outcome = MOCK_CLIENT_ABORTED },
	{ .t_ms = 22.5, .request_id = "r-2", .streaming = false, .fault = "rate_limit+reset",
	  .status = 429, .ttft_ms = NAN, .dur_ms = 1, .tokens_out = 12,
	  .outcome = MOCK_COMPLETED },
	{ .t_ms = 23, .request_id = NULL, .streaming = false, .fault = "hang",
	  .status = 0, .ttft_ms = NAN, .dur_ms = 1000, .tokens_out = 0,
	  .outcome = MOCK_CLIENT_ABORTED, .kind = MOCK_KIND_MODELS },
};
#define NMOCKS (sizeof(mocks) / sizeof(mocks[0]))

/* Writes mocks as DIR/mock-NAME.csv, header and rows as mockprov builds them. */
static void write_mock_log(const char *provider)
{
	struct recfile f;
	struct row r = { 0 };
	char name[64];
	char path[160];
	size_t k;

	cr_assert_eq(rec_mock_file(provider, name, sizeof(name)), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(recfile_open(&f, path, false, NULL), 0);
	cr_assert_eq(row_header(&r, mock_columns, MOCK_NCOLS), 0);
	cr_assert_eq(recfile_write(&f, r.b.data, r.b.len), 0);
	for (k = 0; k < NMOCKS; k++) {
		cr_assert_eq(mock_record_row(&r, &mocks[k]), 0);
		cr_assert_eq(recfile_write(&f, r.b.data, r.b.len), 0);
	}
	cr_assert_eq(recfile_commit(&f), 0);
	row_free(&r);
}

Test(records, mock_log_reads_back_field_for_field, .timeout = 10)
{
	struct buf text = { 0 };
	struct csv c;
	char want[MOCK_NCOLS][128];
	size_t k;
	int col;

	write_mock_log("primary");
	read_file("mock-primary.csv", &text);
	csv_init(&c, "mock-primary.csv", text.data, text.len);
	cr_assert_eq(csv_next(&c, err), 1, "%s", err);
	cr_assert_eq(c.nf, MOCK_NCOLS);
	for (col = 0; col < MOCK_NCOLS; col++)
		cr_assert_str_eq(csv_field(&c, (size_t)col), mock_columns[col]);
	for (k = 0; k < NMOCKS; k++) {
		const struct mock_record *m = &mocks[k];

		num_text(m->t_ms, 3, want[MOCK_T_MS], sizeof(want[0]));
		snprintf(want[MOCK_REQUEST_ID], sizeof(want[0]), "%s",
			 m->request_id ? m->request_id : "");
		snprintf(want[MOCK_STREAMING], sizeof(want[0]), "%d", m->streaming);
		snprintf(want[MOCK_FAULT], sizeof(want[0]), "%s", m->fault);
		snprintf(want[MOCK_STATUS], sizeof(want[0]), "%lld", (long long)m->status);
		num_text(m->ttft_ms, 3, want[MOCK_TTFT_MS], sizeof(want[0]));
		num_text(m->dur_ms, 3, want[MOCK_DUR_MS], sizeof(want[0]));
		snprintf(want[MOCK_TOKENS_OUT], sizeof(want[0]), "%lld",
			 (long long)m->tokens_out);
		snprintf(want[MOCK_OUTCOME], sizeof(want[0]), "%s",
			 mock_outcome_name(m->outcome));
		snprintf(want[MOCK_KIND], sizeof(want[0]), "%s", mock_kind_name(m->kind));
		cr_assert_eq(csv_row(&c, MOCK_NCOLS, err), 1, "row %zu: %s", k, err);
		for (col = 0; col < MOCK_NCOLS; col++)
			cr_assert_str_eq(csv_field(&c, (size_t)col), want[col], "row %zu, column %s",
					 k, mock_columns[col]);
	}
	cr_assert_eq(csv_row(&c, MOCK_NCOLS, err), 0);
	csv_close(&c);
	buf_free(&text);
}

Test(records, the_runner_loads_what_mockprov_wrote, .timeout = 10)
{
	struct rundata d;
	size_t k;

	write_requests();
	write_mock_log("primary");
	cr_assert_eq(rundata_load(&d, dir, 0, err), 0, "%s", err);
	cr_assert_eq(d.nmock, 1);
	cr_assert_str_eq(d.mock_files[0], "mock-primary.csv");
	cr_assert_str_eq(d.mock_providers[0], "primary");
	cr_assert_eq(d.nmrows, NMOCKS);
	/* Sorted by t_ms: 21, 22.5, 23, 1001.5. */
	for (k = 0; k < NMOCKS; k++) {
		static const size_t order[] = { 1, 2, 3, 0 };
		const struct mock_record *m = &mocks[order[k]];
		const struct run_mrow *r = &d.mrows[k];

		expect_num(r->t_ms, m->t_ms, 3, "t_ms");
		expect_num(r->tokens, (double)m->tokens_out, 0, "tokens_out");
		cr_assert_eq(r->outcome, m->outcome);
		cr_assert_eq(r->file, 0);
		cr_assert_eq(r->kind, m->kind);
		cr_assert_eq(r->check, m->kind == MOCK_KIND_MODELS);
		if (m->request_id)
			cr_assert_str_eq(r->req->id, m->request_id);
		else
			cr_assert_null(r->req);
	}
	rundata_free(&d);
}

Test(records, events_keyed_as_written_load_back, .timeout = 10)
{
	char path[128];
	struct rundata d;
	FILE *fp;

	write_requests();
	snprintf(path, sizeof(path), "%s/%s", dir, REC_EVENTS);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fprintf(fp, "{\"%s\":1500.25,\"%s\":\"primary\",\"%s\":\"mock-small\",\"%s\":\"%s\","
		"\"%s\":\"%s\",\"%s\":\"5 failures\"}\n",
		event_keys[EVENT_T_UNIX_MS], event_keys[EVENT_PROVIDER], event_keys[EVENT_MODEL],
		event_keys[EVENT_FROM], event_state_name(EVENT_CLOSED),
		event_keys[EVENT_TO], event_state_name(EVENT_OPEN),
		event_keys[EVENT_REASON]);
	fclose(fp);
	cr_assert_eq(rundata_load(&d, dir, 1000, err), 0, "%s", err);
	cr_assert(d.have_events);
	cr_assert_eq(d.nevents, 1);
	cr_assert_float_eq(d.events[0].t_ms, 500.25, 1e-9);
	cr_assert_str_eq(d.events[0].provider, "primary");
	cr_assert_str_eq(d.events[0].model, "mock-small");
	cr_assert_str_eq(d.events[0].from, "closed");
	cr_assert_str_eq(d.events[0].to, "open");
	cr_assert_str_eq(d.events[0].reason, "5 failures");
	rundata_free(&d);
}

Test(records, an_unfinished_log_is_refused, .timeout = 10)
{
	char path[128];
	struct rundata d;
	FILE *fp;

	write_requests();
	snprintf(path, sizeof(path), "%s/mock-primary.csv%s", dir, REC_TMP_SUFFIX);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fclose(fp);
	cr_assert_eq(rundata_load(&d, dir, 0, err), -EINVAL);
	cr_assert(strstr(err, "mock-primary.csv.tmp: an unfinished result file"), "%s", err);
	rundata_free(&d);
}

Test(records_names, outcomes_classes_and_states_there_and_back, .timeout = 5)
{
	int i;

	for (i = 0; i < OUT_COUNT; i++)
		cr_assert_eq(outcome_from_name(outcome_name((enum outcome)i)), i);
	cr_assert_str_eq(outcome_name(OUT_OK), "ok");
	cr_assert_str_eq(outcome_name(OUT_INVALID), "invalid");
	cr_assert_str_eq(outcome_name(OUT_COUNT), "?");
	cr_assert_eq(outcome_from_name("completed"), -1);
	for (i = 0; i < MOCK_OUTCOME_COUNT; i++)
		cr_assert_eq(mock_outcome_from_name(mock_outcome_name((enum mock_outcome)i)), i);
	cr_assert_str_eq(mock_outcome_name(MOCK_CLIENT_ABORTED), "client_aborted");
	cr_assert_eq(mock_outcome_from_name("ok"), -1);
	for (i = 0; i < CLASS_COUNT; i++)
		cr_assert_eq(req_class_from_name(req_class_name((enum req_class)i)), i);
	cr_assert_eq(req_class_from_name(""), -1);
	for (i = 0; i < DEGRADED_COUNT; i++)
		cr_assert_eq(req_degraded_from_name(req_degraded_name((enum req_degraded)i)), i);
	cr_assert_str_eq(req_degraded_name(DEGRADED_STATIC), "static");
	cr_assert_str_eq(req_degraded_name(DEGRADED_CACHE), "cache");
	cr_assert_eq(req_degraded_from_name("stale"), -1);
	for (i = 0; i < EVENT_NSTATES; i++)
		cr_assert_eq(event_state_from_name(event_state_name(
				     (enum event_state)i)), i);
	cr_assert_eq(event_state_from_name("half-open"), EVENT_HALF_OPEN);
	cr_assert_eq(event_state_from_name("shut"), -1);
}

Test(records_names, mock_file_names, .timeout = 5)
{
	char name[32];
	char prov[32];

	cr_assert_eq(rec_mock_file("primary", name, sizeof(name)), 0);
	cr_assert_str_eq(name, "mock-primary.csv");
	cr_assert_eq(rec_mock_file("a-very-long-provider-name-indeed", name, 16), -ENAMETOOLONG);
	cr_assert(rec_mock_file_parse("mock-primary.csv", prov, sizeof(prov)));
	cr_assert_str_eq(prov, "primary");
	cr_assert(rec_mock_file_parse("mock-a.b.csv", prov, sizeof(prov)));
	cr_assert_str_eq(prov, "a.b");
	cr_assert_not(rec_mock_file_parse("mock-.csv", NULL, 0));
	cr_assert_not(rec_mock_file_parse("mock-primary.csv.tmp", NULL, 0));
	cr_assert_not(rec_mock_file_parse("requests.csv", NULL, 0));
	cr_assert(rec_unfinished("requests.csv.tmp"));
	cr_assert(rec_unfinished("mock-primary.csv.tmp"));
	cr_assert_not(rec_unfinished("requests.jsonl.tmp"));
	cr_assert_not(rec_unfinished("mock-primary.csv"));
}

/* The header line a writer builds from a column table. */
static void expect_header(const char *const *names, size_t n, const char *want)
{
	struct row r = { 0 };

	cr_assert_eq(row_header(&r, names, n), 0);
	cr_assert_str_eq(r.b.data, want);
	row_free(&r);
}

Test(records_names, the_files_columns_are_the_documented_ones, .timeout = 5)
{
	/* DESIGN.md's columns, in its order: renaming one changes the file format. */
	expect_header(req_columns, REQ_NCOLS,
		      "id,stream_name,class,tenant,feature,streaming,sched_ms,start_ms,ttft_ms,"
		      "end_ms,latency_ms,service_ms,status,outcome,error,provider,attempts,hedged,"
		      "retries,tokens_in,tokens_out,max_gap_ms,cost_usd,degraded\n");
	expect_header(mock_columns, MOCK_NCOLS,
		      "t_ms,request_id,streaming,fault,status,ttft_ms,dur_ms,tokens_out,outcome,"
		      "kind\n");
	cr_assert_str_eq(event_keys[EVENT_T_UNIX_MS], "t_unix_ms");
	cr_assert_str_eq(event_keys[EVENT_PROVIDER], "provider");
	cr_assert_str_eq(event_keys[EVENT_MODEL], "model");
	cr_assert_str_eq(event_keys[EVENT_FROM], "from");
	cr_assert_str_eq(event_keys[EVENT_TO], "to");
	cr_assert_str_eq(event_keys[EVENT_REASON], "reason");
	cr_assert_str_eq(REC_REQUESTS_CSV, "requests.csv");
	cr_assert_str_eq(REC_EVENTS, "events.jsonl");
}
