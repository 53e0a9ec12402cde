/*
 * mix: loading and validating a mix file (the request streams of a run and
 * the response header names to read), and the one-stream mix the command
 * line makes when there is no file.
 */
#include "loadgen/mix.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/json.h"

/* The bound on "rate" and "share". */
#define MIX_MAX_RATE 1e6

/* The header names the record fields come from when the file does not say. */
#define HDR_PROVIDER "x-faultline-provider"
#define HDR_ATTEMPTS "x-faultline-attempts"
#define HDR_HEDGED "x-faultline-hedged"
#define HDR_COST "x-faultline-cost-usd"
#define HDR_DEGRADED "x-faultline-degraded"

static const char *const class_names[] = { "interactive", "batch", NULL };

/* In the order of enum arrival. */
static const char *const arrival_names[] = { "constant", "poisson", NULL };

/* Request headers loadgen sets itself; a stream may not set them again. */
static const char *const reserved_headers[] = {
	"content-type", "content-length", "host", "accept", "expect", "x-request-id",
	"x-faultline-class", "x-faultline-tenant", "x-faultline-feature", NULL,
};

/* A stream's values as the table reads them; moved into mix_stream after. */
struct stream_raw {
	char *name;
	int class_idx;
	char *tenant;
	char *feature;
	char *model;
	int64_t prompt_tokens;
	int64_t prompts;
	int64_t max_tokens;
	int arrival;
};

#define SK(name, type, field, req, def, min, max, defs, choices) \
	{ name, type, offsetof(struct stream_raw, field), req, def, min, max, defs, choices }

/*
 * rate, share, stream, response_format and headers are read by hand: rate
 * and share must be above 0 (not a closed range), stream is a bool or a
 * number, response_format and headers objects. model, prompt_tokens and
 * max_tokens default to NULL / 0 here and are filled from the command
 * line's defaults after.
 */
static const struct cfg_key stream_keys[] = {
	SK("name", CFG_STR, name, true, 0, 0, 0, NULL, NULL),
	SK("rate", CFG_SKIP, name, false, 0, 0, 0, NULL, NULL),
	SK("share", CFG_SKIP, name, false, 0, 0, 0, NULL, NULL),
	SK("class", CFG_ENUM, class_idx, false, 0, 0, 0, "interactive", class_names),
	SK("tenant", CFG_STR, tenant, false, 0, 0, 0, "", NULL),
	SK("feature", CFG_STR, feature, false, 0, 0, 0, "", NULL),
	SK("model", CFG_STR, model, false, 0, 0, 0, NULL, NULL),
	SK("stream", CFG_SKIP, name, false, 0, 0, 0, NULL, NULL),
	SK("prompt_tokens", CFG_INT, prompt_tokens, false, 0, 1, 1000000, NULL, NULL),
	SK("prompts", CFG_INT, prompts, false, 1, 0, MIX_MAX_PROMPTS, NULL, NULL),
	SK("max_tokens", CFG_INT, max_tokens, false, 0, 1, 1000000, NULL, NULL),
	SK("response_format", CFG_SKIP, name, false, 0, 0, 0, NULL, NULL),
	SK("arrival", CFG_ENUM, arrival, false, 0, 0, 0, NULL, arrival_names),
	SK("headers", CFG_SKIP, name, false, 0, 0, 0, NULL, NULL),
};
#define NSTREAM_KEYS (sizeof(stream_keys) / sizeof(stream_keys[0]))

struct resp_raw {
	char *provider;
	char *attempts;
	char *hedged;
	char *cost_usd;
	char *degraded;
};

#define RK(name, field, defs) \
	{ name, CFG_STR, offsetof(struct resp_raw, field), false, 0, 0, 0, defs, NULL }

static const struct cfg_key resp_keys[] = {
	RK("provider", provider, HDR_PROVIDER),
	RK("attempts", attempts, HDR_ATTEMPTS),
	RK("hedged", hedged, HDR_HEDGED),
	RK("cost_usd", cost_usd, HDR_COST),
	RK("degraded", degraded, HDR_DEGRADED),
};
#define NRESP_KEYS (sizeof(resp_keys) / sizeof(resp_keys[0]))

static const struct cfg_key top_keys[] = {
	{ "streams", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "response_headers", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
};
#define NTOP_KEYS (sizeof(top_keys) / sizeof(top_keys[0]))

/* An HTTP token (RFC 9110 tchar): what a header name may be made of. */
bool mix_header_name_ok(const char *name, size_t len)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t i;

	if (len == 0)
		return false;
	for (i = 0; i < len; i++) {
		if (!p[i] || p[i] >= 0x80 || !(isalnum(p[i]) || strchr("!#$%&'*+-.^_`|~", p[i])))
			return false;
	}
	return true;
}

