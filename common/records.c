/*
 * records: the record formats' tables and the few helpers around them;
 * see records.h.
 */
#include "common/records.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "common/recfile.h"

#define MOCK_PREFIX "mock-"
#define MOCK_SUFFIX ".csv"

const char *const req_columns[REQ_NCOLS] = {
	[REQ_ID] = "id",
	[REQ_STREAM_NAME] = "stream_name",
	[REQ_CLASS] = "class",
	[REQ_TENANT] = "tenant",
	[REQ_FEATURE] = "feature",
	[REQ_STREAMING] = "streaming",
	[REQ_SCHED_MS] = "sched_ms",
	[REQ_START_MS] = "start_ms",
	[REQ_TTFT_MS] = "ttft_ms",
	[REQ_END_MS] = "end_ms",
	[REQ_LATENCY_MS] = "latency_ms",
	[REQ_SERVICE_MS] = "service_ms",
	[REQ_STATUS] = "status",
	[REQ_OUTCOME] = "outcome",
	[REQ_ERROR] = "error",
	[REQ_PROVIDER] = "provider",
	[REQ_ATTEMPTS] = "attempts",
	[REQ_HEDGED] = "hedged",
	[REQ_RETRIES] = "retries",
	[REQ_TOKENS_IN] = "tokens_in",
	[REQ_TOKENS_OUT] = "tokens_out",
	[REQ_MAX_GAP_MS] = "max_gap_ms",
	[REQ_COST_USD] = "cost_usd",
	[REQ_DEGRADED] = "degraded",
};

static const char *const outcome_names[OUT_COUNT] = {
	[OUT_OK] = "ok",
	[OUT_HTTP_ERROR] = "http_error",
	[OUT_TIMEOUT] = "timeout",
	[OUT_REFUSED] = "refused",
	[OUT_RESET] = "reset",
	[OUT_TRUNCATED] = "truncated",
	[OUT_STALLED] = "stalled",
	[OUT_INVALID] = "invalid",
};

static const char *const class_names[CLASS_COUNT] = {
	[CLASS_INTERACTIVE] = "interactive",
	[CLASS_BATCH] = "batch",
};

static const char *const degraded_names[DEGRADED_COUNT] = {
	[DEGRADED_STATIC] = "static",
	[DEGRADED_CACHE] = "cache",
};

const char *const mock_columns[MOCK_NCOLS] = {
	[MOCK_T_MS] = "t_ms",
	[MOCK_REQUEST_ID] = "request_id",
	[MOCK_STREAMING] = "streaming",
	[MOCK_FAULT] = "fault",
	[MOCK_STATUS] = "status",
	[MOCK_TTFT_MS] = "ttft_ms",
	[MOCK_DUR_MS] = "dur_ms",
	[MOCK_TOKENS_OUT] = "tokens_out",
	[MOCK_OUTCOME] = "outcome",
	[MOCK_KIND] = "kind",
};

static const char *const mock_kind_names[MOCK_KIND_COUNT] = {
	[MOCK_KIND_CHAT] = "chat",
	[MOCK_KIND_MODELS] = "models",
};

static const char *const mock_outcome_names[MOCK_OUTCOME_COUNT] = {
	[MOCK_COMPLETED] = "completed",
	[MOCK_CLIENT_ABORTED] = "client_aborted",
	[MOCK_FAULTED] = "faulted",
};

const char *const event_keys[EVENT_NKEYS] = {
	[EVENT_T_UNIX_MS] = "t_unix_ms",
	[EVENT_PROVIDER] = "provider",
	[EVENT_MODEL] = "model",
	[EVENT_FROM] = "from",
	[EVENT_TO] = "to",
	[EVENT_REASON] = "reason",
	[EVENT_REPLICA] = "replica",
	[EVENT_ORIGIN] = "origin",
	[EVENT_PEER] = "peer",
	[EVENT_VIA] = "via",
	[EVENT_WORKER] = "worker",
};

