/*
 * runner replicas: a replicated gateway setup's figures from hand-made
 * result files, worked out by hand — which replica each request went to
 * (loadgen's round robin by request number), the requests that waited
 * out the primary's timeout per replica and in all, each replica's
 * transitions and first opening, the spread of the openings, and the
 * recovery probes that overlapped (local half-open intervals only).
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/cfg.h"
#include "runner/gate.h"
#include "runner/replicas.h"
#include "runner/stats.h"
#include "tests/support/tmpdir.h"
#include "tests/support/jassert.h"

#define T0 1764620000000LL

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "replicas"), 0);
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(replicas, .timeout = 10);
TestSuite(replicas_files, .init = setup, .fini = teardown, .timeout = 10);

static void write_file(const char *name, const char *text)
{
	cr_assert_eq(tmpdir_write(dir, name, text, strlen(text)), 0, "cannot write %s/%s", dir,
		     name);
}

Test(replicas, request_replica_by_round_robin)
{
	static const struct {
		const char *id;
		unsigned n;
		unsigned want;
	} cases[] = {
		{ "shared-1-1", 3, 1 }, { "shared-1-2", 3, 2 }, { "shared-1-3", 3, 3 },
		{ "shared-1-4", 3, 1 }, { "shared-1-3000", 3, 3 }, { "x-2-17", 2, 1 },
		{ "7", 1, 1 }, { "shared-1-", 3, 0 }, { "abc", 3, 0 }, { "r-0", 3, 0 },
		{ "shared-1-5", 0, 0 }, { NULL, 3, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(replicas_of_request(cases[i].id, cases[i].n), cases[i].want,
			     "%s of %u: %u, expected %u", cases[i].id ? cases[i].id : "(null)",
			     cases[i].n, replicas_of_request(cases[i].id, cases[i].n),
			     cases[i].want);
}

Test(replicas, a_row_pays_the_timeout_when_it_waited_it_out_unanswered)
{
	struct run_mrow m = { .kind = MOCK_KIND_CHAT, .status = 0, .dur_ms = 1000.4 };

	cr_assert(replicas_row_paid_timeout(&m, 1000));
	m.dur_ms = 950;
	cr_assert(replicas_row_paid_timeout(&m, 1000), "95%% of the timeout counts");
	m.dur_ms = 940;
	cr_assert_not(replicas_row_paid_timeout(&m, 1000), "cut short: not the timeout");
	m.dur_ms = 1000;
	m.status = 200;
	cr_assert_not(replicas_row_paid_timeout(&m, 1000), "answered, if slowly");
	m.status = -1;
	cr_assert_not(replicas_row_paid_timeout(&m, 1000), "no status column: unknown");
	m.status = 0;
	m.check = true;
	cr_assert_not(replicas_row_paid_timeout(&m, 1000), "a health check");
	m.check = false;
	cr_assert_not(replicas_row_paid_timeout(&m, NAN), "no timeout known");
}

#define REQ_HEADER "id,stream_name,class,tenant,feature,streaming,sched_ms,start_ms,ttft_ms," \
	"end_ms,latency_ms,service_ms,status,outcome,error,provider,attempts,hedged,retries," \
	"tokens_in,tokens_out,max_gap_ms,cost_usd,degraded\n"
#define REQ(id, sched) id ",default,interactive,,,0," sched "," sched ",," sched ",1,1,200,ok,," \
	"secondary,2,0,0,16,16,,,\n"
#define MOCK_HEADER "t_ms,request_id,streaming,fault,status,ttft_ms,dur_ms,tokens_out,outcome," \
	"kind\n"
#define EV(t, from, to, extra) "{\"t_unix_ms\":" t ",\"provider\":\"primary\",\"model\":\"m\"," \
	"\"from\":\"" from "\",\"to\":\"" to "\",\"reason\":\"r\"" extra "}\n"

/*
 * Three replicas, six requests (p-1 … p-6: replicas 1, 2, 3, 1, 2, 3), the
 * outage phase [1000, 5000): p-1 and p-2 waited out the 1000 ms timeout at
 * the primary (status 0, 1000.5 and 960 ms); p-4 was answered there; p-5
 * was cut at 300 ms; p-6's row is at the secondary; a health check's row
 * pays nothing. Opens at 1100 (r1), 1130 (r2, remote), 1180 (r3): spread
 * 80 ms. Local half-open intervals: r1 [2000, 3000), r2 [2500, 2600) —
 * one overlap — and r3 [3500, 3600); r3's remote half_open at 2700 is not
 * its own probe.
 */
