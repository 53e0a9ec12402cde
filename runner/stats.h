/*
 * stats: a run's figures — per phase, per time window and over the whole
 * run — computed from its result files alone (DESIGN principle 4), so that
 * anyone can compute them again: loadgen's requests.csv, the providers'
 * mock-NAME.csv and the gateway's events.jsonl. Pure apart from reading
 * those files; no clock, no processes. stats_compute is runner/rundata.c
 * (the files, read once into rows; their formats are common/records.h's)
 * then runner/figures.c (rows in, this summary out); stats_combine
 * (runner/combine.c) folds repeats.
 *
 * Inputs (every time in ms after t0, as the programs write them)
 *
 *   RUN_DIR/requests.csv   required. Columns are found by header name (extra
 *                          columns are ignored); these must be present: id,
 *                          sched_ms, end_ms, latency_ms, status, outcome,
 *                          provider, tenant, feature, cost_usd. class
 *                          (interactive or batch; empty or no column:
 *                          interactive), tokens_in and tokens_out (empty or
 *                          no column: none) are read when present. The stream
 *                          columns stream_name (the mix stream; empty or no
 *                          column: none) and degraded ("static", "cache" or
 *                          empty; no column: none degraded) are read when
 *                          present, and so are start_ms (empty or no
 *                          column: sched_ms, for the timing join), attempts
 *                          and retries (whole numbers; empty or no column:
 *                          unknown, for the refused attempts). The stream
 *                          columns streaming (0 or 1), ttft_ms, error and
 *                          max_gap_ms are read when "streaming" is in the
 *                          header, and then all four must be; without it
 *                          no request counts as a stream.
 *   RUN_DIR/mock-NAME.csv  optional, any number; NAME is the provider.
 *                          Columns: t_ms, request_id, tokens_out, outcome;
 *                          kind (chat or models; empty or no column: chat),
 *                          status, dur_ms and fault (the faults applied,
 *                          '+'-joined: "bad_content" marks a broken
 *                          contract) when present. A row is a health check when its
 *                          kind is models or its request_id starts with
 *                          "health-check-" (REC_CHECK_ID_PREFIX): checks
 *                          are joined to no request, and count only in
 *                          "checks" and "check_rate_per_s".
 *   RUN_DIR/events.jsonl   optional: one JSON object a line with t_unix_ms
 *                          (number), provider, from, to (strings), model,
 *                          reason, replica, origin, peer, via (strings, may
 *                          be absent or null). Other keys are ignored;
 *                          blank lines are skipped. A line with an "event"
 *                          key (EVENT_KIND_KEY) is no breaker change:
 *                          "contract_violation" lines (provider; model,
 *                          request_id, why may be absent) are read for
 *                          "contract", other kinds skipped.
 *   RUN_DIR/events-rK.jsonl  a replicated gateway setup's, K = 1, 2, … while
 *                          they are there: replica K's events, as
 *                          events.jsonl's; all are merged by time, each
 *                          event tagged with its K.
 *
 * Files are read strictly: CSV as RFC 4180 (quoted fields, "" escapes,
 * CRLF or LF; a quote inside an unquoted field, text after a closing
 * quote, an unterminated quote, a NUL byte, an empty line or a row with
 * another number of fields than the header is an error). An empty field
 * means "none", except where a value is required: requests' sched_ms and
 * outcome, mock rows' t_ms and outcome. Numbers are plain decimals
 * (finite; no hex, inf or nan); status is whole 0–999; tokens_out whole
 * ≥ 0; outcome one of loadgen's eight (ok, http_error, timeout, refused,
 * reset, truncated, stalled, invalid) or mockprov's three (completed,
 * client_aborted, faulted). Non-empty request ids must be unique. A
 * leftover requests.csv.tmp or mock-NAME.csv.tmp (a writer that did not
 * finish) is an error too, so that no record is silently left out.
 *
 * Membership: a request belongs to the phase or window containing its
 * sched_ms, a mock row to the one containing its t_ms, an event to the one
 * containing t_unix_ms − t0_unix_ms; a range [from_ms, to_ms) includes from
 * and excludes to. "totals" takes every record of the files whatever its
 * time (a provider may log a failover attempt after the last window).
 *
 * Summary JSON (stats_compute). Numbers are JSON numbers; ms and USD as
 * read (no rounding); null means "no value": nothing to take it over, or
 * no such event.
 *
 *   {
 *     "primary": "primary",          the caller's primary provider
 *     "t0_unix_ms": 1764620000000,
 *     "duration_ms": 60000,
 *     "window_ms": 5000,
 *     "files": {"requests": "requests.csv",
 *               "mock": ["mock-primary.csv", …],   names read, sorted
 *               "events": "events.jsonl" | null,   null: no such file
 *               "replica_events": ["events-r1.jsonl", …]},  when there are
 *     "phases": {NAME: FIGURES, …},  one per caller's phase, in its order
 *     "windows": [FIGURES, …],       [k·w, min((k+1)·w, duration)) for
 *                                    k = 0, 1, … while k·w < duration
 *     "totals": FIGURES,             every record; from_ms 0, to_ms duration
 *     "breaker_transitions": [       every event, by t_ms (stable)
 *       {"t_ms": 15230.5, "provider": "primary", "model": "mock-small"|null,
 *        "from": "closed", "to": "open", "reason": "…"|null}, …] — a
 *        replica's also "replica": "rK", "origin": "local"|"remote" (absent
 *        in its line: local) and, when its line has them, "peer", "via"
 *   }
 *
 *   FIGURES = {                (keys in this order)
 *     "from_ms", "to_ms":   the range (phase bounds, window bounds)
 *     "requests":           requests in the range
 *     "ok":                 of them with outcome ok
 *     "answered_share":     ok / requests              (null: 0 requests)
 *     "error_rate":         (requests − ok) / requests (null: 0 requests)
 *     "outcomes":           {"ok": n, "http_error": n, "timeout": n,
 *                            "refused": n, "reset": n, "truncated": n,
 *                            "stalled": n, "invalid": n}  — all eight keys
 *     "status":             {"200": n, "503": n, …, "none": n} — only the
 *                           statuses seen, ascending, "none" (empty status)
 *                           last; an absent key means 0
 *     "latency_ms":         LATENCY over ok requests' latency_ms
 *     "latency_all_ms":     LATENCY over every request's latency_ms
 *     "error_latency_ms":   LATENCY over the requests not ok
 *     "instant_errors":     requests not ok whose latency_ms is under
 *                           REQ_INSTANT_ERROR_MS (1 ms): errors that came
 *                           back at once (refused, an instant 5xx) — what
 *                           makes a closed loop spin (loadgen's summary
 *                           counts the same)
 *     "throughput_per_s":   ok / ((to_ms − from_ms) / 1000)
 *     "fallback_share":     ok requests answered by a provider other than
 *                           the primary / ok (null: 0 ok). Who answered: the
 *                           provider column, else the provider of the
 *                           request's answering mock row (runner/attrib.h:
 *                           joined by id, else by timing), else (neither)
 *                           the primary; a degraded answer (degraded column
 *                           static or cache) is no provider's: neither the
 *                           primary's nor a fallback's
 *     "fallback_answers":   the count behind fallback_share: ok requests (not
 *                           degraded) answered by a provider other than the
 *                           primary, the same rule — so the runs' mean of it
 *                           is exact where fallback_share × ok is not
 *     "fallback_source":    "provider_header", "mock_log" or
 *                           "provider_header+mock_log": where the ok answers'
 *                           providers came from; null: none known
 *     "attribution":        {"provider_header": n, "mock_log": n, "none": n}:
 *                           the ok answers (not degraded) by that source
 *     "time_to_primary_ms": end_ms − from_ms of the first ok request
 *                           answered by the primary (same rule as above),
 *                           first by sched_ms (ties: the earlier row of
 *                           requests.csv); one with an empty end_ms is
 *                           passed over (null: none); never a degraded one
 *     "degraded":           {"static": n, "cache": n}: ok requests whose
 *                           degraded column says so
 *     "degraded_answers":   static + cache
 *     "cost_usd":           {"total": Σ cost_usd (null: no request in the
 *                            range had one) — a row with an empty cost_usd
 *                            is priced from its tokens (empty: 0), (tokens_in
 *                            × input + tokens_out × output) / 1000, when the
 *                            caller has a price for the provider it went to
 *                            (its provider column, else its answering mock
 *                            row's provider, else the caller's provider),
 *                            "by_tenant": {TENANT: Σ, …},
 *                            "by_feature": {FEATURE: Σ, …},
 *                            "by_provider": {PROVIDER: Σ, …} — its provider
 *                            column, else its answering mock row's, else
 *                            the caller's provider, else ""
 *                            (a degraded answer: none)}
 *                           — the maps hold the tenants (features) of the
 *                           requests that had a cost, first seen first in
 *                           sched_ms order; an empty one is ""; an absent
 *                           key means 0
 *     "cost_per_answered":  cost_usd.total / ok (null: no cost, or 0 ok)
 *     "fallback_spend_usd": Σ cost_usd of the ok requests (not degraded)
 *                           answered by another than the primary (as for
 *                           fallback_share; null: no request had a cost)
 *     "upstream_requests":  upstream_logged + upstream_refused
 *     "upstream_logged":    mock rows (any provider, any time; checks never)
 *                           joined to a request of the range: by request_id,
 *                           else by timing (runner/attrib.h)
 *     "upstream_refused":   Σ over the range's requests of the attempts made
 *                           less upstream_logged's rows, when more: attempts
 *                           made are 1 + retries (in->attempts LOADGEN), the
 *                           attempts column (COLUMN; empty: none counted), or
 *                           unknown (NONE: 0) — refused connections leave no
 *                           row
 *     "upstream_source":    "mock_log+loadgen_refused" (LOADGEN),
 *                           "mock_log+gateway_attempts" (COLUMN, some request
 *                           of the range having an attempts value), else
 *                           "mock_log"
 *     "extra_requests":     upstream_requests / requests − 1 (null: 0
 *                           requests): the share of extra attempts sent
 *     "attempts_per_request": upstream_requests / requests (null: 0
 *                           requests)
 *     "duplicate_share":    of those upstream_logged rows, the share whose
 *                           work was discarded (the rule of duplicate_work
 *                           below, but over the range's requests' rows
 *                           rather than the rows timed in the range) /
 *                           upstream_logged (null: none)
 *     "opens":              events in the range whose "to" is "open"
 *     "time_to_open_ms":    first such event's t_ms − from_ms (null: none)
 *     "time_to_close_ms":   the first event in the range whose "to" is
 *                           "closed": its t_ms − from_ms (null: none)
 *     "transitions":        events in the range (every kind of change)
 *     "exposed":            {"requests": the distinct requests (of the
 *                            class, under "classes") joined (by id, else by
 *                            timing) to a chat row
 *                            of the primary's log — not a check — whose
 *                            t_ms is in [from_ms, from_ms +
 *                            time_to_open_ms), the whole range when
 *                            time_to_open_ms is null,
 *                            "failed": of them, those not ok}
 *     "duplicate_work":     {"attempts": rows, "tokens": Σ tokens_out}
 *                           over mock rows in the range (any provider)
 *                           whose outcome is client_aborted, or whose
 *                           request (joined by request_id = requests.csv id,
 *                           else by timing) is not an ok request answered
 *                           by that provider (who answered as for
 *                           fallback_share) — a row joined to no request
 *                           counts too;
 *                           an empty tokens_out adds 0 (health checks
 *                           never count)
 *     "upstream_by_provider": {NAME: {"attempts": chat rows (not checks)
 *                           timed in the range — of the class's or stream's
 *                           requests under "classes" and "mix_streams" —,
 *                           "faulted": of them with outcome faulted}} for
 *                           every provider with a log
 *     "join":               not under "classes" or "mix_streams": the chat rows
 *                           (not checks) timed in the range, {"by_id",
 *                           "by_timing", "unrecorded" (an id of loadgen's
 *                           form that requests.csv lacks), "unjoined"}
 *     "primary_requests":   phases and totals only (not under "classes" or
 *                           "mix_streams"): the primary's chat rows (not
 *                           checks) timed in the range
 *     "stop_ms":            the same ranges: attrib_stop's (runner/attrib.h)
 *                           with a gap of in->stop_gap_ms — the last arrival
 *                           at the primary before a silence with none
 *                           arriving or in progress, from the range's start;
 *                           null: it never stopped
 *     "checks":             {"requests": check rows (any provider, any
 *                            class) in the range, "per_s": requests /
 *                            ((to_ms − from_ms) / 1000), "by_provider":
 *                            {NAME: n} for every provider with a log}
 *     "check_rate_per_s":   the primary's check rows / the range's seconds
 *                           (0 when it has no log)
 *     "contract":           runner/contract.h's block: {"violations",
 *                           "reached_clients", "caught",
 *                           "gateway_violations", "by_provider"} — broken
 *                           answers sent, reaching the client, caught
 *     — then the streams' figures, over the range's rows with streaming 1:
 *     "streams":            streaming requests
 *     "ttft_ms":            LATENCY over ok streaming requests' ttft_ms
 *                           (empty ttft_ms fields are not taken)
 *     "stalls":             streaming requests with outcome stalled
 *     "truncations":        streaming requests with outcome truncated
 *     "error_events":       streaming requests whose error starts with
 *                           "error event" (the server ended the stream
 *                           with an SSE error event, whatever the outcome)
 *     "silent_breaks":      streaming requests stalled or truncated whose
 *                           error does not start with "error event": the
 *                           client got silence or a cut and no word from
 *                           the server
 *     "max_gap_ms":         the largest max_gap_ms of the streaming
 *                           requests (null: none had one)
 *     "answered_windows":   phases only: {KEY: {"windows": n, "worst_share",
 *                            "worst_from_ms"}, …} for each of the caller's
 *                           window lengths w (KEY: stats_window_key) — over
 *                           the windows [k·w, (k+1)·w) wholly inside the
 *                           phase (1e-6 ms of slack at its edges) that hold
 *                           a request: how many, the lowest ok / requests,
 *                           and where the first window with it starts
 *                           (both null when none)
 *     "classes":            {"interactive": FIGURES, "batch": FIGURES} —
 *                           the range's figures over that class's requests
 *                           alone (and their mock rows; events are not of a
 *                           class, so a class's opens are the range's), for
 *                           each class some request of the run has; no
 *                           "classes" inside them
 *     "mix_streams":        phases and totals only: {NAME: FIGURES} over
 *                           each mix stream's requests (stream_name), for
 *                           every name the run's requests have when they
 *                           have two or more (else no key), first seen
 *                           first; no "classes" or "mix_streams" inside
 *     — then, with in->replicas > 0 (a replicated gateway setup: R
 *     replicas; not under "classes"), runner/replicas.h's figures:
 *     "timeout_paid":       requests of the range that paid the primary's
 *                           timeout (in->primary_timeout_ms): a chat row of
 *                           the primary's log for it, not a check, with
 *                           status 0 and dur_ms ≥ 95% of the timeout
 *     "replica_open_spread_ms": the last replica's first event to "open" in
 *                           the range − the first replica's (null: a
 *                           replica has none)
 *     "probe_overlaps":     pairs of replicas half-open by a local change
 *                           at once (intervals starting in the range)
 *     "replicas":           {"rK": {"requests", "timeout_paid",
 *                           "transitions", "opens", "time_to_open_ms"}} —
 *                           replica K's requests are those whose id ends in
 *                           N with (N − 1) mod R + 1 = K (loadgen's round
 *                           robin)
 *   }
 *   For "totals", time_to_open_ms, time_to_close_ms, time_to_primary_ms and
 *   stop_ms are measured from 0 (t0), throughput_per_s, checks.per_s and
 *   check_rate_per_s over duration_ms.
 *
 *   LATENCY = {"count": values taken (empty latency_ms fields are not),
 *              "mean": their arithmetic mean,
 *              "p50", "p95", "p99": exact nearest-rank percentiles — the
 *                 values sorted ascending, the p-th is the value at rank
 *                 ceil(p/100 × count) (from 1),
 *              "max"}                      every one but count null at 0
 *
 * Combined JSON (stats_combine over n runs of the same scenario and setup):
 *
 *   {"runs": n, "primary", "duration_ms", "window_ms": from the first run,
 *    "phases": {NAME: CFIGURES}, "windows": [CFIGURES, …], "totals": CFIGURES,
 *    "breaker_transitions": [[run 1's events], [run 2's], …]}
 *
 *   CFIGURES has the keys of FIGURES (their union over the runs, first seen
 *   first) with every number replaced by
 *     {"mean", "stddev" (sample, n − 1 denominator; 0 when n = 1 or all
 *      are equal), "min", "max", "n": the runs it was a number in}
 *   and null when no run had a number. A key absent from a run counts as 0
 *   there (only the maps above — status, cost by tenant or feature — leave
 *   keys out, and absent means 0 in them); a null is left out of that
 *   figure. "from_ms" and "to_ms" are copied from the first run as they
 *   are (plain numbers). Windows are combined by index, as many as the
 *   run with the fewest has; phases by name.
 */
