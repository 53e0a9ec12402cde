/*
 * runner plot: a hand-made stamp directory (summary.json, scenario.json and
 * each setup's run-1) plotted with the real plots/ scripts and gnuplot —
 * the four PNGs made, the data files holding the rows worked out by hand
 * (answered share per window, breaker steps, percentiles per phase,
 * requests coloured by provider, fault and kill windows), and the errors:
 * no summary.json, no script, a failing script, no gnuplot, a data file
 * on a full disk, a PNG gnuplot wrote only part of.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner/plot.h"
#include "runner/rundata.h"
#include "runner/stamp.h"
#include "common/cfg.h"
#include "tests/support/tmpdir.h"

static char dir[64];
static char scripts[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "plot"), 0);
	scripts[0] = '\0';
	err[0] = '\0';
}

static void teardown(void)
{
	tmpdir_remove(dir);
	if (scripts[0])
		tmpdir_remove(scripts);
}

TestSuite(plot, .init = setup, .fini = teardown, .timeout = 30);
TestSuite(plot_bad, .init = setup, .fini = teardown, .timeout = 30);

/* The repository's scripts: $FAULTLINE_PLOTS, else plots (the tests run from the top). */
static const char *plots_dir(void)
{
	const char *d = getenv("FAULTLINE_PLOTS");

	return d && *d ? d : "plots";
}

static void write_file(const char *name, const char *text)
{
	cr_assert_eq(tmpdir_write(dir, name, text, strlen(text)), 0, "cannot write %s/%s", dir, name);
}

static void make_dir(const char *name)
{
	cr_assert_eq(tmpdir_mkdir(dir, name), 0, "mkdir %s/%s: %s", dir, name, strerror(errno));
}

/* The whole of DIR/name as a string (the caller frees it). */
static char *read_file(const char *name)
{
	char *text = tmpdir_read(dir, name);

	cr_assert_not_null(text, "cannot read %s/%s", dir, name);
	return text;
}

static bool exists(const char *name)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static void assert_has(const char *name, const char *needle)
{
	char *text = read_file(name);

	cr_expect_not_null(strstr(text, needle), "%s lacks \"%s\":\n%s", name, needle, text);
	free(text);
}

/* A 20 s scenario: the primary hangs 5–10 s, the secondary is killed 12–15 s. */
static const char scenario_json[] =
	"{\"name\": \"plot-t\", \"duration_s\": 20,\n"
	" \"providers\": [{\"name\": \"primary\", \"ttft_ms\": 20,\n"
	"                 \"faults\": [{\"kind\": \"hang\", \"from_s\": 5, \"to_s\": 10}]},\n"
	"               {\"name\": \"secondary\", \"ttft_ms\": 20}],\n"
	" \"actions\": [{\"at_s\": 12, \"do\": \"kill\", \"provider\": \"secondary\"},\n"
	"             {\"at_s\": 15, \"do\": \"restart\", \"provider\": \"secondary\"}],\n"
	" \"phases\": [{\"name\": \"healthy\", \"from_s\": 0, \"to_s\": 5},\n"
	"            {\"name\": \"outage\", \"from_s\": 5, \"to_s\": 10},\n"
	"            {\"name\": \"recovered\", \"from_s\": 10, \"to_s\": 20}],\n"
	" \"load\": {\"concurrency\": 1},\n"
	" \"setups\": [{\"name\": \"direct\", \"kind\": \"direct\", \"provider\": \"primary\"},\n"
	"   {\"name\": \"gw\", \"kind\": \"gateway\", \"config\": {\n"
	"     \"providers\": {\"primary\": {\"base_url\": \"{upstream.primary}\"},\n"
	"                   \"secondary\": {\"base_url\": \"{upstream.secondary}\"}},\n"
	"     \"models\": {\"chat\": {\"targets\": [{\"provider\": \"primary\", \"model\": \"m\"},\n"
	"                                       {\"provider\": \"secondary\", \"model\": \"m\"}]}}}}]}\n";

/* A combined figure {mean, …} (n 1). */
#define C(v) "{\"mean\": " #v ", \"stddev\": 0, \"min\": " #v ", \"max\": " #v ", \"n\": 1}"
#define WIN(from, to, share, req) \
	"{\"from_ms\": " #from ", \"to_ms\": " #to ", \"requests\": " C(req) \
	", \"answered_share\": " share "}"
