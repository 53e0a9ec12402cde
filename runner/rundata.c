/*
 * rundata: reading a run directory's per-request records (requests.csv,
 * mock-NAME.csv, events.jsonl) into rows sorted by time; see rundata.h.
 * The columns and names are common/records.h's; the CSV reader is
 * common/csv.c.
 */
#include "runner/rundata.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/csv.h"

#define MAX_STATUS 999

/* qsort, which may not be given a NULL base even for no elements. */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static char *path_join(const char *dir, const char *name)
{
	struct buf b = { 0 };

	if (buf_printf(&b, "%s/%s", dir, name)) {
		buf_free(&b);
		return NULL;
	}
	return b.data;
}

static int value_error(char *err, const struct csv *c, const char *col, const char *what,
		       const char *got)
{
	return csv_error(err, c->path, c->rec_line, "column %s: expected %s, got \"%.64s\"",
			 col, what, got);
}

/* strdup of s, NULL (with *oom set) when out of memory. */
static char *dup_str(const char *s, bool *oom)
{
	char *d = strdup(s);

	if (!d)
		*oom = true;
	return d;
}

/* Looks up the columns cols[0..n) of requests.csv or mock-NAME.csv by name. */
static void column_names(const char *const *table, const int *cols, size_t n,
			 const char **names)
{
	size_t i;

	for (i = 0; i < n; i++)
		names[i] = table[cols[i]];
}

/* ---- requests.csv ---- */

/* The columns every requests.csv must have. */
enum { RC_ID, RC_SCHED, RC_END, RC_LATENCY, RC_STATUS, RC_OUTCOME, RC_PROVIDER,
       RC_TENANT, RC_FEATURE, RC_COST, RC_N };
static const int req_need[RC_N] = {
	REQ_ID, REQ_SCHED_MS, REQ_END_MS, REQ_LATENCY_MS, REQ_STATUS, REQ_OUTCOME, REQ_PROVIDER,
	REQ_TENANT, REQ_FEATURE, REQ_COST_USD,
};

/*
 * The stream columns: read when "streaming" is in the header, and then all
 * of them must be (a requests.csv without it has no streams).
 */
enum { SCOL_STREAMING, SCOL_TTFT, SCOL_ERROR, SCOL_GAP, SCOL_N };
static const int req_stream[SCOL_N] = { REQ_STREAMING, REQ_TTFT_MS, REQ_ERROR, REQ_MAX_GAP_MS };

/*
 * Optional columns: a requests.csv without them has every request
 * interactive, of no named stream, no tokens, none degraded, and no
 * start, attempts or retries known.
 */
enum { OCOL_CLASS, OCOL_TOKENS_IN, OCOL_TOKENS_OUT, OCOL_STREAM_NAME, OCOL_DEGRADED,
       OCOL_START, OCOL_ATTEMPTS, OCOL_RETRIES, OCOL_N };
static const int req_optional[OCOL_N] = { REQ_CLASS, REQ_TOKENS_IN, REQ_TOKENS_OUT,
					   REQ_STREAM_NAME, REQ_DEGRADED, REQ_START_MS,
					   REQ_ATTEMPTS, REQ_RETRIES };

_Static_assert(RUN_DEGRADED_STATIC - 1 == (int)DEGRADED_STATIC &&
	       RUN_DEGRADED_CACHE - 1 == (int)DEGRADED_CACHE &&
	       RUN_DEGRADED_OTHER - 1 == (int)DEGRADED_COUNT, "run_degraded is req_degraded, one up");

const char *run_degraded_name(enum run_degraded d)
{
	if (d == RUN_NOT_DEGRADED)
		return "";
	if (d == RUN_DEGRADED_OTHER)
		return "other";
	return req_degraded_name((enum req_degraded)(d - 1));
}

static void req_free(struct run_req *r)
{
	free(r->id);
	free(r->provider);
	free(r->tenant);
	free(r->feature);
	free(r->stream_name);
}

/* Fills r's stream facts from the current row of c (sidx: req_stream's columns). */
static int req_parse_stream(struct run_req *r, const struct csv *c, const int *sidx, char *err)
{
	const char *streaming = csv_field(c, sidx[SCOL_STREAMING]);
	const char *ttft = csv_field(c, sidx[SCOL_TTFT]);
	const char *gap = csv_field(c, sidx[SCOL_GAP]);
	const char *error = csv_field(c, sidx[SCOL_ERROR]);

	if (strcmp(streaming, "0") != 0 && strcmp(streaming, "1") != 0)
		return value_error(err, c, req_columns[REQ_STREAMING], "0 or 1", streaming);
	r->streaming = streaming[0] == '1';
	if (csv_num(ttft, &r->ttft_ms))
		return value_error(err, c, req_columns[REQ_TTFT_MS], "a number or nothing", ttft);
	if (csv_num(gap, &r->max_gap_ms))
		return value_error(err, c, req_columns[REQ_MAX_GAP_MS], "a number or nothing", gap);
	r->error_event = strncmp(error, REQ_ERROR_EVENT_PREFIX,
				 strlen(REQ_ERROR_EVENT_PREFIX)) == 0;
	return 0;
}

