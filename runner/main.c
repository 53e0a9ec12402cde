/*
 * chaos: the scenario runner. `chaos run SCENARIO` replays a scenario's
 * outage timeline through each of its setups and writes per-request
 * results and summaries; `chaos sweep` runs it over a grid of values;
 * `chaos list` names the scenarios there are. See
 * docs/scenario-format.md for the scenario file and docs/results-format.md
 * for the results layout.
 */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "runner/compare.h"
#include "runner/gate.h"
#include "runner/peers_table.h"
#include "runner/guard.h"
#include "common/opt.h"
#include "runner/plot.h"
#include "runner/report.h"
#include "runner/restamp.h"
#include "runner/run.h"
#include "runner/scenario.h"
#include "runner/sweep.h"

static const char usage_text[] =
	"usage: chaos run SCENARIO [--out DIR] [--time-scale S|ci] [--repeat N] [--setup NAME]\n"
	"                          [--add-setup FILE…] [--stamp STAMP_DIR] [--seed N] [--quiet]\n"
	"       chaos sim SCENARIO [--out DIR] [--time-scale S|ci] [--repeat N] [--setup NAME]\n"
	"                          [--add-setup FILE…] [--stamp STAMP_DIR] [--seed N] [--quiet]\n"
	"       chaos sweep SCENARIO --vary PATH=SPEC [--vary PATH=SPEC …] [--out DIR]\n"
	"                          [--time-scale S|ci] [--repeat N] [--setup NAME] [--jobs 1]\n"
	"                          [--sim] [--quiet]\n"
	"       chaos sweep --resume SWEEP_DIR [--quiet]\n"
	"       chaos report STAMP_DIR|SWEEP_DIR\n"
	"       chaos gate STAMP_DIR|SWEEP_DIR [--baseline FILE] [--save-baseline FILE]\n"
	"                          [--objective SETUP]\n"
	"       chaos compare REAL_STAMP SIM_STAMP [--setup NAME] [--json FILE]\n"
	"       chaos plot STAMP_DIR|SWEEP_DIR\n"
	"       chaos list [DIR]\n"
	"       chaos peers-table [--out FILE] [--title TEXT] [--note TEXT] STAMP_DIR...\n"
	"\n"
	"run   replays SCENARIO (a JSON file) through each of its setups: mock providers\n"
	"      on its fault timeline, the setup, loadgen on the shared t0, its actions;\n"
	"      results go to DIR/NAME/STAMP/SETUP/run-K/ and DIR/NAME/STAMP/summary.json\n"
	"  --out DIR         results root (default: results)\n"
	"  --time-scale S    multiply every duration by S (0 < S <= 100; default 1)\n"
	"  --time-scale ci   the scale the scenario gives CI, its ci.time_scale (1 if none)\n"
	"  --repeat N        runs per setup (1-100; default 1)\n"
	"  --setup NAME      run this setup alone\n"
	"  --add-setup FILE  add the setups of FILE (a setup object or an array of them)\n"
	"                    to the scenario's for this run and its stamp (repeatable)\n"
	"  --stamp DIR       run into an existing stamp of the same scenario and time scale:\n"
	"                    the setups run (--setup's, else --add-setup's, else all) replace\n"
	"                    theirs, the others' results stay; the report covers them all\n"
	"  --seed N          the scenario's seed instead of its own (0 or more)\n"
	"  --quiet           no line per run on stderr\n"
	"sim   the same runs in virtual time, through the gateway's own decision code,\n"
	"      with modelled providers, network and load: the same files, in a moment;\n"
	"      the same scenario and seed give byte-identical per-run files; external\n"
	"      setups are skipped (options: as for run)\n"
	"sweep runs SCENARIO once per point of a grid of values, each point a whole run\n"
	"      into DIR/NAME/STAMP-sweep/POINT/, with sweep.json and sweep.csv beside them\n"
	"  --vary PATH=SPEC  the value at PATH (setups.gw.config.providers.p.timeout_ms)\n"
	"                    takes each of SPEC: V1,V2,… or FROM..TO/STEP; several make a grid\n"
	"  --jobs N          points at a time: 1 (points measure latency on a shared machine)\n"
	"  --resume DIR      go on with a sweep folder: its points not done run again\n"
	"  --sim             simulate each point (chaos sim): seconds for a large grid\n"
	"  (--out, --time-scale, --repeat, --setup, --quiet: as for run)\n"
	"report  recomputes a results directory's summaries and report.md from its\n"
	"      per-request files, and prints the table\n"
	"gate  checks a results directory against its scenario's expect block and,\n"
	"      with --baseline, against a saved summary; exit 1 when a check breaks;\n"
	"      a sweep's: every done point against its own (no --baseline)\n"
	"  --objective SETUP  also judge the setups SETUP (a name or glob) against the\n"
	"                    scenario's objective\n"
	"compare  holds SIM_STAMP (chaos sim's) to REAL_STAMP, the run it models: per\n"
	"      setup and phase the real figure, the simulated one, the difference and\n"
	"      its bound; exit 1 when a difference is out of bounds\n"
	"  --setup NAME      compare this setup alone\n"
	"  --json FILE       also write the rows to FILE as JSON\n"
	"plot  draws a results directory's plots (STAMP/plots/*.png) with gnuplot\n"
	"list  the scenarios in DIR (default: scenarios) with their descriptions\n"
	"peers-table  one markdown comparison of several stamps (faultline's setups and\n"
	"      other gateways'), per scenario, phase and setup (docs/peers.md)\n"
	"  --out FILE        write it to FILE (through FILE.tmp), not stdout\n"
	"  --title TEXT      its heading\n"
	"  --note TEXT       a paragraph under the heading\n"
	"\n"
	"Exit status: 0 every run completed; 1 a run failed or a file could not be\n"
	"written; 2 a bad command line or scenario; 130/143 stopped by SIGINT/SIGTERM.\n";

