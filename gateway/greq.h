/*
 * greq: one chat completion request in the gateway — its client exchange,
 * its timers, its legs (upstream transfers), and the state each part of
 * the shell owns: the decisions' (struct policy_state, policy.c), the
 * stream's (stream.c), the bill's (bill.c). greq.c owns its life: create,
 * every state change (greq_set_state, logged), finish, free. Private to
 * the gateway's proxy files.
 */
#ifndef FAULTLINE_GATEWAY_GREQ_H
#define FAULTLINE_GATEWAY_GREQ_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include <cjson/cJSON.h>

#include "common/buf.h"
#include "common/curl_uv.h"
#include "common/list.h"
#include "gateway/gateway.h"
#include "gateway/policy.h"
#include "gateway/relay.h"

/* x-request-id and idempotency-key values longer than this are not taken. */
#define GREQ_MAX_ID_LEN 128

enum greq_state {
	GREQ_ROUTING,		/* choosing a target */
	GREQ_ATTEMPT,		/* transfers are with curl */
	GREQ_BACKOFF,		/* waiting to retry the same target */
	GREQ_QUEUED,		/* a batch request waiting for a target */
	GREQ_DONE,		/* finished; the timers are closing */
};

/* One upstream attempt: its transfer, watchdog and what came back. */
struct leg {
	uv_timer_t timer;		/* the watchdog; after the commit, the stall timer */
	struct greq *g;
	struct policy_leg *p;		/* its slot in the policy: target, probe, start, active */
	unsigned slot;
	bool timer_ready;		/* timer initialised (a leg's first start) */
	bool doomed;			/* lost to another leg: taken back at once */
	CURL *easy;
	struct curl_uv_note note;	/* what curl_uv saw of its transfer */
	bool cut;			/* the watchdog ended it */
	bool too_big;			/* past max_upstream_body_bytes */
	bool over_budget;		/* past upstream_body_budget_bytes: the gateway's failure */
	size_t held;			/* its bytes counted in gw->body_bytes */
	bool sse;			/* the answer is a 2xx event stream */
	bool paused;			/* the transfer waits for a slow client */
	bool settle;			/* the relay saw [DONE] or a break: end the client */
	bool stalled;			/* the stall timer ended the transfer */
	unsigned sends;			/* times libcurl was about to send the request (on_prereq) */
	long status;
	double retry_after_ms;		/* from Retry-After; -1: none */
	char ctype[128];
	struct buf resp;
	struct buf up_body;		/* the upstream body for up_model */
	const char *up_model;
	char errbuf[CURL_ERROR_SIZE];
	/* Upstream headers: these nodes, then the gateway's base list. */
	struct curl_slist h_id;
	struct curl_slist h_idem;
	struct curl_slist h_auth;
	struct curl_slist h_accept;
	struct curl_slist h_version;	/* anthropic-version, for an Anthropic target */
	struct relay relay;
	char contract_why[192];		/* how its answer broke the contract */
};

/* The client's body, and where its model value is (replaced in place upstream). */
struct greq_body {
	const char *data;
	size_t len;
	size_t model_at;
	size_t model_end;
};

/* What the request cost (bill.c). */
struct greq_bill {
	char tenant[COST_LABEL_MAX + 1];	/* x-faultline-tenant; "" when not given */
	char feature[COST_LABEL_MAX + 1];	/* x-faultline-feature */
	int64_t est_tokens_in;		/* the messages' text / 4: cost without usage */
	double cost_usd;		/* every billed attempt */
	bool billed;
};

/* A streaming request's relay to its client (stream.c). */
struct greq_stream {
	struct leg *win;		/* the leg whose stream was committed */
	bool client_gone;		/* a write to the client failed */
	bool ended;			/* the client's stream has ended */
	struct list_node dirty;		/* on gw->dirty: relayed events wait for the flush */
	double commit_ms;
	double last_event_ms;		/* the last upstream event (or the resume) */
	double stuck_since_ms;		/* paused, and the client took nothing since */
	size_t stuck_queued;		/* what was queued for it then */
};

struct greq {
	uv_timer_t timer;		/* the retry wait */
	uv_timer_t htimer;		/* the next hedge (initialised when first armed) */
	bool htimer_ready;
	unsigned open_handles;		/* timers not yet closed */
	struct gateway *gw;
	struct http_exchange *ex;	/* NULL once answered or the client left */
	struct list_node link;		/* on gw->reqs */
	enum greq_state state;
	char id[GREQ_MAX_ID_LEN + 1];
	char only[GREQ_MAX_ID_LEN + 1];	/* x-faultline-provider; "" for any */
	char id_line[GREQ_MAX_ID_LEN + 32];
	char idem_line[GREQ_MAX_ID_LEN + 32];
	struct gw_route *route;
	struct greq_body body;
	struct policy_state pol;	/* where its decisions stand */
	struct greq_bill bill;
	struct greq_stream stream;
	const struct contract *contract;	/* what its answer must honour; NULL: nothing */
	struct contract *own_contract;	/* the request's own response_format's */
	const char *add_rf;		/* the alias's default response_format, added upstream */
	cJSON *root;			/* the client's body parsed, kept for an Anthropic
					 * target's translation (NULL: the route has none) */
	struct buf anth_body;		/* its translation for anth_for, made on arrival */
	char left_out[400];		/* why its Anthropic targets are left out, or "" */
	const struct gw_target *anth_for;
	bool include_usage;		/* stream_options.include_usage */
	unsigned violations;		/* attempts whose answer broke the contract */
	struct buf ckey;		/* its answer cache key (degraded mode cache); empty: none */
	/* One leg, or 1 + hedge.max for an alias that hedges. */
	unsigned nlegs;
	struct leg legs[];
};

/*
 * A request of route with nlegs legs for exchange ex, its timers set up,
 * on gw->reqs and counted in flight; NULL when out of memory. Its memory
 * is a finished request's when one of as many legs left it (a request
 * costs malloc its most expensive path: a block of kilobytes).
 */
struct greq *greq_new(struct gateway *gw, struct http_exchange *ex, struct gw_route *route,
		      unsigned nlegs);

/* Frees the memory finished requests left for the next (gateway_free's). */
void greq_pool_free(struct gateway *gw);

/* The one way a request's state changes: logged (at debug level). */
void greq_set_state(struct greq *g, enum greq_state to);

/*
 * Ends the request: counts its answer (status) under its alias, takes it
 * off the flush list and its queue, takes back every leg still in flight
 * (as a loser), takes it off gw->reqs and closes its timers; it is freed
 * once they have closed.
 */
void greq_finish(struct greq *g, int status);

/* Stops the hedge timer, if it was ever set up. */
void greq_htimer_stop(struct greq *g);

#endif