/* Field i of the optional columns, "" when the file has no such column. */
static const char *optional_field(const struct csv *c, const int *oidx, int i)
{
	return oidx[i] >= 0 ? csv_field(c, oidx[i]) : "";
}

/* Fills r's start, attempts and retries from the optional columns. */
static int req_parse_sends(struct run_req *r, const struct csv *c, const int *oidx, char *err)
{
	const char *start = optional_field(c, oidx, OCOL_START);
	const char *attempts = optional_field(c, oidx, OCOL_ATTEMPTS);
	const char *retries = optional_field(c, oidx, OCOL_RETRIES);

	if (csv_num(start, &r->start_ms))
		return value_error(err, c, req_columns[REQ_START_MS], "a number or nothing",
				   start);
	if (csv_whole(attempts, 0, 1e9, &r->attempts))
		return value_error(err, c, req_columns[REQ_ATTEMPTS],
				   "a whole number >= 0 or nothing", attempts);
	if (csv_whole(retries, 0, 1e9, &r->retries))
		return value_error(err, c, req_columns[REQ_RETRIES],
				   "a whole number >= 0 or nothing", retries);
	return 0;
}

/*
 * Fills r's class, tokens, stream name, degraded word, start, attempts
 * and retries from the optional columns (oidx[i] < 0: absent).
 */
static int req_parse_optional(struct run_req *r, const struct csv *c, const int *oidx, char *err)
{
	const char *cls = optional_field(c, oidx, OCOL_CLASS);
	const char *tin = optional_field(c, oidx, OCOL_TOKENS_IN);
	const char *tout = optional_field(c, oidx, OCOL_TOKENS_OUT);
	const char *deg = optional_field(c, oidx, OCOL_DEGRADED);
	int rc = req_parse_sends(r, c, oidx, err);
	int k = *cls ? req_class_from_name(cls) : CLASS_INTERACTIVE;
	int d;

	if (rc)
		return rc;
	if (k < 0)
		return value_error(err, c, req_columns[REQ_CLASS], "interactive, batch or nothing",
				   cls);
	r->cls = (enum req_class)k;
	if (csv_whole(tin, 0, 1e15, &r->tokens_in))
		return value_error(err, c, req_columns[REQ_TOKENS_IN],
				   "a whole number >= 0 or nothing", tin);
	if (csv_whole(tout, 0, 1e15, &r->tokens_out))
		return value_error(err, c, req_columns[REQ_TOKENS_OUT],
				   "a whole number >= 0 or nothing", tout);
	d = *deg ? req_degraded_from_name(deg) : -1;
	/* -1, none: RUN_NOT_DEGRADED; a mark of another gateway's: other, not an error. */
	r->degraded = *deg && d < 0 ? RUN_DEGRADED_OTHER : (enum run_degraded)(d + 1);
	r->stream_name = strdup(optional_field(c, oidx, OCOL_STREAM_NAME));
	return r->stream_name ? 0 : -ENOMEM;
}

/*
 * Fills r from the current row of c; sidx is NULL when the file has no
 * stream columns. Returns 0 or a negative errno.
 */
static int req_parse(struct run_req *r, const struct csv *c, const int *idx, const int *sidx,
		     const int *oidx, char *err)
{
	const char *f[RC_N];
	double status;
	bool oom = false;
	int outcome;
	int rc;
	int i;

	for (i = 0; i < RC_N; i++)
		f[i] = csv_field(c, idx[i]);
	if (!*f[RC_SCHED])
		return value_error(err, c, req_columns[REQ_SCHED_MS], "a number (it is required)",
				   "");
	if (csv_num(f[RC_SCHED], &r->sched_ms))
		return value_error(err, c, req_columns[REQ_SCHED_MS], "a number", f[RC_SCHED]);
	if (csv_num(f[RC_END], &r->end_ms))
		return value_error(err, c, req_columns[REQ_END_MS], "a number or nothing",
				   f[RC_END]);
	if (csv_num(f[RC_LATENCY], &r->latency_ms))
		return value_error(err, c, req_columns[REQ_LATENCY_MS], "a number or nothing",
				   f[RC_LATENCY]);
	if (csv_num(f[RC_COST], &r->cost_read))
		return value_error(err, c, req_columns[REQ_COST_USD], "a number or nothing",
				   f[RC_COST]);
	if (csv_whole(f[RC_STATUS], 0, MAX_STATUS, &status))
		return value_error(err, c, req_columns[REQ_STATUS],
				   "a whole number 0-999 or nothing", f[RC_STATUS]);
	r->status = isnan(status) ? -1 : (int)status;
	outcome = outcome_from_name(f[RC_OUTCOME]);
	if (outcome < 0)
		return value_error(err, c, req_columns[REQ_OUTCOME],
				   "ok, http_error, timeout, refused, reset, truncated, stalled or invalid",
				   f[RC_OUTCOME]);
	r->outcome = (enum outcome)outcome;
	r->ttft_ms = NAN;
	r->max_gap_ms = NAN;
	if (sidx) {
		rc = req_parse_stream(r, c, sidx, err);
		if (rc)
			return rc;
	}
	rc = req_parse_optional(r, c, oidx, err);
	if (rc)
		return rc;
	r->id = dup_str(f[RC_ID], &oom);
	r->tenant = dup_str(f[RC_TENANT], &oom);
	r->feature = dup_str(f[RC_FEATURE], &oom);
	if (*f[RC_PROVIDER])
		r->provider = dup_str(f[RC_PROVIDER], &oom);
	if (oom)
		return -ENOMEM;
	r->cost_usd = r->cost_read;
	return 0;
}

