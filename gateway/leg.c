/*
 * leg: one upstream transfer of a chat request — its easy handle set up
 * for the target a POLICY_START action names (the body with the target's
 * model in place, the headers, the timeouts), the answer's headers and
 * body read within the gateway's limits, its watchdog, its cancel, and
 * the facts its end leaves for the policy (leg_result). Decides nothing.
 */
#include "gateway/leg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "gateway/anthropic.h"
#include "gateway/bill.h"
#include "gateway/contract.h"
#include "gateway/greq.h"
#include "gateway/proxy.h"
#include "gateway/respond.h"
#include "gateway/stream.h"

static char accept_json[] = "Accept: application/json";
static char accept_sse[] = "Accept: text/event-stream";
static char anthropic_version[] = "anthropic-version: " ANTH_VERSION;

static void on_watchdog(uv_timer_t *t);

/* libcurl asks for 100-continue from 1 MiB; from half that, "Expect:" is sent to stop it. */
#define LEG_EXPECT_FROM (512 * 1024)

/*
 * CURLOPT_PREREQFUNCTION: libcurl is about to send the request on a
 * connection it opened or reused. It is called a second time when libcurl
 * would send the request again on its own (a reused connection broke
 * before any answer): that delivery would be hidden from the gateway's
 * attempts, breakers and max_attempts, so it is refused here, before a
 * byte of it goes out, and the attempt ends as a reset of the first one.
 * Every delivery is then an attempt the gateway chose (leg_end).
 */
static int on_prereq(void *userp, char *ip, char *local_ip, int port, int local_port)
{
	struct leg *l = userp;

	(void)ip;
	(void)local_ip;
	(void)port;
	(void)local_port;
	return ++l->sends > 1 ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}

/* CURLOPT_HEADERFUNCTION: the headers an answer or a retry needs. */
static size_t on_header(char *line, size_t size, size_t n, void *userp)
{
	struct leg *l = userp;
	size_t len = size * n;
	struct curl_uv_header h;

	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		l->ctype[0] = '\0';
		l->retry_after_ms = -1;
		l->sse = false;
	} else if (l->g->pol.stream && (line[0] == '\r' || line[0] == '\n')) {
		long status = 0;

		/* The end of a response's headers: is it the stream asked for? */
		curl_easy_getinfo(l->easy, CURLINFO_RESPONSE_CODE, &status);
		l->sse = status >= 200 && status <= 299 &&
			 strncasecmp(l->ctype, "text/event-stream", 17) == 0;
	} else if (!curl_uv_header_split(line, len, &h)) {
		return len;
	} else if (curl_uv_header_is(&h, "content-type")) {
		size_t clen = strnlen(h.value, sizeof(l->ctype) - 1);

		memcpy(l->ctype, h.value, clen);
		l->ctype[clen] = '\0';
	} else if (curl_uv_header_is(&h, "retry-after")) {
		l->retry_after_ms = backoff_parse_retry_after(h.value, clock_unix_ms());
	} else if (curl_uv_header_is(&h, "content-length") &&
		   strtod(h.value, NULL) > (double)l->g->gw->cfg->max_upstream_body_bytes) {
		l->too_big = true;	/* not worth reading: stop before the body */
		return 0;
	}
	return len;
}

/*
 * Counts what l holds of its upstream answer (the body, or the events not
 * yet written) in the gateway's buffered bytes. Returns false when that
 * takes them past upstream_body_budget_bytes.
 */
bool leg_hold(struct leg *l)
{
	struct gateway *gw = l->g->gw;
	size_t now = l->resp.len + l->relay.out.len;

	gw->body_bytes = gw->body_bytes - l->held + now;
	l->held = now;
	return gw->body_bytes <= gw->cfg->upstream_body_budget_bytes;
}

void leg_off(struct leg *l)
{
	policy_leg_off(&l->g->pol, l->slot);
	l->g->gw->body_bytes -= l->held;
	l->held = 0;
}

/*
 * CURLOPT_WRITEFUNCTION: the answer's body, up to max_upstream_body_bytes
 * and while the gateway's buffered answers stay within their budget; or
 * an event stream. Past either, the transfer stops at once.
 */
static size_t on_body(char *data, size_t size, size_t n, void *userp)
{
	struct leg *l = userp;
	const struct gw_config *cfg = l->g->gw->cfg;
	size_t len = size * n;

	if (l->doomed)
		return 0;	/* another leg won: nothing more of this one */
	if (l->sse)
		return stream_on_body(l, data, len);
	if (l->resp.len + len > cfg->max_upstream_body_bytes || buf_append(&l->resp, data, len)) {
		l->too_big = true;
		return 0;
	}
	if (!leg_hold(l)) {
		l->over_budget = true;
		return 0;
	}
	return len;
}