/* Where mockprov, gateway and loadgen are: $FAULTLINE_BIN, else beside chaos. */
static void find_bin_dir(char *out, size_t len)
{
	const char *env = getenv("FAULTLINE_BIN");
	char self[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		snprintf(out, len, "bin");
		return;
	}
	self[n] = '\0';
	snprintf(out, len, "%s", dirname(self));
}

/* Where the gnuplot scripts are: $FAULTLINE_PLOTS, else BIN/../plots, else plots. */
static void find_plots_dir(const char *bin_dir, char *out, size_t len)
{
	const char *env = getenv("FAULTLINE_PLOTS");
	char probe[PATH_MAX + 32];

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return;
	}
	snprintf(probe, sizeof(probe), "%.*s/../plots/answered.gp", PATH_MAX - 1, bin_dir);
	if (access(probe, R_OK) == 0) {
		snprintf(out, len, "%.*s/../plots", (int)(len - 16), bin_dir);
		return;
	}
	snprintf(out, len, "plots");
}

/* Children started from now on die with this process (guard.h); 0, or 1 after saying why. */
static int guard_children(void)
{
	int rc = guard_init();

	if (rc)
		fprintf(stderr, "chaos: cannot set up the children's lifeline: %s\n", strerror(-rc));
	return rc ? 1 : 0;
}

static int cmd_plot(int argc, char **argv)
{
	char bin_dir[PATH_MAX];
	char plots[PATH_MAX];
	char err[CFG_ERR_LEN];
	bool write_failed = false;

	if (argc != 3 || argv[2][0] == '-')
		opt_usage_error("chaos", "plot takes one results directory (DIR/NAME/STAMP)");
	find_bin_dir(bin_dir, sizeof(bin_dir));
	find_plots_dir(bin_dir, plots, sizeof(plots));
	if (guard_children())
		return 1;
	if (sweep_is_dir(argv[2]))
		return sweep_plot_command(argv[2], plots, stdout);
	if (plot_stamp(argv[2], plots, err, &write_failed)) {
		fprintf(stderr, "chaos: %s\n", err);
		return write_failed ? 1 : 2;
	}
	printf("plots: %s/plots/ (%s, %s, %s, %s .png)\n", argv[2], plot_names[0], plot_names[1],
	       plot_names[2], plot_names[3]);
	return 0;
}

static int cmd_list(int argc, char **argv)
{
	const char *dir = argc > 2 ? argv[2] : "scenarios";
	char pattern[PATH_MAX];
	char err[CFG_ERR_LEN];
	glob_t g;
	size_t i;
	int bad = 0;

	if (argc > 3)
		opt_usage_error("chaos", "list takes at most one directory");
	snprintf(pattern, sizeof(pattern), "%s/*.json", dir);
	if (glob(pattern, 0, NULL, &g) != 0) {
		printf("no scenarios in %s\n", dir);
		return 0;
	}
	for (i = 0; i < g.gl_pathc; i++) {
		struct scenario sc;

		if (scenario_load(g.gl_pathv[i], 1, &sc, err)) {
			fprintf(stderr, "chaos: %s\n", err);
			bad = 1;
			continue;
		}
		printf("%-24s %6.0f s  %zu setup%s  %s\n", sc.name, sc.duration_ms / 1000, sc.nsetups,
		       sc.nsetups == 1 ? " " : "s", sc.description);
		scenario_free(&sc);
	}
	globfree(&g);
	return bad ? 2 : 0;
}