static void write_run(void)
{
	write_file("requests.csv", REQ_HEADER REQ("p-1", "500") REQ("p-2", "1200")
		   REQ("p-3", "1300") REQ("p-4", "1400") REQ("p-5", "1500") REQ("p-6", "6000"));
	write_file("mock-primary.csv", MOCK_HEADER
		   "500.1,p-1,0,hang,0,,1000.5,0,faulted,chat\n"
		   "1200.1,p-2,0,hang,0,,960,0,faulted,chat\n"
		   "1400.1,p-4,0,,200,200,200,16,completed,chat\n"
		   "1500.1,p-5,0,hang,0,,300,0,client_aborted,chat\n"
		   "1600.1,health-check-primary-1,0,hang,0,,1000,0,faulted,chat\n");
	write_file("mock-secondary.csv", MOCK_HEADER "6000.1,p-6,0,,200,200,200,16,completed,chat\n");
	write_file("events-r1.jsonl",
		   EV("1764620001100", "closed", "open", ",\"replica\":\"r1\",\"origin\":\"local\"")
		   EV("1764620002000", "open", "half_open", ",\"replica\":\"r1\",\"origin\":\"local\"")
		   EV("1764620003000", "half_open", "open", ",\"replica\":\"r1\",\"origin\":\"local\""));
	write_file("events-r2.jsonl",
		   EV("1764620001130", "closed", "open",
		      ",\"replica\":\"r2\",\"origin\":\"remote\",\"peer\":\"r1\",\"via\":\"pubsub\"")
		   EV("1764620002500", "open", "half_open", ",\"replica\":\"r2\",\"origin\":\"local\"")
		   EV("1764620002600", "half_open", "open", ",\"replica\":\"r2\",\"origin\":\"local\""));
	write_file("events-r3.jsonl",
		   EV("1764620001180", "closed", "open", "")
		   EV("1764620002700", "open", "half_open",
		      ",\"replica\":\"r3\",\"origin\":\"remote\",\"peer\":\"r1\",\"via\":\"sync\"")
		   EV("1764620002800", "half_open", "open", "")
		   EV("1764620003500", "open", "half_open", "")
		   EV("1764620003600", "half_open", "closed", ""));
}

static cJSON *compute(void)
{
	const struct stats_phase ph[] = { { "healthy", 0, 1000 }, { "outage", 1000, 5000 },
					  { "recovered", 5000, 7000 } };
	struct stats_input in = {
		.run_dir = dir, .phases = ph, .nphases = 3, .duration_ms = 7000,
		.window_ms = 1000, .primary = "primary", .t0_unix_ms = T0, .replicas = 3,
		.primary_timeout_ms = 1000,
	};
	cJSON *out = NULL;

	cr_assert_eq(stats_compute(&in, &out, err), 0, "%s", err);
	return out;
}

Test(replicas_files, timeout_paid_per_replica_and_in_all)
{
	cJSON *s;

	write_run();
	s = compute();
	cr_assert_float_eq(jnum(s, "totals.timeout_paid"), 2, 1e-9);
	cr_assert_float_eq(jnum(s, "phases.healthy.timeout_paid"), 1, 1e-9, "p-1, sent at 500");
	cr_assert_float_eq(jnum(s, "phases.healthy.replicas.r1.timeout_paid"), 1, 1e-9);
	cr_assert_float_eq(jnum(s, "phases.outage.timeout_paid"), 1, 1e-9, "p-2 alone");
	cr_assert_float_eq(jnum(s, "phases.outage.replicas.r1.timeout_paid"), 0, 1e-9);
	cr_assert_float_eq(jnum(s, "phases.outage.replicas.r2.timeout_paid"), 1, 1e-9);
	cr_assert_float_eq(jnum(s, "phases.outage.replicas.r3.timeout_paid"), 0, 1e-9);
	cr_assert_float_eq(jnum(s, "totals.replicas.r1.requests"), 2, 1e-9, "p-1, p-4");
	cr_assert_float_eq(jnum(s, "totals.replicas.r3.requests"), 2, 1e-9, "p-3, p-6");
	cr_assert_str_eq(cJSON_GetArrayItem(jget(s, "files.replica_events"), 2)->valuestring,
			 "events-r3.jsonl");
	cr_assert(cJSON_IsNull(jget(s, "files.events")), "no events.jsonl");
	cJSON_Delete(s);
}

