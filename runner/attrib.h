/*
 * attrib: attribution without cooperation — which provider answered each
 * client request, how many upstream requests it made and when the primary
 * stopped getting traffic, from the providers' own logs (mock-NAME.csv)
 * and loadgen's requests.csv, for any setup, a gateway that sends none of
 * our x-faultline-* headers included. Pure: rows in, rows marked; the
 * rules are in docs/results-format.md (a run's summary.json).
 */
#ifndef FAULTLINE_RUNNER_ATTRIB_H
#define FAULTLINE_RUNNER_ATTRIB_H

#include <stddef.h>

#include "runner/rundata.h"

/*
 * The timing join's slack, ms: a row may arrive this much before its
 * request's start_ms and end this much after its end_ms (the times are
 * rounded to the microsecond by different processes).
 */
#define ATTRIB_SLACK_MS 1.0

/* The gap that ends the primary's traffic (stop_ms) when the caller gives none, ms. */
#define ATTRIB_STOP_GAP_MS 1000.0

/*
 * Joins d's mock rows to its requests where the request id could not,
 * and finds each ok answer's answering row (r->answer):
 *  1. a request's answering row among those joined by id: a chat row, not
 *     client_aborted, with a 2xx status (or, in a log without a status
 *     column, not faulted), at the provider its provider column names
 *     (any, when empty) — of several, the last to end (t_ms + dur_ms) no
 *     later than the request's end_ms (+ slack), else the last to end;
 *  2. the answers by timing: the ok requests (not degraded) still without
 *     one, by end_ms ascending, each take the answer-like row, not yet
 *     joined, inside their time — arrived (t_ms) no earlier than their
 *     start (− slack), ended no later than their end_ms (+ slack) — that
 *     arrived first (at the provider their provider column names, when
 *     it names one): a matching as large as any, so when every
 *     answer-like row is some ok request's answer, each gets one;
 *  3. the other rows by timing: each chat row still unjoined, by t_ms,
 *     goes to a request open when it arrived (start_ms − slack ≤ t_ms ≤
 *     end_ms + slack): of them, one none of whose rows so far it overlaps
 *     in time (its answering row, or the last row this step gave it: a
 *     gateway tries a request's targets one after the other, a hedge
 *     being the exception), then the one with the fewest rows, then the
 *     earliest start (each request that reached a provider sent it at
 *     least one; the oldest waits first).
 * Health checks, rows of a request loadgen did not record (unrecorded)
 * and rows no open request can take stay unjoined. A row joined by
 * timing gets req and join RUN_JOIN_TIMING; joins by timing of an earlier
 * call are undone first, so d may be joined again. A request's start is
 * its start_ms, else its sched_ms; one with no end_ms takes no row by
 * timing. Returns 0 or -ENOMEM.
 */
int attrib_join(struct rundata *d);

/*
 * When the primary (its log's index pf in d's mock files; < 0: none)
 * stopped getting traffic in [from, to) (to INFINITY: every row from
 * from on). Its chat rows (not health checks) there arrive at t_1 ≤ … ≤
 * t_n (t_ms); t_0 = from; b_i is when every row arrived by t_i had ended
 * (t_ms + dur_ms; rows that arrived before from count, from at least);
 * t_(n+1) is the first such row at or after to — or, when there is none,
 * the later of to and end_ms (the run's end; end_ms alone for an infinite
 * to). The first i ≥ 0 with t_(i+1) − max(t_i, b_i) ≥ gap_ms — a silence
 * of gap_ms with no request arriving and none in progress — gives
 * *stop_ms = t_i − from: the arrival of the last request before it (0:
 * none came, or none but those already in progress); NAN when there is
 * none (it never stopped). A request held in progress is traffic: closed-
 * loop clients all stuck on a hung primary arrive in bursts, one timeout
 * apart, and must not read as stops. *requests is n.
 */
void attrib_stop(const struct rundata *d, int pf, double from, double to, double end_ms,
		 double gap_ms, double *stop_ms, size_t *requests);

#endif
