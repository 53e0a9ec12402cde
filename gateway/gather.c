/*
 * gather: the workers' views summed (gather.h). The Prometheus text is
 * read line by line — "# HELP", "# TYPE" and samples, each sample's
 * series being everything before its last space (a label value may hold
 * spaces, a value never does) — into families of series, then written
 * out again; /admin/breakers goes through cJSON.
 */
#include "gateway/gather.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gather_state_gauges[] = {
	"faultline_breaker_state",
	"faultline_provider_healthy",
	"faultline_shared_state_up",
	NULL,
};

enum merge { MERGE_SUM, MERGE_FIRST, MERGE_MIN };

struct series {
	char *key;		/* name and labels, as written */
	double v;
	int decimals;		/* the most digits after a point among the values */
};

struct family {
	char *name;
	char *help;		/* the "# HELP" line, newline included; NULL: none */
	char *type;		/* the "# TYPE" line */
	enum merge merge;
	struct series *s;
	size_t ns;
	size_t cap;
};

struct families {
	struct family *f;
	size_t n;
	size_t cap;
};

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static struct family *family_of(struct families *fs, const char *name, size_t len)
{
	struct family *f;
	size_t i;

	for (i = 0; i < fs->n; i++) {
		if (strlen(fs->f[i].name) == len && memcmp(fs->f[i].name, name, len) == 0)
			return &fs->f[i];
	}
	if (fs->n == fs->cap) {
		size_t cap = fs->cap ? fs->cap * 2 : 32;
		struct family *nf = realloc(fs->f, cap * sizeof(*nf));

		if (!nf)
			return NULL;
		fs->f = nf;
		fs->cap = cap;
	}
	f = &fs->f[fs->n];
	memset(f, 0, sizeof(*f));
	f->name = dup_n(name, len);
	if (!f->name)
		return NULL;
	fs->n++;
	return f;
}

/* How a family's samples merge: by its type, and the state gauges' table. */
static enum merge merge_of(const struct family *f, const char *type)
{
	size_t i;

	if (strcmp(type, "gauge"))
		return MERGE_SUM;
	if (strcmp(f->name, "faultline_shared_state_up") == 0)
		return MERGE_MIN;
	for (i = 0; gather_state_gauges[i]; i++) {
		if (strcmp(f->name, gather_state_gauges[i]) == 0)
			return MERGE_FIRST;
	}
	return MERGE_SUM;
}

/* The digits after the point in a value as written. */
static int decimals_of(const char *v)
{
	const char *dot = strchr(v, '.');
	int n = 0;

	if (!dot)
		return 0;
	for (dot++; *dot >= '0' && *dot <= '9'; dot++)
		n++;
	return n;
}

/* One sample line (key, value text) of family f from a part. */
static int add_sample(struct family *f, const char *key, size_t klen, const char *val)
{
	struct series *s = NULL;
	char *end;
	double v = strtod(val, &end);
	size_t i;

	if (end == val || !isfinite(v))
		return 0;	/* not a number: left out */
	for (i = 0; i < f->ns; i++) {
		if (strlen(f->s[i].key) == klen && memcmp(f->s[i].key, key, klen) == 0) {
			s = &f->s[i];
			break;
		}
	}
	if (!s) {
		if (f->ns == f->cap) {
			size_t cap = f->cap ? f->cap * 2 : 16;
			struct series *ns = realloc(f->s, cap * sizeof(*ns));

			if (!ns)
				return -ENOMEM;
			f->s = ns;
			f->cap = cap;
		}
		s = &f->s[f->ns];
		s->key = dup_n(key, klen);
		if (!s->key)
			return -ENOMEM;
		s->v = v;
		s->decimals = decimals_of(val);
		f->ns++;
		return 0;
	}
	if (decimals_of(val) > s->decimals)
		s->decimals = decimals_of(val);
	if (f->merge == MERGE_SUM)
		s->v += v;
	else if (f->merge == MERGE_MIN && v < s->v)
		s->v = v;
	return 0;
}

/* The name of a "# HELP NAME …" or "# TYPE NAME …" line (after the marker) and its length. */
static size_t word_len(const char *p, const char *end)
{
	const char *q = p;

	while (q < end && *q != ' ')
		q++;
	return (size_t)(q - p);
}

