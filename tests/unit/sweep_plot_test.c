/*
 * runner sweep_data and sweep_plot: hand-made sweep folders (sweep.json and sweep.csv as
 * the sweep spec has them) — the data files' rows worked out by hand (NaN
 * for an empty cell, a block per series, series split by setup, phase and
 * the other varied paths, rows by the first varied value), the knee per
 * setup and phase as JSON, the PNGs the real plots/sweep-*.gp scripts make
 * with gnuplot, and bad input: no sweep.csv, no figure columns, a header
 * that does not match sweep.json, a point sweep.json lacks.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cfg.h"
#include "runner/sweep_plot.h"
#include "tests/support/tmpdir.h"

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "sweep"), 0);
	err[0] = '\0';
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(sweep_plot, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(sweep_plot_bad, .init = setup, .fini = teardown, .timeout = 30);

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

#define TIMEOUT_PATH "setups.gw.config.providers.primary.timeout_ms"
#define FALL_PATH "setups.gw.config.health.fall"

/* One varied path, timeout_ms: 300, 800, 1500; 2 repeats; 3 points done. */
static const char sweep_json[] =
	"{\"scenario\": \"outage-hang\", \"scenario_file\": \"scenarios/outage-hang.json\",\n"
	" \"time_scale\": 0.1, \"repeat\": 2, \"setup\": null,\n"
	" \"vary\": [{\"path\": \"" TIMEOUT_PATH "\", \"values\": [300, 800, 1500]}],\n"
	" \"points\": [\n"
	"  {\"index\": 1, \"dir\": \"p001-timeout_ms=300\", \"values\": {\"" TIMEOUT_PATH "\": 300},"
	" \"status\": \"done\"},\n"
	"  {\"index\": 2, \"dir\": \"p002-timeout_ms=800\", \"values\": {\"" TIMEOUT_PATH "\": 800},"
	" \"status\": \"done\"},\n"
	"  {\"index\": 3, \"dir\": \"p003-timeout_ms=1500\", \"values\": {\"" TIMEOUT_PATH "\": 1500},"
	" \"status\": \"done\"}],\n"
	" \"knee\": null, \"best\": null}\n";

/*
 * The header: point, dir, the varied paths, setup, phase, runs, 13 figure
 * pairs, objective, broken.
 */
#define FIGS \
	"answered_share,answered_share_sd,latency_p50_ms,latency_p50_ms_sd,latency_p95_ms," \
	"latency_p95_ms_sd,latency_p99_ms,latency_p99_ms_sd,attempts_per_request," \
	"attempts_per_request_sd,duplicate_share,duplicate_share_sd,cost_per_answered_usd," \
	"cost_per_answered_usd_sd,time_to_open_ms,time_to_open_ms_sd,time_to_primary_ms," \
	"time_to_primary_ms_sd,fallback_share,fallback_share_sd,time_to_close_ms," \
	"time_to_close_ms_sd,exposed_requests,exposed_requests_sd,check_rate_per_s," \
	"check_rate_per_s_sd,objective,broken\n"

/*
 * A row: answered_share (sd 0.01), latency_p95_ms (sd 5), duplicate_share
 * (sd 0.002), time_to_open_ms and check_rate_per_s as given, every other
 * figure empty; objective and broken as given.
 */
/* dirname as it stands in the CSV: quoted when it holds a comma. */
#define ROW(pt, dirname, vals, setup, phase, ans, p95, dup, open, rate, obj, broken) \
	#pt "," dirname "," vals "," setup "," phase ",2," ans ",0.01,,," p95 ",5,,,,," dup \
	",0.002,,," open ",,,,,,,,,," rate ",," obj "," broken "\n"

#define P1 "1,p001-timeout_ms=300"
#define P2 "2,p002-timeout_ms=800"
#define P3 "3,p003-timeout_ms=1500"