#define LAT(p50, p95, p99) \
	"{\"ok\": " C(5) ", \"latency_ms\": {\"p50\": " C(p50) ", \"p95\": " C(p95) \
	", \"p99\": " C(p99) "}}"

static const char summary_json[] =
	"{\"scenario\": \"plot-t\", \"time_scale\": 1, \"repeat\": 1, \"setups\": {\n"
	" \"direct\": {\"runs\": 1, \"primary\": \"primary\", \"duration_ms\": 20000,\n"
	"   \"window_ms\": 5000,\n"
	"   \"windows\": [" WIN(0, 5000, C(1), 10) ", " WIN(5000, 10000, C(0.25), 4) ", "
	WIN(10000, 15000, "null", 0) ", " WIN(15000, 20000, C(1), 9) "],\n"
	"   \"phases\": {\"healthy\": " LAT(20, 22, 25) ", \"outage\": {\"ok\": " C(0)
	", \"latency_ms\": {\"p50\": null}},\n"
	"                \"recovered\": " LAT(21, 23, 26) "},\n"
	"   \"breaker_transitions\": [[]]},\n"
	" \"gw\": {\"runs\": 1, \"primary\": \"primary\", \"duration_ms\": 20000, \"window_ms\": 5000,\n"
	"   \"windows\": [" WIN(0, 5000, C(1), 10) ", " WIN(5000, 10000, C(0.9), 10) ", "
	WIN(10000, 15000, C(1), 10) ", " WIN(15000, 20000, C(1), 10) "],\n"
	"   \"phases\": {\"healthy\": " LAT(22, 24, 27) ", \"outage\": " LAT(30, 900, 1000) ",\n"
	"                \"recovered\": " LAT(22, 24, 28) "},\n"
	"   \"breaker_transitions\": [[\n"
	"     {\"t_ms\": 5200, \"provider\": \"primary\", \"model\": \"m\", \"from\": \"closed\","
	" \"to\": \"open\", \"reason\": \"5 consecutive failures\"},\n"
	"     {\"t_ms\": 7250.5, \"provider\": \"primary\", \"model\": \"m\", \"from\": \"open\","
	" \"to\": \"half_open\", \"reason\": null},\n"
	"     {\"t_ms\": 11000, \"provider\": \"primary\", \"model\": \"m\", \"from\": \"half_open\","
	" \"to\": \"closed\", \"reason\": null}]]}}}\n";

static const char direct_csv[] =
	"id,sched_ms,end_ms,latency_ms,status,outcome,provider,tenant,feature,cost_usd\n"
	"d-1,100.5,120.5,20,200,ok,,,,\n"
	"d-2,5100,6100,1000,,timeout,,,,\n"
	"d-3,15000,15021,21,200,ok,,\"t, one\",,\n";

static const char gw_csv[] =
	"id,sched_ms,end_ms,latency_ms,status,outcome,provider,tenant,feature,cost_usd\n"
	"g-1,100,122,22,200,ok,primary,,,\n"
	"g-2,5100,5130,30,200,ok,secondary,,,\n"
	"g-3,5200,6200,1000,502,http_error,,,,\n"
	"g-4,16000,16022,22,200,ok,primary,,,\n";

static void make_stamp(void)
{
	write_file("scenario.json", scenario_json);
	write_file("summary.json", summary_json);
	make_dir("direct");
	make_dir("direct/run-1");
	write_file("direct/run-1/requests.csv", direct_csv);
	make_dir("gw");
	make_dir("gw/run-1");
	write_file("gw/run-1/requests.csv", gw_csv);
	write_file("gw/run-1/events.jsonl", "");
}

static void assert_png(const char *name)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	unsigned char head[8];
	char path[400];
	struct stat st;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/plots/%s.png", dir, name);
	cr_assert_eq(stat(path, &st), 0, "no %s", path);
	cr_expect_gt(st.st_size, 8000, "%s is only %lld bytes", path, (long long)st.st_size);
	fp = fopen(path, "rb");
	cr_assert_not_null(fp);
	cr_assert_eq(fread(head, 1, 8, fp), 8);
	fclose(fp);
	cr_expect_eq(memcmp(head, sig, 8), 0, "%s does not start with the PNG signature", path);
	snprintf(path, sizeof(path), "%s/plots/%s.png.tmp", dir, name);
	cr_expect_neq(stat(path, &st), 0, "%s left behind", path);
	snprintf(path, sizeof(path), "%s/plots/data/%s.log", dir, name);
	cr_expect_neq(stat(path, &st), 0, "%s left behind after a success", path);
}

