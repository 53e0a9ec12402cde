/*
 * gateway: setting up and tearing down the gateway's state, sending each
 * request to its endpoint, and writing breaker state changes (events file,
 * log, counters).
 */
#include "gateway/gateway.h"
#include "gateway/greq.h"
#include "gateway/shared.h"

#include "gateway/admin.h"
#include "gateway/probe.h"
#include "gateway/worker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "common/records.h"

/* Idle easy handles kept for reuse; more are cleaned up. */
#define EASY_POOL_MAX 4096

double gw_now_ms(void)
{
	return (double)clock_mono_ns() / 1e6;
}

CURL *gateway_easy_get(struct gateway *gw)
{
	CURL *e;

	if (gw->npool)
		return gw->easy_pool[--gw->npool];
	e = curl_easy_init();
	if (!e)
		return NULL;
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROXY, "");		/* no proxy from the environment */
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");	/* nor its no_proxy list, read per transfer */
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	return e;
}

void gateway_easy_put(struct gateway *gw, CURL *easy)
{
	if (gw->npool < EASY_POOL_MAX)
		gw->easy_pool[gw->npool++] = easy;
	else
		curl_easy_cleanup(easy);
}

/* Whether fp is a regular file: only one may be renamed aside. */
static bool events_regular(FILE *fp)
{
	struct stat st;

	return fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * The events file, now closed, is short: a write or its close failed
 * (what, err). It must not keep its name: a regular file is renamed
 * NAME.tmp, no more lines are written, and the gateway exits 1 at its stop.
 */
static void events_set_aside(struct gateway *gw, bool regular, const char *what, int err)
{
	struct buf tmp = { 0 };
	bool renamed = regular && !buf_printf(&tmp, "%s.tmp", gw->events_path) &&
		       rename(gw->events_path, tmp.data) == 0;

	gw->events = NULL;
	gw->events_failed = true;
	log_error("events file %s: cannot %s: %s; it is incomplete%s%s, and no more changes are "
		  "written (the gateway will exit 1)", gw->events_path, what, strerror(err),
		  renamed ? ", renamed " : "", renamed ? tmp.data : "");
	buf_free(&tmp);
}

/* The events file could not take a line (err): closed and set aside. */
static void events_fail(struct gateway *gw, int err)
{
	bool regular = events_regular(gw->events);

	fclose(gw->events);
	events_set_aside(gw, regular, "write a breaker change", err);
}

/*
 * The router's listener: writes one breaker state change, as a log line
 * and an events line in the format common/records.h defines.
 */
static void on_breaker_change(void *arg, struct gw_target *t, const struct breaker_change *chg,
			       const struct change_origin *origin)
{
	struct gateway *gw = arg;
	struct event_source src = { gw->cfg->shared.replica, origin ? origin->peer : NULL,
				    origin ? origin->via : NULL, gw->worker_no };
	struct buf line = { 0 };
	int rc = 0;

	log_info("breaker %s/%s: %s -> %s (%s)%s%s", t->prov->name, t->model,
		 breaker_state_name(chg->from), breaker_state_name(chg->to), chg->reason,
		 origin ? " via " : "", origin ? origin->via : "");
	if (!gw->events)
		return;
	rc = event_line(&line, (double)clock_unix_ns() / 1e6, t->prov->name, t->model,
			event_state_name(router_event_state(chg->from)),
			event_state_name(router_event_state(chg->to)), chg->reason,
			gw->shared ? &src : NULL);
	if (rc) {
		events_fail(gw, ENOMEM);
	} else if (fwrite(line.data, 1, line.len, gw->events) != line.len ||
		   fflush(gw->events)) {
		events_fail(gw, errno);
	}
	buf_free(&line);
}

void gateway_event_contract(struct gateway *gw, const char *provider, const char *model,
			    const char *request_id, const char *why)
{
	struct event_source src = { gw->cfg->shared.replica, NULL, NULL, gw->worker_no };
	struct buf line = { 0 };

	if (!gw->events)
		return;
	if (event_contract_line(&line, (double)clock_unix_ns() / 1e6, provider, model, request_id,
				why, gw->shared ? &src : NULL))
		events_fail(gw, ENOMEM);
	else if (fwrite(line.data, 1, line.len, gw->events) != line.len || fflush(gw->events))
		events_fail(gw, errno);
	buf_free(&line);
}

void gateway_overloaded(struct gateway *gw, const char *why, const char *provider)
{
	uint64_t quiet;

	gw->overloaded++;
	if (!log_limit_pass(&gw->overload_log, clock_mono_ns(), 1000000000ull, &quiet))
		return;
	log_error("an attempt on provider %s failed for want of the gateway's own resources: "
		  "%s (not the provider's fault; answered 503 gateway_overloaded)", provider, why);
	if (quiet)
		log_error("%llu more such failures since the last line", (unsigned long long)quiet);
}

/* ---- endpoints ---- */

static void respond_json(struct http_exchange *ex, int status, const struct buf *b)
{
	const struct http_kv h[] = { { "Content-Type", "application/json" } };

	if (!b->data)
		http_respond_error(ex, 500, "Out of memory.", "server_error", NULL, NULL, NULL, 0);
	else
		http_respond(ex, status, h, 1, b->data, b->len);
}

static void wrong_method(struct http_exchange *ex, const char *allow)
{
	const struct http_kv h[] = { { "Allow", allow } };
	char msg[128];

	snprintf(msg, sizeof(msg), "Method %s is not allowed here; use %s.",
		 http_exchange_request(ex)->method, allow);
	http_respond_error(ex, 405, msg, "invalid_request_error", NULL, "method_not_allowed", h, 1);
}

/* A read-only view: GET (or HEAD), built by fill. */
static void serve_view(struct gateway *gw, struct http_exchange *ex, const char *method,
		       int (*fill)(const struct gateway *, struct buf *, double))
{
	struct buf b = { 0 };

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		wrong_method(ex, "GET, HEAD");
		return;
	}
	if (fill(gw, &b, gw_now_ms()))
		buf_free(&b);
	respond_json(ex, 200, &b);
	buf_free(&b);
}

