/*
 * degraded: cache keys from request bodies, degraded completions, and the
 * per-alias caches' life.
 */
#include "gateway/degraded.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* Top-level request keys that never change what the answer says. */
static const char *const ignored[] = {
	"stream", "stream_options", "user", "metadata", "store", "service_tier",
};

int degraded_init(struct degraded *d, const struct gw_alias *aliases, size_t naliases)
{
	size_t i;

	d->routes = calloc(naliases ? naliases : 1, sizeof(*d->routes));
	if (!d->routes)
		return -ENOMEM;
	d->nroutes = naliases;
	for (i = 0; i < naliases; i++) {
		const struct gw_degraded *c = &aliases[i].degraded;

		d->routes[i].cfg = c;
		if (c->mode != GW_DEGRADED_CACHE)
			continue;
		if (answer_cache_init(&d->routes[i].cache, c->max_entries, c->max_bytes,
				      c->ttl_ms)) {
			degraded_free(d);
			return -ENOMEM;
		}
		d->routes[i].has_cache = true;
	}
	return 0;
}

void degraded_free(struct degraded *d)
{
	size_t i;

	for (i = 0; i < d->nroutes; i++) {
		if (d->routes[i].has_cache)
			answer_cache_free(&d->routes[i].cache);
	}
	free(d->routes);
	d->routes = NULL;
	d->nroutes = 0;
}

void degraded_store(struct degraded *d, size_t route, const struct buf *key, const char *body,
		    size_t len, double now)
{
	if (route < d->nroutes && d->routes[route].has_cache)
		(void)answer_cache_put(&d->routes[route].cache, key->data, key->len, body, len, now);
}

static bool is_ignored(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
		if (strcmp(name, ignored[i]) == 0)
			return true;
	}
	return false;
}

static int by_name(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a;
	const cJSON *y = *(const cJSON *const *)b;

	return strcmp(x->string, y->string);
}

int degraded_key(const cJSON *root, struct buf *key)
{
	const cJSON *item;
	const cJSON **items;
	size_t n = 0;
	size_t i;
	int rc = 0;

	cJSON_ArrayForEach(item, root)
		n++;
	items = calloc(n ? n : 1, sizeof(*items));
	if (!items)
		return -ENOMEM;
	n = 0;
	cJSON_ArrayForEach(item, root) {
		if (item->string && !is_ignored(item->string))
			items[n++] = item;
	}
	qsort(items, n, sizeof(*items), by_name);
	rc |= buf_puts(key, "{");
	for (i = 0; i < n && !rc; i++) {
		char *v = cJSON_PrintUnformatted(items[i]);

		if (!v) {
			rc = -ENOMEM;
			break;
		}
		rc |= buf_puts(key, i ? "," : "");
		rc |= json_escape(key, items[i]->string);
		rc |= buf_puts(key, ":");
		rc |= buf_puts(key, v);
		free(v);
	}
	rc |= buf_puts(key, "}");
	free(items);
	return rc ? -ENOMEM : 0;
}

/* One SSE data line of a chunk: delta (content, or none) or usage; no finish reason when NULL. */
static int sse_chunk(struct buf *out, const char *id, const char *model, double unix_s,
		     const char *content, const char *finish, bool usage)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *choices;
	char *text;
	int rc = 0;

	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "object", "chat.completion.chunk");
	cJSON_AddNumberToObject(o, "created", (double)(long long)unix_s);
	cJSON_AddStringToObject(o, "model", model);
	choices = cJSON_AddArrayToObject(o, "choices");
	if (!usage) {
		cJSON *c = cJSON_CreateObject();
		cJSON *delta = cJSON_AddObjectToObject(c, "delta");

		cJSON_AddNumberToObject(c, "index", 0);
		if (content) {
			cJSON_AddStringToObject(delta, "role", "assistant");
			cJSON_AddStringToObject(delta, "content", content);
		}
		if (finish)
			cJSON_AddStringToObject(c, "finish_reason", finish);
		else
			cJSON_AddNullToObject(c, "finish_reason");
		cJSON_AddItemToArray(choices, c);
	} else {
		cJSON *u = cJSON_AddObjectToObject(o, "usage");

		cJSON_AddNumberToObject(u, "prompt_tokens", 0);
		cJSON_AddNumberToObject(u, "completion_tokens", 0);
		cJSON_AddNumberToObject(u, "total_tokens", 0);
	}
	text = cJSON_PrintUnformatted(o);
	if (!text)
		rc = -ENOMEM;
	else
		rc = buf_printf(out, "data: %s\n\n", text);
	free(text);
	cJSON_Delete(o);
	return rc;
}

static int sse_answer(struct buf *out, const char *id, const char *model, const char *content,
		      double unix_s)
{
	int rc = sse_chunk(out, id, model, unix_s, content, NULL, false);

	rc |= sse_chunk(out, id, model, unix_s, NULL, "stop", false);
	rc |= sse_chunk(out, id, model, unix_s, NULL, NULL, true);
	rc |= buf_puts(out, "data: [DONE]\n\n");
	return rc ? -ENOMEM : 0;
}

int degraded_completion(struct buf *out, const char *id, const char *model, const char *content,
			bool stream, double unix_s)
{
	struct buf cid = { 0 };
	cJSON *o;
	cJSON *c;
	cJSON *u;
	char *text;
	int rc;

	if (buf_printf(&cid, "degraded-%s", id))
		return -ENOMEM;
	if (stream) {
		rc = sse_answer(out, cid.data, model, content, unix_s);
		buf_free(&cid);
		return rc;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", cid.data);
	cJSON_AddStringToObject(o, "object", "chat.completion");
	cJSON_AddNumberToObject(o, "created", (double)(long long)unix_s);
	cJSON_AddStringToObject(o, "model", model);
	c = cJSON_CreateObject();
	cJSON_AddNumberToObject(c, "index", 0);
	u = cJSON_AddObjectToObject(c, "message");
	cJSON_AddStringToObject(u, "role", "assistant");
	cJSON_AddStringToObject(u, "content", content);
	cJSON_AddStringToObject(c, "finish_reason", "stop");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), c);
	u = cJSON_AddObjectToObject(o, "usage");
	cJSON_AddNumberToObject(u, "prompt_tokens", 0);
	cJSON_AddNumberToObject(u, "completion_tokens", 0);
	cJSON_AddNumberToObject(u, "total_tokens", 0);
	text = cJSON_PrintUnformatted(o);
	rc = text ? buf_puts(out, text) : -ENOMEM;
	free(text);
	cJSON_Delete(o);
	buf_free(&cid);
	return rc ? -ENOMEM : 0;
}

int degraded_restream(struct buf *out, const char *body, size_t len, const char *id,
		      const char *model, double unix_s)
{
	cJSON *root = json_parse_whole(body, len);
	const cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "choices"),
						 0);
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(choice, "message"), "content");
	struct buf cid = { 0 };
	int rc;

	if (!cJSON_IsString(content)) {
		cJSON_Delete(root);
		return -EINVAL;
	}
	rc = buf_printf(&cid, "degraded-%s", id);
	if (!rc)
		rc = sse_answer(out, cid.data, model, content->valuestring, unix_s);
	buf_free(&cid);
	cJSON_Delete(root);
	return rc ? -ENOMEM : 0;
}