static int req_cmp_time(const void *a, const void *b)
{
	const struct run_req *x = a;
	const struct run_req *y = b;

	if (x->sched_ms != y->sched_ms)
		return x->sched_ms < y->sched_ms ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int req_cmp_id(const void *a, const void *b)
{
	const struct run_req *const *x = a;
	const struct run_req *const *y = b;

	return strcmp((*x)->id, (*y)->id);
}

/* Finds the stream columns; *have false when the header has no "streaming". */
static int stream_header(const struct csv *c, int *sidx, bool *have, char *err)
{
	int i;

	*have = csv_column(c, req_columns[REQ_STREAMING]) >= 0;
	for (i = 0; *have && i < SCOL_N; i++) {
		sidx[i] = csv_column(c, req_columns[req_stream[i]]);
		if (sidx[i] < 0)
			return csv_error(err, c->path, c->rec_line,
					 "no column \"%s\" in the header (it goes with \"%s\")",
					 req_columns[req_stream[i]], req_columns[REQ_STREAMING]);
	}
	return 0;
}

static int load_requests(struct rundata *d, const char *path, char *err)
{
	struct buf content = { 0 };
	const char *names[RC_N];
	struct csv c;
	int idx[RC_N];
	int sidx[SCOL_N];
	int oidx[OCOL_N];
	bool have_streams;
	size_t cap = 0;
	size_t width;
	int i;
	int rc;

	rc = csv_read_file(path, &content);
	if (rc == -ENOENT) {
		snprintf(err, CFG_ERR_LEN, "%s: no such file (loadgen's results)", path);
		goto out_free_content;
	}
	if (rc) {
		snprintf(err, CFG_ERR_LEN, "%s: cannot read: %s", path, strerror(-rc));
		goto out_free_content;
	}
	csv_init(&c, path, content.data, content.len);
	column_names(req_columns, req_need, RC_N, names);
	rc = csv_header(&c, names, RC_N, idx, err);
	if (!rc)
		rc = stream_header(&c, sidx, &have_streams, err);
	if (rc)
		goto out_close_csv;
	for (i = 0; i < OCOL_N; i++)
		oidx[i] = csv_column(&c, req_columns[req_optional[i]]);
	width = c.nf;
	for (;;) {
		struct run_req *r;

		rc = csv_row(&c, width, err);
		if (rc <= 0)
			break;
		rc = buf_grow_array((void **)&d->reqs, &cap, d->nreqs + 1, sizeof(*d->reqs));
		if (rc)
			break;
		r = &d->reqs[d->nreqs++];
		memset(r, 0, sizeof(*r));
		r->seq = d->nreqs;
		r->line = c.rec_line;
		rc = req_parse(r, &c, idx, have_streams ? sidx : NULL, oidx, err);
		if (rc)
			break;
		d->have_class[r->cls] = true;
	}
	if (rc == -ENOMEM)
		snprintf(err, CFG_ERR_LEN, "%s: out of memory", path);
out_close_csv:
	csv_close(&c);
out_free_content:
	buf_free(&content);
	return rc;
}

/*
 * The requests with an id, sorted by id, for joining mock rows; a repeated
 * id is an error. *out is malloc'ed (may be NULL when there are none).
 */
static int index_ids(const struct rundata *d, const char *path, struct run_req ***out, size_t *n,
		     char *err)
{
	struct run_req **v = malloc((d->nreqs ? d->nreqs : 1) * sizeof(*v));
	size_t i;
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < d->nreqs; i++) {
		if (d->reqs[i].id[0])
			v[k++] = &d->reqs[i];
	}
	sort(v, k, sizeof(*v), req_cmp_id);
	for (i = 1; i < k; i++) {
		if (strcmp(v[i]->id, v[i - 1]->id) == 0) {
			const struct run_req *a = v[i]->seq < v[i - 1]->seq ? v[i] : v[i - 1];
			const struct run_req *b = a == v[i] ? v[i - 1] : v[i];
			int rc = csv_error(err, path, b->line,
					   "request id \"%.64s\" already on line %zu", b->id, a->line);

			free(v);
			return rc;
		}
	}
	*out = v;
	*n = k;
	return 0;
}