static int models_view(const struct gateway *gw, struct buf *b, double now_ms)
{
	(void)now_ms;
	return admin_models(gw, b);
}

static void serve_metrics(struct gateway *gw, struct http_exchange *ex, const char *method)
{
	const struct http_kv h[] = { { "Content-Type", "text/plain; version=0.0.4; charset=utf-8" } };
	struct buf b = { 0 };

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		wrong_method(ex, "GET, HEAD");
		return;
	}
	if (admin_metrics(gw, &b, gw_now_ms()) || !b.data)
		http_respond_error(ex, 500, "Out of memory.", "server_error", NULL, NULL, NULL, 0);
	else
		http_respond(ex, 200, h, 1, b.data, b.len);
	buf_free(&b);
}

static void serve_health(struct http_exchange *ex, const char *method)
{
	const struct http_kv h[] = { { "Content-Type", "application/json" } };
	static const char ok[] = "{\"status\":\"ok\"}";

	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		wrong_method(ex, "GET, HEAD");
	else
		http_respond(ex, 200, h, 1, ok, sizeof(ok) - 1);
}

/*
 * With client keys configured, whether the request carries one; if not,
 * it is answered 401 and counted (by reason, and as a chat answer when
 * chat). Neither the key nor the header is written anywhere.
 */
static bool authorized(struct gateway *gw, struct http_exchange *ex, bool chat)
{
	const struct http_request *req = http_exchange_request(ex);
	enum auth_verdict v = auth_check(&gw->cfg->auth, http_request_header(req, "Authorization"));
	const struct http_kv missing[] = { { "WWW-Authenticate", "Bearer realm=\"faultline\"" } };
	const struct http_kv invalid[] = {
		{ "WWW-Authenticate", "Bearer realm=\"faultline\", error=\"invalid_token\"" },
	};

	if (v == AUTH_OK)
		return true;
	gw->auth_failures[v]++;
	if (chat)
		status_counts_add(&gw->unrouted, 401);
	if (v == AUTH_MISSING)
		http_respond_error(ex, 401, "You didn't provide an API key. You need to provide your "
				   "API key in an Authorization header using Bearer auth (i.e. "
				   "Authorization: Bearer YOUR_KEY).", "invalid_request_error", NULL,
				   "invalid_api_key", missing, 1);
	else
		http_respond_error(ex, 401, "Incorrect API key provided.", "invalid_request_error",
				   NULL, "invalid_api_key", invalid, 1);
	return false;
}