Test(plot, four_pngs_from_a_stamp, .timeout = 30)
{
	size_t i;

	make_stamp();
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), 0, "plot_stamp: %s", err);
	for (i = 0; i < PLOT_COUNT; i++)
		assert_png(plot_names[i]);
}

/*
 * One setup, one phase, no answer: every percentile null. gnuplot 5.4 died
 * of SIGSEGV drawing the phases' value labels then (timeout-knee's 300 ms
 * point); the plot says "no ok request" instead.
 */
Test(plot, phases_with_no_answer_at_all, .timeout = 30)
{
#define NONE "{\"ok\": " C(0) ", \"latency_ms\": {\"p50\": null, \"p95\": null, \"p99\": null}}"
	static const char none_json[] =
		"{\"scenario\": \"plot-t\", \"time_scale\": 1, \"repeat\": 1, \"setups\": {\n"
		" \"direct\": {\"runs\": 1, \"primary\": \"primary\", \"duration_ms\": 20000,\n"
		"   \"window_ms\": 5000,\n"
		"   \"windows\": [" WIN(0, 5000, C(0), 1) ", " WIN(5000, 10000, C(0), 1) ", "
		WIN(10000, 15000, C(0), 1) ", " WIN(15000, 20000, C(0), 1) "],\n"
		"   \"phases\": {\"steady\": " NONE "},\n"
		"   \"breaker_transitions\": [[]]}}}\n";
#undef NONE

	static const char one_phase_json[] =
		"{\"name\": \"plot-t\", \"duration_s\": 20,\n"
		" \"providers\": [{\"name\": \"primary\", \"ttft_ms\": 20}],\n"
		" \"phases\": [{\"name\": \"steady\", \"from_s\": 0, \"to_s\": 20}],\n"
		" \"load\": {\"concurrency\": 1},\n"
		" \"setups\": [{\"name\": \"direct\", \"kind\": \"direct\", \"provider\": \"primary\"}]}\n";

	write_file("scenario.json", one_phase_json);
	write_file("summary.json", none_json);
	make_dir("direct");
	make_dir("direct/run-1");
	write_file("direct/run-1/requests.csv",
		   "id,sched_ms,end_ms,latency_ms,status,outcome,provider,tenant,feature,cost_usd\n"
		   "d-1,100,1100,1000,,timeout,,,,\n");
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), 0, "plot_stamp: %s", err);
	assert_png("phases");
}

Test(plot, answered_share_per_window, .timeout = 30)
{
	make_stamp();
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), 0, "plot_stamp: %s", err);
	/*
	 * mid_s from_s to_s answered_pct requests interactive_pct batch_pct; a
	 * window with no request is NaN, and so are classes the summary lacks.
	 */
	assert_has("plots/data/answered-direct.dat", "\n2.5 0 5 100 10 NaN NaN\n");
	assert_has("plots/data/answered-direct.dat", "\n7.5 5 10 25 4 NaN NaN\n");
	assert_has("plots/data/answered-direct.dat", "\n12.5 10 15 NaN 0 NaN NaN\n");
	assert_has("plots/data/answered-gw.dat", "\n7.5 5 10 90 10 NaN NaN\n");
	assert_has("plots/data/meta.gp", "\nanswered_classes = 0\n");
}

/* With batch requests the interactive and batch shares are there apart. */
Test(plot, answered_share_per_class, .timeout = 30)
{
	static const char cls[] =
		"\"answered_share\": " C(0.75) ", \"classes\": {\"interactive\": {\"answered_share\": "
		C(0.5) "}, \"batch\": {\"answered_share\": " C(1) "}}}";
	char *text;
	char *at;

	make_stamp();
	text = read_file("summary.json");
	/* The gw setup's outage window gets classes. */
	at = strstr(text, "\"answered_share\": {\"mean\": 0.9,");
	cr_assert_not_null(at);
	{
		char out[16384];
		char *end = strchr(at, '}');

		end = strchr(end + 1, '}');
		snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - text), text, cls, end + 1);
		write_file("summary.json", out);
	}
	free(text);
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), 0, "plot_stamp: %s", err);
	assert_has("plots/data/answered-gw.dat", "\n7.5 5 10 75 10 50 100\n");
	assert_has("plots/data/meta.gp", "\nanswered_classes = 1\n");
	assert_png("answered");
}