/* The request with this id in the index, or NULL. */
static struct run_req *find_req(struct run_req *const *byid, size_t n, const char *id)
{
	size_t lo = 0;
	size_t hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int cmp = strcmp(byid[mid]->id, id);

		if (cmp == 0)
			return byid[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- mock-NAME.csv ---- */

/* The columns every mock-NAME.csv must have. */
enum { MC_T, MC_ID, MC_TOKENS, MC_OUTCOME, MC_N };
static const int mock_need[MC_N] = { MOCK_T_MS, MOCK_REQUEST_ID, MOCK_TOKENS_OUT, MOCK_OUTCOME };

/*
 * The requests by id, which mock rows are joined to, and the form of
 * loadgen's ids (--id-prefix, then a number): the prefix every id of the
 * file has before its digits, when they all share one.
 */
struct join {
	struct run_req **byid;
	size_t n;
	const char *prefix;	/* NULL: no common form (or no request) */
	size_t prefix_len;
};

/* The length of id without its trailing digits. */
static size_t digits_start(const char *id)
{
	size_t n = strlen(id);

	while (n && id[n - 1] >= '0' && id[n - 1] <= '9')
		n--;
	return n;
}

/* Whether id is j's prefix followed by one digit or more. */
static bool of_loadgen_form(const struct join *j, const char *id)
{
	size_t n = digits_start(id);

	return j->prefix && n == j->prefix_len && id[n] && memcmp(id, j->prefix, n) == 0;
}

/*
 * The prefix every request id of j has before its trailing digits (each
 * having some), or none: j->prefix NULL.
 */
static void find_form(struct join *j)
{
	size_t i;

	j->prefix = NULL;
	for (i = 0; i < j->n; i++) {
		const char *id = j->byid[i]->id;
		size_t n = digits_start(id);

		if (!id[n] || (i && (n != j->prefix_len || memcmp(id, j->prefix, n) != 0))) {
			j->prefix = NULL;
			return;
		}
		j->prefix = j->byid[0]->id;
		j->prefix_len = n;
	}
}

/* The optional columns of a mock log: each index, or < 0 when the log has none. */
struct mock_optional {
	int kind;	/* none: every row a chat completion */
	int status;
	int dur;
	int fault;	/* none: no fault named */
};

/* Whether the fault column's faults, joined with '+', include name. */
static bool names_fault(const char *faults, const char *name)
{
	size_t n = strlen(name);
	const char *p = faults;

	while ((p = strstr(p, name)) != NULL) {
		if ((p == faults || p[-1] == '+') && (p[n] == '\0' || p[n] == '+'))
			return true;
		p += n;
	}
	return false;
}

/* Field idx of the current row of c, "" when the log has no such column (idx < 0). */
static const char *mock_field(const struct csv *c, int idx)
{
	return idx >= 0 ? csv_field(c, (size_t)idx) : "";
}

/* Fills m from the current row of c. */
static int mrow_parse(struct run_mrow *m, const struct csv *c, const int *idx,
		      const struct mock_optional *opt, const struct join *j, char *err)
{
	const char *status = mock_field(c, opt->status);
	const char *dur = mock_field(c, opt->dur);
	double v;
	const char *t = csv_field(c, idx[MC_T]);
	const char *id = csv_field(c, idx[MC_ID]);
	const char *tokens = csv_field(c, idx[MC_TOKENS]);
	const char *outcome = csv_field(c, idx[MC_OUTCOME]);
	const char *kind = mock_field(c, opt->kind);
	int oc;
	int k;

	if (!*t)
		return value_error(err, c, mock_columns[MOCK_T_MS], "a number (it is required)", "");
	if (csv_num(t, &m->t_ms))
		return value_error(err, c, mock_columns[MOCK_T_MS], "a number", t);
	if (csv_whole(tokens, 0, 1e15, &m->tokens))
		return value_error(err, c, mock_columns[MOCK_TOKENS_OUT],
				   "a whole number >= 0 or nothing", tokens);
	if (isnan(m->tokens))
		m->tokens = 0;
	oc = mock_outcome_from_name(outcome);
	if (oc < 0)
		return value_error(err, c, mock_columns[MOCK_OUTCOME],
				   "completed, client_aborted or faulted", outcome);
	m->outcome = (enum mock_outcome)oc;
	m->faulted = m->outcome == MOCK_FAULTED;
	/* A broken answer that went out: not one the client left before it was sent. */
	m->bad_content = m->faulted &&
			 names_fault(mock_field(c, opt->fault), RUN_BAD_CONTENT_FAULT);
	k = *kind ? mock_kind_from_name(kind) : MOCK_KIND_CHAT;
	if (k < 0)
		return value_error(err, c, mock_columns[MOCK_KIND], "chat, models or nothing", kind);
	m->kind = (enum mock_kind)k;
	m->status = -1;
	if (*status && (csv_whole(status, 0, 999, &v) || isnan(v)))
		return value_error(err, c, mock_columns[MOCK_STATUS], "a status 0-999 or nothing",
				   status);
	if (*status)
		m->status = (int)v;
	m->dur_ms = NAN;
	if (*dur && csv_num(dur, &m->dur_ms))
		return value_error(err, c, mock_columns[MOCK_DUR_MS], "a number or nothing", dur);
	m->check = rec_mock_is_check(m->kind, *id ? id : NULL);
	m->req = *id && !m->check ? find_req(j->byid, j->n, id) : NULL;
	m->join = m->req ? RUN_JOIN_ID : RUN_JOIN_NONE;
	m->unrecorded = !m->req && !m->check && of_loadgen_form(j, id);
	return 0;
}

static int load_mock(struct rundata *d, size_t *cap, const char *path, size_t file,
		     const struct join *j, char *err)
{
	struct buf content = { 0 };
	const char *names[MC_N];
	struct csv c;
	int idx[MC_N];
	struct mock_optional opt;
	size_t width;
	int rc;

	rc = csv_read_file(path, &content);
	if (rc) {
		snprintf(err, CFG_ERR_LEN, "%s: cannot read: %s", path, strerror(-rc));
		goto out_free_content;
	}
	csv_init(&c, path, content.data, content.len);
	column_names(mock_columns, mock_need, MC_N, names);
	rc = csv_header(&c, names, MC_N, idx, err);
	if (rc)
		goto out_close_csv;
	opt.kind = csv_column(&c, mock_columns[MOCK_KIND]);
	opt.status = csv_column(&c, mock_columns[MOCK_STATUS]);
	opt.dur = csv_column(&c, mock_columns[MOCK_DUR_MS]);
	opt.fault = csv_column(&c, mock_columns[MOCK_FAULT]);
	width = c.nf;
	for (;;) {
		struct run_mrow *m;

		rc = csv_row(&c, width, err);
		if (rc <= 0)
			break;
		rc = buf_grow_array((void **)&d->mrows, cap, d->nmrows + 1, sizeof(*d->mrows));
		if (rc)
			break;
		m = &d->mrows[d->nmrows++];
		memset(m, 0, sizeof(*m));
		m->seq = d->nmrows;
		m->file = file;
		rc = mrow_parse(m, &c, idx, &opt, j, err);
		if (rc)
			break;
	}
	if (rc == -ENOMEM)
		snprintf(err, CFG_ERR_LEN, "%s: out of memory", path);
out_close_csv:
	csv_close(&c);
out_free_content:
	buf_free(&content);
	return rc;
}

static int mrow_cmp(const void *a, const void *b)
{
	const struct run_mrow *x = a;
	const struct run_mrow *y = b;

	if (x->t_ms != y->t_ms)
		return x->t_ms < y->t_ms ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Loads every mock log, joining each row to its request (j). */
static int load_mocks(struct rundata *d, const char *dir, const struct join *j, char *err)
{
	size_t cap = 0;
	size_t i;
	int rc = 0;

	for (i = 0; i < d->nmock && !rc; i++) {
		char *path = path_join(dir, d->mock_files[i]);

		if (!path)
			rc = -ENOMEM;
		else
			rc = load_mock(d, &cap, path, i, j, err);
		free(path);
	}
	return rc;
}

/* ---- events.jsonl ---- */

/*
 * A line's EVENT_KIND_KEY ("event", common/records.h): absent (or null) on
 * a breaker change; the kind of anything else the gateway writes there —
 * EVENT_CONTRACT_VIOLATION is read, other kinds are counted and skipped.
 */

static void event_free(struct run_event *e)
{
	free(e->replica_name);
	free(e->origin);
	free(e->peer);
	free(e->via);
	free(e->provider);
	free(e->model);
	free(e->from);
	free(e->to);
	free(e->reason);
}

static void violation_free(struct run_violation *v)
{
	free(v->provider);
	free(v->model);
	free(v->request_id);
	free(v->why);
}

/* Copies the string member key of o into *out: required, or string/null/absent. */
static int member_str(const cJSON *o, const char *key, bool required, char **out,
		      const char *path, size_t line, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*out = NULL;
	if (cJSON_IsString(v)) {
		*out = strdup(v->valuestring);
		return *out ? 0 : -ENOMEM;
	}
	if (!required && (!v || cJSON_IsNull(v)))
		return 0;
	return csv_error(err, path, line, "\"%s\": expected a string%s", key,
			 required ? "" : " or null");
}

static int event_str(const cJSON *o, enum event_key k, bool required, char **out,
		     const char *path, size_t line, char *err)
{
	return member_str(o, event_keys[k], required, out, path, line, err);
}

/* Fills e, a breaker change, from its line's object o. */
static int event_parse(struct run_event *e, const cJSON *o, const char *path, size_t line,
		       char *err)
{
	int rc;

	rc = event_str(o, EVENT_PROVIDER, true, &e->provider, path, line, err);
	if (!rc)
		rc = event_str(o, EVENT_MODEL, false, &e->model, path, line, err);
	if (!rc)
		rc = event_str(o, EVENT_FROM, true, &e->from, path, line, err);
	if (!rc)
		rc = event_str(o, EVENT_TO, true, &e->to, path, line, err);
	if (!rc)
		rc = event_str(o, EVENT_REASON, false, &e->reason, path, line, err);
	if (!rc)
		rc = event_str(o, EVENT_REPLICA, false, &e->replica_name, path, line, err);
	if (!rc)
		rc = event_str(o, EVENT_ORIGIN, false, &e->origin, path, line, err);
	if (!rc)
		rc = event_str(o, EVENT_PEER, false, &e->peer, path, line, err);
	if (!rc)
		rc = event_str(o, EVENT_VIA, false, &e->via, path, line, err);
	return rc;
}

/* Fills v, a contract violation, from its line's object o; joins it to its request. */
static int violation_parse(struct run_violation *v, const cJSON *o, const struct join *j,
			   const char *path, size_t line, char *err)
{
	int rc;

	rc = member_str(o, event_keys[EVENT_PROVIDER], true, &v->provider, path, line, err);
	if (!rc)
		rc = member_str(o, event_keys[EVENT_MODEL], false, &v->model, path, line, err);
	if (!rc)
		rc = member_str(o, "request_id", false, &v->request_id, path, line, err);
	if (!rc)
		rc = member_str(o, "why", false, &v->why, path, line, err);
	if (!rc && v->request_id && v->request_id[0])
		v->req = find_req(j->byid, j->n, v->request_id);
	return rc;
}

/* Where a file's lines go: the run's arrays and their capacities. */
struct event_sink {
	struct rundata *d;
	const struct join *j;
	size_t ev_cap;
	size_t vi_cap;
};

/*
 * Parses one line (NUL-terminated) of an events file into a breaker
 * change of replica K (0: events.jsonl), a contract violation, or
 * nothing (another kind of line, counted).
 */
static int line_parse(struct event_sink *k, const char *text, unsigned replica, int64_t t0,
		      const char *path, size_t line, char *err)
{
	struct rundata *d = k->d;
	const char *end = NULL;
	cJSON *o = cJSON_ParseWithOpts(text, &end, 1);
	const cJSON *t;
	const cJSON *kind;
	int rc = 0;

	if (!o)
		return csv_error(err, path, line, "not valid JSON (at column %zu)",
				 end ? (size_t)(end - text) + 1 : (size_t)1);
	if (!cJSON_IsObject(o)) {
		rc = csv_error(err, path, line, "expected a JSON object");
		goto out;
	}
	t = cJSON_GetObjectItemCaseSensitive(o, event_keys[EVENT_T_UNIX_MS]);
	if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble)) {
		rc = csv_error(err, path, line, "\"%s\": expected a number",
			       event_keys[EVENT_T_UNIX_MS]);
		goto out;
	}
	kind = cJSON_GetObjectItemCaseSensitive(o, EVENT_KIND_KEY);
	if (kind && !cJSON_IsNull(kind) && !cJSON_IsString(kind)) {
		rc = csv_error(err, path, line, "\"%s\": expected a string or null",
			       EVENT_KIND_KEY);
	} else if (cJSON_IsString(kind) &&
		   strcmp(kind->valuestring, EVENT_CONTRACT_VIOLATION) == 0) {
		struct run_violation *v;

		rc = buf_grow_array((void **)&d->violations, &k->vi_cap, d->nviolations + 1,
				    sizeof(*d->violations));
		if (rc)
			goto out;
		v = &d->violations[d->nviolations++];
		memset(v, 0, sizeof(*v));
		v->seq = d->nviolations;
		v->t_ms = t->valuedouble - (double)t0;
		rc = violation_parse(v, o, k->j, path, line, err);
	} else if (cJSON_IsString(kind)) {
		d->other_lines++;	/* a kind of line the figures do not read */
	} else if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o,
							event_keys[EVENT_PEER_WORKER]))) {
		d->worker_echoes++;	/* another worker's change, whose own line counts it */
	} else {
		struct run_event *e;

		rc = buf_grow_array((void **)&d->events, &k->ev_cap, d->nevents + 1,
				    sizeof(*d->events));
		if (rc)
			goto out;
		e = &d->events[d->nevents++];
		memset(e, 0, sizeof(*e));
		e->seq = d->nevents;
		e->replica = replica;
		e->t_ms = t->valuedouble - (double)t0;
		rc = event_parse(e, o, path, line, err);
	}