static void on_request(struct http_exchange *ex, void *data)
{
	struct gateway *gw = data;
	const struct http_request *req = http_exchange_request(ex);
	const char *path = req->path;
	char msg[160];

	if (strncmp(path, "/v1/", 4) == 0)
		path += 3;
	/* Everything but /healthz needs a client key, when there are any (docs/gateway.md). */
	if (strcmp(path, "/healthz") != 0 &&
	    !authorized(gw, ex, strcmp(path, "/chat/completions") == 0))
		return;
	if (strcmp(path, "/chat/completions") == 0) {
		if (strcmp(req->method, "POST")) {
			status_counts_add(&gw->unrouted, 405);
			wrong_method(ex, "POST");
		} else {
			proxy_chat(gw, ex);
		}
	} else if (strcmp(path, "/models") == 0) {
		serve_view(gw, ex, req->method, models_view);
	} else if (strcmp(path, "/healthz") == 0) {
		serve_health(ex, req->method);
	} else if (strcmp(path, "/metrics") == 0) {
		if (gw->worker && (!strcmp(req->method, "GET") || !strcmp(req->method, "HEAD")))
			worker_gather(gw->worker, ex, WORKER_VIEW_METRICS);
		else
			serve_metrics(gw, ex, req->method);
	} else if (strcmp(path, "/admin/breakers") == 0) {
		if (gw->worker && (!strcmp(req->method, "GET") || !strcmp(req->method, "HEAD")))
			worker_gather(gw->worker, ex, WORKER_VIEW_BREAKERS);
		else
			serve_view(gw, ex, req->method, admin_breakers);
	} else {
		snprintf(msg, sizeof(msg), "Unknown path %.100s.", req->path);
		http_respond_error(ex, 404, msg, "invalid_request_error", NULL, "unknown_url", NULL,
				   0);
	}
}

/* ---- life ---- */

static void chat_uh_free(struct gateway *gw)
{
	size_t i;

	for (i = 0; gw->chat_uh && i < gw->cfg->nproviders; i++)
		curl_url_cleanup(gw->chat_uh[i]);
	free(gw->chat_uh);
	gw->chat_uh = NULL;
}

