/*
 * stats: phase, window and whole-run figures from a run's result files
 * (requests.csv, mock-NAME.csv, events.jsonl), and their combination over
 * repeats. The files are read whole into records, sorted by time once, and
 * each range is a slice found by binary search. The layout is in stats.h.
 */
#include "runner/stats.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/csv.h"

#define DEFAULT_WINDOW_MS 5000.0
#define MAX_WINDOWS 1000000.0
#define MAX_STATUS 999

enum { OC_OK, OC_TRUNCATED = 5, OC_STALLED = 6, OC_N = 8 };
static const char *const outcome_names[OC_N] = {
	"ok", "http_error", "timeout", "refused", "reset", "truncated", "stalled", "invalid",
};

enum { MOC_COMPLETED, MOC_CLIENT_ABORTED, MOC_FAULTED, MOC_N };
static const char *const mock_outcome_names[MOC_N] = {
	"completed", "client_aborted", "faulted",
};

/* One row of requests.csv. Strings are owned; provider is NULL when empty. */
struct req {
	size_t seq;		/* row number in the file, for stable order */
	size_t line;		/* where the row starts, for messages */
	char *id;
	char *provider;
	char *tenant;
	char *feature;
	double sched_ms;
	double end_ms;		/* NAN: none */
	double latency_ms;	/* NAN: none */
	double cost_usd;	/* NAN: none; priced from the tokens when the caller can */
	double tokens_in;	/* NAN: none */
	double tokens_out;	/* NAN: none */
	size_t upstream;	/* mock rows with this request's id */
	int cls;		/* CLS_INTERACTIVE or CLS_BATCH */
	int status;		/* -1: none */
	int outcome;
	bool by_primary;	/* ok and answered by the primary */
	bool streaming;		/* streaming = 1 */
	bool error_event;	/* error starts with "error event" */
	double ttft_ms;		/* NAN: none */
	double max_gap_ms;	/* NAN: none */
};

enum { CLS_INTERACTIVE, CLS_BATCH, CLS_N };
static const char *const class_names[CLS_N] = { "interactive", "batch" };

/* One row of a mock-NAME.csv, already judged against requests.csv. */
struct mrow {
	size_t seq;
	double t_ms;
	double tokens;
	bool duplicate;
	int cls;		/* its request's class; -1: no request has its id */
};

/* One line of events.jsonl; strings owned, model and reason may be NULL. */
struct event {
	size_t seq;
	double t_ms;
	char *provider;
	char *model;
	char *from;
	char *to;
	char *reason;
};

/* Everything read from a run directory. */
struct data {
	struct req *reqs;	/* sorted by sched_ms, then seq */
	size_t nreqs;
	struct mrow *mrows;	/* sorted by t_ms, then seq */
	size_t nmrows;
	struct event *events;	/* sorted by t_ms, then seq */
	size_t nevents;
	char **mock_files;	/* names, sorted */
	size_t nmock;
	bool have_events;
	bool have_class[CLS_N];	/* some request is of that class */
};

/* Grows *p (of *cap elements of size) to hold at least n. 0 or -ENOMEM. */
static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *np;

	if (n <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < n)
		ncap *= 2;
	np = realloc(*p, ncap * size);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

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

/* ---- field values ---- */

static int value_error(char *err, const struct csv *c, const char *col, const char *what,
		       const char *got)
{
	return csv_error(err, c->path, c->rec_line, "column %s: expected %s, got \"%.64s\"",
			  col, what, got);
}

/* Index of s in names[0..n), or -1. */
static int name_index(const char *const *names, int n, const char *s)
{
	int i;

	for (i = 0; i < n; i++) {
		if (strcmp(names[i], s) == 0)
			return i;
	}
	return -1;
}

/* strdup of s, NULL (with *oom set) when out of memory. */
static char *dup_str(const char *s, bool *oom)
{
	char *d = strdup(s);

	if (!d)
		*oom = true;
	return d;
}

/* ---- requests.csv ---- */

enum { RC_ID, RC_SCHED, RC_END, RC_LATENCY, RC_STATUS, RC_OUTCOME, RC_PROVIDER,
       RC_TENANT, RC_FEATURE, RC_COST, RC_N };
static const char *const req_cols[RC_N] = {
	"id", "sched_ms", "end_ms", "latency_ms", "status", "outcome", "provider",
	"tenant", "feature", "cost_usd",
};

/*
 * The stream columns: read when "streaming" is in the header, and then all
 * of them must be (a requests.csv without it has no streams).
 */
enum { SCOL_STREAMING, SCOL_TTFT, SCOL_ERROR, SCOL_GAP, SCOL_N };
static const char *const stream_cols[SCOL_N] = { "streaming", "ttft_ms", "error", "max_gap_ms" };

/* Optional columns: a requests.csv without them has every request interactive, no tokens. */
enum { OCOL_CLASS, OCOL_TOKENS_IN, OCOL_TOKENS_OUT, OCOL_N };
static const char *const opt_cols[OCOL_N] = { "class", "tokens_in", "tokens_out" };

static void req_free(struct req *r)
{
	free(r->id);
	free(r->provider);
	free(r->tenant);
	free(r->feature);
}

/* Fills r's stream facts from the current row of c (sidx: stream_cols' columns). */
static int req_parse_stream(struct req *r, const struct csv *c, const int *sidx, char *err)
{
	const char *streaming = csv_field(c, sidx[SCOL_STREAMING]);
	const char *ttft = csv_field(c, sidx[SCOL_TTFT]);
	const char *gap = csv_field(c, sidx[SCOL_GAP]);

	if (strcmp(streaming, "0") != 0 && strcmp(streaming, "1") != 0)
		return value_error(err, c, "streaming", "0 or 1", streaming);
	r->streaming = streaming[0] == '1';
	if (csv_num(ttft, &r->ttft_ms))
		return value_error(err, c, "ttft_ms", "a number or nothing", ttft);
	if (csv_num(gap, &r->max_gap_ms))
		return value_error(err, c, "max_gap_ms", "a number or nothing", gap);
	r->error_event = strncmp(csv_field(c, sidx[SCOL_ERROR]), "error event", 11) == 0;
	return 0;
}