/* A header value: no control characters but tab (so no CR or LF). */
static bool is_header_value(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; *p; p++) {
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return false;
	}
	return true;
}

bool mix_header_reserved(const char *name, size_t len)
{
	int i;

	for (i = 0; reserved_headers[i]; i++) {
		if (strlen(reserved_headers[i]) == len &&
		    strncasecmp(reserved_headers[i], name, len) == 0)
			return true;
	}
	return false;
}

/* strdup, lowercased. */
static char *strdup_lower(const char *s)
{
	char *out = strdup(s);
	char *p;

	for (p = out; p && *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return out;
}

/* Sets the five response header names (lowercased). Returns 0 or -ENOMEM. */
static int set_response_headers(struct mix *m, const struct resp_raw *names)
{
	m->hdr_provider = strdup_lower(names->provider);
	m->hdr_attempts = strdup_lower(names->attempts);
	m->hdr_hedged = strdup_lower(names->hedged);
	m->hdr_cost = strdup_lower(names->cost_usd);
	m->hdr_degraded = strdup_lower(names->degraded);
	if (!m->hdr_provider || !m->hdr_attempts || !m->hdr_hedged || !m->hdr_cost ||
	    !m->hdr_degraded)
		return -ENOMEM;
	return 0;
}

/* The x-faultline-* names, for a mix that does not name its own. */
static int set_faultline_response_headers(struct mix *m)
{
	static const struct resp_raw ours = {
		.provider = HDR_PROVIDER,
		.attempts = HDR_ATTEMPTS,
		.hedged = HDR_HEDGED,
		.cost_usd = HDR_COST,
		.degraded = HDR_DEGRADED,
	};

	return set_response_headers(m, &ours);
}

/* Reads "rate" or "share" into *out: 0 when absent, else in (0, 1e6]. */
static int load_positive(const cJSON *obj, const char *key, const char *file,
			 const char *path, double *out, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	char got[96];

	*out = 0;
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0 ||
	    v->valuedouble > MIX_MAX_RATE) {
		cfg_describe(v, got, sizeof(got));
		return cfg_error(err, file, path, key,
				 "expected a number above 0 and at most %.17g, got %s",
				 MIX_MAX_RATE, got);
	}
	*out = v->valuedouble;
	return 0;
}

/* Reads "stream": true (1), false (0) or a probability; def when absent. */
static int load_stream_p(const cJSON *obj, double def, const char *file, const char *path,
			 double *out, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "stream");
	char got[96];

	*out = def;
	if (!v)
		return 0;
	if (cJSON_IsBool(v)) {
		*out = cJSON_IsTrue(v) ? 1 : 0;
		return 0;
	}
	if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0 &&
	    v->valuedouble <= 1) {
		*out = v->valuedouble;
		return 0;
	}
	cfg_describe(v, got, sizeof(got));
	return cfg_error(err, file, path, "stream",
			 "expected true, false or a probability from 0 to 1, got %s", got);
}

bool mix_response_format_ok(const cJSON *v)
{
	return cJSON_IsObject(v) &&
	       cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "type"));
}

/*
 * Reads "response_format" into st as compact JSON (cJSON's printing of it:
 * members in their order, numbers as cJSON writes them); def when absent.
 */
static int load_response_format(const cJSON *obj, const char *def, const char *file,
				const char *path, struct mix_stream *st, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "response_format");
	char got[96];

	if (!v) {
		if (def && !(st->response_format = strdup(def)))
			return -ENOMEM;
		return 0;
	}
	if (!mix_response_format_ok(v)) {
		cfg_describe(v, got, sizeof(got));
		return cfg_error(err, file, path, "response_format", "expected %s, got %s",
				 MIX_RESPONSE_FORMAT_EXPECTED, got);
	}
	st->response_format = cJSON_PrintUnformatted(v);
	return st->response_format ? 0 : -ENOMEM;
}