/*
 * chaos run hands plot_summary the first runs' requests it loaded for the
 * summaries: the data files are plot_stamp's, byte for byte, and no
 * requests.csv is read again (they are gone when it plots).
 */
Test(plot, given_first_runs_make_the_same_files, .timeout = 30)
{
	static const char *const files[] = { "plots/data/latency-direct.dat",
					     "plots/data/latency-gw.dat", "plots/data/meta.gp",
					     "plots/data/answered-gw.dat", "plots/data/phases.dat" };
	char *want[sizeof(files) / sizeof(files[0])];
	struct rundata rows[2];
	struct plot_run runs[2] = { { "direct", 1, &rows[0] }, { "gw", 1, &rows[1] } };
	char from[400];
	char to[420];
	struct stamp st;
	size_t i;

	make_stamp();
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), 0, "plot_stamp: %s", err);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		want[i] = read_file(files[i]);
		snprintf(from, sizeof(from), "%s/%s", dir, files[i]);
		cr_assert_eq(remove(from), 0);
	}
	cr_assert_eq(stamp_load(&st, dir, err), 0, "stamp_load: %s", err);
	for (i = 0; i < 2; i++) {
		snprintf(from, sizeof(from), "%s/%s/run-1", dir, runs[i].setup);
		cr_assert_eq(rundata_load_requests(&rows[i], from, err), 0, "%s", err);
		snprintf(from, sizeof(from), "%s/%s/run-1/requests.csv", dir, runs[i].setup);
		snprintf(to, sizeof(to), "%s.gone", from);
		cr_assert_eq(rename(from, to), 0);
	}
	cr_assert_eq(plot_summary(dir, st.sc, st.summary, runs, 2, plots_dir(), err, NULL), 0,
		     "plot_summary: %s", err);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *got = read_file(files[i]);

		cr_expect_str_eq(got, want[i], "%s differs", files[i]);
		free(got);
		free(want[i]);
	}
	for (i = 0; i < PLOT_COUNT; i++)
		assert_png(plot_names[i]);
	rundata_free(&rows[0]);
	rundata_free(&rows[1]);
	stamp_free(&st);
}

Test(plot, breaker_steps_from_closed_to_the_end, .timeout = 30)
{
	char *text;

	make_stamp();
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), 0, "plot_stamp: %s", err);
	text = read_file("plots/data/breakers-gw.dat");
	cr_expect_not_null(strstr(text, "# target primary/m\n# t_s state to\n"
				  "0 0 \"start\"\n"
				  "5.2 2 \"open\"\n"
				  "7.2505 1 \"half_open\"\n"
				  "11 0 \"closed\"\n"
				  "20 0 \"end\"\n"), "%s", text);
	free(text);
	/* A direct setup has no breakers: no panel, no file. */
	cr_expect_not(exists("plots/data/breakers-direct.dat"));
	assert_has("plots/data/meta.gp", "brk_panels = 1\n");
	assert_has("plots/data/meta.gp", "array brk_target[1] = ['primary/m']\n");
}

Test(plot, fault_and_kill_windows, .timeout = 30)
{
	make_stamp();
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), 0, "plot_stamp: %s", err);
	assert_has("plots/data/meta.gp", "nfaults = 2\n");
	assert_has("plots/data/meta.gp", "array fault_from[2] = [5, 12]\n");
	assert_has("plots/data/meta.gp", "array fault_to[2] = [10, 15]\n");
	assert_has("plots/data/meta.gp", "array fault_kill[2] = [0, 1]\n");
	assert_has("plots/data/meta.gp",
		   "array fault_label[2] = ['primary: hang', 'secondary: killed']\n");
	assert_has("plots/data/meta.gp", "title_tail = 'plot-t, time scale 1'\n");
	/* 6 s apart on a 20 s timeline: both labels on the top row */
	assert_has("plots/data/meta.gp", "array fault_row[2] = [0, 0]\n");
}

