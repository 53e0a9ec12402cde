/*
 * admin: the admin API.
 */
#include "mockprov/admin.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/cfg.h"
#include "common/json.h"
#include "common/log.h"

static void reply_json(struct http_exchange *ex, int status, cJSON *obj)
{
	static const struct http_kv h[] = { { "Content-Type", "application/json" } };
	char *text = cJSON_PrintUnformatted(obj);

	if (!text) {
		http_exchange_close(ex, false);
		return;
	}
	http_respond(ex, status, h, 1, text, strlen(text));
	cJSON_free(text);
}

static void reply_error(struct http_exchange *ex, int status, const char *msg)
{
	http_respond_error(ex, status, msg, "invalid_request_error", NULL, NULL, NULL, 0);
}

static void reply_405(struct http_exchange *ex, const char *allow)
{
	const struct http_kv h[] = { { "Allow", allow } };
	struct buf msg = { 0 };

	buf_printf(&msg, "Method not allowed here; use %s.", allow);
	http_respond_error(ex, 405, msg.data, "invalid_request_error", NULL,
			   "method_not_allowed", h, 1);
	buf_free(&msg);
}

static struct provider *find_provider(struct admin *a, const char *name)
{
	size_t i;

	for (i = 0; name && i < a->nproviders; i++) {
		if (strcmp(a->providers[i].cfg->name, name) == 0)
			return &a->providers[i];
	}
	return NULL;
}

static void get_state(struct admin *a, struct http_exchange *ex)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(root, "providers");
	size_t i;

	cJSON_AddNumberToObject(root, "t_ms", timebase_now_ms(&a->env->tb));
	cJSON_AddNumberToObject(root, "t0_unix_ms", (double)a->env->tb.t0_unix_ms);
	for (i = 0; i < a->nproviders; i++) {
		cJSON *p = cJSON_CreateObject();

		provider_prune_faults(&a->providers[i]);
		provider_state_json(&a->providers[i], p);
		cJSON_AddItemToArray(arr, p);
	}
	reply_json(ex, 200, root);
	cJSON_Delete(root);
}

/*
 * POST /faults: the body is a fault as in the config, with duration_s in
 * place of from_s/to_s (the window starts now) and the provider's name;
 * one JSON object and nothing after it.
 */
static void post_fault(struct admin *a, struct http_exchange *ex,
		       const struct http_request *req)
{
	cJSON *body = json_parse_whole(req->body, req->body_len);
	const cJSON *dur;
	const cJSON *name;
	double dur_s;
	struct provider *p;
	struct fault f;
	char err[CFG_ERR_LEN];
	double now_s = timebase_now_ms(&a->env->tb) / 1000.0;
	cJSON *out;

	if (!cJSON_IsObject(body)) {
		reply_error(ex, 400, "expected a JSON object: {\"provider\":NAME,\"kind\":KIND,"
			    "\"duration_s\":SECONDS,…}");
		goto out;
	}
	name = cJSON_GetObjectItemCaseSensitive(body, "provider");
	p = find_provider(a, cJSON_IsString(name) ? name->valuestring : NULL);
	if (!p) {
		reply_error(ex, cJSON_IsString(name) ? 404 : 400,
			    "provider: expected the name of a provider of this mockprov");
		goto out;
	}
	dur = cJSON_GetObjectItemCaseSensitive(body, "duration_s");
	if (!cJSON_IsNumber(dur) || !(dur->valuedouble > 0) || dur->valuedouble > 1e7) {
		reply_error(ex, 400, "duration_s: expected a number of seconds above 0");
		goto out;
	}
	dur_s = dur->valuedouble;	/* dur is freed with its key below */
	if (cJSON_GetObjectItemCaseSensitive(body, "from_s") ||
	    cJSON_GetObjectItemCaseSensitive(body, "to_s")) {
		reply_error(ex, 400, "from_s/to_s: not allowed here; an injected fault starts "
			    "now and lasts duration_s");
		goto out;
	}
	cJSON_AddNumberToObject(body, "from_s", now_s);
	cJSON_AddNumberToObject(body, "to_s", now_s + dur_s);
	cJSON_DeleteItemFromObjectCaseSensitive(body, "provider");
	cJSON_DeleteItemFromObjectCaseSensitive(body, "duration_s");
	if (fault_parse(body, "request", "", &f, err)) {
		reply_error(ex, 400, err);
		goto out;
	}
	f.injected = true;
	if (provider_inject(p, &f)) {
		reply_error(ex, 500, "out of memory");
		goto out;
	}
	log_info("%s: injected %s for %.3f s", p->cfg->name, fault_kind_name(f.kind), dur_s);
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "provider", p->cfg->name);
	fault_to_json(&f, timebase_now_ms(&a->env->tb), cJSON_AddObjectToObject(out, "fault"));
	reply_json(ex, 201, out);
	cJSON_Delete(out);