/* Checks one extra header and appends "Name: value" to the stream's list. */
static int add_header(struct mix_stream *st, const cJSON *item, const char *file,
		      const char *hpath, char *err)
{
	const char *name = item->string;
	char got[96];
	size_t len;
	size_t i;
	char *line;

	if (!mix_header_name_ok(name, strlen(name)))
		return cfg_error(err, file, hpath, NULL,
				 "expected header names made of letters, digits and "
				 "!#$%%&'*+-.^_`|~, got \"%.60s\"", name);
	if (mix_header_reserved(name, strlen(name)))
		return cfg_error(err, file, hpath, name,
				 "expected a header loadgen does not set itself (%s), got \"%s\"",
				 MIX_RESERVED_HEADERS, name);
	for (i = 0; i < st->nheaders; i++) {
		size_t n = strlen(name);

		if (strncasecmp(st->headers[i], name, n) == 0 && st->headers[i][n] == ':')
			return cfg_error(err, file, hpath, name,
					 "given twice (header names ignore case); "
					 "expected each header once");
	}
	if (!cJSON_IsString(item) || !is_header_value(item->valuestring)) {
		cfg_describe(item, got, sizeof(got));
		return cfg_error(err, file, hpath, name,
				 "expected a string without control characters (such as CR or LF), "
				 "got %s", got);
	}
	len = strlen(name) + 2 + strlen(item->valuestring) + 1;
	line = malloc(len);
	if (!line)
		return -ENOMEM;
	snprintf(line, len, "%s: %s", name, item->valuestring);
	st->headers[st->nheaders++] = line;
	return 0;
}

/* Reads a stream's "headers" object into st->headers. */
static int load_headers(const cJSON *obj, const char *file, const char *path,
			struct mix_stream *st, char *err)
{
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(obj, "headers");
	const cJSON *item;
	char hpath[96];
	char got[96];
	int n;
	int rc;

