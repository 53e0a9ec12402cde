/*
 * probe: the providers' active health checks. Each provider with a
 * health_check has a timer and at most one check in flight, on a curl_uv
 * of their own (so request transfers and checks never share a done
 * callback): GET BASE_URL/models, or a 1-token chat completion, within
 * timeout_ms. health.c counts the results; when a provider turns
 * unhealthy its targets' breakers are opened, while it stays unhealthy
 * they are kept open, and when it is healthy again the open ones go
 * half-open, so neither waits for traffic to find out. While a breaker of
 * the provider is open or half-open — traffic found it failing — its
 * checks run at the fast cadence (health_suspect), so the checks confirm
 * the outage, and see its end, without waiting out interval_ms. Every check carries
 * x-request-id: health-check-PROVIDER-N (common/records.h's
 * REC_CHECK_ID_PREFIX), so a provider's log can tell it from a user's
 * request.
 */
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "gateway/anthropic.h"
#include "gateway/probe.h"

#include "gateway/gateway.h"
#include "gateway/worker.h"
#include "common/json.h"
#include "common/log.h"
#include "common/records.h"

struct probe {
	uv_timer_t timer;		/* first: the struct is freed with the handle */
	struct gateway *gw;
	size_t provider;
	const struct health_config *cfg;
	struct health st;
	CURL *easy;
	struct curl_uv_note note;	/* what curl_uv saw of the check's transfer */
	bool busy;			/* a check is in flight */
	char *url;
	char *body;			/* a completion check's request; NULL for GET */
	char *h_id_text;		/* "x-request-id: health-check-NAME-N" */
	size_t h_id_len;		/* its bytes, N's room included */
	unsigned long long seq;		/* checks started */
	double due_ms;			/* the current (or next) check's due time (gw_now_ms) */
	struct curl_slist h_id;
	struct curl_slist h_type;
	struct curl_slist h_auth;
	struct curl_slist h_version;	/* an Anthropic provider's anthropic-version */
	char errbuf[CURL_ERROR_SIZE];
};

static char content_type[] = "Content-Type: application/json";
static char anthropic_version[] = "anthropic-version: " ANTH_VERSION;

/* CURLOPT_WRITEFUNCTION: a check's answer is not kept. */
static size_t discard(char *data, size_t size, size_t n, void *userp)
{
	(void)data;
	(void)userp;
	return size * n;
}

static void on_probe_timer(uv_timer_t *t);

/* Arms the timer for the check due at p->due_ms (from the loop's cached time, rounded up). */
static void probe_arm(struct probe *p)
{
	double delay = ceil(p->due_ms - (double)uv_now(p->gw->loop));

	uv_timer_start(&p->timer, on_probe_timer, delay > 0 ? (uint64_t)delay : 0, 0);
}

/* The next check: on the grid of the last one's due time (health_next_due). */
static void probe_again(struct probe *p)
{
	p->due_ms = health_next_due(&p->st, p->cfg, p->due_ms, gw_now_ms());
	probe_arm(p);
}

void probe_on_done(struct curl_uv *cu, CURL *easy, CURLcode result)
{
	struct probe *p = NULL;
	long status = 0;
	enum health_change ch;
	bool ok;

	(void)cu;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&p);
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
	p->busy = false;
	if (result == CURLE_COULDNT_CONNECT && p->note.socket_errno) {
		/* The gateway's own lack of sockets says nothing of the provider. */
		gateway_overloaded(p->gw, strerror(p->note.socket_errno),
				   p->gw->cfg->providers[p->provider].name);
		probe_again(p);
		return;
	}
	ok = result == CURLE_OK && status >= 200 && status <= 299;
	p->gw->pstats[p->provider].health_checks[ok]++;
	ch = health_result(&p->st, p->cfg, ok);
	p->gw->pstats[p->provider].unhealthy = !p->st.healthy;
	p->gw->pstats[p->provider].check_slow = result == CURLE_OPERATION_TIMEDOUT;
	if (ch == HEALTH_DOWN)
		log_info("provider %s: unhealthy after %u failed health checks (last: %s)",
			 p->gw->cfg->providers[p->provider].name, p->st.fails,
			 result != CURLE_OK ? (p->errbuf[0] ? p->errbuf : curl_easy_strerror(result))
					    : "a non-2xx answer");
	else if (ch == HEALTH_UP)
		log_info("provider %s: healthy after %u passed health checks",
			 p->gw->cfg->providers[p->provider].name, p->st.passes);
	router_apply_health(&p->gw->router, p->provider, ch, ok, ok ? p->st.passes : p->st.fails,
			    p->st.healthy, gw_now_ms(), &p->gw->rng_breaker);
	if (p->gw->worker)
		worker_health(p->gw->worker, p->provider, ok, &p->st,
			      result == CURLE_OPERATION_TIMEDOUT);
	probe_again(p);
}

