/*
 * runner received: report.md's What clients received section from a
 * combined summary with figures worked out by hand — its place right
 * after Streams, a row per setup × phase (the answers from the primary
 * and from another provider, degraded ones, HTTP errors by status in
 * ascending order whatever order the runs saw them in, error events,
 * silent breaks, cut bodies, timeouts), the runs' means printed whole
 * when whole, and the columns zero in every row left out and named under
 * the table; the same on the terminal.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"
#include "runner/report.h"
#include "runner/scenario.h"
#include "runner/stats.h"
#include "tests/support/tmpdir.h"

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "received"), 0);
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(received, .init = setup, .fini = teardown, .timeout = 10);

/* Two setups of the kind the table does not look at, two phases. */
static const char scn[] =
	"{\"name\":\"rc\",\"duration_s\":20,"
	"\"providers\":[{\"name\":\"primary\"},{\"name\":\"secondary\"}],"
	"\"phases\":[{\"name\":\"outage\",\"from_s\":0,\"to_s\":10},"
	"{\"name\":\"after\",\"from_s\":10,\"to_s\":20}],"
	"\"load\":{\"concurrency\":2},"
	"\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"primary\"},"
	"{\"name\":\"gw\",\"kind\":\"direct\",\"provider\":\"primary\"}]}";

/* A phase's figures: the counts the section reads, streams among them. */
#define FIG(req, ok, deg, fb, outcomes, status, streams, stalls, trunc, events, silent) \
	"{\"requests\":" #req ",\"ok\":" #ok ",\"degraded_answers\":" #deg \
	",\"fallback_answers\":" #fb ",\"outcomes\":{" outcomes "},\"status\":{" status "}" \
	",\"streams\":" #streams ",\"stalls\":" #stalls ",\"truncations\":" #trunc \
	",\"error_events\":" #events ",\"silent_breaks\":" #silent "}"

#define OUTCOMES(ok, http, timeout, refused, reset, trunc, stalled, invalid) \
	"\"ok\":" #ok ",\"http_error\":" #http ",\"timeout\":" #timeout \
	",\"refused\":" #refused ",\"reset\":" #reset ",\"truncated\":" #trunc \
	",\"stalled\":" #stalled ",\"invalid\":" #invalid

/* The scenario loaded, and the combined summary of setup → its runs (NULL-ended). */
static cJSON *summary_of(struct scenario *sc, const char *const *const *runs,
			 const char *const *names, size_t nsetups)
{
	cJSON *sum = cJSON_CreateObject();
	cJSON *setups = cJSON_AddObjectToObject(sum, "setups");
	char path[128];
	size_t s, k;

	cr_assert_eq(tmpdir_write(dir, "rc.json", scn, strlen(scn)), 0);
	snprintf(path, sizeof(path), "%s/rc.json", dir);
	cr_assert_eq(scenario_load(path, 1, sc, err), 0, "%s", err);
	for (s = 0; s < nsetups; s++) {
		cJSON *parsed[4];
		size_t n = 0;

		for (k = 0; runs[s][k]; k++) {
			parsed[n] = cJSON_Parse(runs[s][k]);
			cr_assert_not_null(parsed[n], "%s", runs[s][k]);
			n++;
		}
		cJSON_AddItemToObject(setups, names[s], stats_combine(parsed, n));
		while (n)
			cJSON_Delete(parsed[--n]);
	}
	cJSON_AddNumberToObject(sum, "repeat", 2);
	return sum;
}

/* The terminal's table (report_table, plain), for the caller to free. */
static char *terminal_text(const struct scenario *sc, const cJSON *sum)
{
	char *out = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&out, &len);

	cr_assert_not_null(fp);
	report_table(fp, sc, sum, false);
	fclose(fp);
	return out;
}

/*
 * direct: an outage of 503s, then stalls that end in silence and
 * timeouts. gw, two runs: answers from both providers and one degraded,
 * 504s in one run and 502s in the other (so the status map's union is
 * 504 first), stalls that ended with an error event, a body cut short;
 * no refused or reset connection and no invalid body anywhere.
 */
