/*
 * template: the placeholders of a scenario's setups ({port}, {listen},
 * {upstream.NAME}, {hostport.NAME}, {dir}, {ms:N}) — checked at load,
 * expanded for a run — and the
 * configs the runner hands to the programs (mockprov's, a gateway
 * setup's) built from the loaded scenario.
 */
#include "runner/scenario.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/json.h"
#include "runner/scenario_int.h"

/* ---- placeholders ---- */

enum ph_kind {
	PH_NONE, PH_PORT, PH_LISTEN, PH_UPSTREAM, PH_HOSTPORT, PH_MS, PH_DIR, PH_UNKNOWN,
	PH_UNCLOSED, PH_BAD_MS,
};

/* The largest N of {ms:N}: a day and more, far past any timeout. */
#define PH_MS_MAX 1e9

/*
 * {PREFIX NAME}: a placeholder naming a provider ({upstream.NAME},
 * {hostport.NAME}), NAME running to the next '}'. Returns kind, or
 * PH_UNCLOSED when no '}' closes it; PH_NONE when s does not start with
 * prefix.
 */
static enum ph_kind named_placeholder(const char *s, const char *prefix, enum ph_kind kind,
				      size_t *len, const char **name, size_t *namelen)
{
	size_t n = strlen(prefix);
	const char *end;

	if (strncmp(s, prefix, n) != 0)
		return PH_NONE;
	end = strchr(s + n, '}');
	if (!end)
		return PH_UNCLOSED;
	*name = s + n;
	*namelen = (size_t)(end - *name);
	*len = (size_t)(end - s) + 1;
	return kind;
}

/*
 * {ms:N}: N digits, maybe with a fraction ("1500", "0.5"), at most
 * PH_MS_MAX; *ms set to it. Anything else up to the '}' is PH_BAD_MS (no
 * '}' at all: PH_UNCLOSED).
 */
static enum ph_kind ms_placeholder(const char *s, size_t *len, double *ms)
{
	const char *p = s + 4;		/* after "{ms:" */
	const char *end = strchr(p, '}');
	const char *q = p;
	char num[40];

	if (!end)
		return PH_UNCLOSED;
	*len = (size_t)(end - s) + 1;
	while (q < end && *q >= '0' && *q <= '9')
		q++;
	if (q == p)
		return PH_BAD_MS;
	if (q < end && *q == '.') {
		const char *frac = ++q;

		while (q < end && *q >= '0' && *q <= '9')
			q++;
		if (q == frac)
			return PH_BAD_MS;
	}
	if (q != end || (size_t)(end - p) >= sizeof(num))
		return PH_BAD_MS;
	memcpy(num, p, (size_t)(end - p));
	num[end - p] = '\0';
	*ms = strtod(num, NULL);
	return *ms <= PH_MS_MAX ? PH_MS : PH_BAD_MS;
}

/*
 * What s (at a '{') starts: {port}, {listen}, {dir}, {ms:N},
 * {upstream.NAME} or {hostport.NAME} (NAME runs to the next '}'), another
 * {word} of lower-case letters, '_' and '.' (a misspelt placeholder), or
 * plain text. *len is the placeholder's length.
 */