/* Fills r's class and tokens from the optional columns (oidx[i] < 0: absent). */
static int req_parse_optional(struct req *r, const struct csv *c, const int *oidx, char *err)
{
	const char *cls = oidx[OCOL_CLASS] >= 0 ? csv_field(c, oidx[OCOL_CLASS]) : "";
	const char *tin = oidx[OCOL_TOKENS_IN] >= 0 ? csv_field(c, oidx[OCOL_TOKENS_IN]) : "";
	const char *tout = oidx[OCOL_TOKENS_OUT] >= 0 ? csv_field(c, oidx[OCOL_TOKENS_OUT]) : "";

	r->cls = *cls ? name_index(class_names, CLS_N, cls) : CLS_INTERACTIVE;
	if (r->cls < 0)
		return value_error(err, c, "class", "interactive, batch or nothing", cls);
	if (csv_whole(tin, 0, 1e15, &r->tokens_in))
		return value_error(err, c, "tokens_in", "a whole number >= 0 or nothing", tin);
	if (csv_whole(tout, 0, 1e15, &r->tokens_out))
		return value_error(err, c, "tokens_out", "a whole number >= 0 or nothing", tout);
	return 0;
}

/*
 * A row with no cost_usd is priced from its tokens (none counts as 0) at
 * the price of the provider it went to — its provider column, else the
 * caller's provider — when the caller has a price for that provider.
 */
static void req_price(struct req *r, const struct stats_input *in)
{
	const char *to = r->provider ? r->provider : in->provider;
	size_t i;

	if (!isnan(r->cost_usd) || !to)
		return;
	for (i = 0; i < in->nprices; i++) {
		const struct stats_price *p = &in->prices[i];

		if (strcmp(p->provider, to) != 0)
			continue;
		r->cost_usd = ((isnan(r->tokens_in) ? 0 : r->tokens_in) * p->input +
			       (isnan(r->tokens_out) ? 0 : r->tokens_out) * p->output) / 1000;
		return;
	}
}

/*
 * Fills r from the current row of c; sidx is NULL when the file has no
 * stream columns. Returns 0 or a negative errno.
 */
static int req_parse(struct req *r, const struct csv *c, const int *idx, const int *sidx,
		     const int *oidx, const struct stats_input *in, char *err)
{
	const char *primary = in->primary;
	const char *f[RC_N];
	double status;
	bool oom = false;
	int i;

	for (i = 0; i < RC_N; i++)
		f[i] = csv_field(c, idx[i]);
	if (!*f[RC_SCHED])
		return value_error(err, c, "sched_ms", "a number (it is required)", "");
	if (csv_num(f[RC_SCHED], &r->sched_ms))
		return value_error(err, c, "sched_ms", "a number", f[RC_SCHED]);
	if (csv_num(f[RC_END], &r->end_ms))
		return value_error(err, c, "end_ms", "a number or nothing", f[RC_END]);
	if (csv_num(f[RC_LATENCY], &r->latency_ms))
		return value_error(err, c, "latency_ms", "a number or nothing", f[RC_LATENCY]);
	if (csv_num(f[RC_COST], &r->cost_usd))
		return value_error(err, c, "cost_usd", "a number or nothing", f[RC_COST]);
	if (csv_whole(f[RC_STATUS], 0, MAX_STATUS, &status))
		return value_error(err, c, "status", "a whole number 0-999 or nothing",
				   f[RC_STATUS]);
	r->status = isnan(status) ? -1 : (int)status;
	r->outcome = name_index(outcome_names, OC_N, f[RC_OUTCOME]);
	if (r->outcome < 0)
		return value_error(err, c, "outcome",
				   "ok, http_error, timeout, refused, reset, truncated, stalled or invalid",
				   f[RC_OUTCOME]);
	r->ttft_ms = NAN;
	r->max_gap_ms = NAN;
	if (sidx) {
		int rc = req_parse_stream(r, c, sidx, err);

		if (rc)
			return rc;
	}
	if (req_parse_optional(r, c, oidx, err))
		return -EINVAL;
	r->id = dup_str(f[RC_ID], &oom);
	r->tenant = dup_str(f[RC_TENANT], &oom);
	r->feature = dup_str(f[RC_FEATURE], &oom);
	if (*f[RC_PROVIDER])
		r->provider = dup_str(f[RC_PROVIDER], &oom);
	if (oom)
		return -ENOMEM;
	r->by_primary = r->outcome == OC_OK &&
			(!r->provider || strcmp(r->provider, primary) == 0);
	req_price(r, in);
	return 0;
}