/*
 * The upstream body for l's target: the client's with its model in place,
 * or for an Anthropic target its translation (which proxy_chat checked
 * could be made).
 */
static int build_body(struct greq *g, struct leg *l)
{
	const struct gw_target *t = l->p->t;
	int rc = 0;

	if (l->up_model == t->model)
		return 0;
	buf_reset(&l->up_body);
	l->up_model = NULL;
	if (t->prov->dialect == GW_DIALECT_ANTHROPIC) {
		const struct anth_req_opts o = { t->model, t->prov->default_max_tokens, g->add_rf };
		struct anth_refusal why;

		if (g->anth_for && g->anth_for->model == t->model &&
		    g->anth_for->prov->default_max_tokens == t->prov->default_max_tokens)
			rc = buf_append(&l->up_body, g->anth_body.data, g->anth_body.len);
		else
			rc = anth_request(g->root, &o, &l->up_body, &why);
		if (rc)
			return rc == -ENOMEM ? -ENOMEM : -EINVAL;
		l->up_model = t->model;
		return 0;
	}
	rc |= buf_append(&l->up_body, g->body.data, g->body.model_at);
	rc |= json_escape(&l->up_body, t->model);
	if (g->add_rf) {
		/* Right after the model's value: valid JSON whatever follows it. */
		rc |= buf_puts(&l->up_body, ",\"response_format\":");
		rc |= buf_puts(&l->up_body, g->add_rf);
	}
	rc |= buf_append(&l->up_body, g->body.data + g->body.model_end,
			 g->body.len - g->body.model_end);
	if (rc)
		return -ENOMEM;
	l->up_model = t->model;
	return 0;
}

int leg_start(struct greq *g, const struct policy_action *a)
{
	struct gateway *gw = g->gw;
	struct gw_target *t = a->t;
	const struct gw_provider *p = t->prov;
	struct curl_slist *head;
	struct leg *l = &g->legs[a->slot];
	int rc = -ENOMEM;
	CURL *e;

	if (!l->timer_ready) {
		uv_timer_init(gw->loop, &l->timer);
		l->timer.data = l;
		l->timer_ready = true;
	}
	l->doomed = false;
	if (build_body(g, l))
		goto out_unstarted;
	if (!l->easy)
		l->easy = gateway_easy_get(gw);
	if (!l->easy)
		goto out_unstarted;
	e = l->easy;
	l->cut = false;
	l->sse = false;
	l->paused = false;
	l->settle = false;
	l->stalled = false;
	l->sends = 0;
	relay_reset(&l->relay);
	if (p->dialect == GW_DIALECT_ANTHROPIC)
		relay_anthropic(&l->relay, g->include_usage, (long long)(clock_unix_ms() / 1000));
	l->too_big = false;
	l->over_budget = false;
	l->status = 0;
	l->retry_after_ms = -1;
	l->ctype[0] = '\0';
	l->errbuf[0] = '\0';
	buf_reset(&l->resp);

	head = l->up_body.len >= LEG_EXPECT_FROM ? gw->big_headers : gw->base_headers;
	l->h_accept = (struct curl_slist){ g->pol.stream ? accept_sse : accept_json, head };
	head = &l->h_accept;
	if (p->auth_header) {
		l->h_auth = (struct curl_slist){ p->auth_header, head };
		head = &l->h_auth;
	}
	if (p->dialect == GW_DIALECT_ANTHROPIC) {
		l->h_version = (struct curl_slist){ anthropic_version, head };
		head = &l->h_version;
	}
	if (g->idem_line[0]) {
		l->h_idem = (struct curl_slist){ g->idem_line, head };
		head = &l->h_idem;
	}
	l->h_id = (struct curl_slist){ g->id_line, head };

	curl_easy_setopt(e, CURLOPT_CURLU, gw->chat_uh[t->provider]);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, l->up_body.data);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)l->up_body.len);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, &l->h_id);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)a->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, l);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, l);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, l->errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, l);
	curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(e, CURLOPT_PREREQDATA, l);
	/*
	 * A request that must be delivered at most once never goes on a reused
	 * connection: one the provider closed while idle breaks at the first
	 * send, which could not be told from a delivery it acted on.
	 */
	curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, g->pol.no_reroute ? 1L : 0L);
	if (curl_uv_add_noted(&gw->cu, e, &l->note)) {
		/* The gateway's own trouble: not the provider's, not retried. */
		rc = -EIO;
		goto out_unstarted;
	}
	policy_started(&g->pol, a->slot);
	log_debug("request %s: %s %u to %s/%s, %.0f ms", g->id, a->hedge ? "hedge" : "attempt",
		  g->pol.budget.attempts, p->name, t->model, a->timeout_ms);
	greq_set_state(g, GREQ_ATTEMPT);
	uv_timer_start(&l->timer, on_watchdog, (uint64_t)fmax(1, ceil(a->timeout_ms)), 0);
	return 0;