/* Labels of windows near one another get rows of their own. */
Test(plot, near_fault_labels_on_rows_of_their_own, .timeout = 30)
{
	static const char near[] =
		"{\"name\": \"plot-t\", \"duration_s\": 20,\n"
		" \"providers\": [{\"name\": \"primary\", \"faults\": ["
		"   {\"kind\": \"hang\", \"from_s\": 5, \"to_s\": 10},"
		"   {\"kind\": \"down\", \"from_s\": 7, \"to_s\": 9},"
		"   {\"kind\": \"slow\", \"add_ms\": 100, \"from_s\": 15, \"to_s\": 18}]},\n"
		"   {\"name\": \"secondary\", \"faults\": ["
		"   {\"kind\": \"down\", \"from_s\": 7, \"to_s\": 9}]}],\n"
		" \"phases\": [{\"name\": \"healthy\", \"from_s\": 0, \"to_s\": 5},\n"
		"            {\"name\": \"outage\", \"from_s\": 5, \"to_s\": 10},\n"
		"            {\"name\": \"recovered\", \"from_s\": 10, \"to_s\": 20}],\n"
		" \"load\": {\"concurrency\": 1},\n"
		" \"setups\": [{\"name\": \"direct\", \"kind\": \"direct\", \"provider\": \"primary\"},\n"
		"   {\"name\": \"gw\", \"kind\": \"direct\", \"provider\": \"secondary\"}]}\n";

	make_stamp();
	write_file("scenario.json", near);
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), 0, "plot_stamp: %s", err);
	assert_has("plots/data/meta.gp", "array fault_row[4] = [0, 1, 0, 2]\n");
	assert_png("answered");
}

/* A group's fault windows are drawn once, labelled with the group. */
Test(plot, a_groups_fault_windows, .timeout = 30)
{
	static const char grouped[] =
		"{\"name\": \"plot-t\", \"duration_s\": 20,\n"
		" \"providers\": [{\"name\": \"primary\", \"group\": \"eu\", \"faults\": ["
		"   {\"kind\": \"hang\", \"from_s\": 2, \"to_s\": 4}]},\n"
		"   {\"name\": \"secondary\", \"group\": \"eu\"}],\n"
		" \"groups\": {\"eu\": {\"faults\": [{\"kind\": \"down\", \"from_s\": 12,"
		" \"to_s\": 16}, {\"kind\": \"status\", \"from_s\": 17, \"to_s\": 18,"
		" \"probability\": 0.5}]}},\n"
		" \"phases\": [{\"name\": \"healthy\", \"from_s\": 0, \"to_s\": 5},\n"
		"            {\"name\": \"outage\", \"from_s\": 5, \"to_s\": 10},\n"
		"            {\"name\": \"recovered\", \"from_s\": 10, \"to_s\": 20}],\n"
		" \"load\": {\"concurrency\": 1},\n"
		" \"setups\": [{\"name\": \"direct\", \"kind\": \"direct\", \"provider\": \"primary\"},\n"
		"   {\"name\": \"gw\", \"kind\": \"direct\", \"provider\": \"secondary\"}]}\n";

	make_stamp();
	write_file("scenario.json", grouped);
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), 0, "plot_stamp: %s", err);
	assert_has("plots/data/meta.gp", "nfaults = 3\n");
	assert_has("plots/data/meta.gp", "array fault_from[3] = [2, 12, 17]\n");
	assert_has("plots/data/meta.gp",
		   "array fault_label[3] = ['primary: hang', 'group eu: down', "
		   "'group eu: status (p 0.5)']\n");
}

Test(plot, requests_coloured_by_provider, .timeout = 30)
{
	make_stamp();
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), 0, "plot_stamp: %s", err);
	/* t_s latency_ms provider_index ok provider outcome; providers in file order. */
	assert_has("plots/data/meta.gp", "array prov_name[2] = ['primary', 'secondary']\n");
	assert_has("plots/data/latency-gw.dat", "\n5.1 30 2 1 \"secondary\" \"ok\"\n");
	assert_has("plots/data/latency-gw.dat", "\n5.2 1000 0 0 \"none\" \"http_error\"\n");
	/* A direct setup's ok answers are its primary's, as in stats. */
	assert_has("plots/data/latency-direct.dat", "\n0.1005 20 1 1 \"primary\" \"ok\"\n");
	assert_has("plots/data/latency-direct.dat", "\n5.1 1000 0 0 \"none\" \"timeout\"\n");
	assert_has("plots/data/latency-direct.dat", "\n15 21 1 1 \"primary\" \"ok\"\n");
}

Test(plot, percentiles_per_phase, .timeout = 30)
{
	make_stamp();
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), 0, "plot_stamp: %s", err);
	assert_has("plots/data/phases.dat", "\n1 1 20 22 25 5 \"healthy\" \"direct\"\n");
	assert_has("plots/data/phases.dat", "\n2 1 NaN NaN NaN 0 \"outage\" \"direct\"\n");
	assert_has("plots/data/phases.dat", "\n2 2 30 900 1000 5 \"outage\" \"gw\"\n");
	/* 20 ms to 1000 ms: wide enough for a log scale. */
	assert_has("plots/data/meta.gp", "ph_log = 1\n");
}