Test(replicas_files, transitions_spread_and_probe_overlaps)
{
	const cJSON *tr;
	cJSON *s;

	write_run();
	s = compute();
	cr_assert_float_eq(jnum(s, "phases.outage.replicas.r1.transitions"), 3, 1e-9);
	cr_assert_float_eq(jnum(s, "phases.outage.replicas.r3.transitions"), 5, 1e-9);
	cr_assert_float_eq(jnum(s, "phases.outage.replicas.r3.opens"), 2, 1e-9);
	cr_assert_float_eq(jnum(s, "phases.outage.replicas.r2.time_to_open_ms"), 130, 1e-6);
	cr_assert_float_eq(jnum(s, "phases.outage.replica_open_spread_ms"), 80, 1e-6);
	cr_assert(cJSON_IsNull(jget(s, "phases.recovered.replica_open_spread_ms")),
		  "no replica opened then");
	cr_assert_float_eq(jnum(s, "phases.outage.probe_overlaps"), 1, 1e-9,
			   "r1's and r2's; r3's remote half-open is not a probe of its own");
	cr_assert_float_eq(jnum(s, "totals.probe_overlaps"), 1, 1e-9);
	cr_assert_float_eq(jnum(s, "phases.healthy.probe_overlaps"), 0, 1e-9);
	/* The combined timeline: every replica's lines by time, each tagged. */
	tr = jget(s, "breaker_transitions");
	cr_assert_eq(cJSON_GetArraySize(tr), 11);
	cr_assert_str_eq(jget(cJSON_GetArrayItem(tr, 1), "replica")->valuestring, "r2");
	cr_assert_str_eq(jget(cJSON_GetArrayItem(tr, 1), "origin")->valuestring, "remote");
	cr_assert_str_eq(jget(cJSON_GetArrayItem(tr, 1), "peer")->valuestring, "r1");
	cr_assert_str_eq(jget(cJSON_GetArrayItem(tr, 2), "replica")->valuestring, "r3");
	cr_assert_str_eq(jget(cJSON_GetArrayItem(tr, 2), "origin")->valuestring, "local",
			 "a line without origin (local state) is local");
	cJSON_Delete(s);
}

Test(replicas_files, overlapping_probes_of_three_replicas_count_each_pair)
{
	cJSON *s;

	write_file("requests.csv", REQ_HEADER REQ("p-1", "500"));
	write_file("mock-primary.csv", MOCK_HEADER);
	write_file("events-r1.jsonl", EV("1764620001000", "open", "half_open", "")
				      EV("1764620002000", "half_open", "open", ""));
	write_file("events-r2.jsonl", EV("1764620001500", "open", "half_open", ""));
	write_file("events-r3.jsonl", EV("1764620001900", "open", "half_open", "")
				      EV("1764620001950", "half_open", "closed", ""));
	s = compute();
	/* r1 [1000, 2000), r2 [1500, end of run), r3 [1900, 1950): every pair meets. */
	cr_assert_float_eq(jnum(s, "totals.probe_overlaps"), 3, 1e-9);
	cr_assert_float_eq(jnum(s, "phases.outage.probe_overlaps"), 3, 1e-9);
	cJSON_Delete(s);
}

/* ---- the bounds on them, gated ---- */

#define GATE_GW "\"config\":{\"providers\":{\"primary\":{\"base_url\":\"{upstream.primary}\"}}," \
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"m\"}]}}}"