int gateway_init(struct gateway *gw, uv_loop_t *loop, const struct gw_config *cfg,
		 const char *events_path, uint64_t seed, int64_t t0_unix_ms,
		 const struct gateway_worker *wk, char *err)
{
	struct http_server_config hc;
	/*
	 * Accept: per request. libcurl asks for 100-continue only for a body
	 * of 1 MiB or more: "Expect:" turns that off, and costs every request
	 * a header's processing, so only the big ones carry it.
	 */
	static const char *const base[] = { "Content-Type: application/json" };
	static const char *const big[] = { "Content-Type: application/json", "Expect:" };
	struct curl_slist *l;
	size_t i;
	int rc;

	memset(gw, 0, sizeof(*gw));
	gw->loop = loop;
	gw->cfg = cfg;
	gw->checks_from_ms = gw_now_ms();
	gw->checks_phased = t0_unix_ms > 0;
	gw->worker_no = wk ? wk->no : 0;
	gw->checks_here = !wk || wk->no == 1;	/* worker 1 checks for every worker */
	if (t0_unix_ms > 0)
		gw->checks_from_ms += (double)(t0_unix_ms - clock_unix_ms());
	rng_seed_stream(&gw->rng_retry, seed, GW_RNG_RETRY);
	rng_seed_stream(&gw->rng_breaker, seed, GW_RNG_BREAKER);
	rng_seed_stream(&gw->rng_health, seed, GW_RNG_HEALTH);
	list_init(&gw->reqs);
	for (i = 0; i < GW_GREQ_POOL_LEGS; i++)
		list_init(&gw->greq_pool[i]);
	list_init(&gw->dirty);
	snprintf(gw->id_prefix, sizeof(gw->id_prefix), "gw-%x-", (unsigned)getpid());
	gw->pstats = calloc(cfg->nproviders, sizeof(*gw->pstats));
	gw->costs = calloc(1, sizeof(*gw->costs));
	gw->probes = calloc(cfg->nproviders, sizeof(*gw->probes));
	gw->easy_pool = calloc(EASY_POOL_MAX, sizeof(*gw->easy_pool));
	if (!gw->pstats || !gw->costs || !gw->probes || !gw->easy_pool || router_init(&gw->router, cfg, gw_now_ms()) ||
	    degraded_init(&gw->degraded, cfg->aliases, cfg->naliases))
		goto out_nomem;
	gw->pol = (struct policy_env){
		.router = &gw->router,
		.cfg = cfg,
		.pstats = gw->pstats,
		.rng_retry = &gw->rng_retry,
		.rng_breaker = &gw->rng_breaker,
	};
	gw->breaker_log.on_change = on_breaker_change;
	gw->breaker_log.arg = gw;
	router_listen(&gw->router, &gw->breaker_log);
	proxy_queue_listen(gw);
	for (i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
		l = curl_slist_append(gw->base_headers, base[i]);
		if (!l)
			goto out_nomem;
		gw->base_headers = l;
	}
	for (i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		l = curl_slist_append(gw->big_headers, big[i]);
		if (!l)
			goto out_nomem;
		gw->big_headers = l;
	}
	/* Parsed once: given a URL, libcurl parses it again for every transfer. */
	gw->chat_uh = calloc(cfg->nproviders, sizeof(*gw->chat_uh));
	if (!gw->chat_uh)
		goto out_nomem;
	for (i = 0; i < cfg->nproviders; i++) {
		gw->chat_uh[i] = curl_url();
		if (!gw->chat_uh[i])
			goto out_nomem;
		if (curl_url_set(gw->chat_uh[i], CURLUPART_URL, cfg->providers[i].chat_url, 0)) {
			snprintf(err, 256, "provider %s: libcurl cannot parse its URL %s",
				 cfg->providers[i].name, cfg->providers[i].chat_url);
			rc = -EINVAL;
			goto out_free;
		}
	}
	if (events_path) {
		gw->events_path = events_path;
		gw->events = fopen(events_path, "a");
		if (!gw->events) {
			rc = -errno;
			snprintf(err, 256, "--events: cannot open %s: %s", events_path, strerror(errno));
			goto out_free;
		}
	}
	rc = curl_uv_init(&gw->cu, loop, proxy_on_done);
	if (rc)
		goto out_nomem;
	gw->cu.data = gw;
	uv_check_init(loop, &gw->flush);
	gw->flush.data = gw;
	uv_timer_init(loop, &gw->qtimer);
	gw->qtimer.data = gw;
	rc = curl_uv_init(&gw->hcu, loop, probe_on_done);
	if (rc) {
		uv_close((uv_handle_t *)&gw->flush, NULL);
		uv_close((uv_handle_t *)&gw->qtimer, NULL);
		curl_uv_close(&gw->cu, NULL);
		goto out_nomem;
	}
	gw->hcu.data = gw;
	/* Keep an idle upstream connection for every client that may want one. */
	curl_multi_setopt(gw->cu.multi, CURLMOPT_MAXCONNECTS, (long)cfg->max_connections);
	http_server_config_default(&hc);
	hc.max_body_bytes = cfg->max_body_bytes;
	hc.header_timeout_ms = (uint64_t)cfg->header_timeout_ms;
	hc.idle_timeout_ms = (uint64_t)cfg->idle_timeout_ms;
	hc.max_conns = cfg->max_connections;
	gw->srv = http_server_new(loop, &hc, on_request, gw);
	if (wk && gw->srv &&
	    !(gw->worker = worker_start(gw, wk->hub_fd, wk->no, wk->n, wk->on_lost, err))) {
		http_server_free(gw->srv, NULL, NULL);
		gw->srv = NULL;
		uv_close((uv_handle_t *)&gw->flush, NULL);
		uv_close((uv_handle_t *)&gw->qtimer, NULL);
		curl_uv_close(&gw->cu, NULL);
		curl_uv_close(&gw->hcu, NULL);
		rc = -EIO;
		goto out_free;
	}
	if (!gw->srv || probe_start_all(gw) ||
	    (cfg->shared.backend == GW_SHARED_REDIS &&
	     !(gw->shared = shared_start(loop, cfg, &gw->router, seed, err))) ||
	    (cfg->shared.backend != GW_SHARED_REDIS && gw->worker &&
	     !(gw->shared = worker_shared(gw->worker, err)))) {
		if (gw->srv)
			http_server_free(gw->srv, NULL, NULL);
		gw->srv = NULL;
		probe_close_all(gw);
		shared_close(gw->shared);
		worker_close(gw->worker);
		uv_close((uv_handle_t *)&gw->flush, NULL);
		uv_close((uv_handle_t *)&gw->qtimer, NULL);
		curl_uv_close(&gw->cu, NULL);
		curl_uv_close(&gw->hcu, NULL);
		goto out_nomem;
	}
	return 0;

out_nomem:
	rc = -ENOMEM;
	snprintf(err, 256, "out of memory");
out_free:
	if (gw->events)
		fclose(gw->events);
	curl_slist_free_all(gw->base_headers);
	curl_slist_free_all(gw->big_headers);
	chat_uh_free(gw);
	router_free(&gw->router);
	degraded_free(&gw->degraded);
	free(gw->pstats);
	free(gw->costs);
	free(gw->probes);
	free(gw->easy_pool);
	return rc;
}

