/*
 * runner traps: the figures of the failover traps from hand-made result
 * files, worked out by hand — contract violations per provider (sent,
 * caught, reaching the client; the gateway's contract_violation lines,
 * never taken for breaker changes), degraded answers (answered, but no
 * provider's: neither the primary's nor a fallback's), the latency of the
 * unanswered, cost by provider and the fallback's spend, breaker
 * transitions, each provider's attempts and faults, the figures per mix
 * stream — then their expect bounds through chaos gate, and the report's
 * sections and correlated-failure callout.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"
#include "runner/correlated.h"
#include "runner/gate.h"
#include "runner/scenario.h"
#include "runner/stats.h"
#include "runner/traps.h"
#include "tests/support/tmpdir.h"
#include "tests/support/jassert.h"

#define T0 1764620000000LL

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "traps"), 0);
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(traps, .init = setup, .fini = teardown, .timeout = 10);

static void write_file(const char *name, const char *text)
{
	cr_assert_eq(tmpdir_write(dir, name, text, strlen(text)), 0, "cannot write %s/%s", dir,
		     name);
}

#define REQ_HEADER "id,stream_name,class,tenant,feature,streaming,sched_ms,start_ms,ttft_ms," \
	"end_ms,latency_ms,service_ms,status,outcome,error,provider,attempts,hedged,retries," \
	"tokens_in,tokens_out,max_gap_ms,cost_usd,degraded\n"
/* A request: id, stream, sched (= end), latency, status, outcome, provider, cost, degraded. */
#define REQ(id, stream, sched, lat, status, outcome, provider, cost, deg) \
	id "," stream ",interactive,,,0," sched "," sched ",," sched "," lat "," lat "," status \
	"," outcome ",," provider ",1,0,0,16,16,," cost "," deg "\n"
#define MOCK_HEADER "t_ms,request_id,streaming,fault,status,ttft_ms,dur_ms,tokens_out,outcome," \
	"kind\n"
#define OPEN(t) "{\"t_unix_ms\":" t ",\"provider\":\"primary\",\"model\":\"m\"," \
	"\"from\":\"closed\",\"to\":\"open\",\"reason\":\"r\"}\n"
#define VIOLATION(t, provider, id) "{\"t_unix_ms\":" t ",\"event\":\"contract_violation\"," \
	"\"provider\":\"" provider "\",\"model\":\"m\"," id "\"why\":\"not JSON\"}\n"

/*
 * Phases healthy [0, 1000) and drift [1000, 3000). q-1 is the primary's
 * answer. In drift the primary fails (its rows faulted); q-2 is answered
 * by the secondary with broken content (it reached the client); q-3's
 * broken answer at the secondary was caught, the third answered; q-4 is a
 * cached answer and q-7 a static one (no provider; the primary's row for
 * q-4 is discarded work); q-5 a fast 503, q-6 a timeout. The gateway
 * logged q-3's violation and one with no request id, at 2500.
 */