static const char sweep_csv[] =
	"point,dir," TIMEOUT_PATH ",setup,phase,runs," FIGS
	ROW(1, "p001-timeout_ms=300", "300", "direct", "healthy", "1", "40", "", "", "", "", "")
	ROW(1, "p001-timeout_ms=300", "300", "direct", "outage", "0.5", "300", "", "", "", "fails",
	    "\"answered_min 0.5<0.98; p95_ms_max 300>250, say\"")
	ROW(1, "p001-timeout_ms=300", "300", "gw", "healthy", "1", "42", "0.05", "", "8", "", "")
	ROW(1, "p001-timeout_ms=300", "300", "gw", "outage", "0.99", "320", "0.2", "250", "10",
	    "meets", "")
	ROW(2, "p002-timeout_ms=800", "800", "direct", "healthy", "1", "40", "0", "", "", "", "")
	ROW(2, "p002-timeout_ms=800", "800", "direct", "outage", "0.5", "800", "0", "", "", "fails",
	    "")
	ROW(2, "p002-timeout_ms=800", "800", "gw", "healthy", "1", "41", "0.01", "", "4", "", "")
	ROW(2, "p002-timeout_ms=800", "800", "gw", "outage", "0.97", "820", "0.06", "600", "4",
	    "meets", "")
	ROW(3, "p003-timeout_ms=1500", "1500", "direct", "healthy", "1", "40", "0", "", "", "", "")
	ROW(3, "p003-timeout_ms=1500", "1500", "direct", "outage", "0.5", "1500", "0", "", "",
	    "fails", "")
	ROW(3, "p003-timeout_ms=1500", "1500", "gw", "healthy", "1", "40", "0", "", "2", "", "")
	ROW(3, "p003-timeout_ms=1500", "1500", "gw", "outage", "0.9", "1520", "0.01", "1100", "2",
	    "fails", "answered_min 0.9<0.98");

static void make_sweep(void)
{
	write_file("sweep.json", sweep_json);
	write_file("sweep.csv", sweep_csv);
}

/* Two varied paths (timeout_ms × fall), one setup and phase, 4 points, 1 repeat. */
static const char grid_json[] =
	"{\"scenario\": \"grid\", \"time_scale\": 1, \"repeat\": 1,\n"
	" \"vary\": [{\"path\": \"" TIMEOUT_PATH "\", \"values\": [1500, 50]},\n"
	"          {\"path\": \"" FALL_PATH "\", \"values\": [2, 3]}],\n"
	" \"points\": [\n"
	"  {\"index\": 1, \"dir\": \"p001-timeout_ms=1500,fall=2\", \"values\": {\"" TIMEOUT_PATH
	"\": 1500, \"" FALL_PATH "\": 2}},\n"
	"  {\"index\": 2, \"dir\": \"p002-timeout_ms=1500,fall=3\", \"values\": {\"" TIMEOUT_PATH
	"\": 1500, \"" FALL_PATH "\": 3}},\n"
	"  {\"index\": 3, \"dir\": \"p003-timeout_ms=50,fall=2\", \"values\": {\"" TIMEOUT_PATH
	"\": 50, \"" FALL_PATH "\": 2}},\n"
	"  {\"index\": 4, \"dir\": \"p004-timeout_ms=50,fall=3\", \"values\": {\"" TIMEOUT_PATH
	"\": 50, \"" FALL_PATH "\": 3}}]}\n";

static const char grid_csv[] =
	"point,dir," TIMEOUT_PATH "," FALL_PATH ",setup,phase,runs," FIGS
	ROW(1, "\"p001-timeout_ms=1500,fall=2\"", "1500,2", "gw", "outage", "0.9", "1500", "0.01", "900",
	    "2", "", "")
	ROW(2, "\"p002-timeout_ms=1500,fall=3\"", "1500,3", "gw", "outage", "0.88", "1600", "0.01",
	    "1300", "2", "", "")
	ROW(3, "\"p003-timeout_ms=50,fall=2\"", "50,2", "gw", "outage", "0.99", "200", "0.3", "300",
	    "20", "", "")
	ROW(4, "\"p004-timeout_ms=50,fall=3\"", "50,3", "gw", "outage", "0.98", "210", "0.25", "450",
	    "20", "", "");