out_unstarted:
	/* Not an attempt: its probe goes back, and with no other leg the client hears why. */
	if (policy_start_failed(&g->pol, a->slot)) {
		if (rc == -EIO)
			respond_no_transfer(g);
		else
			respond_oom(g);
	}
	return rc;
}

static void on_watchdog(uv_timer_t *t)
{
	struct leg *l = t->data;

	curl_uv_remove(&l->g->gw->cu, l->easy);
	l->cut = true;
	proxy_leg_end(l, CURLE_OPERATION_TIMEDOUT);
}

/*
 * Counts a leg whose transfer is over without a result of its own:
 * cancelled. A loser (another leg won) is billed for what it had cost, and
 * one already past its breaker's slow or latency budget is counted slow;
 * the leg of a request that ended otherwise just gives its probe back.
 */
void leg_cancelled(struct leg *l, bool lost)
{
	struct greq *g = l->g;
	struct gateway *gw = g->gw;
	double now = gw_now_ms();

	provider_stats_attempt(&gw->pstats[l->p->t->provider], GW_OUT_CANCELLED,
			       now - l->p->start_ms);
	bill_discarded(g, l, true);	/* the upstream was working on it */
	policy_on_cancelled(&gw->pol, &g->pol, l->slot, lost, now);
	if (!lost)
		return;
	log_debug("request %s: %s/%s cancelled after %.1f ms, another attempt won", g->id,
		  l->p->t->prov->name, l->p->t->model, now - l->p->start_ms);
}

/* Takes back a leg still in flight (outside libcurl's callbacks), as leg_cancelled says. */
void leg_cancel(struct leg *l, bool lost)
{
	if (!l->p->active)
		return;
	uv_timer_stop(&l->timer);
	curl_uv_remove(&l->g->gw->cu, l->easy);
	leg_off(l);
	leg_cancelled(l, lost);
}

/* A leg that lost: taken back now that no libcurl callback is running. */
static void on_doomed(uv_timer_t *t)
{
	struct leg *l = t->data;

	leg_cancel(l, true);
}

void leg_doom(struct leg *l)
{
	l->doomed = true;
	uv_timer_start(&l->timer, on_doomed, 0, 0);
}

void leg_put(struct leg *l)
{
	if (l->easy) {
		gateway_easy_put(l->g->gw, l->easy);
		l->easy = NULL;
	}
}

/*
 * A 2xx body: a chat completion (an object with a non-empty choices array),
 * and its usage. Read where it lies (json_scan.h); parsed into a tree only
 * to be held to a contract.
 */
static bool check_completion(struct leg *l, int64_t *in, int64_t *out, bool *broken)
{
	struct json_span body = { l->resp.data ? l->resp.data : "", l->resp.len };
	struct json_member m[] = { { "choices", { NULL, 0 }, 0 }, { "usage", { NULL, 0 }, 0 } };
	cJSON *root;
	bool ok;

	*in = *out = 0;
	*broken = false;
	l->contract_why[0] = '\0';
	ok = json_check_members(body.p, body.len, NULL, m, 2) == 0 &&
	     json_type_of(m[0].v) == JSON_ARRAY && json_has_items(m[0].v);
	if (!ok)
		return false;
	relay_usage_tokens(m[1].v, in, out);
	if (!l->g->contract)
		return true;
	if (json_string_has_nul(body.p, body.len)) {
		/* cJSON would cut a content at its \u0000: what follows could not be checked. */
		*broken = true;
		snprintf(l->contract_why, sizeof(l->contract_why),
			 "the answer holds \\u0000, so its content cannot be checked whole");
		return true;
	}
	root = json_parse_whole(body.p, body.len);
	if (!root) {
		*broken = true;
		snprintf(l->contract_why, sizeof(l->contract_why),
			 "out of memory reading the answer");
		return true;
	}
	*broken = !contract_check(l->g->contract, root, l->contract_why,
				  sizeof(l->contract_why));
	cJSON_Delete(root);
	return true;
}