/* One run's replica figures of the phase "outage" for a setup, folded by stats_combine. */
static void add_run(cJSON *setups, const char *name, double paid, double spread, double overlaps)
{
	cJSON *run = cJSON_CreateObject();
	cJSON *phases = cJSON_AddObjectToObject(run, "phases");
	cJSON *f = cJSON_AddObjectToObject(phases, "outage");
	cJSON *c;

	cJSON_AddNumberToObject(f, "timeout_paid", paid);
	if (isnan(spread))
		cJSON_AddNullToObject(f, "replica_open_spread_ms");
	else
		cJSON_AddNumberToObject(f, "replica_open_spread_ms", spread);
	cJSON_AddNumberToObject(f, "probe_overlaps", overlaps);
	c = stats_combine(&run, 1);
	cr_assert_not_null(c);
	cJSON_AddItemToObject(setups, name, c);
	cJSON_Delete(run);
}

/* The check of figure for setup, which must be there. */
static const struct gate_check *check_of(const struct gate_result *r, const char *setup,
					 const char *figure)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		if (strcmp(r->checks[i].setup, setup) == 0 &&
		    strcmp(r->checks[i].figure, figure) == 0)
			return &r->checks[i];
	}
	cr_assert_fail("no %s check for %s", figure, setup);
	return NULL;
}

Test(replicas_files, the_replica_bounds_are_gated)
{
	struct scenario sc;
	struct gate_result r;
	const struct gate_check *c;
	cJSON *sum = cJSON_CreateObject();
	cJSON *setups;
	char path[128];

	write_file("scn.json",
		   "{\"name\":\"rg\",\"duration_s\":60,\"providers\":[{\"name\":\"primary\"}],"
		   "\"phases\":[{\"name\":\"outage\",\"from_s\":0,\"to_s\":60}],"
		   "\"load\":{\"rate\":6},"
		   "\"setups\":[{\"name\":\"local\",\"kind\":\"gateway\",\"replicas\":3," GATE_GW "},"
		   "{\"name\":\"shared\",\"kind\":\"gateway\",\"replicas\":3,"
		   "\"shared_state\":\"redis\"," GATE_GW "},"
		   "{\"name\":\"solo\",\"kind\":\"gateway\",\"shared_state\":\"redis\"," GATE_GW "}],"
		   "\"expect\":[{\"setup\":\"shared\",\"phase\":\"outage\",\"relative_to\":\"local\","
		   "\"timeout_paid_ratio_max\":0.5,\"timeout_paid_max\":5,"
		   "\"replica_open_spread_ms_max\":100,\"probe_overlaps_max\":0},"
		   "{\"setup\":\"solo\",\"phase\":\"outage\",\"relative_to\":\"local\","
		   "\"timeout_paid_ratio_max\":0.5,\"replica_open_spread_ms_max\":100}]}");
	snprintf(path, sizeof(path), "%s/scn.json", dir);
	cr_assert_eq(scenario_load(path, 1, &sc, err), 0, "%s", err);
	cJSON_AddStringToObject(sum, "scenario", "rg");
	cJSON_AddNumberToObject(sum, "time_scale", 1);
	cJSON_AddNumberToObject(sum, "repeat", 1);
	setups = cJSON_AddObjectToObject(sum, "setups");
	add_run(setups, "local", 14, 333, 10);
	add_run(setups, "shared", 5, 1.6, 0);
	add_run(setups, "solo", 8, NAN, 0);
	cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "%s", err);
	c = check_of(&r, "shared", "timeout_paid");
	cr_assert(c->pass && c->value == 5 && c->bound == 5, "%g <= %g", c->value, c->bound);
	c = check_of(&r, "shared", "replica_open_spread_ms");
	cr_assert(c->pass && fabs(c->value - 1.6) < 1e-9);
	c = check_of(&r, "shared", "probe_overlaps");
	cr_assert(c->pass && c->value == 0);
	c = check_of(&r, "shared", "timeout_paid_ratio");
	cr_assert(c->pass && fabs(c->value - 5.0 / 14) < 1e-9, "%g", c->value);
	c = check_of(&r, "solo", "timeout_paid_ratio");
	cr_assert_not(c->pass, "8 / 14 is over a half");
	c = check_of(&r, "solo", "replica_open_spread_ms");
	cr_assert_not(c->pass, "no value (a replica never opened) fails");
	cr_assert_eq(r.failed, 2);
	gate_result_free(&r);
	cJSON_Delete(sum);
	scenario_free(&sc);
}