static const char *const event_state_names[EVENT_NSTATES] = {
	[EVENT_CLOSED] = "closed",
	[EVENT_HALF_OPEN] = "half_open",
	[EVENT_OPEN] = "open",
};

/* names[i] when i < n, else "?". */
static const char *name_of(const char *const *names, size_t n, int i)
{
	if (i < 0 || (size_t)i >= n)
		return "?";
	return names[i];
}

/* Index of s in names[0..n), or -1. */
static int index_of(const char *const *names, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(names[i], s) == 0)
			return (int)i;
	}
	return -1;
}

const char *outcome_name(enum outcome o)
{
	return name_of(outcome_names, OUT_COUNT, (int)o);
}

int outcome_from_name(const char *s)
{
	return index_of(outcome_names, OUT_COUNT, s);
}

const char *req_class_name(enum req_class c)
{
	return name_of(class_names, CLASS_COUNT, (int)c);
}

int req_class_from_name(const char *s)
{
	return index_of(class_names, CLASS_COUNT, s);
}

const char *req_degraded_name(enum req_degraded d)
{
	return name_of(degraded_names, DEGRADED_COUNT, (int)d);
}

int req_degraded_from_name(const char *s)
{
	return index_of(degraded_names, DEGRADED_COUNT, s);
}

const char *mock_outcome_name(enum mock_outcome o)
{
	return name_of(mock_outcome_names, MOCK_OUTCOME_COUNT, (int)o);
}

int mock_outcome_from_name(const char *s)
{
	return index_of(mock_outcome_names, MOCK_OUTCOME_COUNT, s);
}

const char *mock_kind_name(enum mock_kind k)
{
	return name_of(mock_kind_names, MOCK_KIND_COUNT, (int)k);
}

int mock_kind_from_name(const char *s)
{
	return index_of(mock_kind_names, MOCK_KIND_COUNT, s);
}

bool rec_mock_is_check(enum mock_kind k, const char *request_id)
{
	return k == MOCK_KIND_MODELS ||
	       (request_id && strncmp(request_id, REC_CHECK_ID_PREFIX,
				      strlen(REC_CHECK_ID_PREFIX)) == 0);
}

const char *event_state_name(enum event_state s)
{
	return name_of(event_state_names, EVENT_NSTATES, (int)s);
}

int event_state_from_name(const char *s)
{
	if (strcmp(s, "half-open") == 0)
		return EVENT_HALF_OPEN;
	return index_of(event_state_names, EVENT_NSTATES, s);
}

int mock_record_row(struct row *r, const struct mock_record *m)
{
	const char *const *c = mock_columns;

	row_begin(r, false);
	row_num(r, c[MOCK_T_MS], m->t_ms, 3);
	row_str(r, c[MOCK_REQUEST_ID], m->request_id);
	row_bool(r, c[MOCK_STREAMING], m->streaming);
	row_str(r, c[MOCK_FAULT], m->fault);
	row_int(r, c[MOCK_STATUS], m->status);
	row_num(r, c[MOCK_TTFT_MS], m->ttft_ms, 3);
	row_num(r, c[MOCK_DUR_MS], m->dur_ms, 3);
	row_int(r, c[MOCK_TOKENS_OUT], m->tokens_out);
	row_str(r, c[MOCK_OUTCOME], mock_outcome_name(m->outcome));
	row_str(r, c[MOCK_KIND], mock_kind_name(m->kind));
	if (r->nfields != MOCK_NCOLS)
		return -ENOMEM;
	return row_end(r);
}

int rec_mock_file(const char *provider, char *out, size_t len)
{
	int n = snprintf(out, len, REC_MOCK_FILE_FMT, provider);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Whether s ends with suffix. */
static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s);
	size_t m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool rec_mock_file_parse(const char *name, char *provider, size_t len)
{
	size_t plen;

	if (strncmp(name, MOCK_PREFIX, strlen(MOCK_PREFIX)) != 0 || !ends_with(name, MOCK_SUFFIX) ||
	    strlen(name) <= strlen(MOCK_PREFIX MOCK_SUFFIX))
		return false;
	plen = strlen(name) - strlen(MOCK_PREFIX MOCK_SUFFIX);
	if (provider && len) {
		if (plen >= len)
			plen = len - 1;
		memcpy(provider, name + strlen(MOCK_PREFIX), plen);
		provider[plen] = '\0';
	}
	return true;
}