/*
 * An Anthropic target's whole answer in OpenAI's shape: a message as a chat
 * completion, an error body as OpenAI's error, so what passes to the client
 * reads the same whoever answered. One that is neither stays as it came (a
 * 2xx then fails the completion check: invalid_body). *completion says
 * whether a 2xx became a chat completion, its usage then in usage[0..1].
 * Returns 0 or -ENOMEM.
 */
static int translate_answer(struct leg *l, long status, bool *completion, int64_t *usage)
{
	struct buf out = { 0 };
	struct buf tmp;
	int rc;

	if (!l->resp.len)
		return 0;
	if (status >= 200 && status <= 299) {
		rc = anth_response(l->resp.data, l->resp.len, (long long)(clock_unix_ms() / 1000),
				   &out, usage);
		*completion = rc == 0;
	} else {
		rc = anth_error(l->resp.data, l->resp.len, &out);
	}
	if (rc == 0) {
		tmp = l->resp;
		l->resp = out;
		out = tmp;
		snprintf(l->ctype, sizeof(l->ctype), "application/json");
	}
	buf_free(&out);
	return rc == -ENOMEM ? -ENOMEM : 0;
}

/*
 * The errno of an attempt that failed for want of the gateway's own
 * resources — no socket (out of descriptors or memory), no buffer for the
 * connect — or 0 when the failure, if any, is the upstream's (a missing
 * local port, EADDRNOTAVAIL, may be the destination's: it fails over).
 */
static int local_errno(const struct leg *l, CURLcode code)
{
	long os = 0;

	if (code != CURLE_COULDNT_CONNECT)
		return 0;
	if (l->note.socket_errno)
		return l->note.socket_errno;
	curl_easy_getinfo(l->easy, CURLINFO_OS_ERRNO, &os);
	return os == ENOBUFS || os == ENOMEM ? (int)os : 0;
}

const char *leg_result(struct leg *l, CURLcode code, double now, struct policy_result *r,
		       int64_t *tin, int64_t *tout)
{
	struct greq *g = l->g;
	curl_off_t connect_us = 0;
	curl_off_t pre_us = 0;
	bool translated = false;
	int64_t usage[2] = { 0, 0 };
	int err;

	*tin = *tout = 0;
	*r = (struct policy_result){
		.ms = now - l->p->start_ms,
		.up = { .curl_code = code, .cut = l->cut },
		.sf = {
			.sse = l->sse,
			.error_event = l->relay.brk == RELAY_ERROR_EVENT,
			.invalid = l->relay.brk == RELAY_INVALID,
		},
		.too_big = l->too_big,
		.over_budget = l->over_budget,
		.retry_after_ms = l->retry_after_ms,
	};
	if (l->sends > 1 || (l->sends && code == CURLE_COULDNT_CONNECT)) {
		/*
		 * It went out once and its connection broke before any answer;
		 * libcurl's own replay was refused (on_prereq), or could not
		 * connect: a reset of the one delivery.
		 */
		log_debug("request %s: %s/%s: the connection broke after the request was sent; "
			  "not sent again by libcurl", g->id, l->p->t->prov->name, l->p->t->model);
		code = CURLE_RECV_ERROR;
		r->up.curl_code = code;
	}
	err = local_errno(l, code);
	if (err || (l->over_budget && !l->cut)) {
		r->local = true;
		return err ? strerror(err) : "upstream_body_budget_bytes reached";
	}
	curl_easy_getinfo(l->easy, CURLINFO_RESPONSE_CODE, &r->up.status);
	if (l->p->t->prov->dialect == GW_DIALECT_ANTHROPIC && !l->sse &&
	    r->up.curl_code == CURLE_OK && translate_answer(l, r->up.status, &translated, usage)) {
		r->local = true;
		return strerror(ENOMEM);
	}
	curl_easy_getinfo(l->easy, CURLINFO_CONNECT_TIME_T, &connect_us);
	curl_easy_getinfo(l->easy, CURLINFO_PRETRANSFER_TIME_T, &pre_us);
	r->up.connected = connect_us > 0 || pre_us > 0;
	if (!g->pol.stream && r->up.curl_code == CURLE_OK && r->up.status >= 200 &&
	    r->up.status <= 299) {
		if (l->p->t->prov->dialect == GW_DIALECT_ANTHROPIC && !translated) {
			r->up.body_valid = false;	/* not an Anthropic message: invalid_body */
		} else if (translated && !g->contract) {
			/* Made a chat completion by the translation: nothing to parse again. */
			r->up.body_valid = true;
			*tin = usage[0];
			*tout = usage[1];
		} else {
			r->up.body_valid = check_completion(l, tin, tout, &r->up.contract_broken);
		}
	}
	l->status = r->up.status;
	return NULL;
}