static void write_run(void)
{
	write_file("requests.csv", REQ_HEADER
		   REQ("q-1", "faq", "100", "50", "200", "ok", "primary", "0.001", "")
		   REQ("q-2", "faq", "1100", "60", "200", "ok", "secondary", "0.005", "")
		   REQ("q-3", "unique", "1200", "70", "200", "ok", "third", "0.007", "")
		   REQ("q-4", "faq", "1300", "5", "200", "ok", "", "0", "cache")
		   REQ("q-5", "unique", "1400", "12", "503", "http_error", "", "", "")
		   REQ("q-6", "unique", "1500", "900", "", "timeout", "", "", "")
		   REQ("q-7", "faq", "1600", "4", "200", "ok", "", "", "static"));
	write_file("mock-primary.csv", MOCK_HEADER
		   "100.1,q-1,0,,200,40,40,16,completed,chat\n"
		   "1100.1,q-2,0,status,503,,1,0,faulted,chat\n"
		   "1200.1,q-3,0,status,503,,1,0,faulted,chat\n"
		   "1300.1,q-4,0,status,503,,1,0,faulted,chat\n"
		   "1350.1,health-check-primary-1,0,status,503,,1,0,faulted,chat\n");
	write_file("mock-secondary.csv", MOCK_HEADER
		   "1100.5,q-2,0,bad_content,200,40,40,16,faulted,chat\n"
		   "1200.5,q-3,0,slow+bad_content,200,40,40,16,faulted,chat\n");
	write_file("mock-third.csv", MOCK_HEADER "1201.1,q-3,0,,200,40,40,16,completed,chat\n");
	write_file("events.jsonl", OPEN("1764620001150")
		   VIOLATION("1764620001201", "secondary", "\"request_id\":\"q-3\",")
		   "{\"t_unix_ms\":1764620001300,\"event\":\"something_else\",\"provider\":\"x\"}\n"
		   VIOLATION("1764620002500", "secondary", ""));
}

static cJSON *compute(void)
{
	const struct stats_phase ph[] = { { "healthy", 0, 1000 }, { "drift", 1000, 3000 } };
	struct stats_input in = {
		.run_dir = dir, .phases = ph, .nphases = 2, .duration_ms = 3000,
		.window_ms = 1000, .primary = "primary", .t0_unix_ms = T0,
	};
	cJSON *out = NULL;

	cr_assert_eq(stats_compute(&in, &out, err), 0, "%s", err);
	return out;
}

Test(traps, contract_violations_caught_and_reaching_the_client)
{
	cJSON *s;

	write_run();
	s = compute();
	cr_assert_eq(jnum(s, "phases.drift.contract.violations"), 2);
	cr_assert_eq(jnum(s, "phases.drift.contract.reached_clients"), 1, "q-2's");
	cr_assert_eq(jnum(s, "phases.drift.contract.caught"), 1, "q-3's");
	cr_assert_eq(jnum(s, "phases.drift.contract.gateway_violations"), 2,
		     "q-3's line, and the one of no request by its time");
	cr_assert_eq(jnum(s, "phases.drift.contract.by_provider.secondary.violations"), 2);
	cr_assert_eq(jnum(s, "phases.drift.contract.by_provider.secondary.reached_clients"), 1);
	cr_assert_eq(jnum(s, "phases.drift.contract.by_provider.secondary.caught"), 1);
	cr_assert_eq(jnum(s, "phases.drift.contract.by_provider.third.violations"), 0);
	cr_assert_eq(jnum(s, "phases.drift.contract.by_provider.primary.gateway_violations"), 0);
	cr_assert_eq(jnum(s, "phases.healthy.contract.violations"), 0);
	cr_assert_eq(jnum(s, "phases.healthy.contract.gateway_violations"), 0,
		     "0, not null: the run has lines");
	cr_assert_eq(jnum(s, "totals.contract.violations"), 2);
	cr_assert_eq(jnum(s, "totals.contract.gateway_violations"), 2);
	/* Per mix stream: a line of no request is of no stream. */
	cr_assert_eq(jnum(s, "phases.drift.mix_streams.unique.contract.violations"), 1);
	cr_assert_eq(jnum(s, "phases.drift.mix_streams.unique.contract.reached_clients"), 0);
	cr_assert_eq(jnum(s, "phases.drift.mix_streams.unique.contract.gateway_violations"), 1);
	cr_assert_eq(jnum(s, "phases.drift.mix_streams.faq.contract.reached_clients"), 1);
	/* Violation lines are no breaker changes; another kind of line is skipped. */
	cr_assert_eq(cJSON_GetArraySize(jget(s, "breaker_transitions")), 1);
	cr_assert_eq(jnum(s, "phases.drift.transitions"), 1);
	cr_assert_eq(jnum(s, "phases.drift.opens"), 1);
	cr_assert_eq(jnum(s, "phases.healthy.transitions"), 0);
	cJSON_Delete(s);
}