Test(received, the_report_says_what_clients_received)
{
	static const char *const direct[] = {
		"{\"phases\":{\"outage\":" FIG(100, 0, 0, 0, OUTCOMES(0, 100, 0, 0, 0, 0, 0, 0),
					       "\"503\":100", 40, 0, 0, 0, 0) ","
		"\"after\":" FIG(200, 150, 0, 0, OUTCOMES(150, 0, 20, 0, 0, 0, 30, 0),
				 "\"200\":180,\"none\":20", 50, 30, 0, 0, 30) "}}",
		NULL,
	};
	static const char *const gw[] = {
		"{\"phases\":{\"outage\":" FIG(100, 91, 1, 80, OUTCOMES(91, 6, 0, 0, 0, 0, 3, 0),
					       "\"200\":94,\"504\":6", 40, 3, 0, 3, 0) ","
		"\"after\":" FIG(200, 200, 0, 0, OUTCOMES(200, 0, 0, 0, 0, 0, 0, 0),
				 "\"200\":200", 0, 0, 0, 0, 0) "}}",
		"{\"phases\":{\"outage\":" FIG(100, 92, 0, 81, OUTCOMES(92, 7, 0, 0, 0, 1, 0, 0),
					       "\"200\":93,\"502\":7", 40, 0, 0, 0, 0) ","
		"\"after\":" FIG(200, 200, 0, 0, OUTCOMES(200, 0, 0, 0, 0, 0, 0, 0),
				 "\"200\":200", 0, 0, 0, 0, 0) "}}",
		NULL,
	};
	static const char *const *const runs[] = { direct, gw };
	static const char *const names[] = { "direct", "gw" };
	struct scenario sc;
	cJSON *sum = summary_of(&sc, runs, names, 2);
	const char *streams, *at, *next;
	char *md, *term;

	cr_assert_eq(report_write(dir, &sc, sum, err), 0, "%s", err);
	md = tmpdir_read(dir, "report.md");
	cr_assert_not_null(md);
	streams = strstr(md, "\n## Streams\n");
	at = strstr(md, "\n## What clients received\n");
	cr_assert_not_null(streams, "%s", md);
	cr_assert_not_null(at, "%s", md);
	next = strstr(streams + 1, "\n## ");
	cr_expect_eq(next, at, "not right after Streams: %s", md);
	cr_expect(strstr(at, "\n| setup | phase | requests | from primary | from another | "
			     "degraded | HTTP errors | error events | silent breaks | "
			     "cut bodies | timeouts |\n"
			     "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
			     "| direct | outage | 100 | 0 | 0 | 0 | 503 ×100 | 0 | 0 | 0 | 0 |\n"
			     "| direct | after | 200 | 150 | 0 | 0 | 0 | 0 | 30 | 0 | 20 |\n"
			     "| gw | outage | 100 | 10.5 | 80.5 | 0.5 | 502 ×3.5; 504 ×3 | 1.5 "
			     "| 0 | 0.5 | 0 |\n"
			     "| gw | after | 200 | 200 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |\n"
			     "\nLeft out, zero in every row: *refused / reset*, *invalid*.\n") != NULL,
		  "%s", at);
	free(md);

	term = terminal_text(&sc, sum);
	cr_expect(strstr(term, "\nwhat clients received:\n"
			 "setup   phase   requests  from primary  from another  degraded       "
			 "HTTP errors  error events  silent breaks  cut bodies  timeouts\n"
			 "direct  outage       100             0             0         0          "
			 "503 ×100             0              0           0  0\n") != NULL, "%s", term);
	cr_expect(strstr(term, "\ngw      outage       100          10.5          80.5       0.5  "
			 "502 ×3.5; 504 ×3           1.5              0         0.5  0\n") != NULL,
		  "%s", term);
	cr_expect(strstr(term, "\n  left out, zero in every row: refused / reset, invalid\n")
		  != NULL, "%s", term);
	free(term);
	cJSON_Delete(sum);
	scenario_free(&sc);
}

/*
 * Means of three runs that add and subtract to a whole number but for a
 * rounding (5/3 − 1/3 − 1/3 is 1.0000000000000002): printed whole. Every
 * column has something in some row, so none is left out and there is no
 * line under the table; a phase the summary lacks reads "—" throughout.
 */
Test(received, whole_means_print_whole_and_nothing_is_left_out)
{
	static const char *const gw[] = {
		"{\"phases\":{\"outage\":" FIG(3, 1, 0, 0, OUTCOMES(1, 1, 0, 1, 0, 0, 0, 0),
					       "\"200\":1,\"503\":1,\"none\":1", 0, 0, 0, 0, 0) "}}",
		"{\"phases\":{\"outage\":" FIG(3, 2, 1, 0, OUTCOMES(2, 0, 1, 0, 0, 0, 0, 0),
					       "\"200\":2,\"none\":1", 0, 0, 0, 0, 0) "}}",
		"{\"phases\":{\"outage\":" FIG(3, 2, 0, 1, OUTCOMES(2, 0, 0, 0, 0, 1, 0, 0),
					       "\"200\":3", 1, 0, 1, 1, 0) "}}",
		NULL,
	};
	static const char *const direct[] = {
		"{\"phases\":{\"outage\":" FIG(4, 1, 0, 0, OUTCOMES(1, 0, 0, 0, 0, 1, 1, 1),
					       "\"200\":4", 1, 1, 0, 0, 1) "}}",
		NULL,
	};
	static const char *const *const runs[] = { gw, direct };
	static const char *const names[] = { "gw", "direct" };
	struct scenario sc;
	cJSON *sum = summary_of(&sc, runs, names, 2);
	char *md;

	cr_assert_eq(report_write(dir, &sc, sum, err), 0, "%s", err);
	md = tmpdir_read(dir, "report.md");
	cr_assert_not_null(md);
	cr_expect(strstr(md, "| requests | from primary | from another | degraded | HTTP errors | "
			 "error events | silent breaks | cut bodies | timeouts | refused / reset | "
			 "invalid |\n") != NULL, "%s", md);
	cr_expect(strstr(md, "| gw | outage | 3 | 1 | 0.3 | 0.3 | 503 ×0.3 | 0.3 | 0 | 0 | 0.3 | "
			 "0.3 / 0 | 0 |\n") != NULL, "%s", md);
	/* a stall without an error event, and a body cut short not streamed */
	cr_expect(strstr(md, "| direct | outage | 4 | 1 | 0 | 0 | 0 | 0 | 1 | 1 | 0 | 0 / 0 | 1 |\n"
			 "| direct | after | — | — | — | — | — | — | — | — | — | — | — |\n"
			 "\n## ") != NULL, "%s", md);
	cr_expect(strstr(md, "Left out") == NULL, "%s", md);
	free(md);
	cJSON_Delete(sum);
	scenario_free(&sc);
}