static int req_cmp_time(const void *a, const void *b)
{
	const struct req *x = a;
	const struct req *y = b;

	if (x->sched_ms != y->sched_ms)
		return x->sched_ms < y->sched_ms ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int req_cmp_id(const void *a, const void *b)
{
	const struct req *const *x = a;
	const struct req *const *y = b;

	return strcmp((*x)->id, (*y)->id);
}

/* Finds the stream columns; *have false when the header has no "streaming". */
static int stream_header(const struct csv *c, int *sidx, bool *have, char *err)
{
	int i;

	*have = csv_column(c, stream_cols[SCOL_STREAMING]) >= 0;
	for (i = 0; *have && i < SCOL_N; i++) {
		sidx[i] = csv_column(c, stream_cols[i]);
		if (sidx[i] < 0)
			return csv_error(err, c->path, c->rec_line,
					  "no column \"%s\" in the header (it goes with \"streaming\")",
					  stream_cols[i]);
	}
	return 0;
}

static int load_requests(struct data *d, const char *path, const struct stats_input *in,
			 char *err)
{
	struct buf content = { 0 };
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
	rc = csv_header(&c, req_cols, RC_N, idx, err);
	if (!rc)
		rc = stream_header(&c, sidx, &have_streams, err);
	if (rc)
		goto out_free_csv;
	for (i = 0; i < OCOL_N; i++)
		oidx[i] = csv_column(&c, opt_cols[i]);
	width = c.nf;
	for (;;) {
		struct req *r;

		rc = csv_row(&c, width, err);
		if (rc <= 0)
			break;
		rc = grow((void **)&d->reqs, &cap, d->nreqs + 1, sizeof(*d->reqs));
		if (rc)
			break;
		r = &d->reqs[d->nreqs++];
		memset(r, 0, sizeof(*r));
		r->seq = d->nreqs;
		r->line = c.rec_line;
		rc = req_parse(r, &c, idx, have_streams ? sidx : NULL, oidx, in, err);
		if (rc)
			break;
		d->have_class[r->cls] = true;
	}
	if (rc == -ENOMEM)
		snprintf(err, CFG_ERR_LEN, "%s: out of memory", path);
out_free_csv:
	csv_free(&c);
out_free_content:
	buf_free(&content);
	return rc;
}

/*
 * The requests with an id, sorted by id, for joining mock rows; a repeated
 * id is an error. *out is malloc'ed (may be NULL when there are none).
 */
static int index_ids(const struct data *d, const char *path, struct req ***out, size_t *n,
		     char *err)
{
	struct req **v = malloc((d->nreqs ? d->nreqs : 1) * sizeof(*v));
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
			const struct req *a = v[i]->seq < v[i - 1]->seq ? v[i] : v[i - 1];
			const struct req *b = a == v[i] ? v[i - 1] : v[i];
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
static struct req *find_req(struct req *const *byid, size_t n, const char *id)
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

enum { MC_T, MC_ID, MC_TOKENS, MC_OUTCOME, MC_N };
static const char *const mock_cols[MC_N] = { "t_ms", "request_id", "tokens_out", "outcome" };

/* What mock rows are judged against: the requests by id, and the primary. */
struct join {
	struct req **byid;
	size_t n;
	const char *primary;
};

/* Fills m from the current row of c, a row of provider's log. */
static int mrow_parse(struct mrow *m, const struct csv *c, const int *idx,
		      const char *provider, const struct join *j, char *err)
{
	const char *t = csv_field(c, idx[MC_T]);
	const char *id = csv_field(c, idx[MC_ID]);
	const char *tokens = csv_field(c, idx[MC_TOKENS]);
	const char *outcome = csv_field(c, idx[MC_OUTCOME]);
	struct req *r = NULL;
	bool answered;
	int oc;

	if (!*t)
		return value_error(err, c, "t_ms", "a number (it is required)", "");
	if (csv_num(t, &m->t_ms))
		return value_error(err, c, "t_ms", "a number", t);
	if (csv_whole(tokens, 0, 1e15, &m->tokens))
		return value_error(err, c, "tokens_out", "a whole number >= 0 or nothing", tokens);
	if (isnan(m->tokens))
		m->tokens = 0;
	oc = name_index(mock_outcome_names, MOC_N, outcome);
	if (oc < 0)
		return value_error(err, c, "outcome", "completed, client_aborted or faulted",
				   outcome);
	if (*id)
		r = find_req(j->byid, j->n, id);
	if (r)
		r->upstream++;
	m->cls = r ? r->cls : -1;
	answered = r && r->outcome == OC_OK &&
		   strcmp(r->provider ? r->provider : j->primary, provider) == 0;
	m->duplicate = oc == MOC_CLIENT_ABORTED || !answered;
	return 0;
}

static int load_mock(struct data *d, size_t *cap, const char *path, const char *provider,
		     const struct join *j, char *err)
{
	struct buf content = { 0 };
	struct csv c;
	int idx[MC_N];
	size_t width;
	int rc;

	rc = csv_read_file(path, &content);
	if (rc) {
		snprintf(err, CFG_ERR_LEN, "%s: cannot read: %s", path, strerror(-rc));
		goto out_free_content;
	}
	csv_init(&c, path, content.data, content.len);
	rc = csv_header(&c, mock_cols, MC_N, idx, err);
	if (rc)
		goto out_free_csv;
	width = c.nf;
	for (;;) {
		struct mrow *m;

		rc = csv_row(&c, width, err);
		if (rc <= 0)
			break;
		rc = grow((void **)&d->mrows, cap, d->nmrows + 1, sizeof(*d->mrows));
		if (rc)
			break;
		m = &d->mrows[d->nmrows++];
		m->seq = d->nmrows;
		rc = mrow_parse(m, &c, idx, provider, j, err);
		if (rc)
			break;
	}
	if (rc == -ENOMEM)
		snprintf(err, CFG_ERR_LEN, "%s: out of memory", path);
out_free_csv:
	csv_free(&c);
out_free_content:
	buf_free(&content);
	return rc;
}

static int mrow_cmp(const void *a, const void *b)
{
	const struct mrow *x = a;
	const struct mrow *y = b;

	if (x->t_ms != y->t_ms)
		return x->t_ms < y->t_ms ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- events.jsonl ---- */

static void event_free(struct event *e)
{
	free(e->provider);
	free(e->model);
	free(e->from);
	free(e->to);
	free(e->reason);
}

/* Copies the string member key of o into *out: required, or string/null/absent. */
static int event_str(const cJSON *o, const char *key, bool required, char **out,
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

/* Parses one line (NUL-terminated) of events.jsonl into e. */
static int event_parse(struct event *e, const char *text, int64_t t0, const char *path,
		       size_t line, char *err)
{
	const char *end = NULL;
	cJSON *o = cJSON_ParseWithOpts(text, &end, 1);
	const cJSON *t;
	int rc = 0;

	if (!o)
		return csv_error(err, path, line, "not valid JSON (at column %zu)",
				  end ? (size_t)(end - text) + 1 : (size_t)1);
	if (!cJSON_IsObject(o)) {
		rc = csv_error(err, path, line, "expected a JSON object");
		goto out;
	}
	t = cJSON_GetObjectItemCaseSensitive(o, "t_unix_ms");
	if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble)) {
		rc = csv_error(err, path, line, "\"t_unix_ms\": expected a number");
		goto out;
	}
	e->t_ms = t->valuedouble - (double)t0;
	rc = event_str(o, "provider", true, &e->provider, path, line, err);
	if (!rc)
		rc = event_str(o, "model", false, &e->model, path, line, err);
	if (!rc)
		rc = event_str(o, "from", true, &e->from, path, line, err);
	if (!rc)
		rc = event_str(o, "to", true, &e->to, path, line, err);
	if (!rc)
		rc = event_str(o, "reason", false, &e->reason, path, line, err);
out:
	cJSON_Delete(o);
	return rc;
}

static int load_events(struct data *d, const char *path, int64_t t0, char *err)
{
	struct buf content = { 0 };
	struct buf text = { 0 };
	size_t cap = 0;
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
	d->have_events = true;
	while (pos < content.len) {
		const char *s = content.data + pos;
		const char *nl = memchr(s, '\n', content.len - pos);
		size_t len = nl ? (size_t)(nl - s) : content.len - pos;
		struct event *e;

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
		rc = grow((void **)&d->events, &cap, d->nevents + 1, sizeof(*d->events));
		if (rc)
			break;
		e = &d->events[d->nevents++];
		memset(e, 0, sizeof(*e));
		e->seq = d->nevents;
		rc = event_parse(e, text.data, t0, path, line, err);
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
	const struct event *x = a;
	const struct event *y = b;

	if (x->t_ms != y->t_ms)
		return x->t_ms < y->t_ms ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- the run directory ---- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s);
	size_t m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the mock logs (sorted) and refuses unfinished result files. */
static int scan_dir(struct data *d, const char *dir, char *err)
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
		if (strcmp(name, "requests.csv.tmp") == 0 ||
		    (strncmp(name, "mock-", 5) == 0 && ends_with(name, ".csv.tmp"))) {
			snprintf(err, CFG_ERR_LEN,
				 "%s/%s: an unfinished result file (its writer did not stop cleanly)",
				 dir, name);
			rc = -EINVAL;
			break;
		}
		if (strncmp(name, "mock-", 5) != 0 || !ends_with(name, ".csv") ||
		    strlen(name) <= strlen("mock-.csv"))
			continue;
		rc = grow((void **)&d->mock_files, &cap, d->nmock + 1, sizeof(*d->mock_files));
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
	if (rc == -ENOMEM)
		snprintf(err, CFG_ERR_LEN, "%s: out of memory", dir);
	if (!rc)
		sort(d->mock_files, d->nmock, sizeof(*d->mock_files), name_cmp);
	return rc;
}

static void data_free(struct data *d)
{
	size_t i;

	for (i = 0; i < d->nreqs; i++)
		req_free(&d->reqs[i]);
	free(d->reqs);
	free(d->mrows);
	for (i = 0; i < d->nevents; i++)
		event_free(&d->events[i]);
	free(d->events);
	for (i = 0; i < d->nmock; i++)
		free(d->mock_files[i]);
	free(d->mock_files);
	memset(d, 0, sizeof(*d));
}

/* Loads every mock log, judging each row against the requests. */
static int load_mocks(struct data *d, const char *dir, const char *primary, char *err)
{
	struct join j = { .primary = primary };
	char *reqpath = path_join(dir, "requests.csv");
	size_t cap = 0;
	size_t i;
	int rc;

	if (!reqpath)
		return -ENOMEM;
	rc = index_ids(d, reqpath, &j.byid, &j.n, err);
	if (rc)
		goto out_free_path;
	for (i = 0; i < d->nmock && !rc; i++) {
		const char *name = d->mock_files[i];
		size_t plen = strlen(name) - strlen("mock-.csv");
		char *provider = strndup(name + 5, plen);
		char *path = path_join(dir, name);

		if (!provider || !path)
			rc = -ENOMEM;
		else
			rc = load_mock(d, &cap, path, provider, &j, err);
		free(provider);
		free(path);
	}
	free(j.byid);
out_free_path:
	free(reqpath);
	return rc;
}

/* Reads everything; d is to be freed with data_free whatever the result. */
static int data_load(struct data *d, const struct stats_input *in, char *err)
{
	char *path;
	int rc;

	rc = scan_dir(d, in->run_dir, err);
	if (rc)
		return rc;
	path = path_join(in->run_dir, "requests.csv");
	if (!path)
		return -ENOMEM;
	rc = load_requests(d, path, in, err);
	free(path);
	if (rc)
		return rc;
	sort(d->reqs, d->nreqs, sizeof(*d->reqs), req_cmp_time);
	rc = load_mocks(d, in->run_dir, in->primary, err);
	if (rc)
		return rc;
	sort(d->mrows, d->nmrows, sizeof(*d->mrows), mrow_cmp);
	path = path_join(in->run_dir, "events.jsonl");
	if (!path)
		return -ENOMEM;
	rc = load_events(d, path, in->t0_unix_ms, err);
	free(path);
	if (rc)
		return rc;
	sort(d->events, d->nevents, sizeof(*d->events), event_cmp);
	return 0;
}

/* ---- figures ---- */

/* A range's slices of the sorted records, and where its times start. */
struct span {
	double from;
	double to;
	double origin;		/* time_to_* are measured from here */
	size_t r0, r1;		/* requests */
	size_t m0, m1;		/* mock rows */
	size_t e0, e1;		/* events */
	bool phase;		/* a caller's phase: its answered windows too */
};

/* Scratch space shared by every range's computation. */
struct ctx {
	const struct data *d;
	const struct stats_input *in;
	int cls;		/* only this class's requests; -1: all */
	double *lat_ok;
	double *lat_all;
	double *ttft;
	size_t status_n[MAX_STATUS + 1];
};

/* Index of the first element whose double at offset off is ≥ t. */
static size_t lower_bound(const void *base, size_t n, size_t size, size_t off, double t)
{
	size_t lo = 0;
	size_t hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		double v;

		memcpy(&v, (const char *)base + mid * size + off, sizeof(v));
		if (v < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct span span_of(const struct data *d, double from, double to)
{
	struct span s = { .from = from, .to = to, .origin = from };

	s.r0 = lower_bound(d->reqs, d->nreqs, sizeof(*d->reqs), offsetof(struct req, sched_ms), from);
	s.r1 = lower_bound(d->reqs, d->nreqs, sizeof(*d->reqs), offsetof(struct req, sched_ms), to);
	s.m0 = lower_bound(d->mrows, d->nmrows, sizeof(*d->mrows), offsetof(struct mrow, t_ms), from);
	s.m1 = lower_bound(d->mrows, d->nmrows, sizeof(*d->mrows), offsetof(struct mrow, t_ms), to);
	s.e0 = lower_bound(d->events, d->nevents, sizeof(*d->events), offsetof(struct event, t_ms), from);
	s.e1 = lower_bound(d->events, d->nevents, sizeof(*d->events), offsetof(struct event, t_ms), to);
	return s;
}

/* Adds item to o under key; false (item freed) when either is NULL or it fails. */
static bool put(cJSON *o, const char *key, cJSON *item)
{
	if (!item)
		return false;
	if (!o || !cJSON_AddItemToObject(o, key, item)) {
		cJSON_Delete(item);
		return false;
	}
	return true;
}

/* A number, or null for NAN. */
static cJSON *num(double v)
{
	return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the value at rank ceil(permille/1000 × n) of sorted v. */
static double nearest_rank(const double *v, size_t n, size_t permille)
{
	size_t rank = (permille * n + 999) / 1000;

	if (n == 0)
		return NAN;
	if (rank < 1)
		rank = 1;
	return v[rank - 1];
}

/* The LATENCY block of v[0..n), which it sorts. */
static cJSON *latency_block(double *v, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	double sum = 0;
	bool ok = true;
	size_t i;

	sort(v, n, sizeof(*v), dbl_cmp);
	for (i = 0; i < n; i++)
		sum += v[i];
	ok &= put(o, "count", cJSON_CreateNumber((double)n));
	ok &= put(o, "mean", num(n ? sum / (double)n : NAN));
	ok &= put(o, "p50", num(nearest_rank(v, n, 500)));
	ok &= put(o, "p95", num(nearest_rank(v, n, 950)));
	ok &= put(o, "p99", num(nearest_rank(v, n, 990)));
	ok &= put(o, "max", num(n ? v[n - 1] : NAN));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Adds v to map[key], creating it at 0. */
static bool map_add(cJSON *map, const char *key, double v)
{
	cJSON *item = cJSON_GetObjectItemCaseSensitive(map, key);

	if (!item)
		return put(map, key, cJSON_CreateNumber(v));
	cJSON_SetNumberHelper(item, item->valuedouble + v);
	return true;
}

static cJSON *status_block(const struct ctx *x, size_t none)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;
	int s;

	for (s = 0; s <= MAX_STATUS; s++) {
		char key[16];

		if (!x->status_n[s])
			continue;
		snprintf(key, sizeof(key), "%d", s);
		ok &= put(o, key, cJSON_CreateNumber((double)x->status_n[s]));
	}
	if (none)
		ok &= put(o, "none", cJSON_CreateNumber((double)none));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Whether r counts under x's class filter. */
static bool counted(const struct ctx *x, const struct req *r)
{
	return x->cls < 0 || r->cls == x->cls;
}

/* The request-based figures of a span, added to o. */
static bool request_figures(struct ctx *x, const struct span *sp, cJSON *o)
{
	const struct data *d = x->d;
	size_t outcomes[OC_N] = { 0 };
	size_t nok = 0, nlat_ok = 0, nlat_all = 0, fallback = 0, none = 0, upstream = 0;
	size_t n = 0;
	double to_primary = NAN;
	double cost = 0;
	bool have_cost = false;
	cJSON *oc = cJSON_CreateObject();
	cJSON *cost_o = cJSON_CreateObject();
	cJSON *by_tenant = cJSON_CreateObject();
	cJSON *by_feature = cJSON_CreateObject();
	bool ok = oc && cost_o && by_tenant && by_feature;
	size_t i;
	int k;

	memset(x->status_n, 0, sizeof(x->status_n));
	for (i = sp->r0; i < sp->r1 && ok; i++) {
		const struct req *r = &d->reqs[i];

		if (!counted(x, r))
			continue;
		n++;
		upstream += r->upstream;
		outcomes[r->outcome]++;
		if (r->status < 0)
			none++;
		else
			x->status_n[r->status]++;
		if (!isnan(r->latency_ms))
			x->lat_all[nlat_all++] = r->latency_ms;
		if (r->outcome == OC_OK) {
			nok++;
			if (!isnan(r->latency_ms))
				x->lat_ok[nlat_ok++] = r->latency_ms;
			if (!r->by_primary)
				fallback++;
			else if (isnan(to_primary) && !isnan(r->end_ms))
				to_primary = r->end_ms - sp->origin;
		}
		if (!isnan(r->cost_usd)) {
			have_cost = true;
			cost += r->cost_usd;
			ok &= map_add(by_tenant, r->tenant, r->cost_usd);
			ok &= map_add(by_feature, r->feature, r->cost_usd);
		}
	}
	for (k = 0; k < OC_N && ok; k++)
		ok &= put(oc, outcome_names[k], cJSON_CreateNumber((double)outcomes[k]));
	ok &= put(o, "requests", cJSON_CreateNumber((double)n));
	ok &= put(o, "ok", cJSON_CreateNumber((double)nok));
	ok &= put(o, "answered_share", num(n ? (double)nok / (double)n : NAN));
	ok &= put(o, "error_rate", num(n ? (double)(n - nok) / (double)n : NAN));
	ok &= put(o, "outcomes", oc);
	oc = NULL;
	ok &= put(o, "status", status_block(x, none));
	ok &= put(o, "latency_ms", latency_block(x->lat_ok, nlat_ok));
	ok &= put(o, "latency_all_ms", latency_block(x->lat_all, nlat_all));
	ok &= put(o, "throughput_per_s", num((double)nok / ((sp->to - sp->from) / 1000.0)));
	ok &= put(o, "fallback_share", num(nok ? (double)fallback / (double)nok : NAN));
	ok &= put(o, "time_to_primary_ms", num(to_primary));
	ok &= put(cost_o, "total", num(have_cost ? cost : NAN));
	ok &= put(cost_o, "by_tenant", by_tenant);
	by_tenant = NULL;
	ok &= put(cost_o, "by_feature", by_feature);
	by_feature = NULL;
	ok &= put(o, "cost_usd", cost_o);
	ok &= put(o, "cost_per_answered", num(have_cost && nok ? cost / (double)nok : NAN));
	ok &= put(o, "upstream_requests", cJSON_CreateNumber((double)upstream));
	ok &= put(o, "extra_requests", num(n ? (double)upstream / (double)n - 1 : NAN));
	return ok;
}

/* The event and mock figures of a span, added to o. */
static bool other_figures(const struct ctx *x, const struct span *sp, cJSON *o)
{
	const struct data *d = x->d;
	cJSON *dup = cJSON_CreateObject();
	double to_open = NAN;
	double attempts = 0;
	double tokens = 0;
	size_t opens = 0;
	bool ok = true;
	size_t i;

	for (i = sp->e0; i < sp->e1; i++) {
		if (strcmp(d->events[i].to, "open") != 0)
			continue;
		if (!opens)
			to_open = d->events[i].t_ms - sp->origin;
		opens++;
	}
	for (i = sp->m0; i < sp->m1; i++) {
		if (!d->mrows[i].duplicate || (x->cls >= 0 && d->mrows[i].cls != x->cls))
			continue;
		attempts++;
		tokens += d->mrows[i].tokens;
	}
	ok &= put(o, "opens", cJSON_CreateNumber((double)opens));
	ok &= put(o, "time_to_open_ms", num(to_open));
	ok &= put(dup, "attempts", cJSON_CreateNumber(attempts));
	ok &= put(dup, "tokens", cJSON_CreateNumber(tokens));
	ok &= put(o, "duplicate_work", dup);
	return ok;
}

/* The streaming requests' figures of a span, added to o. */
static bool stream_figures(struct ctx *x, const struct span *sp, cJSON *o)
{
	const struct data *d = x->d;
	size_t streams = 0, stalls = 0, truncations = 0, error_events = 0, silent = 0;
	size_t nttft = 0;
	double max_gap = NAN;
	bool ok = true;
	size_t i;

	for (i = sp->r0; i < sp->r1; i++) {
		const struct req *r = &d->reqs[i];

		if (!r->streaming || !counted(x, r))
			continue;
		streams++;
		if (r->outcome == OC_OK && !isnan(r->ttft_ms))
			x->ttft[nttft++] = r->ttft_ms;
		stalls += r->outcome == OC_STALLED;
		truncations += r->outcome == OC_TRUNCATED;
		error_events += r->error_event;
		silent += (r->outcome == OC_STALLED || r->outcome == OC_TRUNCATED) &&
			  !r->error_event;
		if (!isnan(r->max_gap_ms) && (isnan(max_gap) || r->max_gap_ms > max_gap))
			max_gap = r->max_gap_ms;
	}
	ok &= put(o, "streams", cJSON_CreateNumber((double)streams));
	ok &= put(o, "ttft_ms", latency_block(x->ttft, nttft));
	ok &= put(o, "stalls", cJSON_CreateNumber((double)stalls));
	ok &= put(o, "truncations", cJSON_CreateNumber((double)truncations));
	ok &= put(o, "error_events", cJSON_CreateNumber((double)error_events));
	ok &= put(o, "silent_breaks", cJSON_CreateNumber((double)silent));
	ok &= put(o, "max_gap_ms", num(max_gap));
	return ok;
}

/* Slack for window edges: a scaled phase bound may be off by a rounding. */
#define EDGE_SLACK_MS 1e-6

/*
 * The worst answered share over the windows [k·w, (k+1)·w) of length w
 * that lie wholly inside the span and hold a request (of x's class).
 */
static cJSON *window_block(const struct ctx *x, const struct span *sp, double w)
{
	const struct data *d = x->d;
	double worst = NAN;
	double worst_from = NAN;
	size_t nwin = 0;
	double k = ceil((sp->from - EDGE_SLACK_MS) / w) + 0.0;	/* + 0.0: never −0 */
	cJSON *o = cJSON_CreateObject();
	bool ok = true;

	for (; (k + 1) * w <= sp->to + EDGE_SLACK_MS; k++) {
		size_t r0 = lower_bound(d->reqs, d->nreqs, sizeof(*d->reqs),
					offsetof(struct req, sched_ms), k * w);
		size_t r1 = lower_bound(d->reqs, d->nreqs, sizeof(*d->reqs),
					offsetof(struct req, sched_ms), (k + 1) * w);
		size_t n = 0, nok = 0;
		size_t i;

		for (i = r0; i < r1; i++) {
			if (!counted(x, &d->reqs[i]))
				continue;
			n++;
			nok += d->reqs[i].outcome == OC_OK;
		}
		if (!n)
			continue;
		nwin++;
		if (isnan(worst) || (double)nok / (double)n < worst) {
			worst = (double)nok / (double)n;
			worst_from = k * w;
		}
	}
	ok &= put(o, "windows", cJSON_CreateNumber((double)nwin));
	ok &= put(o, "worst_share", num(worst));
	ok &= put(o, "worst_from_ms", num(worst_from));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* "answered_windows" of a phase: one block per window length the caller asked for. */
static bool window_figures(const struct ctx *x, const struct span *sp, cJSON *o)
{
	cJSON *aw = cJSON_CreateObject();
	bool ok = aw != NULL;
	size_t i;

	for (i = 0; ok && i < x->in->nwindows; i++) {
		char key[40];

		stats_window_key(x->in->windows[i], key, sizeof(key));
		if (!cJSON_GetObjectItemCaseSensitive(aw, key))
			ok = put(aw, key, window_block(x, sp, x->in->windows[i]));
	}
	if (!ok) {
		cJSON_Delete(aw);
		return false;
	}
	return put(o, "answered_windows", aw);
}

static cJSON *figures(struct ctx *x, const struct span *sp);

/* "classes": the span's figures over each class the run has, alone. */
static bool class_figures(struct ctx *x, const struct span *sp, cJSON *o)
{
	cJSON *cl = cJSON_CreateObject();
	bool ok = cl != NULL;
	int c;

	for (c = 0; ok && c < CLS_N; c++) {
		if (!x->d->have_class[c])
			continue;
		x->cls = c;
		ok = put(cl, class_names[c], figures(x, sp));
		x->cls = -1;
	}
	if (!ok) {
		cJSON_Delete(cl);
		return false;
	}
	return put(o, "classes", cl);
}

/* FIGURES (stats.h) of a span, or NULL when out of memory. */
static cJSON *figures(struct ctx *x, const struct span *sp)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok &= put(o, "from_ms", cJSON_CreateNumber(sp->from));
	ok &= put(o, "to_ms", cJSON_CreateNumber(sp->to));
	ok = ok && request_figures(x, sp, o);
	ok = ok && other_figures(x, sp, o);
	ok = ok && stream_figures(x, sp, o);
	if (sp->phase)
		ok = ok && window_figures(x, sp, o);
	if (x->cls < 0)
		ok = ok && class_figures(x, sp, o);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* ---- the summary ---- */

static cJSON *str_or_null(const char *s)
{
	return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *transitions(const struct data *d)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	for (i = 0; a && i < d->nevents; i++) {
		const struct event *e = &d->events[i];
		cJSON *o = cJSON_CreateObject();
		bool ok = true;

		ok &= put(o, "t_ms", cJSON_CreateNumber(e->t_ms));
		ok &= put(o, "provider", cJSON_CreateString(e->provider));
		ok &= put(o, "model", str_or_null(e->model));
		ok &= put(o, "from", cJSON_CreateString(e->from));
		ok &= put(o, "to", cJSON_CreateString(e->to));
		ok &= put(o, "reason", str_or_null(e->reason));
		if (!ok || !cJSON_AddItemToArray(a, o)) {
			cJSON_Delete(o);
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

static cJSON *files_block(const struct data *d)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *mock = cJSON_CreateArray();
	bool ok = mock != NULL;
	size_t i;

	for (i = 0; ok && i < d->nmock; i++) {
		cJSON *s = cJSON_CreateString(d->mock_files[i]);

		ok = s && cJSON_AddItemToArray(mock, s);
		if (!ok)
			cJSON_Delete(s);
	}
	ok &= put(o, "requests", cJSON_CreateString("requests.csv"));
	ok &= put(o, "mock", mock);
	ok &= put(o, "events", d->have_events ? cJSON_CreateString("events.jsonl")
					      : cJSON_CreateNull());
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static double window_len(const struct stats_input *in)
{
	return in->window_ms > 0 ? in->window_ms : DEFAULT_WINDOW_MS;
}

/* Checks the caller's input. Returns 0 or -EINVAL with err set. */
static int input_check(const struct stats_input *in, char *err)
{
	size_t i;
	size_t j;

	if (!in->run_dir || !in->primary) {
		snprintf(err, CFG_ERR_LEN, "stats: run_dir and primary are required");
		return -EINVAL;
	}
	if (!isfinite(in->duration_ms) || in->duration_ms <= 0 || !isfinite(in->window_ms) ||
	    in->duration_ms / window_len(in) > MAX_WINDOWS) {
		snprintf(err, CFG_ERR_LEN,
			 "stats: expected duration_ms > 0 and at most %.0f windows, got %g and %g ms",
			 MAX_WINDOWS, in->duration_ms, in->window_ms);
		return -EINVAL;
	}
	for (i = 0; i < in->nwindows; i++) {
		if (!isfinite(in->windows[i]) || !(in->windows[i] > 0) ||
		    in->duration_ms / in->windows[i] > MAX_WINDOWS) {
			snprintf(err, CFG_ERR_LEN, "stats: answered window %zu: expected a length "
				 "above 0 ms and at most %.0f windows, got %g ms", i, MAX_WINDOWS,
				 in->windows[i]);
			return -EINVAL;
		}
	}
	for (i = 0; i < in->nprices; i++) {
		if (!in->prices[i].provider) {
			snprintf(err, CFG_ERR_LEN, "stats: price %zu: expected a provider", i);
			return -EINVAL;
		}
	}
	for (i = 0; i < in->nphases; i++) {
		const struct stats_phase *p = &in->phases[i];

		if (!p->name || !isfinite(p->from_ms) || !isfinite(p->to_ms) ||
		    p->from_ms >= p->to_ms) {
			snprintf(err, CFG_ERR_LEN,
				 "stats: phase %zu: expected a name and from_ms < to_ms", i);
			return -EINVAL;
		}
		for (j = 0; j < i; j++) {
			if (strcmp(in->phases[j].name, p->name) == 0) {
				snprintf(err, CFG_ERR_LEN, "stats: phase \"%.64s\" given twice",
					 p->name);
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* Builds the summary from loaded data. NULL when out of memory. */
static cJSON *summary(struct ctx *x, const struct stats_input *in)
{
	const struct data *d = x->d;
	cJSON *o = cJSON_CreateObject();
	cJSON *phases = cJSON_CreateObject();
	cJSON *windows = cJSON_CreateArray();
	double w = window_len(in);
	struct span all;
	bool ok = o && phases && windows;
	size_t i;

	for (i = 0; ok && i < in->nphases; i++) {
		struct span sp = span_of(d, in->phases[i].from_ms, in->phases[i].to_ms);

		sp.phase = true;
		ok = put(phases, in->phases[i].name, figures(x, &sp));
	}
	for (i = 0; ok; i++) {
		double from = (double)i * w;
		double to = (double)(i + 1) * w;
		struct span sp;
		cJSON *f;

		if (from >= in->duration_ms)
			break;
		sp = span_of(d, from, to < in->duration_ms ? to : in->duration_ms);
		f = figures(x, &sp);
		ok = f && cJSON_AddItemToArray(windows, f);
		if (!ok)
			cJSON_Delete(f);
	}
	all = (struct span){ .from = 0, .to = in->duration_ms, .origin = 0,
			     .r1 = d->nreqs, .m1 = d->nmrows, .e1 = d->nevents };
	ok &= put(o, "primary", cJSON_CreateString(in->primary));
	ok &= put(o, "t0_unix_ms", cJSON_CreateNumber((double)in->t0_unix_ms));
	ok &= put(o, "duration_ms", cJSON_CreateNumber(in->duration_ms));
	ok &= put(o, "window_ms", cJSON_CreateNumber(w));
	ok &= put(o, "files", files_block(d));
	ok &= put(o, "phases", phases);
	ok &= put(o, "windows", windows);
	ok = ok && put(o, "totals", figures(x, &all));
	ok = ok && put(o, "breaker_transitions", transitions(d));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int stats_compute(const struct stats_input *in, cJSON **out, char *err)
{
	struct data d = { 0 };
	struct ctx *x = NULL;
	int rc;

	*out = NULL;
	err[0] = '\0';
	rc = input_check(in, err);
	if (rc)
		return rc;
	rc = data_load(&d, in, err);
	if (rc)
		goto out_free_data;
	rc = -ENOMEM;
	x = calloc(1, sizeof(*x));
	if (!x)
		goto out_free_data;
	x->d = &d;
	x->in = in;
	x->cls = -1;
	x->lat_ok = malloc((d.nreqs ? d.nreqs : 1) * sizeof(double));
	x->lat_all = malloc((d.nreqs ? d.nreqs : 1) * sizeof(double));
	x->ttft = malloc((d.nreqs ? d.nreqs : 1) * sizeof(double));
	if (!x->lat_ok || !x->lat_all || !x->ttft)
		goto out_free_ctx;
	*out = summary(x, in);
	if (*out)
		rc = 0;
out_free_ctx:
	free(x->lat_ok);
	free(x->lat_all);
	free(x->ttft);
	free(x);
out_free_data:
	if (rc == -ENOMEM && !err[0])
		snprintf(err, CFG_ERR_LEN, "%s: out of memory", in->run_dir);
	data_free(&d);
	return rc;
}

/* ---- combining repeats ---- */

/* {"mean","stddev","min","max","n"} of the numbers among v (absent: 0). */
static cJSON *combine_numbers(const cJSON *const *v, size_t n)
{
	double sum = 0, sq = 0, min = INFINITY, max = -INFINITY;
	size_t k = 0;
	size_t i;
	cJSON *o;
	bool ok = true;
	double mean;

	for (i = 0; i < n; i++) {
		double x;

		if (v[i] && !cJSON_IsNumber(v[i]))
			continue;
		x = v[i] ? v[i]->valuedouble : 0;
		sum += x;
		min = x < min ? x : min;
		max = x > max ? x : max;
		k++;
	}
	if (!k)
		return cJSON_CreateNull();
	mean = sum / (double)k;
	for (i = 0; i < n; i++) {
		double x;

		if (v[i] && !cJSON_IsNumber(v[i]))
			continue;
		x = v[i] ? v[i]->valuedouble : 0;
		sq += (x - mean) * (x - mean);
	}
	o = cJSON_CreateObject();
	ok &= put(o, "mean", cJSON_CreateNumber(mean));
	ok &= put(o, "stddev", cJSON_CreateNumber(k > 1 && min < max ? sqrt(sq / (double)(k - 1)) : 0));
	ok &= put(o, "min", cJSON_CreateNumber(min));
	ok &= put(o, "max", cJSON_CreateNumber(max));
	ok &= put(o, "n", cJSON_CreateNumber((double)k));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *combine_node(const cJSON *const *v, size_t n);

/* The member key of each of v (NULL where absent), combined. */
static cJSON *combine_member(const cJSON *const *v, size_t n, const char *key)
{
	const cJSON **c = malloc(n * sizeof(*c));
	cJSON *r;
	size_t i;

	if (!c)
		return NULL;
	for (i = 0; i < n; i++)
		c[i] = cJSON_IsObject(v[i]) ? cJSON_GetObjectItemCaseSensitive(v[i], key) : NULL;
	if (strcmp(key, "from_ms") == 0 || strcmp(key, "to_ms") == 0) {
		r = NULL;
		for (i = 0; i < n && !r; i++) {
			if (c[i])
				r = cJSON_Duplicate(c[i], 1);
		}
	} else {
		r = combine_node(c, n);
	}
	free(c);
	return r;
}

static cJSON *combine_object(const cJSON *const *v, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	size_t i;

	for (i = 0; o && i < n; i++) {
		const cJSON *m;

		if (!cJSON_IsObject(v[i]))
			continue;
		cJSON_ArrayForEach(m, v[i]) {
			if (cJSON_GetObjectItemCaseSensitive(o, m->string))
				continue;
			if (!put(o, m->string, combine_member(v, n, m->string))) {
				cJSON_Delete(o);
				return NULL;
			}
		}
	}
	return o;
}

static cJSON *combine_array(const cJSON *const *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	const cJSON **c = malloc(n * sizeof(*c));
	int len = -1;
	int k;
	size_t i;

	if (!a || !c)
		goto fail;
	for (i = 0; i < n; i++) {
		if (cJSON_IsArray(v[i]) && (len < 0 || cJSON_GetArraySize(v[i]) < len))
			len = cJSON_GetArraySize(v[i]);
	}
	for (k = 0; k < len; k++) {
		cJSON *e;

		for (i = 0; i < n; i++)
			c[i] = cJSON_IsArray(v[i]) ? cJSON_GetArrayItem(v[i], k) : NULL;
		e = combine_node(c, n);
		if (!e || !cJSON_AddItemToArray(a, e)) {
			cJSON_Delete(e);
			goto fail;
		}
	}
	free(c);
	return a;
fail:
	free(c);
	cJSON_Delete(a);
	return NULL;
}

/* v[0..n) (NULL: absent) combined by the rules in stats.h. */
static cJSON *combine_node(const cJSON *const *v, size_t n)
{
	const cJSON *first = NULL;
	size_t i;

	for (i = 0; i < n && !first; i++) {
		if (v[i] && !cJSON_IsNull(v[i]))
			first = v[i];
	}
	if (!first)
		return cJSON_CreateNull();
	if (cJSON_IsNumber(first))
		return combine_numbers(v, n);
	if (cJSON_IsObject(first))
		return combine_object(v, n);
	if (cJSON_IsArray(first))
		return combine_array(v, n);
	return cJSON_Duplicate(first, 1);
}

cJSON *stats_combine(cJSON *const *runs, size_t n)
{
	static const char *const copied[] = { "primary", "duration_ms", "window_ms" };
	static const char *const combined[] = { "phases", "windows", "totals" };
	cJSON *o;
	cJSON *bt;
	bool ok = true;
	size_t i;

	if (n == 0)
		return NULL;
	for (i = 0; i < n; i++) {
		if (!cJSON_IsObject(runs[i]))
			return NULL;
	}
	o = cJSON_CreateObject();
	bt = cJSON_CreateArray();
	ok &= put(o, "runs", cJSON_CreateNumber((double)n));
	for (i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(runs[0], copied[i]);

		ok &= put(o, copied[i], v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull());
	}
	for (i = 0; ok && i < sizeof(combined) / sizeof(combined[0]); i++)
		ok = put(o, combined[i], combine_member((const cJSON *const *)runs, n, combined[i]));
	for (i = 0; ok && bt && i < n; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(runs[i], "breaker_transitions");
		cJSON *copy = v ? cJSON_Duplicate(v, 1) : cJSON_CreateArray();

		ok = copy && cJSON_AddItemToArray(bt, copy);
		if (!ok)
			cJSON_Delete(copy);
	}
	ok &= put(o, "breaker_transitions", bt);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
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