Test(traps, no_violation_lines_make_the_gateways_count_null)
{
	cJSON *s;

	write_run();
	write_file("events.jsonl", OPEN("1764620001150"));
	s = compute();
	cr_assert(cJSON_IsNull(jget(s, "phases.drift.contract.gateway_violations")));
	cr_assert(cJSON_IsNull(jget(s, "phases.drift.contract.by_provider.secondary."
				       "gateway_violations")));
	cr_assert_eq(jnum(s, "phases.drift.contract.reached_clients"), 1);
	cJSON_Delete(s);
}

Test(traps, degraded_answers_are_answered_but_no_providers)
{
	cJSON *s;

	write_run();
	s = compute();
	cr_assert_eq(jnum(s, "phases.drift.ok"), 4);
	cr_assert_eq(jnum(s, "phases.drift.degraded.cache"), 1);
	cr_assert_eq(jnum(s, "phases.drift.degraded.static"), 1);
	cr_assert_eq(jnum(s, "phases.drift.degraded_answers"), 2);
	cr_assert_eq(jnum(s, "phases.healthy.degraded_answers"), 0);
	cr_assert_float_eq(jnum(s, "phases.drift.fallback_share"), 0.5, 1e-9,
			   "q-2 and q-3 of 4 answers; the degraded two are neither");
	cr_assert(cJSON_IsNull(jget(s, "phases.drift.time_to_primary_ms")),
		  "an empty provider column of a degraded answer is not the primary's");
	cr_assert_eq(jnum(s, "phases.drift.duplicate_work.attempts"), 4,
		     "the primary's 3 failures and q-3's caught answer; q-4's row is discarded");
	cr_assert_eq(jnum(s, "phases.drift.error_latency_ms.count"), 2);
	cr_assert_float_eq(jnum(s, "phases.drift.error_latency_ms.max"), 900, 1e-9);
	cr_assert_float_eq(jnum(s, "phases.drift.error_latency_ms.p50"), 12, 1e-9);
	cr_assert(cJSON_IsNull(jget(s, "phases.healthy.error_latency_ms.max")));
	cJSON_Delete(s);
}

Test(traps, cost_by_provider_fallback_spend_and_attempts)
{
	cJSON *s;

	write_run();
	s = compute();
	cr_assert_float_eq(jnum(s, "phases.drift.cost_usd.total"), 0.012, 1e-12);
	cr_assert_float_eq(jnum(s, "phases.drift.cost_usd.by_provider.secondary"), 0.005, 1e-12);
	cr_assert_float_eq(jnum(s, "phases.drift.cost_usd.by_provider.third"), 0.007, 1e-12);
	cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(
		jget(s, "phases.drift.cost_usd.by_provider"), "")->valuedouble, 0, 1e-12,
		"q-4, degraded, of no provider");
	cr_assert_float_eq(jnum(s, "phases.drift.fallback_spend_usd"), 0.012, 1e-12);
	cr_assert_float_eq(jnum(s, "phases.healthy.fallback_spend_usd"), 0, 1e-12);
	cr_assert_eq(jnum(s, "phases.drift.upstream_by_provider.primary.attempts"), 3,
		     "the health check is not an attempt");
	cr_assert_eq(jnum(s, "phases.drift.upstream_by_provider.primary.faulted"), 3);
	cr_assert_eq(jnum(s, "phases.drift.upstream_by_provider.secondary.attempts"), 2);
	cr_assert_eq(jnum(s, "phases.drift.upstream_by_provider.secondary.faulted"), 2,
		     "its broken answers are faulted rows, as mockprov logs them");
	cr_assert_eq(jnum(s, "phases.healthy.upstream_by_provider.third.attempts"), 0);
	cr_assert_eq(jnum(s, "phases.drift.mix_streams.unique.upstream_by_provider.third."
				"attempts"), 1);
	cr_assert_eq(jnum(s, "phases.drift.mix_streams.faq.requests"), 3);
	cr_assert_eq(jnum(s, "phases.drift.mix_streams.unique.requests"), 3);
	cr_assert_eq(jnum(s, "totals.mix_streams.faq.requests"), 4);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(jget(s, "windows"), 1), "mix_streams"),
		"windows have no per stream figures");
	cJSON_Delete(s);
}