/* The most --add-setup files a run takes. */
#define MAX_ADD_SETUP 16

/*
 * --stamp: whether this run can go into the stamp o->stamp_dir, replacing
 * the setups it runs (restamp_check). Returns 0, or -EINVAL with err.
 */
static int check_stamp(const struct scenario *sc, const struct chaos_opts *o, char *err)
{
	const char **names = calloc(sc->nsetups, sizeof(*names));
	size_t n = 0;
	size_t i;
	int rc;

	if (!names) {
		snprintf(err, CFG_ERR_LEN, "--stamp: out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < sc->nsetups; i++) {
		if (chaos_setup_selected(sc, o, i) && !(o->sim && sc->setups[i].kind == SC_EXTERNAL))
			names[n++] = sc->setups[i].name;
	}
	rc = restamp_check(o->stamp_dir, sc, o->sim, names, n, err);
	free(names);
	return rc;
}

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "time-scale", required_argument, NULL, 's' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "setup", required_argument, NULL, 'S' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "seed", required_argument, NULL, 'e' },
		{ "add-setup", required_argument, NULL, 'A' },
		{ "stamp", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct chaos_opts o = { .out_dir = "results", .repeat = 1, .verbose = true };
	const char *added[MAX_ADD_SETUP];
	size_t nadded = 0;
	bool have_out = false;
	const char *cmd = argv[1];
	bool have_seed = false;
	uint64_t seed = 0;
	char bin_dir[PATH_MAX];
	char plots[PATH_MAX];
	char err[CFG_ERR_LEN];
	struct scenario sc;
	const char *path;
	const char *val;
	double scale = 1;
	bool ci_scale = false;
	int64_t v;
	size_t i;
	int c;
	int rc;

	if (argc >= 3 && strcmp(argv[2], "--help") == 0) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc < 3 || argv[2][0] == '-')
		opt_usage_error("chaos", "%s needs a SCENARIO file", cmd);
	o.sim = strcmp(cmd, "sim") == 0;
	path = argv[2];
	/* opt_next reads argv from optind: start after "run SCENARIO". */
	optind = 3;
	while ((c = opt_next("chaos", argc, argv, NULL, opts, &val)) != -1) {
		switch (c) {
		case 'o':
			o.out_dir = val;
			have_out = true;
			break;
		case 's':
			ci_scale = strcmp(val, "ci") == 0;
			if (!ci_scale && opt_parse_double(val, 1e-6, SC_SCALE_MAX, &scale))
				opt_usage_error("chaos", "--time-scale: expected a number above 0 and "
						"at most %g, or ci, got \"%s\"", SC_SCALE_MAX, val);
			break;
		case 'r':
			if (opt_parse_i64(val, 1, 100, &v))
				opt_usage_error("chaos", "--repeat: expected a whole number from 1 to "
						"100, got \"%s\"", val);
			o.repeat = (unsigned)v;
			break;
		case 'S':
			o.only_setup = val;
			break;
		case 'q':
			o.verbose = false;
			break;
		case 'A':
			if (nadded == MAX_ADD_SETUP)
				opt_usage_error("chaos", "--add-setup: at most %d files", MAX_ADD_SETUP);
			added[nadded++] = val;
			break;
		case 'T':
			o.stamp_dir = val;
			o.into_stamp = true;
			break;
		case 'e':
			if (opt_parse_i64(val, 0, INT64_MAX, &v))
				opt_usage_error("chaos", "--seed: expected a whole number of at least 0, "
						"got \"%s\"", val);
			seed = (uint64_t)v;
			have_seed = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		}
	}
	if (have_out && o.into_stamp)
		opt_usage_error("chaos", "--stamp and --out: the stamp is where the results go");
	if (ci_scale && scenario_ci_scale(path, &scale, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		return 2;
	}
	if (scenario_load(path, scale, &sc, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		return 2;
	}
	for (i = 0; i < nadded; i++) {
		if (scenario_add_setups(&sc, added[i], err)) {
			fprintf(stderr, "chaos: --add-setup: %s\n", err);
			scenario_free(&sc);
			return 2;
		}
	}
	if (have_seed)
		sc.seed = seed;
	if (o.only_setup) {
		for (i = 0; i < sc.nsetups && strcmp(sc.setups[i].name, o.only_setup); i++)
			;
		/* A setup an earlier --add-setup put into the stamp: run it again from there. */
		if (i == sc.nsetups && o.into_stamp) {
			int arc = restamp_add_stamp_setup(&sc, o.stamp_dir, o.only_setup, err);

			if (arc && arc != -ENOENT) {
				fprintf(stderr, "chaos: --setup: %s\n", err);
				scenario_free(&sc);
				return 2;
			}
			for (i = 0; i < sc.nsetups && strcmp(sc.setups[i].name, o.only_setup); i++)
				;
		}
		if (i == sc.nsetups) {
			fprintf(stderr, "chaos: --setup: %s has no setup called \"%s\"%s\n", path,
				o.only_setup, nadded ? ", nor do the --add-setup files" : "");
			scenario_free(&sc);
			return 2;
		}
		if (o.sim && sc.setups[i].kind == SC_EXTERNAL) {
			fprintf(stderr, "chaos: --setup: %s is an external gateway, which the "
				"simulator cannot run: it runs faultline's own gateway code\n",
				o.only_setup);
			scenario_free(&sc);
			return 2;
		}
	}
	if (o.sim && scenario_sim_check(&sc, o.only_setup, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		scenario_free(&sc);
		return 2;
	}
	if (o.into_stamp && check_stamp(&sc, &o, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		scenario_free(&sc);
		return 2;
	}
	find_bin_dir(bin_dir, sizeof(bin_dir));
	find_plots_dir(bin_dir, plots, sizeof(plots));
	o.bin_dir = bin_dir;
	o.plots_dir = plots;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);	/* a file past RLIMIT_FSIZE: a write error to report, not a death */
	if (guard_children()) {
		scenario_free(&sc);
		return 1;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "chaos: cannot initialise libcurl\n");
		scenario_free(&sc);
		return 1;
	}
	rc = chaos_run(&sc, &o);
	curl_global_cleanup();
	scenario_free(&sc);
	return rc;
}

/* Most --vary a sweep takes: more would be a grid past VARY_MAX_POINTS anyway. */
#define SWEEP_MAX_VARY 16

static int cmd_sweep(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "vary", required_argument, NULL, 'v' },
		{ "resume", required_argument, NULL, 'R' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "out", required_argument, NULL, 'o' },
		{ "time-scale", required_argument, NULL, 's' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "setup", required_argument, NULL, 'S' },
		{ "sim", no_argument, NULL, 'm' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sweep_opts o = { .out_dir = "results", .repeat = 1, .scale = 1 };
	const char *vary[SWEEP_MAX_VARY];
	char bin_dir[PATH_MAX];
	char plots[PATH_MAX];
	bool planned = false;		/* a flag of a new sweep's plan was given */
	const char *val;
	int64_t v;
	int c;
	int rc;

	optind = 2;
	if (argc >= 3 && argv[2][0] != '-') {
		o.scenario_path = argv[2];
		optind = 3;
	}
	while ((c = opt_next("chaos", argc, argv, NULL, opts, &val)) != -1) {
		switch (c) {
		case 'v':
			if (o.nvary == SWEEP_MAX_VARY)
				opt_usage_error("chaos", "--vary: at most %d of them", SWEEP_MAX_VARY);
			vary[o.nvary++] = val;
			break;
		case 'R':
			o.resume_dir = val;
			break;
		case 'j':
			if (opt_parse_i64(val, 1, 1, &v))
				opt_usage_error("chaos", "--jobs: expected 1 (points run one at a time: "
						"each measures latency, and two at once on a shared "
						"machine would disturb each other), got \"%s\"", val);
			break;
		case 'o':
			o.out_dir = val;
			planned = true;
			break;
		case 's':
			o.ci_scale = strcmp(val, "ci") == 0;
			if (!o.ci_scale && opt_parse_double(val, 1e-6, SC_SCALE_MAX, &o.scale))
				opt_usage_error("chaos", "--time-scale: expected a number above 0 and "
						"at most %g, or ci, got \"%s\"", SC_SCALE_MAX, val);
			planned = true;
			break;
		case 'r':
			if (opt_parse_i64(val, 1, 100, &v))
				opt_usage_error("chaos", "--repeat: expected a whole number from 1 to "
						"100, got \"%s\"", val);
			o.repeat = (unsigned)v;
			planned = true;
			break;
		case 'm':
			o.sim = true;
			planned = true;
			break;
		case 'S':
			o.only_setup = val;
			planned = true;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		}
	}
	o.vary = vary;
	if (o.resume_dir && (o.scenario_path || o.nvary || planned))
		opt_usage_error("chaos", "sweep --resume takes the sweep folder alone (and --quiet): "
				"its plan is its sweep.json's");
	if (!o.resume_dir && !o.scenario_path)
		opt_usage_error("chaos", "sweep needs a SCENARIO file (or --resume SWEEP_DIR)");
	if (!o.resume_dir && !o.nvary)
		opt_usage_error("chaos", "sweep needs at least one --vary PATH=V1,V2,…");
	find_bin_dir(bin_dir, sizeof(bin_dir));
	find_plots_dir(bin_dir, plots, sizeof(plots));
	o.bin_dir = bin_dir;
	o.plots_dir = plots;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	if (guard_children())
		return 1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "chaos: cannot initialise libcurl\n");
		return 1;
	}
	rc = sweep_command(&o);
	curl_global_cleanup();
	return rc;
}