static enum ph_kind placeholder(const char *s, size_t *len, const char **name, size_t *namelen,
				double *ms)
{
	enum ph_kind kind;
	size_t i = 1;

	kind = named_placeholder(s, "{upstream.", PH_UPSTREAM, len, name, namelen);
	if (kind == PH_NONE)
		kind = named_placeholder(s, "{hostport.", PH_HOSTPORT, len, name, namelen);
	if (kind != PH_NONE)
		return kind;
	if (strncmp(s, "{ms:", 4) == 0)
		return ms_placeholder(s, len, ms);
	while ((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_' || s[i] == '.')
		i++;
	if (i == 1 || s[i] != '}')
		return PH_NONE;
	*len = i + 1;
	if (i - 1 == 4 && strncmp(s + 1, "port", 4) == 0)
		return PH_PORT;
	if (i - 1 == 6 && strncmp(s + 1, "listen", 6) == 0)
		return PH_LISTEN;
	if (i - 1 == 3 && strncmp(s + 1, "dir", 3) == 0)
		return PH_DIR;
	return PH_UNKNOWN;
}

/* The placeholders cx allows, for messages. */
static const char *allowed_text(const struct subst_ctx *cx)
{
	if (cx->allow_port)
		return "{port}, {listen}, {dir}, {ms:N}, {upstream.NAME} and {hostport.NAME}";
	if (cx->allow_run)
		return "{dir}, {ms:N}, {upstream.NAME} and {hostport.NAME} ({port} and {listen} "
		       "only in an external setup)";
	return "{upstream.NAME} (the runner sets the gateway's listen)";
}

/* {ms:N}'s expansion: N × the time scale, rounded, at least 1 unless N is 0. */
static long long scaled_ms(double ms, double scale)
{
	double v = round(ms * scale);

	if (ms > 0 && v < 1)
		v = 1;
	return (long long)v;
}

/*
 * A provider placeholder's value, or -EINVAL with why when NAME is no
 * provider (or, expanding, the run has no value for it).
 */
static int provider_value(const struct subst_ctx *cx, enum ph_kind kind, const char *name,
			  size_t namelen, const char *ph, size_t len, const char **value,
			  char *why, size_t whylen)
{
	const char *const *vals = NULL;
	char list[256];
	int idx = scenario__find_name(cx->names, cx->nnames, name, namelen);

	if (cx->v)
		vals = kind == PH_UPSTREAM ? cx->v->urls : cx->v->hostports;
	*value = NULL;
	if (idx >= 0 && vals)
		*value = vals[idx];
	if (idx < 0 || (cx->v && !*value)) {
		scenario__names_text(cx->names, cx->nnames, list, sizeof(list));
		snprintf(why, whylen, "expected %s with NAME a provider of the scenario (%.160s), "
			 "got \"%.*s\"", kind == PH_UPSTREAM ? "{upstream.NAME}" : "{hostport.NAME}",
			 list, (int)len, ph);
		return -EINVAL;
	}
	return 0;
}

/*
 * Expands tmpl into out (NULL, or cx->v NULL: only checks it). Returns 0,
 * -ENOMEM, or -EINVAL with why ("expected …, got …") saying what is wrong.
 */
static int subst(const struct subst_ctx *cx, const char *tmpl, struct buf *out, char *why,
		 size_t whylen)
{
	const char *p = tmpl;
	const char *name = NULL;
	const char *value;
	size_t namelen = 0;
	size_t len = 0;
	double ms = 0;
	int rc = 0;

	if (!cx->v)
		out = NULL;
	while (!rc && *p) {
		const char *brace = strchr(p, '{');
		enum ph_kind kind;

		if (!brace) {
			if (out)
				rc = buf_puts(out, p);
			break;
		}
		if (out && brace > p)
			rc = buf_append(out, p, (size_t)(brace - p));
		if (rc)
			break;
		/* A '{' after '$' is text: a shell's or nginx's ${var} passes through. */
		kind = brace > tmpl && brace[-1] == '$' ? PH_NONE :
		       placeholder(brace, &len, &name, &namelen, &ms);
		switch (kind) {
		case PH_NONE:
			if (out)
				rc = buf_append(out, "{", 1);
			p = brace + 1;
			continue;
		case PH_UNCLOSED:
			snprintf(why, whylen, "expected %s closed by '}', got \"%.100s\"",
				 strncmp(brace, "{ms:", 4) == 0 ? "{ms:N}" :
				 strncmp(brace, "{hostport.", 10) == 0 ? "{hostport.NAME}" :
				 "{upstream.NAME}", tmpl);
			return -EINVAL;
		case PH_BAD_MS:
			snprintf(why, whylen, "expected {ms:N} with N a number of milliseconds from 0 "
				 "to %.0f (digits, maybe a fraction: {ms:1500}), got \"%.*s\"",
				 PH_MS_MAX, (int)(len < 100 ? len : 100), brace);
			return -EINVAL;
		case PH_UNKNOWN:
			snprintf(why, whylen, "expected only the placeholders %s, got \"%.*s\"",
				 allowed_text(cx), (int)len, brace);
			return -EINVAL;
		case PH_PORT:
		case PH_LISTEN:
		case PH_DIR:
		case PH_MS:
		case PH_HOSTPORT:
			if ((kind == PH_PORT || kind == PH_LISTEN) && !cx->allow_run) {
				snprintf(why, whylen, "expected only {upstream.NAME} placeholders in a "
					 "gateway config (the runner sets its listen), got \"%.*s\"",
					 (int)len, brace);
				return -EINVAL;
			}
			if ((kind == PH_PORT || kind == PH_LISTEN) ? !cx->allow_port : !cx->allow_run) {
				snprintf(why, whylen, "expected only the placeholders %s, got \"%.*s\"",
					 allowed_text(cx), (int)len, brace);
				return -EINVAL;
			}
			break;
		case PH_UPSTREAM:
			break;
		}
		if (kind == PH_UPSTREAM || kind == PH_HOSTPORT) {
			rc = provider_value(cx, kind, name, namelen, brace, len, &value, why, whylen);
			if (rc)
				return rc;
			if (out)
				rc = buf_puts(out, value);
		} else if (out && kind == PH_PORT) {
			rc = buf_printf(out, "%d", cx->v->port);
		} else if (out && kind == PH_LISTEN) {
			rc = buf_printf(out, "127.0.0.1:%d", cx->v->port);
		} else if (out && kind == PH_MS) {
			rc = buf_printf(out, "%lld", scaled_ms(ms, cx->scale));
		} else if (out && kind == PH_DIR) {
			if (!cx->v->dir) {
				snprintf(why, whylen, "expected {dir} only where the run's folder is known");
				return -EINVAL;
			}
			rc = buf_puts(out, cx->v->dir);
		}
		p = brace + len;
	}
	return rc ? -ENOMEM : 0;
}

/* Checks a template at path (the full key path) against cx. */
int template_check(const struct subst_ctx *cx, const char *tmpl, const char *file,
		   const char *path, char *err)
{
	char why[CFG_ERR_LEN];

	if (subst(cx, tmpl, NULL, why, sizeof(why)))
		return cfg_error(err, file, path, NULL, "%s", why);
	return 0;
}

/* Checks every string value under node (path: node's key path) against cx. */
int template_check_strings(const struct subst_ctx *cx, const cJSON *node, const char *file,
			   const char *path, char *err)
{
	const cJSON *c;
	char sub[256];
	int i = 0;
	int rc;

	cJSON_ArrayForEach(c, node) {
		if (cJSON_IsArray(node))
			snprintf(sub, sizeof(sub), "%s[%d]", path, i++);
		else
			snprintf(sub, sizeof(sub), "%s.%s", path, c->string);
		if (cJSON_IsString(c))
			rc = template_check(cx, c->valuestring, file, sub, err);
		else
			rc = template_check_strings(cx, c, file, sub, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Replaces every string value under node by its expansion. */
int template_expand_strings(const struct subst_ctx *cx, cJSON *node, char *why,
			    size_t whylen)
{
	struct buf b = { 0 };
	cJSON *c;
	int rc = 0;

	cJSON_ArrayForEach(c, node) {
		if (cJSON_IsString(c) && strchr(c->valuestring, '{')) {
			char *s;

			buf_reset(&b);
			rc = subst(cx, c->valuestring, &b, why, whylen);
			if (!rc && buf_puts(&b, ""))
				rc = -ENOMEM;
			if (rc)
				break;
			s = cJSON_malloc(b.len + 1);
			if (!s) {
				rc = -ENOMEM;
				break;
			}
			memcpy(s, b.data, b.len + 1);
			cJSON_free(c->valuestring);
			c->valuestring = s;
		} else if (cJSON_IsArray(c) || cJSON_IsObject(c)) {
			rc = template_expand_strings(cx, c, why, whylen);
			if (rc)
				break;
		}
	}
	buf_free(&b);
	return rc;
}

/* Sets obj's "listen" to value, replacing any. Returns 0 or -ENOMEM. */
int template_set_listen(cJSON *obj, const char *value)
{
	cJSON_DeleteItemFromObjectCaseSensitive(obj, "listen");
	return cJSON_AddStringToObject(obj, "listen", value) ? 0 : -ENOMEM;
}

/* cJSON's printed text as a plain malloc'ed string (cJSON may use other hooks). */
static char *print_json(const cJSON *obj)
{
	char *s = cJSON_Print(obj);
	char *out;

	if (!s)
		return NULL;
	out = strdup(s);
	cJSON_free(s);
	return out;
}

char *scenario_mock_config(const struct scenario *sc, const int *ports)
{
	cJSON *top = cJSON_CreateObject();
	cJSON *arr = cJSON_Duplicate(sc->providers, 1);
	char listen[128];
	char *out = NULL;
	cJSON *p;
	size_t i = 0;

	if (!top || !arr || !cJSON_AddItemToObject(top, "providers", arr))
		goto out;
	arr = NULL;
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(top, "providers")) {
		const char *given = json_get_string(p, "listen");
		const char *colon = given ? strrchr(given, ':') : NULL;
		int rc = 0;

		if (ports && ports[i] > 0) {
			if (colon)
				snprintf(listen, sizeof(listen), "%.*s:%d", (int)(colon - given), given,
					 ports[i]);
			else
				snprintf(listen, sizeof(listen), "127.0.0.1:%d", ports[i]);
			rc = template_set_listen(p, listen);
		} else if (!given) {
			rc = template_set_listen(p, "127.0.0.1:0");
		}
		if (rc)
			goto out;
		i++;
	}
	if (sc->groups) {
		arr = cJSON_Duplicate(sc->groups, 1);
		if (!arr || !cJSON_AddItemToObject(top, "groups", arr))
			goto out;
		arr = NULL;
	}
	out = print_json(top);
out:
	cJSON_Delete(arr);
	cJSON_Delete(top);
	return out;
}

char *scenario_gateway_config(const struct scenario *sc, const struct sc_setup *st,
			      const char *listen, const char *const *urls, const char *redis_url,
			      const char *key_prefix, char *err)
{
	cJSON *shared;
	const struct sc_expand_vals v = { 0, urls, NULL, NULL };
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, false, false, sc->scale,
				      &v };
	char why[CFG_ERR_LEN];
	char path[96];
	cJSON *cfg = NULL;
	char *out = NULL;
	int rc;

	if (st >= sc->setups && st < sc->setups + sc->nsetups)
		snprintf(path, sizeof(path), "setups[%zu].config", (size_t)(st - sc->setups));
	else
		snprintf(path, sizeof(path), "setups.%.64s.config", st->name ? st->name : "?");
	if (st->kind != SC_GATEWAY || !st->config) {
		cfg_error(err, sc->path, path, NULL, "expected a gateway setup");
		return NULL;
	}
	cfg = cJSON_Duplicate(st->config, 1);
	if (!cfg) {
		scenario__oom(err, sc->path, path);
		goto out;
	}
	rc = template_expand_strings(&cx, cfg, why, sizeof(why));
	if (rc == -EINVAL) {
		cfg_error(err, sc->path, path, NULL, "%s", why);
		goto out;
	}
	if (rc || template_set_listen(cfg, listen)) {
		scenario__oom(err, sc->path, path);
		goto out;
	}
	if (redis_url) {
		/* The setup's tuning keys stay; the run's Redis is the runner's to name. */
		shared = cJSON_GetObjectItemCaseSensitive(cfg, "shared_state");
		if (!shared)
			shared = cJSON_AddObjectToObject(cfg, "shared_state");
		if (!shared || !cJSON_AddStringToObject(shared, "backend", "redis") ||
		    !cJSON_AddStringToObject(shared, "url", redis_url) ||
		    !cJSON_AddStringToObject(shared, "key_prefix", key_prefix ? key_prefix : "")) {
			scenario__oom(err, sc->path, path);
			goto out;
		}
	}
	out = print_json(cfg);
	if (!out)
		scenario__oom(err, sc->path, path);
out:
	cJSON_Delete(cfg);
	return out;
}

char *scenario_expand(const struct scenario *sc, const char *tmpl, const struct sc_expand_vals *v)
{
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, true, true, sc->scale,
				      v };
	struct buf b = { 0 };
	char why[CFG_ERR_LEN];
	int rc;

	if (!v) {
		errno = EINVAL;
		return NULL;
	}
	rc = subst(&cx, tmpl, &b, why, sizeof(why));
	if (!rc && buf_puts(&b, ""))
		rc = -ENOMEM;
	if (rc) {
		buf_free(&b);
		errno = -rc;
		return NULL;
	}
	return buf_steal(&b);
}

/* Whether st sets a header called name (any case): its value wins over the mix's. */
static bool setup_sets_header(const struct sc_setup *st, const char *name)
{
	size_t i;

	for (i = 0; st && i < st->nheaders; i++) {
		if (strcasecmp(st->header_names[i], name) == 0)
			return true;
	}
	return false;
}

/* Takes the headers st sets (its -H) out of every stream of the mix m. */
static void drop_setup_headers(cJSON *m, const struct sc_setup *st)
{
	cJSON *streams = cJSON_GetObjectItemCaseSensitive(m, "streams");
	cJSON *one;

	cJSON_ArrayForEach(one, streams) {
		cJSON *h = cJSON_GetObjectItemCaseSensitive(one, "headers");
		cJSON *c = h ? h->child : NULL;

		while (c) {
			cJSON *next = c->next;

			if (c->string && setup_sets_header(st, c->string))
				cJSON_Delete(cJSON_DetachItemViaPointer(h, c));
			c = next;
		}
	}
}

cJSON *scenario_loadgen_mix(const struct scenario *sc, const struct sc_setup *st, bool *oom)
{
	const cJSON *headers = st && st->kind == SC_EXTERNAL ? st->response_headers : NULL;
	cJSON *m;
	cJSON *streams;
	cJSON *one;

	*oom = false;
	if (!sc->load.mix && !headers)
		return NULL;
	m = sc->load.mix ? cJSON_Duplicate(sc->load.mix, true) : cJSON_CreateObject();
	if (!m)
		goto out_oom;
	if (!cJSON_GetObjectItemCaseSensitive(m, "streams")) {
		streams = cJSON_AddArrayToObject(m, "streams");
		one = cJSON_CreateObject();
		if (!streams || !one || !cJSON_AddItemToArray(streams, one)) {
			cJSON_Delete(one);
			goto out_oom;
		}
		if (!cJSON_AddStringToObject(one, "name", "load") ||
		    !cJSON_AddNumberToObject(one, "share", 1))
			goto out_oom;
	}
	if (st && st->nheaders)
		drop_setup_headers(m, st);
	if (headers) {
		cJSON_DeleteItemFromObjectCaseSensitive(m, "response_headers");
		if (!json_put(m, "response_headers", cJSON_Duplicate(headers, true)))
			goto out_oom;
	}
	return m;
out_oom:
	cJSON_Delete(m);
	*oom = true;
	return NULL;
}