#ifndef FAULTLINE_STATS_H
#define FAULTLINE_STATS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* A named time range [from_ms, to_ms), ms after t0; the caller fills it. */
struct stats_phase {
	const char *name;
	double from_ms;
	double to_ms;
};

/* A provider's price in USD per 1,000 tokens, for requests without a cost_usd. */
struct stats_price {
	const char *provider;
	double input;
	double output;
};

/*
 * How a setup's attempts are known, for the refused ones (upstream_refused):
 * a refused connection sends nothing, so no provider logs it.
 */
enum stats_attempts {
	STATS_ATTEMPTS_NONE,	/* not known: the upstream figures are the logs' rows */
	STATS_ATTEMPTS_LOADGEN,	/* a direct or client-retry setup: 1 + retries a request */
	STATS_ATTEMPTS_COLUMN,	/* a gateway: the attempts column (x-faultline-attempts) */
};

struct stats_input {
	const char *run_dir;		/* requests.csv, mock-*.csv, events.jsonl */
	const struct stats_phase *phases;	/* names unique, from < to */
	size_t nphases;
	double duration_ms;		/* > 0: windows cover [0, duration) */
	double window_ms;		/* ≤ 0: 5000 (the runner passes 5000 × its
					 * time scale); at most 10^6 windows */
	const char *primary;		/* required: the primary provider's name */
	int64_t t0_unix_ms;		/* turns events' t_unix_ms into ms after t0 */
	const struct stats_price *prices;	/* may be NULL (nprices 0) */
	size_t nprices;
	const char *provider;		/* where a row with an empty provider went, for
					 * its price (a direct setup's); NULL: unknown */
	const double *windows;		/* window lengths (ms > 0) of "answered_windows" */
	size_t nwindows;
	unsigned replicas;		/* > 0: a replicated gateway setup's replicas, whose
					 * figures (runner/replicas.h) are added */
	double primary_timeout_ms;	/* the primary's per-attempt timeout, for
					 * timeout_paid; NAN: unknown */
	enum stats_attempts attempts;	/* how the requests' attempts are known */
	double stop_gap_ms;		/* the silence at the primary that is a stop
					 * (stop_ms); ≤ 0: 1000 (the runner passes
					 * 1000 × its time scale) */
};