static int cmd_gate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "baseline", required_argument, NULL, 'b' },
		{ "save-baseline", required_argument, NULL, 's' },
		{ "objective", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	const char *baseline = NULL;
	const char *save = NULL;
	const char *objective = NULL;
	const char *val;
	int c;

	if (argc < 3 || argv[2][0] == '-')
		opt_usage_error("chaos", "gate needs a results directory (DIR/NAME/STAMP)");
	optind = 3;
	while ((c = opt_next("chaos", argc, argv, NULL, opts, &val)) != -1) {
		if (c == 'b')
			baseline = val;
		else if (c == 's')
			save = val;
		else if (c == 'o')
			objective = val;
	}
	if (sweep_is_dir(argv[2])) {
		if (baseline || save) {
			fprintf(stderr, "chaos: gate: %s is a sweep: its points are gated against "
				"their own expect blocks, not a baseline\n", argv[2]);
			return 2;
		}
		return sweep_gate_command(argv[2], objective, stdout);
	}
	return gate_command(argv[2], baseline, save, objective, stdout);
}

static int cmd_compare(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "setup", required_argument, NULL, 'S' },
		{ "json", required_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	const char *setup = NULL;
	const char *json = NULL;
	const char *val;
	int c;

	if (argc < 4 || argv[2][0] == '-' || argv[3][0] == '-')
		opt_usage_error("chaos", "compare needs two results directories: REAL_STAMP "
				"SIM_STAMP");
	optind = 4;
	while ((c = opt_next("chaos", argc, argv, NULL, opts, &val)) != -1) {
		if (c == 'S')
			setup = val;
		else if (c == 'j')
			json = val;
	}
	return compare_command(argv[2], argv[3], setup, json, stdout);
}

