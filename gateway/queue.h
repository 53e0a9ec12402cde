/*
 * queue: the batch queues' timer — the shell around the policy's queue
 * decisions (policy_drain_next, policy_queue_next_wake): it drains the
 * queues when something may have changed and carries out what comes of
 * each request. Its public half (proxy_queue_listen, _wake, _stop) is in
 * gateway.h.
 */
#ifndef FAULTLINE_GATEWAY_QUEUE_H
#define FAULTLINE_GATEWAY_QUEUE_H

struct gateway;

/*
 * Arms the queue timer for the next thing that can change a queue: the
 * oldest request's expiry, or a cooldown running out (a breaker change
 * drains at once, through proxy_queue_wake); stops it with none queued.
 */
void queue_kick(struct gateway *gw);

#endif