Test(plot_bad, no_summary_named, .timeout = 30)
{
	write_file("scenario.json", scenario_json);
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), -ENOENT);
	cr_expect_not_null(strstr(err, "summary.json"), "%s", err);
	cr_expect_not_null(strstr(err, dir), "%s", err);
}

Test(plot_bad, malformed_summary_named, .timeout = 30)
{
	make_stamp();
	write_file("summary.json", "{\"scenario\": \"plot-t\", \"time_scale\": 1}");
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), -EINVAL);
	cr_expect_not_null(strstr(err, "summary.json: setups"), "%s", err);
}

Test(plot_bad, no_script_dir, .timeout = 30)
{
	make_stamp();
	cr_assert_eq(plot_stamp(dir, "/nonexistent/plots", err, NULL), -ENOENT);
	cr_expect_not_null(strstr(err, "/nonexistent/plots/answered.gp"), "%s", err);
}

Test(plot_bad, failing_script_quotes_gnuplot, .timeout = 30)
{
	char path[128];
	FILE *fp;

	make_stamp();
	snprintf(scripts, sizeof(scripts), "/tmp/fl-plot-scripts-XXXXXX");
	cr_assert_not_null(mkdtemp(scripts));
	snprintf(path, sizeof(path), "%s/answered.gp", scripts);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("set terminal pngcairo\nset output outfile\nplot no_such_function(x)\n", fp);
	fclose(fp);
	cr_assert_eq(plot_stamp(dir, scripts, err, NULL), -EIO);
	cr_expect_not_null(strstr(err, "answered.gp: gnuplot exited with status 1"), "%s", err);
	cr_expect_not_null(strstr(err, "undefined function"), "%s", err);
	cr_expect_not(exists("plots/answered.png.tmp"));
	cr_expect(exists("plots/data/answered.log"), "the log stays for a failure");
}

Test(plot_bad, no_gnuplot, .timeout = 30)
{
	make_stamp();
	setenv("PATH", "/nonexistent", 1);
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, NULL), -ENOENT);
	cr_expect_not_null(strstr(err, "gnuplot: not found"), "%s", err);
}

/*
 * A data file on a full disk (its .tmp a link to /dev/full: a real
 * ENOSPC): a write error, named with the file; the .tmp is what is left,
 * no file has the final name.
 */
Test(plot_bad, a_data_file_on_a_full_disk, .timeout = 30)
{
	char full[400];
	bool write_failed = false;

	make_stamp();
	make_dir("plots");
	make_dir("plots/data");
	snprintf(full, sizeof(full), "%s/plots/data/answered-direct.dat.tmp", dir);
	cr_assert_eq(symlink("/dev/full", full), 0);
	cr_assert_eq(plot_stamp(dir, plots_dir(), err, &write_failed), -ENOSPC, "%s", err);
	cr_expect(write_failed);
	cr_expect_not_null(strstr(err, "cannot write "), "%s", err);
	cr_expect_not_null(strstr(err, full), "%s", err);
	cr_expect_not_null(strstr(err, "No space left on device"), "%s", err);
	cr_expect_not(exists("plots/data/answered-direct.dat"));
	cr_expect_not(exists("plots/answered.png"));
}

/* gnuplot exits 0 having written something that is no whole PNG: kept as .tmp, said. */
Test(plot_bad, a_png_written_in_part, .timeout = 30)
{
	char path[128];
	bool write_failed = false;
	FILE *fp;

	make_stamp();
	snprintf(scripts, sizeof(scripts), "/tmp/fl-plot-scripts-XXXXXX");
	cr_assert_not_null(mkdtemp(scripts));
	snprintf(path, sizeof(path), "%s/answered.gp", scripts);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("set print outfile\nprint 'the first bytes of a picture'\n", fp);
	fclose(fp);
	cr_assert_eq(plot_stamp(dir, scripts, err, &write_failed), -EIO, "%s", err);
	cr_expect(write_failed);
	cr_expect_not_null(strstr(err, "cannot write "), "%s", err);
	cr_expect_not_null(strstr(err, "plots/answered.png.tmp: gnuplot wrote part of it"), "%s",
			   err);
	cr_expect(exists("plots/answered.png.tmp"), "the part is kept under its .tmp name");
	cr_expect_not(exists("plots/answered.png"));
}