bool rec_unfinished(const char *name)
{
	return strcmp(name, REC_REQUESTS_CSV REC_TMP_SUFFIX) == 0 ||
	       (strncmp(name, MOCK_PREFIX, strlen(MOCK_PREFIX)) == 0 &&
		ends_with(name, MOCK_SUFFIX REC_TMP_SUFFIX));
}

/* Appends `,"KEY":` (no comma before the first key) for events.jsonl's key k. */
static int event_key(struct buf *line, enum event_key k)
{
	int rc = buf_puts(line, k == 0 ? "{" : ",");

	rc |= json_escape(line, event_keys[k]);
	rc |= buf_puts(line, ":");
	return rc;
}

int event_contract_line(struct buf *line, double t_unix_ms, const char *provider,
			const char *model, const char *request_id, const char *why,
			const struct event_source *src)
{
	int rc = event_key(line, EVENT_T_UNIX_MS);

	rc |= buf_printf(line, "%.3f,\"" EVENT_KIND_KEY "\":\"" EVENT_CONTRACT_VIOLATION "\"",
			 t_unix_ms);
	rc |= event_key(line, EVENT_PROVIDER);
	rc |= json_escape(line, provider);
	rc |= event_key(line, EVENT_MODEL);
	rc |= json_escape(line, model);
	rc |= buf_puts(line, ",\"request_id\":");
	rc |= json_escape(line, request_id);
	rc |= buf_puts(line, ",\"why\":");
	rc |= json_escape(line, why);
	if (src) {
		rc |= event_key(line, EVENT_REPLICA);
		rc |= json_escape(line, src->replica);
	}
	if (src && src->worker) {
		rc |= event_key(line, EVENT_WORKER);
		rc |= buf_printf(line, "%u", src->worker);
	}
	rc |= buf_puts(line, "}\n");
	return rc ? -ENOMEM : 0;
}

int event_line(struct buf *line, double t_unix_ms, const char *provider, const char *model,
	       const char *from, const char *to, const char *reason,
	       const struct event_source *src)
{
	int rc = 0;

	/* To the microsecond: a change right after a fault must not read as before it. */
	rc |= event_key(line, EVENT_T_UNIX_MS);
	rc |= buf_printf(line, "%.3f", t_unix_ms);
	rc |= event_key(line, EVENT_PROVIDER);
	rc |= json_escape(line, provider);
	rc |= event_key(line, EVENT_MODEL);
	rc |= model ? json_escape(line, model) : buf_puts(line, "null");
	rc |= event_key(line, EVENT_FROM);
	rc |= json_escape(line, from);
	rc |= event_key(line, EVENT_TO);
	rc |= json_escape(line, to);
	rc |= event_key(line, EVENT_REASON);
	rc |= reason ? json_escape(line, reason) : buf_puts(line, "null");
	if (src) {
		rc |= event_key(line, EVENT_REPLICA);
		rc |= json_escape(line, src->replica);
		rc |= event_key(line, EVENT_ORIGIN);
		rc |= json_escape(line, src->peer ? "remote" : "local");
	}
	if (src && src->peer) {
		rc |= event_key(line, EVENT_PEER);
		rc |= json_escape(line, src->peer);
		rc |= event_key(line, EVENT_VIA);
		rc |= json_escape(line, src->via ? src->via : "pubsub");
	}
	if (src && src->worker) {
		rc |= event_key(line, EVENT_WORKER);
		rc |= buf_printf(line, "%u", src->worker);
	}
	rc |= buf_puts(line, "}\n");
	return rc ? -ENOMEM : 0;
}