static void make_grid(void)
{
	write_file("sweep.json", grid_json);
	write_file("sweep.csv", grid_csv);
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

/* ---- the data files ---- */

/*
 * series.dat: a block a setup × phase, in sweep.csv's order, rows by
 * timeout; x "value" point runs, then each figure's mean and sd, NaN for an
 * empty cell.
 */
Test(sweep_plot, series_rows_and_blocks)
{
	char *text;
	char *b2;
	char *b3;

	make_sweep();
	cr_assert_eq(sweep_plot_files(dir, plots_dir(), 1, NULL, false, err, NULL), 0, "%s", err);
	text = read_file("plots/data/series.dat");
	b2 = strstr(text, "# series 2: direct / outage\n");
	b3 = strstr(text, "# series 3: gw / healthy\n");
	cr_assert_not_null(strstr(text, "# series 1: direct / healthy\n"), "%s", text);
	cr_assert_not_null(b2, "%s", text);
	cr_assert_not_null(b3, "%s", text);
	cr_assert_not_null(strstr(text, "# series 4: gw / outage\n"), "%s", text);
	cr_expect_null(strstr(text, "# series 5"), "%s", text);
	/* Blocks two blank lines apart. */
	cr_expect_eq(strncmp(b2 - 2, "\n\n", 2), 0);
	cr_expect_not_null(strstr(text,
		"\n300 \"300\" 1 2 1 0.01 NaN NaN 40 5 NaN NaN NaN NaN NaN 0.002 NaN NaN NaN NaN "
		"NaN NaN NaN NaN NaN NaN NaN NaN NaN NaN\n"
		"800 \"800\" 2 2 1 0.01 NaN NaN 40 5 NaN NaN NaN NaN 0 0.002 NaN NaN NaN NaN "
		"NaN NaN NaN NaN NaN NaN NaN NaN NaN NaN\n"
		"1500 \"1500\" 3 2 1 0.01 NaN NaN 40 5 NaN NaN NaN NaN 0 0.002 NaN NaN NaN NaN "
		"NaN NaN NaN NaN NaN NaN NaN NaN NaN NaN\n\n\n# series 2"), "%s", text);
	cr_expect_not_null(strstr(text,
		"\n1500 \"1500\" 3 2 0.9 0.01 NaN NaN 1520 5 NaN NaN NaN NaN 0.01 0.002 NaN NaN "
		"1100 NaN NaN NaN NaN NaN NaN NaN NaN NaN 2 NaN\n"), "%s", text);
	free(text);
	assert_has("plots/data/meta.gp", "nseries = 4\n");
	assert_has("plots/data/meta.gp",
		   "array series_name[4] = ['direct / healthy', 'direct / outage', 'gw / healthy', "
		   "'gw / outage']\n");
	assert_has("plots/data/meta.gp", "x_path = '" TIMEOUT_PATH "'\n");
	assert_has("plots/data/meta.gp", "x_leaf = 'timeout_ms'\n");
	assert_has("plots/data/meta.gp", "x_numeric = 1\n");
	assert_has("plots/data/meta.gp", "x_log = 0\n");	/* 300 to 1500: 5× */
	assert_has("plots/data/meta.gp", "error_bars = 1\n");
	assert_has("plots/data/meta.gp", "array fig_col[13] = [5, 7, 9, 11, 13, 15, 17, 19, 21, 23, "
		   "25, 27, 29]\n");
	assert_has("plots/data/meta.gp", "array fig_scale[13] = [100, 1, 1, 1, 1, 100, 1, 1, 1, "
		   "100, 1, 1, 1]\n");
	assert_has("plots/data/meta.gp", "title_tail = 'outage-hang sweep, time scale 0.1, 2 runs "
		   "a point'\n");
}

/*
 * Two varied paths: the series split by the second (fall=2, fall=3), rows
 * by the first, ascending whatever sweep.json's order; 50 to 1500 is
 * more than 20×: a log axis. One repeat: no error bars.
 */
Test(sweep_plot, a_grid_splits_series_by_the_other_paths)
{
	char *text;

	make_grid();
	cr_assert_eq(sweep_plot_files(dir, plots_dir(), 1, NULL, false, err, NULL), 0, "%s", err);
	text = read_file("plots/data/series.dat");
	cr_expect_not_null(strstr(text, "# series 1: gw / outage fall=2\n"
					"# x value point runs answered_share answered_share_sd"),
			   "%s", text);
	cr_expect_not_null(strstr(text, "\n50 \"50\" 3 2 0.99 0.01 NaN NaN 200 5 "), "%s", text);
	cr_expect_not_null(strstr(text, " 20 NaN\n1500 \"1500\" 1 2 0.9 0.01 NaN NaN 1500 5 "),
			   "%s", text);
	cr_expect_not_null(strstr(text, "# series 2: gw / outage fall=3\n"), "%s", text);
	cr_expect_not_null(strstr(text, "\n50 \"50\" 4 2 0.98 "), "%s", text);
	free(text);
	assert_has("plots/data/meta.gp", "x_log = 1\n");
	assert_has("plots/data/meta.gp", "error_bars = 0\n");
	assert_has("plots/data/meta.gp", "array xval[2] = [1500, 50]\n");
	/* The knee's points are labelled with every varied value, named. */
	assert_has("plots/data/knee.dat", "\n0.01 0.9 \"timeout_ms=1500, fall=2\" 1 1 ");
	assert_has("plots/data/knee-mark.dat", "\"knee: timeout_ms=");
}

/* Values that are not all numbers: a category axis, x their place from 1. */
Test(sweep_plot, string_values_make_a_category_axis)
{
	static const char json[] =
		"{\"scenario\": \"pol\", \"vary\": [{\"path\": \"setups.gw.config.policy\","
		" \"values\": [\"fast\", \"safe\"]}],\n"
		" \"points\": [{\"index\": 1, \"dir\": \"p001-policy=fast\", \"values\":"
		" {\"setups.gw.config.policy\": \"fast\"}},\n"
		"  {\"index\": 2, \"dir\": \"p002-policy=safe\", \"values\":"
		" {\"setups.gw.config.policy\": \"safe\"}}]}\n";
	static const char csv[] =
		"point,dir,setups.gw.config.policy,setup,phase,runs," FIGS
		ROW(2, "p002-policy=safe", "safe", "gw", "outage", "0.99", "900", "0.01", "", "", "",
		    "")
		ROW(1, "p001-policy=fast", "fast", "gw", "outage", "0.95", "300", "0.2", "", "", "",
		    "");

	write_file("sweep.json", json);
	write_file("sweep.csv", csv);
	cr_assert_eq(sweep_plot_files(dir, plots_dir(), 1, NULL, false, err, NULL), 0, "%s", err);
	assert_has("plots/data/meta.gp", "x_numeric = 0\n");
	assert_has("plots/data/meta.gp", "array xval_label[2] = ['fast', 'safe']\n");
	assert_has("plots/data/meta.gp", "array xval[2] = [1, 2]\n");
	assert_has("plots/data/series.dat", "\n1 \"fast\" 1 2 0.95 0.01 NaN NaN 300 5 ");
	assert_has("plots/data/series.dat", "\n2 \"safe\" 2 2 0.99 0.01 NaN NaN 900 5 ");
	/* safe dominates fast: the frontier is safe alone. */
	assert_has("plots/data/knee-mark.dat", "\n0.01 0.99 \"knee: policy=safe\" 1\n");
}

/*
 * knee.dat, knee-frontier.dat, knee-mark.dat: gw/outage's frontier is
 * 1500 (0.01, 0.9), 800 (0.06, 0.97), 300 (0.2, 0.99); at k = 1 the step
 * 1500 → 800 costs 0.05/0.07 ≈ 0.71, taken, 800 → 300 costs 0.14/0.02 = 7,
 * not: the knee is 800.
 */
Test(sweep_plot, knee_files_per_setup_and_phase)
{
	char *text;

	make_sweep();
	cr_assert_eq(sweep_plot_files(dir, plots_dir(), 1, NULL, false, err, NULL), 0, "%s", err);
	text = read_file("plots/data/knee.dat");
	cr_expect_not_null(strstr(text, "# series 4: gw / outage\n# duplicate_share answered_share "
				  "values point on_frontier is_knee\n"
				  "0.2 0.99 \"300\" 1 1 0\n"
				  "0.06 0.97 \"800\" 2 1 1\n"
				  "0.01 0.9 \"1500\" 3 1 0\n"), "%s", text);
	/* direct/outage: 300 has no duplicate share; 800 and 1500 tie, 800 stands for both. */
	cr_expect_not_null(strstr(text, "# series 2: direct / outage\n# duplicate_share "
				  "answered_share values point on_frontier is_knee\n"
				  "NaN 0.5 \"300\" 1 0 0\n"
				  "0 0.5 \"800\" 2 1 1\n"
				  "0 0.5 \"1500\" 3 0 0\n"), "%s", text);
	free(text);
	assert_has("plots/data/knee-frontier.dat", "# series 4: gw / outage\n# duplicate_share "
		   "answered_share point\n0.01 0.9 3\n0.06 0.97 2\n0.2 0.99 1\n");
	assert_has("plots/data/knee-mark.dat", "\n0.06 0.97 \"knee: timeout_ms=800\" 4\n");
	assert_has("plots/data/knee-mark.dat", "\n0 1 \"knee: timeout_ms=1500\" 3\n");
	assert_has("plots/data/meta.gp", "nknee = 4\n");
	assert_has("plots/data/meta.gp", "knee_phase = ''\n");
}

/* With a knee phase, one series per setup, over its rows of that phase. */
Test(sweep_plot, knee_phase_keeps_one_series_per_setup)
{
	make_sweep();
	cr_assert_eq(sweep_plot_files(dir, plots_dir(), 8, "outage", false, err, NULL), 0, "%s",
		     err);
	assert_has("plots/data/meta.gp", "array knee_name[2] = ['direct', 'gw']\n");
	assert_has("plots/data/meta.gp", "knee_phase = 'outage'\n");
	/* k = 8: 800 → 300 (7) is worth it too. */
	assert_has("plots/data/knee-mark.dat", "\n0.2 0.99 \"knee: timeout_ms=300\" 2\n");
}

/* The trade-off's rows: check rate, time to open, per setup × phase. */
Test(sweep_plot, tradeoff_rows)
{
	make_sweep();
	cr_assert_eq(sweep_plot_files(dir, plots_dir(), 1, NULL, false, err, NULL), 0, "%s", err);
	/* x: the steady rate, the point's first phase's (8, 4, 2), not the faulted one's (10…) */
	assert_has("plots/data/tradeoff.dat", "# series 4: gw / outage\n# steady_check_rate_per_s "
		   "time_to_open_ms values point\n8 250 \"300\" 1\n4 600 \"800\" 2\n"
		   "2 1100 \"1500\" 3\n");
	assert_has("plots/data/tradeoff.dat", "# series 1: direct / healthy\n# "
		   "steady_check_rate_per_s time_to_open_ms values point\nNaN NaN \"300\" 1\n");
	assert_has("plots/data/meta.gp", "ntrade = 4\n");
}

/* The knee per setup × phase as JSON, for sweep.json and the command's output. */
Test(sweep_plot, knees_as_json)
{
	struct sweep_data d;
	cJSON *knees = NULL;
	char *text;

	make_sweep();
	cr_assert_eq(sweep_data_load(&d, dir, err), 0, "%s", err);
	cr_assert_eq(sweep_knees(&d, 1, "outage", &knees, err), 0, "%s", err);
	text = cJSON_PrintUnformatted(knees);
	cr_expect_str_eq(text,
		"[{\"setup\":\"direct\",\"phase\":\"outage\",\"point\":2,\"dir\":\"p002-timeout_ms=800\","
		"\"values\":{\"" TIMEOUT_PATH "\":800},\"duplicate_share\":0,\"answered_share\":0.5},"
		"{\"setup\":\"gw\",\"phase\":\"outage\",\"point\":2,\"dir\":\"p002-timeout_ms=800\","
		"\"values\":{\"" TIMEOUT_PATH "\":800},\"duplicate_share\":0.06,"
		"\"answered_share\":0.97}]");
	free(text);
	cJSON_Delete(knees);
	cr_expect_eq(sweep_knees(&d, 1, "recovered", &knees, err), -EINVAL);
	cr_expect_not_null(strstr(err, "no row of phase \"recovered\""), "%s", err);
	cr_expect_eq(sweep_knees(&d, -1, NULL, &knees, err), -EINVAL);
	cr_expect_null(knees);
	sweep_data_free(&d);
}

/*
 * More series than a plot draws: every one in the data, the count said;
 * no plot for a figure whose values are all in series it does not draw.
 */
Test(sweep_plot, series_past_the_cap)
{
	struct sweep_data d;
	char csv[16384];
	size_t len;
	int i;

	make_sweep();
	len = (size_t)snprintf(csv, sizeof(csv), "point,dir," TIMEOUT_PATH ",setup,phase,runs," FIGS);
	/* latency_p99_ms has a value in the 15th series alone, which no plot draws. */
	for (i = 0; i < SWEEP_PLOT_MAX_SERIES + 3; i++)
		len += (size_t)snprintf(csv + len, sizeof(csv) - len,
			"1,p001-timeout_ms=300,300,gw,phase%02d,2,0.9,0.01,,,100,5,%s,,,,0.1,0.002,"
			",,,,,,,,,,,,,,,\n", i, i == SWEEP_PLOT_MAX_SERIES + 2 ? "7" : "");
	write_file("sweep.csv", csv);
	cr_assert_eq(sweep_data_load(&d, dir, err), 0, "%s", err);
	sweep_data_free(&d);
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, NULL), 0, "%s", err);
	assert_has("plots/data/meta.gp", "nseries = 15\nnseries_shown = 12\n");
	assert_has("plots/data/series.dat", "# series 15: gw / phase14\n");
	assert_has("plots/data/series.dat", "\n300 \"300\" 1 2 0.9 0.01 NaN NaN 100 5 7 NaN ");
	assert_png("answered_share");
	cr_expect_not(exists("plots/latency_p99_ms.png"), "a plot with no point it draws");
}