Test(traps, a_degraded_word_it_does_not_know_counts_as_other)
{
	cJSON *out = NULL;
	const struct stats_phase ph[] = { { "all", 0, 1000 } };
	struct stats_input in = {
		.run_dir = dir, .phases = ph, .nphases = 1, .duration_ms = 1000,
		.primary = "primary", .t0_unix_ms = T0,
	};

	/* Another gateway's word: a degraded answer still, counted as loadgen counts it. */
	write_file("requests.csv", REQ_HEADER
		   REQ("q-1", "faq", "100", "50", "200", "ok", "", "", "stale"));
	cr_assert_eq(stats_compute(&in, &out, err), 0, "%s", err);
	cr_assert_eq(jnum(out, "phases.all.degraded.other"), 1);
	cr_assert_eq(jnum(out, "phases.all.degraded.static"), 0);
	cr_assert_eq(jnum(out, "phases.all.degraded_answers"), 1);
	cJSON_Delete(out);
}

Test(traps, a_requests_file_without_the_column_has_none_degraded)
{
	cJSON *s;

	write_file("requests.csv", "id,sched_ms,end_ms,latency_ms,status,outcome,provider,"
		   "tenant,feature,cost_usd\nq-1,100,110,10,200,ok,,,,\n");
	s = compute();
	cr_assert_eq(jnum(s, "phases.healthy.degraded.cache"), 0);
	cr_assert_eq(jnum(s, "phases.healthy.degraded_answers"), 0);
	cr_assert_float_eq(jnum(s, "phases.healthy.fallback_share"), 0, 1e-9,
			   "an empty provider column is still the primary's");
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(jget(s, "phases.healthy"),
							"mix_streams"), "no stream named");
	cJSON_Delete(s);
}

/* ---- the bounds, gated ---- */

#define GW_CONFIG "\"config\":{\"providers\":{" \
	"\"primary\":{\"base_url\":\"{upstream.primary}\"}," \
	"\"secondary\":{\"base_url\":\"{upstream.secondary}\"}," \
	"\"third\":{\"base_url\":\"{upstream.third}\"}}," \
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"m\"}," \
	"{\"provider\":\"secondary\",\"model\":\"m\"},{\"provider\":\"third\",\"model\":\"m\"}]}}}"

/* A scenario of the run above: one gateway setup "gw", the mix streams faq and unique. */
static int load_scenario(const char *expect, struct scenario *sc)
{
	char path[128];
	char text[4096];

	snprintf(text, sizeof(text),
		 "{\"name\":\"tr\",\"duration_s\":3,\"providers\":[{\"name\":\"primary\"},"
		 "{\"name\":\"secondary\"},{\"name\":\"third\"}],"
		 "\"phases\":[{\"name\":\"healthy\",\"from_s\":0,\"to_s\":1},"
		 "{\"name\":\"drift\",\"from_s\":1,\"to_s\":3}],"
		 "\"load\":{\"mix\":{\"streams\":[{\"name\":\"faq\",\"rate\":2},"
		 "{\"name\":\"unique\",\"rate\":2}]}},"
		 "\"setups\":[{\"name\":\"gw\",\"kind\":\"gateway\"," GW_CONFIG "}],"
		 "\"expect\":[%s]}", expect);
	write_file("scn.json", text);
	snprintf(path, sizeof(path), "%s/scn.json", dir);
	return scenario_load(path, 1, sc, err);
}