/* The type word of a "# TYPE NAME TYPE" line, from after NAME, into type (16 bytes). */
static const char *type_of(const char *p, const char *end, char *type)
{
	size_t len;

	while (p < end && *p == ' ')
		p++;
	len = word_len(p, end);
	snprintf(type, 16, "%.*s", (int)(len < 15 ? len : 15), p);
	return type;
}

/* Reads one part's text into fs. Returns 0 or -ENOMEM. */
static int read_part(struct families *fs, const char *text)
{
	struct family *cur = NULL;
	const char *line = text;

	while (*line) {
		const char *end = strchr(line, '\n');
		const char *next;

		if (!end)
			end = line + strlen(line);
		next = *end ? end + 1 : end;
		if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0) {
			const char *name = line + 7;
			size_t nlen = word_len(name, end);
			struct family *f = family_of(fs, name, nlen);
			char type[16];
			char **slot;

			if (!f)
				return -ENOMEM;
			slot = line[2] == 'H' ? &f->help : &f->type;
			if (!*slot) {
				*slot = dup_n(line, (size_t)(next - line));
				if (!*slot)
					return -ENOMEM;
				if (line[2] == 'T')
					f->merge = merge_of(f, type_of(name + nlen, end, type));
			}
			if (line[2] == 'T')
				cur = f;
		} else if (line[0] != '#' && end > line) {
			const char *sp = end;
			char val[64];

			while (sp > line && sp[-1] != ' ')
				sp--;
			if (sp > line + 1 && cur && (size_t)(end - sp) < sizeof(val)) {
				memcpy(val, sp, (size_t)(end - sp));
				val[end - sp] = '\0';
				if (add_sample(cur, line, (size_t)(sp - 1 - line), val))
					return -ENOMEM;
			}
		}
		line = next;
	}
	return 0;
}

static int write_value(struct buf *out, double v, int decimals)
{
	if (decimals == 0 && fabs(v) < 9e15)
		return buf_printf(out, "%.0f", v);
	return buf_printf(out, "%.*f", decimals, v);
}

/* The chat requests a part's worker answered: its faultline_requests_total summed. */
static double requests_of(const char *text)
{
	static const char name[] = "faultline_requests_total";
	const char *line = text;
	double sum = 0;

	while (*line) {
		const char *end = strchr(line, '\n');

		if (!end)
			end = line + strlen(line);
		if (strncmp(line, name, sizeof(name) - 1) == 0 &&
		    (line[sizeof(name) - 1] == '{' || line[sizeof(name) - 1] == ' ')) {
			const char *sp = end;

			while (sp > line && sp[-1] != ' ')
				sp--;
			sum += strtod(sp, NULL);
		}
		line = *end ? end + 1 : end;
	}
	return sum;
}

static void families_free(struct families *fs)
{
	size_t i;
	size_t k;

	for (i = 0; i < fs->n; i++) {
		for (k = 0; k < fs->f[i].ns; k++)
			free(fs->f[i].s[k].key);
		free(fs->f[i].s);
		free(fs->f[i].name);
		free(fs->f[i].help);
		free(fs->f[i].type);
	}
	free(fs->f);
}

int gather_metrics(struct buf *out, const struct gather_part *parts, size_t n, const char *sup)
{
	struct families fs = { 0 };
	size_t i;
	size_t k;
	int rc = 0;

	for (i = 0; i < n && !rc; i++) {
		if (parts[i].text)
			rc = read_part(&fs, parts[i].text);
	}
	for (i = 0; i < fs.n && !rc; i++) {
		const struct family *f = &fs.f[i];

		if (f->help)
			rc |= buf_puts(out, f->help);
		if (f->type)
			rc |= buf_puts(out, f->type);
		for (k = 0; k < f->ns; k++) {
			rc |= buf_puts(out, f->s[k].key);
			rc |= buf_puts(out, " ");
			rc |= write_value(out, f->s[k].v, f->s[k].decimals);
			rc |= buf_puts(out, "\n");
		}
	}
	rc |= buf_puts(out, "# HELP faultline_worker_requests_total Chat completion requests "
			    "answered, by the worker that answered them.\n"
			    "# TYPE faultline_worker_requests_total counter\n");
	for (i = 0; i < n; i++) {
		if (parts[i].text)
			rc |= buf_printf(out, "faultline_worker_requests_total{worker=\"%u\"} %.0f\n",
					 parts[i].worker, requests_of(parts[i].text));
	}
	if (sup)
		rc |= buf_puts(out, sup);
	families_free(&fs);
	return rc ? -ENOMEM : 0;
}