/* ---- the PNGs ---- */

/*
 * The real scripts and gnuplot: a PNG per figure with a value, the knee
 * and the trade-off; none for the figures every row leaves empty.
 */
Test(sweep_plot, pngs_from_a_sweep)
{
	static const char *const made[] = { "answered_share", "latency_p95_ms", "duplicate_share",
					     "time_to_open_ms", "check_rate_per_s", "knee",
					     "tradeoff" };
	size_t i;

	make_sweep();
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, NULL), 0, "%s", err);
	for (i = 0; i < sizeof(made) / sizeof(made[0]); i++)
		assert_png(made[i]);
	cr_expect_not(exists("plots/latency_p50_ms.png"));
	cr_expect_not(exists("plots/time_to_close_ms.png"));
}

Test(sweep_plot, pngs_from_a_grid)
{
	make_grid();
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, "outage", err, NULL), 0, "%s", err);
	assert_png("answered_share");
	assert_png("knee");
	assert_png("tradeoff");
}

/* No time_to_open_ms with check_rate_per_s in any row: no trade-off plot. */
Test(sweep_plot, no_tradeoff_without_its_values)
{
	static const char json[] =
		"{\"scenario\": \"one\", \"vary\": [{\"path\": \"a.b\", \"values\": [1]}],\n"
		" \"points\": [{\"index\": 1, \"dir\": \"p001-b=1\", \"values\": {\"a.b\": 1}}]}\n";
	static const char csv[] =
		"point,dir,a.b,setup,phase,runs,answered_share,answered_share_sd,duplicate_share,"
		"duplicate_share_sd\n"
		"1,p001-b=1,1,gw,all,1,0.9,0,0.1,0\n";

	write_file("sweep.json", json);
	write_file("sweep.csv", csv);
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, NULL), 0, "%s", err);
	assert_png("answered_share");
	assert_png("knee");
	cr_expect_not(exists("plots/tradeoff.png"));
	cr_expect_not(exists("plots/data/tradeoff.dat"));
}