/* The stamp's combined summary of the run above as setup "gw", one run. */
static cJSON *stamp_summary(void)
{
	cJSON *run = compute();
	cJSON *sum = cJSON_CreateObject();
	cJSON *setups;

	cJSON_AddStringToObject(sum, "scenario", "tr");
	cJSON_AddNumberToObject(sum, "time_scale", 1);
	cJSON_AddNumberToObject(sum, "repeat", 1);
	setups = cJSON_AddObjectToObject(sum, "setups");
	cJSON_AddItemToObject(setups, "gw", stats_combine(&run, 1));
	cJSON_Delete(run);
	return sum;
}

/* The n-th check of figure in phase (from 0), which must be there. */
static const struct gate_check *check_of(const struct gate_result *r, const char *phase,
					 const char *figure, int nth)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		if (strcmp(r->checks[i].phase, phase) == 0 &&
		    strcmp(r->checks[i].figure, figure) == 0 && nth-- == 0)
			return &r->checks[i];
	}
	cr_assert_fail("no %s check in %s", figure, phase);
	return NULL;
}

Test(traps, the_bounds_are_gated)
{
	struct scenario sc;
	struct gate_result r;
	const struct gate_check *c;
	cJSON *sum;

	write_run();
	cr_assert_eq(load_scenario(
		"{\"setup\":\"gw\",\"phase\":\"drift\",\"broken_answers_max\":0,"
		"\"contract_violations_min\":1,\"degraded_min\":2,\"transitions_min\":1,"
		"\"transitions_max\":1,\"fallback_spend_usd_max\":0.02,"
		"\"error_latency_ms_max\":1000},"
		"{\"setup\":\"gw\",\"phase\":\"healthy\",\"error_latency_ms_max\":10},"
		"{\"setup\":\"gw\",\"phase\":\"drift\",\"stream\":\"unique\","
		"\"broken_answers_max\":0,\"error_latency_ms_max\":100},"
		"{\"setup\":\"gw\",\"phase\":\"drift\",\"stream\":\"faq\",\"degraded_min\":2,"
		"\"error_latency_ms_max\":100},"
		"{\"setup\":\"gw\",\"phase\":\"drift\",\"broken_answers_min\":1},"
		"{\"setup\":\"gw\",\"phase\":\"drift\",\"broken_answers_min\":2}", &sc), 0,
		"%s", err);
	sum = stamp_summary();
	cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "%s", err);
	c = check_of(&r, "drift", "contract.reached_clients", 0);
	cr_assert(!c->pass && c->value == 1 && c->bound == 0, "q-2's broken answer");
	cr_assert(check_of(&r, "drift", "contract.violations", 0)->pass);
	cr_assert(check_of(&r, "drift", "degraded_answers", 0)->pass);
	cr_assert(check_of(&r, "drift", "transitions", 0)->pass);
	cr_assert(check_of(&r, "drift", "transitions", 1)->pass);
	c = check_of(&r, "drift", "fallback_spend_usd", 0);
	cr_assert(c->pass && fabs(c->value - 0.012) < 1e-12);
	c = check_of(&r, "drift", "error_latency_ms.max", 0);
	cr_assert(c->pass && c->value == 900);
	c = check_of(&r, "healthy", "error_latency_ms.max", 0);
	cr_assert(c->pass, "no request unanswered: nothing waited");
	cr_assert_str_eq(c->note, "no unanswered request");
	c = check_of(&r, "drift", "contract.reached_clients", 1);
	cr_assert(c->pass && c->value == 0, "the unique stream's broken answer was caught");
	c = check_of(&r, "drift", "error_latency_ms.max", 1);
	cr_assert(!c->pass && c->value == 900, "the unique stream's timeout");
	c = check_of(&r, "drift", "degraded_answers", 1);
	cr_assert(c->pass && c->value == 2, "the faq stream's two");
	cr_assert(check_of(&r, "drift", "error_latency_ms.max", 2)->pass);
	c = check_of(&r, "drift", "contract.reached_clients", 2);
	cr_assert(c->pass && c->value == 1 && c->bound == 1, "broken_answers_min 1: q-2's");
	c = check_of(&r, "drift", "contract.reached_clients", 3);
	cr_assert(!c->pass && c->value == 1 && c->bound == 2, "broken_answers_min 2");
	cr_assert_eq(r.failed, 3);
	gate_result_free(&r);
	cJSON_Delete(sum);
	scenario_free(&sc);
}