void probe_mirror(struct gateway *gw, size_t provider, bool healthy, bool slow, unsigned fails,
		  unsigned passes)
{
	size_t i;

	for (i = 0; i < gw->nprobes; i++) {
		struct probe *p = gw->probes[i];

		if (p->provider != provider)
			continue;
		if (p->st.healthy != healthy)
			log_info("provider %s: %s (the health checker's verdict)",
				 gw->cfg->providers[provider].name, healthy ? "healthy" : "unhealthy");
		p->st.healthy = healthy;
		p->st.fails = fails;
		p->st.passes = passes;
		gw->pstats[provider].unhealthy = !healthy;
		gw->pstats[provider].check_slow = slow;
	}
}

static void on_probe_timer(uv_timer_t *t)
{
	struct probe *p = (struct probe *)t;
	const struct gw_provider *prov = &p->gw->cfg->providers[p->provider];
	struct curl_slist *head = NULL;
	CURL *e = p->easy;

	if (gw_now_ms() < p->due_ms) {
		probe_arm(p);	/* the loop's coarse ticks ran ahead of the clock */
		return;
	}
	p->errbuf[0] = '\0';
	snprintf(p->h_id_text, p->h_id_len, "x-request-id: " REC_CHECK_ID_PREFIX "%s-%llu",
		 prov->name, ++p->seq);
	p->h_id = (struct curl_slist){ p->h_id_text, NULL };
	head = &p->h_id;
	curl_easy_setopt(e, CURLOPT_CURLU, NULL);	/* a leg's, from the shared pool */
	curl_easy_setopt(e, CURLOPT_URL, p->url);
	if (p->body) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, p->body);
		p->h_type = (struct curl_slist){ content_type, head };
		head = &p->h_type;
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	}
	if (prov->auth_header) {
		p->h_auth = (struct curl_slist){ prov->auth_header, head };
		head = &p->h_auth;
	}
	if (prov->dialect == GW_DIALECT_ANTHROPIC) {
		p->h_version = (struct curl_slist){ anthropic_version, head };
		head = &p->h_version;
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, head);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)fmax(1, ceil(p->cfg->timeout_ms)));
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)fmax(1, ceil(fmin(prov->connect_timeout_ms, p->cfg->timeout_ms))));
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, p->errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, p);
	if (curl_uv_add_noted(&p->gw->hcu, e, &p->note)) {
		log_warn("provider %s: cannot start a health check", prov->name);
		probe_again(p);
		return;
	}
	p->busy = true;
}

/* The first upstream model of the provider's targets, for a completion check. */
static const char *first_model(const struct gateway *gw, size_t provider)
{
	size_t i;

	for (i = 0; i < gw->router.ntargets; i++)
		if (gw->router.targets[i].provider == provider)
			return gw->router.targets[i].model;
	return NULL;
}

/*
 * The router's listener: a breaker of a checked provider changed, so the
 * provider may have become suspect (its next check pulled in, unless one
 * is in flight: its end schedules the next at the fast cadence) or
 * settled again.
 */