/* ---- bad input ---- */

Test(sweep_plot_bad, no_sweep_csv)
{
	write_file("sweep.json", sweep_json);
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, NULL), -ENOENT);
	cr_expect_not_null(strstr(err, "/sweep.csv: No such file"), "%s", err);
	cr_expect_not_null(strstr(err, dir), "%s", err);
}

Test(sweep_plot_bad, no_sweep_json)
{
	write_file("sweep.csv", sweep_csv);
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, NULL), -ENOENT);
	cr_expect_not_null(strstr(err, "/sweep.json: no such file"), "%s", err);
}

Test(sweep_plot_bad, no_figure_columns)
{
	write_file("sweep.json", sweep_json);
	write_file("sweep.csv", "point,dir," TIMEOUT_PATH ",setup,phase,runs,objective,broken\n"
		   "1,p001-timeout_ms=300,300,gw,outage,2,meets,\n");
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, NULL), -EINVAL);
	cr_expect_not_null(strstr(err, "/sweep.csv:1: no figure columns"), "%s", err);
}

Test(sweep_plot_bad, no_knee_figures)
{
	write_file("sweep.json", sweep_json);
	write_file("sweep.csv", "point,dir," TIMEOUT_PATH ",setup,phase,runs,answered_share,"
		   "answered_share_sd\n1,p001-timeout_ms=300,300,gw,outage,2,0.9,0\n");
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, NULL), -EINVAL);
	cr_expect_not_null(strstr(err, "/sweep.csv:1: no duplicate_share column"), "%s", err);
}