Test(traps, a_stream_the_run_lacks_fails_its_checks)
{
	struct scenario sc;
	struct gate_result r;
	cJSON *sum;

	write_run();
	write_file("requests.csv", REQ_HEADER
		   REQ("q-1", "faq", "100", "50", "200", "ok", "primary", "0.001", ""));
	cr_assert_eq(load_scenario("{\"setup\":\"gw\",\"phase\":\"healthy\",\"stream\":\"unique\","
				   "\"degraded_min\":0}", &sc), 0, "%s", err);
	sum = stamp_summary();
	cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "%s", err);
	cr_assert_eq(r.failed, 1);
	cr_assert_str_eq(r.checks[0].note, "no request of stream unique in the run");
	gate_result_free(&r);
	cJSON_Delete(sum);
	scenario_free(&sc);
}

Test(traps, the_stream_filter_and_bounds_are_checked_at_load)
{
	struct scenario sc;
	char path[128];

	cr_assert_eq(load_scenario("{\"setup\":\"gw\",\"phase\":\"drift\",\"stream\":\"nightly\","
				   "\"degraded_min\":1}", &sc), -EINVAL);
	cr_assert(strstr(err, "expect[0].stream: expected the name of one of load.mix's streams "
			 "(faq, unique), got \"nightly\""), "%s", err);
	cr_assert_eq(load_scenario("{\"setup\":\"gw\",\"phase\":\"drift\",\"stream\":\"faq\","
				   "\"class\":\"batch\",\"degraded_min\":1}", &sc), -EINVAL);
	cr_assert(strstr(err, "expect[0].stream: expected class or stream, not both"), "%s", err);
	write_file("one.json", "{\"duration_s\":3,\"providers\":[{\"name\":\"p\"}],"
		   "\"load\":{\"mix\":{\"streams\":[{\"name\":\"faq\",\"rate\":2}]}},"
		   "\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}],"
		   "\"expect\":[{\"setup\":\"d\",\"phase\":\"*\",\"stream\":\"faq\","
		   "\"degraded_min\":1}]}");
	snprintf(path, sizeof(path), "%s/one.json", dir);
	cr_assert_eq(scenario_load(path, 1, &sc, err), -EINVAL);
	cr_assert(strstr(err, "expect[0].stream: expected it only when load.mix has two streams "
			 "or more"), "%s", err);
	cr_assert_eq(load_scenario("{\"setup\":\"gw\",\"phase\":\"drift\",\"transitions_min\":3,"
				   "\"transitions_max\":2}", &sc), -EINVAL);
	cr_assert(strstr(err, "expect[0].transitions_min: expected at most transitions_max (2), "
			 "got 3"), "%s", err);
	cr_assert_eq(load_scenario("{\"setup\":\"gw\",\"phase\":\"drift\","
				   "\"broken_answers_max\":-1}", &sc), -EINVAL);
	cr_assert(strstr(err, "expect[0].broken_answers_max"), "%s", err);
}

/* ---- the report ---- */

/* What traps_report prints of summary, markdown or plain (the caller frees it). */
static char *report_of(const struct scenario *sc, const cJSON *summary, bool markdown)
{
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);

	cr_assert_not_null(fp);
	traps_report(fp, sc, summary, markdown);
	cr_assert_eq(fclose(fp), 0);
	return text;
}