/*
 * Reads the run directory's result files and builds the summary described
 * above into *out, which the caller frees with cJSON_Delete. Returns 0;
 * -EINVAL for bad input (a bad stats_input, or a malformed or unfinished
 * file: err, CFG_ERR_LEN bytes, says "PATH:LINE: what" — LINE being the
 * line where the bad record starts — or "PATH: what"); -ENOENT when the
 * run directory or requests.csv is missing (err names it); -ENOMEM or
 * another negative errno when reading fails. *out is NULL on failure.
 */
int stats_compute(const struct stats_input *in, cJSON **out, char *err);

struct rundata;

/*
 * stats_compute, keeping the records it loaded: on success they move into
 * *rows (runner/rundata.h; the caller frees them with rundata_free), so a
 * caller that needs them again — chaos run, for its plots — does not read
 * the files twice. rows NULL: stats_compute. On failure *rows is empty.
 */
int stats_compute_keep(const struct stats_input *in, cJSON **out, struct rundata *rows,
		       char *err);

/*
 * Combines n ≥ 1 summaries of stats_compute into the combined JSON above.
 * The runs are not changed. Returns a new tree for the caller to
 * cJSON_Delete, or NULL when n is 0, a run is not an object, or memory
 * runs out.
 */
cJSON *stats_combine(cJSON *const *runs, size_t n);

/*
 * The key of a window length (ms) in "answered_windows": "%.15g" of it,
 * so 1000 is "1000" and 2500.5 is "2500.5". out holds len bytes (32 do).
 */
void stats_window_key(double window_ms, char *out, size_t len);

/*
 * A combined figure's mean: fig[key].mean, or fig[key][sub].mean when sub
 * is not NULL ("latency_ms", "p50"); NAN when null or absent.
 */
double stats_mean(const cJSON *fig, const char *key, const char *sub);

#endif