/* The varied columns must be sweep.json's paths, in order. */
Test(sweep_plot_bad, header_not_matching_the_varied_paths)
{
	write_file("sweep.json", sweep_json);
	write_file("sweep.csv", "point,dir,setups.gw.timeout_ms,setup,phase,runs," FIGS);
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, NULL), -EINVAL);
	cr_expect_not_null(strstr(err, "/sweep.csv:1: column 3 is \"setups.gw.timeout_ms\", "
				  "expected \"" TIMEOUT_PATH "\""), "%s", err);
}

Test(sweep_plot_bad, a_figure_without_its_sd)
{
	write_file("sweep.json", sweep_json);
	write_file("sweep.csv", "point,dir," TIMEOUT_PATH ",setup,phase,runs,answered_share,"
		   "duplicate_share,duplicate_share_sd\n");
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, NULL), -EINVAL);
	cr_expect_not_null(strstr(err, "/sweep.csv:1: column 8 is \"duplicate_share\": expected "
				  "\"answered_share_sd\""), "%s", err);
}

Test(sweep_plot_bad, a_point_sweep_json_lacks)
{
	char csv[8192];

	write_file("sweep.json", sweep_json);
	snprintf(csv, sizeof(csv), "%s9,p009-timeout_ms=300,300,gw,outage,2,0.9,0.01,,,1,5,,,,,"
		 "0.1,0.002,,,,,,,,,,,,,,,,\n", sweep_csv);
	write_file("sweep.csv", csv);
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, NULL), -EINVAL);
	cr_expect_not_null(strstr(err, "/sweep.csv:14: point 9 is not among "), "%s", err);
}

