/*
 * call: the modelled exchange (call.h) — the request's trip to its server,
 * a refusal when nothing listens, and the rule that nothing reaches a
 * client that has left or a call that has ended.
 */
#include "sim/call.h"

#include <math.h>
#include <stddef.h>

#include "common/rng.h"

/* The millisecond tick's own draw of noise: a function of (seed, stream, tick) alone. */
static double tick_draw(const struct sim_clock *k, double tick)
{
	struct rng r;

	rng_seed_stream(&r, k->seed ^ ((uint64_t)(int64_t)tick * 0x9E3779B97F4A7C15ULL), k->stream);
	return rng_exp(&r, k->jitter_ms);
}

double call_timer_fire(const struct sim_clock *k, double due)
{
	double tick;
	double late = 0;
	int j;

	if (!isfinite(due) || fabs(due) > 1e15)
		return due;
	tick = floor(due) + 1;		/* the end of the millisecond it is due in */
	if (!(k->jitter_ms > 0))
		return tick + k->answer_ms;
	/*
	 * A late wake delays what is due after it too: libuv runs its timers
	 * in due order. So a tick is at least as late as the ticks before it
	 * less the time between (CALL_TIMER_CARRY of them: a draw 9 ms over
	 * its mean is 1 in 3 million), and a process's timers never fire out
	 * of order.
	 */
	for (j = 0; j <= CALL_TIMER_CARRY; j++)
		late = fmax(late, tick_draw(k, tick - j) - j);
	return tick + k->answer_ms + late;
}

static void on_refused(struct sim_timer *t)
{
	struct sim_call *c = (struct sim_call *)((char *)t - offsetof(struct sim_call, arrive));
	struct call_tail tail = call_tail_plain(CALL_REFUSED);

	c->over = true;
	c->client->end(c, &tail);
}

static void on_arrive(struct sim_timer *t)
{
	struct sim_call *c = (struct sim_call *)((char *)t - offsetof(struct sim_call, arrive));

	c->at_server = true;
	if (c->server->ops->request(c->server, c))
		return;
	/* Nothing listened: the refusal takes what is left of refused_ms. */
	c->at_server = false;
	c->arrive.fn = on_refused;
	if (evq_after(c->q, &c->arrive,
		      fmax(0, c->net->refused_ms - c->net->latency_ms - c->server->handle_ms)))
		on_refused(&c->arrive);
}

int call_send(struct sim_call *c, struct evq *q, const struct sim_net *net, struct sim_server *s)
{
	c->q = q;
	c->net = net;
	c->server = s;
	c->server_data = NULL;
	c->at_server = false;
	c->over = false;
	c->arrive.fn = on_arrive;
	c->arrive.slot = 0;
	return evq_after(q, &c->arrive, net->latency_ms + s->handle_ms);
}

void call_cancel(struct sim_call *c)
{
	if (c->over)
		return;
	c->over = true;
	evq_stop(c->q, &c->arrive);
	if (c->at_server) {
		c->at_server = false;
		c->server->ops->cancel(c->server, c);
	}
}

void call_head(struct sim_call *c, const struct call_head *h)
{
	if (!c->over)
		c->client->head(c, h);
}

void call_tokens(struct sim_call *c, int total)
{
	if (!c->over)
		c->client->tokens(c, total);
}

void call_end(struct sim_call *c, const struct call_tail *t)
{
	if (c->over)
		return;
	c->over = true;
	c->at_server = false;
	c->client->end(c, t);
}

struct call_head call_head_plain(int status)
{
	return (struct call_head){
		.status = status,
		.retry_after_ms = -1,
		.attempts = -1,
		.hedged = -1,
		.cost_usd = NAN,
	};
}

struct call_tail call_tail_plain(enum call_end how)
{
	return (struct call_tail){ .how = how, .tokens_in = -1, .tokens_out = -1, .cost_usd = NAN };
}
