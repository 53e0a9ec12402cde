/*
 * call: one modelled HTTP exchange between a client and a server of the
 * simulation — loadgen's request to a mock provider or to the gateway,
 * the gateway's attempt or health check to a mock. The network is a
 * constant: a request reaches its server latency_ms after it is sent (the
 * loopback round trip, folded into one hop), a connection refused is known
 * refused_ms after the send; answers and cancellations are at once.
 *
 * The client owns the struct (embedded in its request or leg), fills the
 * request half and the client callbacks, and calls call_send. The server
 * takes it in its request callback and answers through call_head,
 * call_tokens and call_end; after call_end it forgets the call. A client
 * that gives up calls call_cancel: the server is told (its cancel
 * callback) and must forget the call, and no callback of the client's
 * runs after that.
 */
#ifndef FAULTLINE_SIM_CALL_H
#define FAULTLINE_SIM_CALL_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/evq.h"

struct sim_call;

/* How an exchange ended, as the client's transport saw it. */
enum call_end {
	CALL_DONE,		/* the answer came whole: a body, or a stream that ended cleanly */
	CALL_REFUSED,		/* no connection: nothing listened */
	CALL_RESET,		/* the connection broke (a kill, a down edge, a reset fault) */
	CALL_CUT,		/* a body shorter than its length, or a stream closed without [DONE] */
};

/* What the server's answer said in its head (the status line and headers). */
struct call_head {
	int status;
	bool sse;			/* text/event-stream */
	double retry_after_ms;		/* Retry-After; -1: none */
	/* The gateway's x-faultline-* headers: provider NULL, attempts -1 when absent. */
	const char *provider;
	int64_t attempts;
	int hedged;			/* 0/1; -1: absent */
	double cost_usd;		/* NAN: absent */
};

/* What the rest of the answer said (call_end's). */
struct call_tail {
	enum call_end how;
	bool body_valid;		/* a whole answer: a chat completion (or model list) */
	bool bad_frame;			/* a stream's payload that was not JSON */
	bool saw_done;			/* a stream's data: [DONE] */
	bool error_event;		/* a stream's error event */
	bool stall_event;		/* ... whose error.code was stream_stalled */
	const char *message;		/* an error body's or event's message, or NULL */
	int64_t tokens_in;		/* usage; -1: none */
	int64_t tokens_out;
	double cost_usd;		/* a stream's x-faultline-cost-usd trailer; NAN: none */
};

/* The client's side: told of the answer as it comes. */
struct call_client_ops {
	void (*head)(struct sim_call *c, const struct call_head *h);
	void (*tokens)(struct sim_call *c, int total);	/* a stream's content tokens so far */
	void (*end)(struct sim_call *c, const struct call_tail *t);
};

/* The server's side: given the request when it arrives, and told when the client leaves. */
struct sim_server;
struct call_server_ops {
	/* The request arrived: false when nothing listens (the call is refused). */
	bool (*request)(struct sim_server *s, struct sim_call *c);
	void (*cancel)(struct sim_server *s, struct sim_call *c);
};

struct sim_server {
	const struct call_server_ops *ops;
	double handle_ms;		/* its own work before it has a request in hand (the gateway's) */
};

/* The network's constants (the scenario's "sim" block). */
struct sim_net {
	double latency_ms;		/* send → the server has the request */
	double refused_ms;		/* send → the client knows it was refused */
};

/* A modelled process's timers: how late they fire, and the key of its noise. */
struct sim_clock {
	double answer_ms;		/* past the tick they are due in... */
	double jitter_ms;		/* ...and an exponential draw of this mean more */
	uint64_t seed;			/* the draws: a function of (seed, stream, tick) */
	uint64_t stream;
};

/*
 * When a timer of a modelled process, due at `due`, fires. libuv counts
 * whole milliseconds: every timer due within one millisecond fires when
 * that millisecond is over (floor(due) + 1), together, answer_ms and the
 * machine's noise later — one exponential draw of mean jitter_ms per
 * process and millisecond, a function of the millisecond alone, carried
 * forward to the ticks after it less the time between (so timers never
 * fire out of order, and timers that share a millisecond fire at one
 * instant whatever order they were armed in: a closed loop's clients,
 * answered in one tick, stay together, as on a real machine). A due time
 * that is not finite (or past 1e15 ms) is returned as it is.
 */
double call_timer_fire(const struct sim_clock *k, double due);

/* How many earlier ticks' lateness call_timer_fire carries forward. */
#define CALL_TIMER_CARRY 8

struct sim_call {
	/* The request (the client's). */
	const char *id;			/* x-request-id; NULL: none */
	bool models;			/* GET /models (a health check) instead of a chat completion */
	const char *model;		/* the body's model */
	const char *klass;		/* x-faultline-class; NULL: none */
	bool stream;
	size_t prompt_chars;		/* the messages' text (loadgen's prompt) */
	int64_t max_tokens;		/* -1: none */
	const struct call_client_ops *client;
	void *owner;			/* the client's */
	/* The exchange (call.c's). */
	struct evq *q;
	const struct sim_net *net;
	struct sim_server *server;
	void *server_data;		/* the server's, while it has the call */
	struct sim_timer arrive;
	bool at_server;			/* the server has it (until call_end or a cancel) */
	bool over;			/* ended or cancelled: no more callbacks */
};

/* Sends c to server s: it arrives after the network's latency. Returns 0 or -ENOMEM. */
int call_send(struct sim_call *c, struct evq *q, const struct sim_net *net, struct sim_server *s);

/* The client gives up on c: the server forgets it; no callback runs after this. */
void call_cancel(struct sim_call *c);

/* The server answers c's head. */
void call_head(struct sim_call *c, const struct call_head *h);

/* The server's stream has sent `total` content tokens so far. */
void call_tokens(struct sim_call *c, int total);

/* The server ends c (it forgets c before or after this, never uses it again). */
void call_end(struct sim_call *c, const struct call_tail *t);

/* A call_head with nothing set but the status (no gateway headers). */
struct call_head call_head_plain(int status);

/* A call_tail that ended how, with nothing else known. */
struct call_tail call_tail_plain(enum call_end how);

#endif