int main(int argc, char **argv)
{
	/* The runner starts its children through itself (guard.h); not for people. */
	if (argc >= 2 && strcmp(argv[1], "_guard") == 0)
		return guard_main(argc, argv);
	if (argc < 2)
		opt_usage_error("chaos", "a command is required: run, sweep or list");
	/*
	 * A key for the mock providers, which take any: a scenario's gateway
	 * names it in api_key_env, as an Anthropic target must send one
	 * (docs/scenario-format.md). A value the caller set is kept.
	 */
	setenv("FAULTLINE_MOCK_API_KEY", "faultline-mock-key", 0);
	if (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "sim") == 0)
		return cmd_run(argc, argv);
	if (strcmp(argv[1], "sweep") == 0)
		return cmd_sweep(argc, argv);
	if (strcmp(argv[1], "list") == 0)
		return cmd_list(argc, argv);
	if (strcmp(argv[1], "gate") == 0)
		return cmd_gate(argc, argv);
	if (strcmp(argv[1], "compare") == 0)
		return cmd_compare(argc, argv);
	if (strcmp(argv[1], "plot") == 0)
		return cmd_plot(argc, argv);
	if (strcmp(argv[1], "peers-table") == 0)
		return peers_table_main(argc, argv);
	if (strcmp(argv[1], "report") == 0) {
		if (argc != 3 || argv[2][0] == '-')
			opt_usage_error("chaos", "report takes one results directory (DIR/NAME/STAMP)");
		if (sweep_is_dir(argv[2]))
			return sweep_report_command(argv[2], stdout);
		return report_command(argv[2], stdout);
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		fputs(usage_text, stdout);
		return 0;
	}
	opt_usage_error("chaos", "unknown command \"%s\" (run, sim, sweep, report, gate, compare, "
			"plot, list or peers-table)",
			argv[1]);
}