/* ---- /admin/breakers ---- */

/* Adds the numbers of from's members to the same members of to. */
static void add_numbers(cJSON *to, const cJSON *from)
{
	cJSON *m;

	cJSON_ArrayForEach(m, to) {
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(from, m->string);

		if (cJSON_IsNumber(m) && cJSON_IsNumber(o))
			cJSON_SetNumberValue(m, m->valuedouble + o->valuedouble);
	}
}

static bool same_target(const cJSON *a, const cJSON *b)
{
	const char *keys[] = { "provider", "model" };
	size_t i;

	for (i = 0; i < 2; i++) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, keys[i]);
		const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, keys[i]);

		if (cJSON_IsString(x) != cJSON_IsString(y) ||
		    (cJSON_IsString(x) && strcmp(x->valuestring, y->valuestring)))
			return false;
	}
	return true;
}

/* One worker's own view of breaker br: {"worker", "state", "consecutive_failures"}. */
static cJSON *worker_view(unsigned worker, const cJSON *br)
{
	cJSON *o = cJSON_CreateObject();
	const cJSON *state = cJSON_GetObjectItemCaseSensitive(br, "state");
	const cJSON *cf = cJSON_GetObjectItemCaseSensitive(br, "consecutive_failures");

	if (!o || !cJSON_AddNumberToObject(o, "worker", worker) ||
	    !cJSON_AddStringToObject(o, "state", cJSON_IsString(state) ? state->valuestring : "?") ||
	    !cJSON_AddNumberToObject(o, "consecutive_failures",
				     cJSON_IsNumber(cf) ? cf->valuedouble : 0)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static const cJSON *breakers_of(const cJSON *doc)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, "breakers");

	return cJSON_IsArray(a) ? a : NULL;
}

int gather_breakers(struct buf *out, const struct gather_part *parts, size_t n)
{
	static const char *const summed[] = { "totals", "window" };
	static const char *const counts[] = { "probes_in_flight", "probes_succeeded" };
	cJSON *docs[64 + 1] = { 0 };
	cJSON *base;
	cJSON *br;
	char *text = NULL;
	size_t used = 0;
	size_t i;
	size_t k;
	bool nomem = false;
	int rc = 0;

	if (n > sizeof(docs) / sizeof(docs[0]))
		n = sizeof(docs) / sizeof(docs[0]);
	for (i = 0; i < n; i++) {
		docs[i] = parts[i].text ? cJSON_Parse(parts[i].text) : NULL;
		if (docs[i] && !breakers_of(docs[i])) {
			cJSON_Delete(docs[i]);
			docs[i] = NULL;
		}
		used += docs[i] != NULL;
	}
	base = docs[0];
	if (!base) {
		rc = -EINVAL;
		goto out;
	}
	cJSON_ArrayForEach(br, breakers_of(base)) {
		cJSON *views = cJSON_CreateArray();

		nomem |= !views || !cJSON_AddItemToObject(br, "workers", views);
		if (nomem)
			break;
		nomem |= !cJSON_AddItemToArray(views, worker_view(parts[0].worker, br));
		for (i = 1; i < n; i++) {
			const cJSON *o;

			if (!docs[i])
				continue;
			cJSON_ArrayForEach(o, breakers_of(docs[i])) {
				if (!same_target(br, o))
					continue;
				for (k = 0; k < 2; k++)
					add_numbers(cJSON_GetObjectItemCaseSensitive(br, summed[k]),
						    cJSON_GetObjectItemCaseSensitive(o, summed[k]));
				for (k = 0; k < 2; k++) {
					cJSON *m = cJSON_GetObjectItemCaseSensitive(br, counts[k]);
					const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, counts[k]);

					if (cJSON_IsNumber(m) && cJSON_IsNumber(v))
						cJSON_SetNumberValue(m, m->valuedouble + v->valuedouble);
				}
				nomem |= !cJSON_AddItemToArray(views, worker_view(parts[i].worker, o));
				break;
			}
		}
	}
	nomem |= !cJSON_AddNumberToObject(base, "workers", (double)used);
	text = nomem ? NULL : cJSON_PrintUnformatted(base);
	if (!text || buf_puts(out, text))
		rc = -ENOMEM;
out:
	free(text);
	for (i = 0; i < n; i++)
		cJSON_Delete(docs[i]);
	return rc;
}