Test(sweep_plot_bad, a_cell_that_is_no_number)
{
	char *csv = strdup(sweep_csv);
	char *at = strstr(csv, ",0.99,");

	cr_assert_not_null(at);
	memcpy(at + 1, "abc.", 4);
	write_file("sweep.json", sweep_json);
	write_file("sweep.csv", csv);
	free(csv);
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, NULL), -EINVAL);
	cr_expect_not_null(strstr(err, "/sweep.csv:5: column \"answered_share\": \"abc.\" is not "
				  "a number"), "%s", err);
}

Test(sweep_plot_bad, a_failing_script_is_named)
{
	char scripts[64];
	FILE *fp;
	char path[128];

	make_sweep();
	snprintf(scripts, sizeof(scripts), "/tmp/fl-sweep-scripts-XXXXXX");
	cr_assert_not_null(mkdtemp(scripts));
	snprintf(path, sizeof(path), "%s/sweep-figure.gp", scripts);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("set terminal pngcairo\nset output outfile\nplot no_such_function(x)\n", fp);
	fclose(fp);
	cr_assert_eq(sweep_plot(dir, scripts, 1, NULL, err, NULL), -EIO);
	cr_expect_not_null(strstr(err, "sweep-figure.gp: gnuplot exited with status 1"), "%s", err);
	cr_expect_not_null(strstr(err, "undefined function"), "%s", err);
	cr_expect(exists("plots/data/answered_share.log"), "the log stays for a failure");
	tmpdir_remove(scripts);
}

/*
 * A data file on a full disk (its .tmp a link to /dev/full): a write
 * error naming the file, write_failed set, the .tmp left and no file of
 * the final name.
 */
Test(sweep_plot_bad, a_data_file_on_a_full_disk)
{
	char full[400];
	bool write_failed = false;

	make_sweep();
	cr_assert_eq(tmpdir_mkdir(dir, "plots"), 0);
	cr_assert_eq(tmpdir_mkdir(dir, "plots/data"), 0);
	snprintf(full, sizeof(full), "%s/plots/data/series.dat.tmp", dir);
	cr_assert_eq(symlink("/dev/full", full), 0);
	cr_assert_eq(sweep_plot(dir, plots_dir(), 1, NULL, err, &write_failed), -ENOSPC, "%s", err);
	cr_expect(write_failed);
	cr_expect_not_null(strstr(err, "cannot write "), "%s", err);
	cr_expect_not_null(strstr(err, full), "%s", err);
	cr_expect_not(exists("plots/data/series.dat"));
	cr_expect_not(exists("plots/answered_share.png"));
}