out:
	cJSON_Delete(o);
	return rc;
}

static int load_events(struct event_sink *k, const char *path, unsigned replica, int64_t t0,
		       char *err)
{
	struct buf content = { 0 };
	struct buf text = { 0 };
	size_t pos = 0;
	size_t line = 0;
	int rc;

	rc = csv_read_file(path, &content);
	if (rc == -ENOENT) {
		rc = 0;
		goto out;
	}
	if (rc) {
		snprintf(err, CFG_ERR_LEN, "%s: cannot read: %s", path, strerror(-rc));
		goto out;
	}
	if (!replica)
		k->d->have_events = true;	/* events.jsonl itself (a replica's: nreplicas) */
	while (pos < content.len) {
		const char *s = content.data + pos;
		const char *nl = memchr(s, '\n', content.len - pos);
		size_t len = nl ? (size_t)(nl - s) : content.len - pos;

		pos += len + (nl ? 1 : 0);
		line++;
		if (len && s[len - 1] == '\r')
			len--;
		if (strspn(s, " \t") >= len)
			continue;
		if (memchr(s, '\0', len)) {
			rc = csv_error(err, path, line, "a NUL byte");
			break;
		}
		buf_reset(&text);
		rc = buf_append(&text, s, len);
		if (rc)
			break;
		rc = line_parse(k, text.data, replica, t0, path, line, err);
		if (rc)
			break;
	}
	if (rc == -ENOMEM)
		snprintf(err, CFG_ERR_LEN, "%s: out of memory", path);
out:
	buf_free(&text);
	buf_free(&content);
	return rc;
}