	if (!h)
		return 0;
	if (!cJSON_IsObject(h)) {
		cfg_describe(h, got, sizeof(got));
		return cfg_error(err, file, path, "headers",
				 "expected an object of header names and string values, got %s",
				 got);
	}
	n = cJSON_GetArraySize(h);
	if (n == 0)
		return 0;
	st->headers = calloc((size_t)n, sizeof(*st->headers));
	if (!st->headers)
		return -ENOMEM;
	snprintf(hpath, sizeof(hpath), "%s.headers", path);
	cJSON_ArrayForEach(item, h) {
		rc = add_header(st, item, file, hpath, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Checks that tenant and feature can be sent as header values. */
static int check_header_fields(const struct stream_raw *raw, const char *file,
			       const char *path, char *err)
{
	if (!is_header_value(raw->tenant))
		return cfg_error(err, file, path, "tenant",
				 "expected a string without control characters (it is sent "
				 "as x-faultline-tenant)");
	if (!is_header_value(raw->feature))
		return cfg_error(err, file, path, "feature",
				 "expected a string without control characters (it is sent "
				 "as x-faultline-feature)");
	return 0;
}

/* Moves the table's values into st, filling what the file left to d. */
static int take_raw(struct mix_stream *st, struct stream_raw *raw, const struct mix_defaults *d)
{
	st->name = raw->name;
	st->tenant = raw->tenant;
	st->feature = raw->feature;
	st->model = raw->model;
	raw->name = raw->tenant = raw->feature = raw->model = NULL;
	st->class_name = strdup(class_names[raw->class_idx]);
	if (!st->model)
		st->model = strdup(d->model ? d->model : "");
	st->prompt_tokens = raw->prompt_tokens ? raw->prompt_tokens : d->prompt_tokens;
	st->prompts = raw->prompts;
	st->max_tokens = raw->max_tokens ? raw->max_tokens : d->max_tokens;
	return st->class_name && st->model ? 0 : -ENOMEM;
}

/* Loads streams[idx] into st. */
static int load_stream(const cJSON *obj, const char *file, size_t idx,
		       const struct mix_defaults *d, struct mix_stream *st, char *err)
{
	struct stream_raw raw = { 0 };
	char path[64];
	int rc;

	snprintf(path, sizeof(path), "streams[%zu]", idx);
	rc = cfg_apply(stream_keys, NSTREAM_KEYS, obj, &raw, file, path, err);
	if (rc)
		goto out;
	rc = check_header_fields(&raw, file, path, err);
	if (rc)
		goto out;
	rc = take_raw(st, &raw, d);
	if (rc)
		goto out;
	st->arrival = cJSON_GetObjectItemCaseSensitive(obj, "arrival") ? raw.arrival : -1;
	rc = load_positive(obj, "rate", file, path, &st->rate, err);
	if (rc)
		goto out;
	rc = load_positive(obj, "share", file, path, &st->share, err);
	if (rc)
		goto out;
	if (!st->rate && !st->share) {
		rc = cfg_error(err, file, path, NULL,
			       "expected \"rate\" (requests per second) or \"share\" "
			       "(a weight), got neither");
		goto out;
	}
	if (st->rate && st->share) {
		rc = cfg_error(err, file, path, NULL,
			       "expected either \"rate\" or \"share\", got both");
		goto out;
	}
	rc = load_stream_p(obj, d->stream_p, file, path, &st->stream_p, err);
	if (rc)
		goto out;
	rc = load_response_format(obj, d->response_format, file, path, st, err);
	if (rc)
		goto out;
	rc = load_headers(obj, file, path, st, err);
out:
	cfg_free(stream_keys, NSTREAM_KEYS, &raw);
	return rc;
}

/* Checks streams[idx] against the ones before it: unique name, same kind. */
static int check_stream(const struct mix *m, size_t idx, const char *file, char *err)
{
	const struct mix_stream *st = &m->streams[idx];
	char path[64];
	size_t j;

	snprintf(path, sizeof(path), "streams[%zu]", idx);
	for (j = 0; j < idx; j++) {
		if (strcmp(st->name, m->streams[j].name) == 0)
			return cfg_error(err, file, path, "name",
					 "expected a name no other stream has, got \"%s\" "
					 "(also streams[%zu])", st->name, j);
	}
	if (idx > 0 && (st->rate > 0) != m->by_rate)
		return cfg_error(err, file, path, m->by_rate ? "share" : "rate",
				 "expected a \"%s\" like streams[0] (either every stream "
				 "gives a rate or every stream a share), got a \"%s\"",
				 m->by_rate ? "rate" : "share", m->by_rate ? "share" : "rate");
	if (st->arrival >= 0 && !(st->rate > 0))
		return cfg_error(err, file, path, "arrival",
				 "expected \"arrival\" only on a stream with a \"rate\" (streams "
				 "with shares follow --arrival), got \"%s\"",
				 arrival_names[st->arrival]);
	return 0;
}

/* Reads "response_headers", or sets the defaults when it is absent. */
static int load_response_headers(struct mix *m, const cJSON *root, const char *file,
				 char *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "response_headers");
	struct resp_raw raw = { 0 };
	const char *names[NRESP_KEYS];
	size_t i;
	int rc;

	if (!obj)
		return set_faultline_response_headers(m);
	rc = cfg_apply(resp_keys, NRESP_KEYS, obj, &raw, file, "response_headers", err);
	if (rc)
		goto out;
	names[0] = raw.provider;
	names[1] = raw.attempts;
	names[2] = raw.hedged;
	names[3] = raw.cost_usd;
	names[4] = raw.degraded;
	for (i = 0; i < NRESP_KEYS; i++) {
		if (!mix_header_name_ok(names[i], strlen(names[i]))) {
			rc = cfg_error(err, file, "response_headers", resp_keys[i].name,
				       "expected a header name made of letters, digits and "
				       "!#$%%&'*+-.^_`|~, got \"%.60s\"", names[i]);
			goto out;
		}
	}
	rc = set_response_headers(m, &raw);
out:
	cfg_free(resp_keys, NRESP_KEYS, &raw);
	return rc;
}

/*
 * Reads a parsed mix (root, only read) into m; path names it in messages.
 * On error m is left empty and err holds "FILE: KEY PATH: what was
 * expected".
 */
int mix_from_json(struct mix *m, const cJSON *root, const char *path,
		  const struct mix_defaults *d, char *err)
{
	const cJSON *arr;
	const cJSON *item;
	char got[96];
	size_t i = 0;
	int rc;

	memset(m, 0, sizeof(*m));
	rc = cfg_apply(top_keys, NTOP_KEYS, root, m, path, "", err);
	if (rc)
		goto out;
	arr = cJSON_GetObjectItemCaseSensitive(root, "streams");
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) {
		if (cJSON_IsArray(arr))
			snprintf(got, sizeof(got), "an empty array");
		else
			cfg_describe(arr, got, sizeof(got));
		rc = cfg_error(err, path, "", "streams",
			       "expected a non-empty array of streams, got %s", got);
		goto out;
	}
	m->streams = calloc((size_t)cJSON_GetArraySize(arr), sizeof(*m->streams));
	if (!m->streams) {
		rc = -ENOMEM;
		goto out;
	}
	cJSON_ArrayForEach(item, arr) {
		m->n = i + 1;
		rc = load_stream(item, path, i, d, &m->streams[i], err);
		if (rc)
			goto out;
		if (i == 0)
			m->by_rate = m->streams[0].rate > 0;
		rc = check_stream(m, i, path, err);
		if (rc)
			goto out;
		i++;
	}
	rc = load_response_headers(m, root, path, err);
out:
	if (rc == -ENOMEM)
		snprintf(err, CFG_ERR_LEN, "%s: out of memory", path);
	if (rc)
		mix_free(m);
	return rc;
}

/* Loads the file at path into m (see mix.h for its form), through mix_from_json. */
int mix_load(struct mix *m, const char *path, const struct mix_defaults *d, char *err)
{
	cJSON *root;
	int rc;

	memset(m, 0, sizeof(*m));
	root = json_load_file(path, err, CFG_ERR_LEN);
	if (!root)
		return -EINVAL;
	rc = mix_from_json(m, root, path, d, err);
	cJSON_Delete(root);
	return rc;
}

/* One stream, "default", with share 1 and the command line's values. */
int mix_default(struct mix *m, const struct mix_defaults *d)
{
	struct mix_stream *st;
	int rc;

	memset(m, 0, sizeof(*m));
	m->streams = calloc(1, sizeof(*m->streams));
	if (!m->streams)
		return -ENOMEM;
	m->n = 1;
	st = &m->streams[0];
	st->name = strdup("default");
	st->share = 1;
	st->class_name = strdup(class_names[0]);
	st->tenant = strdup("");
	st->feature = strdup("");
	st->model = strdup(d->model ? d->model : "");
	st->stream_p = d->stream_p;
	st->prompt_tokens = d->prompt_tokens;
	st->prompts = 1;
	st->max_tokens = d->max_tokens;
	st->response_format = d->response_format ? strdup(d->response_format) : NULL;
	st->arrival = -1;
	rc = set_faultline_response_headers(m);
	if (rc || !st->name || !st->class_name || !st->tenant || !st->feature || !st->model ||
	    (d->response_format && !st->response_format)) {
		mix_free(m);
		return -ENOMEM;
	}
	return 0;
}

/* The words of a generated prompt. */
static const char *const words[] = {
	"the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while",
	"seven", "clocks", "measure", "every", "outage", "slowly",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

int mix_prompt_write(struct buf *b, int64_t prompt_tokens)
{
	int64_t i;
	int rc = 0;

	for (i = 0; i < prompt_tokens; i++) {
		rc |= buf_puts(b, i ? " " : "");
		rc |= buf_puts(b, words[(size_t)i % NWORDS]);
	}
	return rc ? -ENOMEM : 0;
}

size_t mix_prompt_len(int64_t prompt_tokens)
{
	size_t n = 0;
	int64_t i;

	for (i = 0; i < prompt_tokens; i++)
		n += (i ? 1 : 0) + strlen(words[(size_t)i % NWORDS]);
	return n;
}

bool mix_draw_stream(const struct mix_stream *s, struct rng *r)
{
	return s->stream_p >= 1.0 || (s->stream_p > 0 && rng_uniform(r) < s->stream_p);
}

/* Sum of the rates of a by_rate mix; 0 for a mix of shares. */
double mix_total_rate(const struct mix *m)
{
	double sum = 0;
	size_t i;

	if (!m->by_rate)
		return 0;
	for (i = 0; i < m->n; i++)
		sum += m->streams[i].rate;
	return sum;
}

static void stream_free(struct mix_stream *st)
{
	size_t i;

	free(st->name);
	free(st->class_name);
	free(st->tenant);
	free(st->feature);
	free(st->model);
	free(st->response_format);
	for (i = 0; i < st->nheaders; i++)
		free(st->headers[i]);
	free(st->headers);
}

/* Frees the streams and header names; m is empty (all zero) after. */
void mix_free(struct mix *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		stream_free(&m->streams[i]);
	free(m->streams);
	free(m->hdr_provider);
	free(m->hdr_attempts);
	free(m->hdr_hedged);
	free(m->hdr_cost);
	free(m->hdr_degraded);
	memset(m, 0, sizeof(*m));
}

const struct cfg_section *mix_sections(size_t *n)
{
	static const struct cfg_section sections[] = {
		{ "", top_keys, NTOP_KEYS },
		{ "streams[]", stream_keys, NSTREAM_KEYS },
		{ "response_headers", resp_keys, NRESP_KEYS },
	};

	*n = sizeof(sections) / sizeof(sections[0]);
	return sections;
}