out:
	cJSON_Delete(body);
}

static void delete_faults(struct admin *a, struct http_exchange *ex,
			  const struct http_request *req)
{
	const char *q = req->query;
	struct provider *only = NULL;
	cJSON *out;
	size_t cleared = 0;
	size_t i;

	if (q && strncmp(q, "provider=", 9) == 0) {
		only = find_provider(a, q + 9);
		if (!only) {
			reply_error(ex, 404, "provider: no provider of that name");
			return;
		}
	} else if (q && *q) {
		reply_error(ex, 400, "expected no query or ?provider=NAME");
		return;
	}
	for (i = 0; i < a->nproviders; i++) {
		struct provider *p = &a->providers[i];

		if (only && p != only)
			continue;
		provider_prune_faults(p);	/* expired ones are not counted */
		cleared += p->nfaults;
		provider_clear_faults(p);
	}
	log_info("admin: cleared %zu faults", cleared);
	out = cJSON_CreateObject();
	cJSON_AddNumberToObject(out, "cleared", (double)cleared);
	reply_json(ex, 200, out);
	cJSON_Delete(out);
}

static void on_admin_request(struct http_exchange *ex, void *data)
{
	struct admin *a = data;
	const struct http_request *req = http_exchange_request(ex);
	const char *m = req->method;

	if (strcmp(req->path, "/state") == 0 && strcmp(m, "GET") == 0)
		get_state(a, ex);
	else if (strcmp(req->path, "/faults") == 0 && strcmp(m, "POST") == 0)
		post_fault(a, ex, req);
	else if (strcmp(req->path, "/faults") == 0 && strcmp(m, "DELETE") == 0)
		delete_faults(a, ex, req);
	else if (strcmp(req->path, "/state") == 0)
		reply_405(ex, "GET");
	else if (strcmp(req->path, "/faults") == 0)
		reply_405(ex, "POST, DELETE");
	else if (strcmp(req->path, "/healthz") == 0)
		http_respond(ex, 200, (const struct http_kv[]){ { "Content-Type", "application/json" } },
			     1, "{\"status\":\"ok\"}", 15);
	else
		reply_error(ex, 404, "unknown admin path: GET /state, POST /faults, "
			    "DELETE /faults[?provider=NAME]");
}

int admin_start(struct admin *a, struct mock_env *env, struct provider *providers,
		size_t nproviders, const struct sockaddr *addr)
{
	a->env = env;
	a->providers = providers;
	a->nproviders = nproviders;
	a->srv = http_server_new(env->loop, &env->http, on_admin_request, a);
	if (!a->srv)
		return UV_ENOMEM;
	return http_server_listen(a->srv, addr);
}

void admin_stop(struct admin *a, void (*done)(void *arg), void *arg)
{
	if (!a->srv) {
		if (done)
			done(arg);
		return;
	}
	http_server_free(a->srv, done, arg);
	a->srv = NULL;
}