static int event_cmp(const void *a, const void *b)
{
	const struct run_event *x = a;
	const struct run_event *y = b;

	if (x->t_ms != y->t_ms)
		return x->t_ms < y->t_ms ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int violation_cmp(const void *a, const void *b)
{
	const struct run_violation *x = a;
	const struct run_violation *y = b;

	if (x->t_ms != y->t_ms)
		return x->t_ms < y->t_ms ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- the run directory ---- */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names each mock log's provider (mock-NAME.csv: NAME), in mock_files' order. */
static int name_providers(struct rundata *d)
{
	size_t i;

	d->mock_providers = calloc(d->nmock ? d->nmock : 1, sizeof(*d->mock_providers));
	if (!d->mock_providers)
		return -ENOMEM;
	for (i = 0; i < d->nmock; i++) {
		size_t len = strlen(d->mock_files[i]) + 1;

		d->mock_providers[i] = malloc(len);
		if (!d->mock_providers[i])
			return -ENOMEM;
		rec_mock_file_parse(d->mock_files[i], d->mock_providers[i], len);
	}
	return 0;
}

/* Lists the mock logs (sorted) and refuses unfinished result files. */
static int scan_dir(struct rundata *d, const char *dir, char *err)
{
	DIR *dp = opendir(dir);
	size_t cap = 0;
	int rc = 0;

	if (!dp) {
		rc = -errno;
		snprintf(err, CFG_ERR_LEN, "%s: cannot open the run directory: %s", dir,
			 strerror(-rc));
		return rc;
	}
	for (;;) {
		struct dirent *de;
		const char *name;

		errno = 0;
		de = readdir(dp);
		if (!de) {
			rc = -errno;
			if (rc)
				snprintf(err, CFG_ERR_LEN, "%s: cannot list: %s", dir, strerror(-rc));
			break;
		}
		name = de->d_name;
		if (rec_unfinished(name)) {
			snprintf(err, CFG_ERR_LEN,
				 "%s/%s: an unfinished result file (its writer did not stop cleanly)",
				 dir, name);
			rc = -EINVAL;
			break;
		}
		if (!rec_mock_file_parse(name, NULL, 0))
			continue;
		rc = buf_grow_array((void **)&d->mock_files, &cap, d->nmock + 1, sizeof(*d->mock_files));
		if (rc)
			break;
		d->mock_files[d->nmock] = strdup(name);
		if (!d->mock_files[d->nmock]) {
			rc = -ENOMEM;
			break;
		}
		d->nmock++;
	}
	closedir(dp);
	if (!rc) {
		sort(d->mock_files, d->nmock, sizeof(*d->mock_files), name_cmp);
		rc = name_providers(d);
	}
	if (rc == -ENOMEM)
		snprintf(err, CFG_ERR_LEN, "%s: out of memory", dir);
	return rc;
}

void rundata_free(struct rundata *d)
{
	size_t i;

	for (i = 0; i < d->nreqs; i++)
		req_free(&d->reqs[i]);
	free(d->reqs);
	free(d->mrows);
	for (i = 0; i < d->nevents; i++)
		event_free(&d->events[i]);
	free(d->events);
	for (i = 0; i < d->nviolations; i++)
		violation_free(&d->violations[i]);
	free(d->violations);
	for (i = 0; i < d->nmock; i++) {
		free(d->mock_files[i]);
		if (d->mock_providers)
			free(d->mock_providers[i]);
	}
	free(d->mock_files);
	free(d->mock_providers);
	memset(d, 0, sizeof(*d));
}

void rundata_keep_requests(struct rundata *d)
{
	struct rundata reqs = { 0 };
	size_t i;

	/* What pointed into the mock rows and their providers' names goes with them. */
	for (i = 0; i < d->nreqs; i++) {
		d->reqs[i].answer = NULL;
		d->reqs[i].answered_by = NULL;
		d->reqs[i].attrib = RUN_ATTRIB_NONE;
	}
	reqs.reqs = d->reqs;
	reqs.nreqs = d->nreqs;
	memcpy(reqs.have_class, d->have_class, sizeof(reqs.have_class));
	d->reqs = NULL;
	d->nreqs = 0;
	rundata_free(d);
	*d = reqs;
}

/*
 * A replicated gateway setup's events-rK.jsonl, K from 1 while they are
 * there (every replica makes its file when it starts): d->nreplicas.
 */
static int load_replica_events(struct event_sink *sink, const char *run_dir, int64_t t0,
			       char *err)
{
	struct rundata *d = sink->d;
	char name[64];
	char *path;
	unsigned k;
	int rc = 0;

	for (k = 1; k <= RUNDATA_REPLICAS_MAX && !rc; k++) {
		snprintf(name, sizeof(name), "events-r%u.jsonl", k);
		path = path_join(run_dir, name);
		if (!path)
			return -ENOMEM;
		if (access(path, F_OK) != 0) {
			free(path);
			break;
		}
		d->nreplicas = k;
		rc = load_events(sink, path, k, t0, err);
		free(path);
	}
	return rc;
}

int rundata_load_requests(struct rundata *d, const char *run_dir, char *err)
{
	char *path;
	int rc;

	memset(d, 0, sizeof(*d));
	path = path_join(run_dir, REC_REQUESTS_CSV);
	if (!path)
		return -ENOMEM;
	rc = load_requests(d, path, err);
	free(path);
	if (!rc)
		sort(d->reqs, d->nreqs, sizeof(*d->reqs), req_cmp_time);
	return rc;
}

/*
 * The mock logs and events files of run_dir, after its requests (sorted,
 * so the rows can point into them): each joined to its request by id.
 */
static int load_joined(struct rundata *d, const char *run_dir, int64_t t0_unix_ms,
		       const char *reqpath, char *err)
{
	struct join j = { 0 };
	struct event_sink sink = { .d = d, .j = &j };
	char *path;
	int rc;

	rc = index_ids(d, reqpath, &j.byid, &j.n, err);
	if (rc)
		return rc;
	find_form(&j);
	rc = load_mocks(d, run_dir, &j, err);
	if (rc)
		goto out;
	sort(d->mrows, d->nmrows, sizeof(*d->mrows), mrow_cmp);
	path = path_join(run_dir, REC_EVENTS);
	if (!path) {
		rc = -ENOMEM;
		goto out;
	}
	rc = load_events(&sink, path, 0, t0_unix_ms, err);
	free(path);
	if (!rc)
		rc = load_replica_events(&sink, run_dir, t0_unix_ms, err);
	if (rc)
		goto out;
	sort(d->events, d->nevents, sizeof(*d->events), event_cmp);
	sort(d->violations, d->nviolations, sizeof(*d->violations), violation_cmp);
out:
	free(j.byid);
	return rc;
}

int rundata_load(struct rundata *d, const char *run_dir, int64_t t0_unix_ms, char *err)
{
	char *path;
	int rc;

	memset(d, 0, sizeof(*d));
	rc = scan_dir(d, run_dir, err);
	if (rc)
		return rc;
	path = path_join(run_dir, REC_REQUESTS_CSV);
	if (!path)
		return -ENOMEM;
	rc = load_requests(d, path, err);
	if (!rc) {
		/* Sorted before the mock rows and violations point into it. */
		sort(d->reqs, d->nreqs, sizeof(*d->reqs), req_cmp_time);
		rc = load_joined(d, run_dir, t0_unix_ms, path, err);
	}
	free(path);
	return rc;
}