/* No client connection is left, so no request either (a closed one aborts its own). */
static void on_drained(void *arg)
{
	struct gateway *gw = arg;

	if (gw->on_idle)
		gw->on_idle(gw);
}

void gateway_drain(struct gateway *gw, void (*on_idle)(struct gateway *gw))
{
	gw->on_idle = on_idle;
	gw->pol.stopping = true;
	proxy_queue_stop(gw);
	http_server_drain(gw->srv, on_drained, gw);
}

void gateway_cancel_all(struct gateway *gw)
{
	proxy_cancel_all(gw);
}

void gateway_close(struct gateway *gw)
{
	size_t i;

	gateway_cancel_all(gw);
	shared_close(gw->shared);
	http_server_free(gw->srv, NULL, NULL);
	gw->srv = NULL;
	worker_close(gw->worker);	/* after the server: views gathered for a client are gone */
	uv_close((uv_handle_t *)&gw->flush, NULL);
	uv_close((uv_handle_t *)&gw->qtimer, NULL);
	probe_close_all(gw);
	curl_uv_close(&gw->cu, NULL);
	curl_uv_close(&gw->hcu, NULL);
	for (i = 0; i < gw->npool; i++)
		curl_easy_cleanup(gw->easy_pool[i]);
	gw->npool = 0;
	free(gw->easy_pool);
	gw->easy_pool = NULL;
	curl_slist_free_all(gw->base_headers);
	gw->base_headers = NULL;
	curl_slist_free_all(gw->big_headers);
	gw->big_headers = NULL;
	chat_uh_free(gw);
	if (gw->events && (fflush(gw->events) || (fsync(fileno(gw->events)) && errno != EINVAL)))
		events_fail(gw, errno);
	if (gw->events) {
		bool regular = events_regular(gw->events);

		if (fclose(gw->events))
			events_set_aside(gw, regular, "close it", errno);
	}
	gw->events = NULL;
}

void gateway_free(struct gateway *gw)
{
	greq_pool_free(gw);
	shared_free(gw->shared);
	gw->shared = NULL;
	worker_free(gw->worker);
	gw->worker = NULL;
	router_free(&gw->router);
	degraded_free(&gw->degraded);
	free(gw->pstats);
	free(gw->costs);
	free(gw->probes);
	gw->pstats = NULL;
}