Test(traps, the_report_has_contracts_degraded_cost_and_opens)
{
	struct scenario sc;
	cJSON *sum;
	char *md;
	char *plain;

	write_run();
	cr_assert_eq(load_scenario("{\"setup\":\"gw\",\"phase\":\"drift\",\"degraded_min\":1}",
				   &sc), 0, "%s", err);
	sum = stamp_summary();
	md = report_of(&sc, sum, true);
	cr_assert(strstr(md, "## Contracts"), "%s", md);
	cr_assert(strstr(md, "| gw | drift | secondary 2 | 1 | 2 | 1 (25.0% of answers) |"),
		  "%s", md);
	cr_assert(strstr(md, "| gw | healthy | 0 | 0 | 0 | 0 |"), "%s", md);
	cr_assert(strstr(md, "## Degraded answers"), "%s", md);
	cr_assert(strstr(md, "| gw | drift | 6 | 1 | 1 | 2 | 900.0 | 900.0 |"), "%s", md);
	cr_assert(strstr(md, "| gw | healthy | 1 | 0 | 0 | 0 | — | — |"), "%s", md);
	cr_assert(strstr(md, "## Cost of failover"), "%s", md);
	cr_assert(strstr(md, "| gw | healthy | 0.001000 | 0.000000 | 0 | 0.00100000 | — |"),
		  "%s", md);
	cr_assert(strstr(md, "| gw | drift | 0.012000 | 0.012000 | 1 | 0.00300000 | +200% |"),
		  "%s", md);
	cr_assert(strstr(md, "- **gw**: 1 opening (1 transition), 20.00 a minute; 40.0% of "
			 "answers from a fallback provider."), "%s", md);
	cr_assert_null(strstr(md, "Correlated"), "drift answered 4 of 6: %s", md);
	plain = report_of(&sc, sum, false);
	cr_assert(strstr(plain, "\ncontracts:\nsetup  phase    violations   caught  gateway  "
			 "reached clients\n"), "%s", plain);
	cr_assert(strstr(plain, "gw     drift    secondary 2       1        2  1 (25.0% of "
			 "answers)\n"), "%s", plain);
	cr_assert(strstr(plain, "\nbreaker opens:\n  gw: 1 opening"), "%s", plain);
	free(md);
	free(plain);
	cJSON_Delete(sum);
	scenario_free(&sc);
}

Test(traps, the_groups_of_a_chain)
{
	cJSON *p = cJSON_Parse("[{\"name\":\"east-1\",\"group\":\"east\"},"
			       "{\"name\":\"east-2\",\"group\":\"east\"},"
			       "{\"name\":\"west-1\",\"group\":\"west\"},{\"name\":\"solo\"}]");
	const char *same[] = { "east-1", "east-2" };
	const char *cross[] = { "east-1", "west-1" };
	const char *none[] = { "east-1", "solo" };

	cr_assert_str_eq(correlated_group(p, same, 2), "east");
	cr_assert_null(correlated_group(p, cross, 2));
	cr_assert_null(correlated_group(p, none, 2));
	cr_assert_null(correlated_group(p, same, 0));
	cr_assert_null(correlated_group(NULL, same, 2), "a scenario whose providers have none");
	cJSON_Delete(p);
}

/*
 * A setup's combined figures of one run with one phase, "outage": its
 * answered share, and each provider's attempts and faults.
 */
static cJSON *outage_setup(double answered, const char *const *names, const double *attempts,
			   const double *faulted, size_t n)
{
	cJSON *run = cJSON_CreateObject();
	cJSON *fig = cJSON_AddObjectToObject(cJSON_AddObjectToObject(run, "phases"), "outage");
	cJSON *up = cJSON_AddObjectToObject(fig, "upstream_by_provider");
	cJSON *c;
	size_t i;

	cJSON_AddNumberToObject(fig, "answered_share", answered);
	for (i = 0; i < n; i++) {
		cJSON *p = cJSON_AddObjectToObject(up, names[i]);

		cJSON_AddNumberToObject(p, "attempts", attempts[i]);
		cJSON_AddNumberToObject(p, "faulted", faulted[i]);
	}
	c = stats_combine(&run, 1);
	cJSON_Delete(run);
	return c;
}