static void on_breaker_change(void *arg, struct gw_target *t, const struct breaker_change *chg,
			      const struct change_origin *origin)
{
	struct gateway *gw = arg;
	size_t i;

	(void)chg;
	(void)origin;
	for (i = 0; i < gw->nprobes; i++) {
		struct probe *p = gw->probes[i];
		double due;

		if (p->provider != t->provider)
			continue;
		due = health_suspect(&p->st, router_provider_suspect(&gw->router, p->provider),
				     p->due_ms, gw_now_ms());
		if (due != p->due_ms && !p->busy && gw->checks_here) {
			p->due_ms = due;
			probe_arm(p);
		}
	}
}

static struct probe *probe_new(struct gateway *gw, size_t provider)
{
	const struct gw_provider *prov = &gw->cfg->providers[provider];
	struct probe *p = calloc(1, sizeof(*p));
	struct buf b = { 0 };
	const char *model;

	if (!p)
		return NULL;
	p->gw = gw;
	p->provider = provider;
	p->cfg = &prov->health;
	health_init(&p->st);
	p->h_id_len = strlen("x-request-id: " REC_CHECK_ID_PREFIX) + strlen(prov->name) + 24;
	p->h_id_text = malloc(p->h_id_len);
	p->easy = gateway_easy_get(gw);
	if (p->cfg->request == HEALTH_COMPLETION) {
		model = first_model(gw, provider);
		/* The same body in either dialect: Anthropic's needs max_tokens too. */
		buf_puts(&b, "{\"model\":");
		json_escape(&b, model ? model : "");
		buf_puts(&b, ",\"messages\":[{\"role\":\"user\",\"content\":\"ping\"}],"
			     "\"max_tokens\":1}");
		p->body = buf_steal(&b);
		p->url = strdup(prov->chat_url);
	} else {
		buf_printf(&b, "%s/models", prov->base_url);
		p->url = buf_steal(&b);
	}
	if (!p->easy || !p->url || !p->h_id_text ||
	    (p->cfg->request == HEALTH_COMPLETION && !p->body)) {
		if (p->easy)
			curl_easy_cleanup(p->easy);
		free(p->h_id_text);
		free(p->url);
		free(p->body);
		free(p);
		return NULL;
	}
	uv_timer_init(gw->loop, &p->timer);
	return p;
}

int probe_start_all(struct gateway *gw)
{
	size_t i;

	for (i = 0; i < gw->cfg->nproviders; i++) {
		struct probe *p;

		if (!gw->cfg->providers[i].health.enabled)
			continue;
		p = probe_new(gw, i);
		if (!p)
			return -ENOMEM;
		gw->probes[gw->nprobes++] = p;
		p->due_ms = gw->checks_from_ms;	/* at once */
		if (gw->checks_phased)		/* --t0: t0 + a phase drawn from the seed */
			p->due_ms += rng_uniform(&gw->rng_health) * p->cfg->interval_ms;
		if (gw->checks_here)		/* else another worker checks (worker.h) */
			probe_arm(p);
	}
	if (gw->nprobes) {
		gw->probe_pace.on_change = on_breaker_change;
		gw->probe_pace.arg = gw;
		router_listen(&gw->router, &gw->probe_pace);
	}
	return 0;
}

bool probe_healthy(const struct probe *p)
{
	return p->st.healthy;
}

size_t probe_provider(const struct probe *p)
{
	return p->provider;
}

static void on_probe_closed(uv_handle_t *h)
{
	struct probe *p = (struct probe *)h;

	curl_easy_cleanup(p->easy);
	free(p->h_id_text);
	free(p->url);
	free(p->body);
	free(p);
}

void probe_close_all(struct gateway *gw)
{
	size_t i;

	for (i = 0; i < gw->nprobes; i++) {
		struct probe *p = gw->probes[i];

		uv_timer_stop(&p->timer);
		if (p->busy)
			curl_uv_remove(&gw->hcu, p->easy);
		p->busy = false;
		uv_close((uv_handle_t *)&p->timer, on_probe_closed);
	}
	gw->nprobes = 0;
}