Test(traps, a_chain_that_failed_whole_is_called_out)
{
	static const char *const names[] = { "east-1", "east-2", "west-1" };
	static const double down_at[] = { 0, 5, 0 }, faulted_at[] = { 0, 5, 0 };
	static const double west_ok[] = { 0, 0, 10 }, west_none[] = { 0, 0, 0 };
	struct scenario sc;
	cJSON *sum = cJSON_CreateObject();
	cJSON *setups = cJSON_AddObjectToObject(sum, "setups");
	cJSON *p;
	char path[128];
	char *md;
	char *plain;

	write_file("scn.json",
		   "{\"name\":\"co\",\"duration_s\":60,\"providers\":[{\"name\":\"east-1\"},"
		   "{\"name\":\"east-2\"},{\"name\":\"west-1\"}],"
		   "\"phases\":[{\"name\":\"outage\",\"from_s\":0,\"to_s\":60}],"
		   "\"load\":{\"rate\":5},\"setups\":["
		   "{\"name\":\"same-region\",\"kind\":\"gateway\",\"config\":{\"providers\":{"
		   "\"east-1\":{\"base_url\":\"{upstream.east-1}\"},"
		   "\"east-2\":{\"base_url\":\"{upstream.east-2}\"}},"
		   "\"models\":{\"chat\":{\"targets\":[{\"provider\":\"east-1\",\"model\":\"m\"},"
		   "{\"provider\":\"east-2\",\"model\":\"m\"}]}}}},"
		   "{\"name\":\"cross-region\",\"kind\":\"gateway\",\"config\":{\"providers\":{"
		   "\"east-1\":{\"base_url\":\"{upstream.east-1}\"},"
		   "\"west-1\":{\"base_url\":\"{upstream.west-1}\"}},"
		   "\"models\":{\"chat\":{\"targets\":[{\"provider\":\"east-1\",\"model\":\"m\"},"
		   "{\"provider\":\"west-1\",\"model\":\"m\"}]}}}}]}");
	snprintf(path, sizeof(path), "%s/scn.json", dir);
	cr_assert_eq(scenario_load(path, 1, &sc, err), 0, "%s", err);
	/* The groups mockprov's config gives providers. */
	cJSON_ArrayForEach(p, sc.providers)
		cJSON_AddStringToObject(p, "group", strncmp(cJSON_GetObjectItem(p, "name")->valuestring,
							    "east", 4) == 0 ? "east" : "west");
	cJSON_AddItemToObject(setups, "same-region",
			      outage_setup(0.02, names, down_at, faulted_at, 3));
	cJSON_AddItemToObject(setups, "cross-region",
			      outage_setup(0.99, names, west_none, west_none, 3));
	md = report_of(&sc, sum, true);
	cr_assert(strstr(md, "## Correlated failures"), "%s", md);
	cr_assert(strstr(md, "- **same-region**: failover cannot work: every target of chat "
			 "(east-1, east-2) failed together in phase outage — they share group "
			 "east (answered 2.0%)."), "%s", md);
	cr_assert_null(strstr(md, "**cross-region**: failover"), "answered 99%%: %s", md);
	plain = report_of(&sc, sum, false);
	cr_assert(strstr(plain, "\ncorrelated failures:\n  same-region: failover cannot work"),
		  "%s", plain);
	free(md);
	free(plain);
	/* Below half answered, but west-1 answered: the chain did not fail whole. */
	cJSON_ReplaceItemInObject(setups, "cross-region",
				  outage_setup(0.3, names, west_ok, west_none, 3));
	md = report_of(&sc, sum, true);
	cr_assert_null(strstr(md, "**cross-region**: failover"), "%s", md);
	free(md);
	cJSON_Delete(sum);
	scenario_free(&sc);
}
