/*
 * peers_table: `chaos peers-table` — the peer comparison's one report.
 * Reads each stamp's summary.json (and scenario.json, for the setups'
 * kinds), groups the stamps by scenario and writes, per scenario, a
 * markdown table of every phase and setup and, where requests streamed,
 * a second one saying what the streams' clients got. A figure a summary
 * does not hold prints as "—", so stamps written before or after a
 * summary key was added read alike.
 */
#include "runner/peers_table.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "runner/outfile.h"

#define PT_ERR_LEN 512
#define DASH "—"

static const char usage_text[] =
	"usage: chaos peers-table [--out FILE] [--title TEXT] [--note TEXT] STAMP_DIR...\n"
	"\n"
	"One markdown comparison of the stamps' setups (faultline's own and other\n"
	"gateways'), per scenario, phase and setup, from each STAMP_DIR/summary.json:\n"
	"answered share, p50/p95/p99, upstream requests per answer, fallback share,\n"
	"stop ms, and for streams what the client got. Stamps of one scenario are\n"
	"merged. A figure a summary lacks prints as a dash.\n"
	"  --out FILE     write it to FILE (through FILE.tmp and a rename), not stdout\n"
	"  --title TEXT   the first heading (default: Peer comparison)\n"
	"  --note TEXT    markdown put under the heading (how and where it was measured)\n"
	"\n"
	"Exit status: 0; 1 FILE could not be written; 2 a bad command line or a stamp\n"
	"without a readable summary.json.\n";

/* One stamp: its directory, its summary and (when there) its scenario copy. */
struct stamp {
	const char *dir;
	cJSON *summary;
	cJSON *scenario;	/* NULL: no scenario.json */
	const char *name;	/* summary's "scenario" */
	bool done;		/* written with an earlier stamp of its scenario */
};

/*
 * A number of a combined summary: key's value under o, either a figure
 * ({mean, …}: its mean) or a plain number. false when o has no such
 * number.
 */
static bool fig(const cJSON *o, const char *key, double *v)
{
	const cJSON *it = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;

	if (cJSON_IsObject(it))
		it = cJSON_GetObjectItemCaseSensitive(it, "mean");
	if (!cJSON_IsNumber(it))
		return false;
	*v = it->valuedouble;
	return true;
}

/* fig of key inside o's member outer (latency_ms.p95). */
static bool fig2(const cJSON *o, const char *outer, const char *key, double *v)
{
	const cJSON *in = o ? cJSON_GetObjectItemCaseSensitive(o, outer) : NULL;

	return cJSON_IsObject(in) && fig(in, key, v);
}

/* A label: key's string under o, or the first run's string of a list. */
static const char *label(const cJSON *o, const char *key)
{
	const cJSON *it = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;

	if (cJSON_IsArray(it))
		it = cJSON_GetArrayItem(it, 0);
	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static void put_num(struct buf *b, bool have, double v, int decimals)
{
	if (!have) {
		buf_puts(b, " " DASH " |");
		return;
	}
	buf_puts(b, " ");
	buf_put_fixed(b, v, decimals);
	buf_puts(b, " |");
}

static void put_share(struct buf *b, bool have, double v)
{
	if (!have) {
		buf_puts(b, " " DASH " |");
		return;
	}
	buf_puts(b, " ");
	buf_put_fixed(b, v * 100.0, 1);
	buf_puts(b, "% |");
}

static void put_text(struct buf *b, const char *s)
{
	buf_printf(b, " %s |", s && *s ? s : DASH);
}

/* The kind of setup name in the stamp's scenario.json ("gateway", "external"…), or NULL. */
static const char *setup_kind(const struct stamp *st, const char *name)
{
	const cJSON *setups = st->scenario ?
		cJSON_GetObjectItemCaseSensitive(st->scenario, "setups") : NULL;
	const cJSON *s;

	cJSON_ArrayForEach(s, setups) {
		const char *n = json_get_string(s, "name");

		if (n && strcmp(n, name) == 0)
			return json_get_string(s, "kind");
	}
	return NULL;
}

/*
 * What a phase's stream clients got, in words: "error event" (the server
 * ended the stream with an SSE error), "silent cut" (it ended without
 * [DONE] or a word), "hang" (silence until the client's own stall timeout
 * or, before any token, its request timeout), "HTTP error" (an error
 * status instead of a stream), "refused" (no connection, or one reset
 * before an answer); "clean" when every stream finished. Several are
 * joined with " + ", the most frequent first.
 */
static void client_got(const cJSON *ph, char *out, size_t len)
{
	double events = 0, silent = 0, stalls = 0, cuts = 0, hang = 0;
	double http = 0, refused = 0, reset = 0;
	const char *word[5];
	double n[5];
	size_t k = 0;
	size_t i;
	size_t j;

	fig(ph, "error_events", &events);
	fig(ph, "silent_breaks", &silent);
	fig(ph, "stalls", &stalls);
	fig(ph, "truncations", &cuts);
	fig2(ph, "outcomes", "timeout", &hang);
	fig2(ph, "outcomes", "http_error", &http);
	fig2(ph, "outcomes", "refused", &refused);
	fig2(ph, "outcomes", "reset", &reset);
	/* A silent break is a cut, or a stall (a hang) when there were more stalls. */
	if (events > 0) {
		word[k] = "error event";
		n[k++] = events;
	}
	if (silent > 0 && cuts >= stalls) {
		word[k] = "silent cut";
		n[k++] = silent;
	} else {
		hang += silent;
	}
	if (hang > 0) {
		word[k] = "hang";
		n[k++] = hang;
	}
	if (http > 0) {
		word[k] = "HTTP error";
		n[k++] = http;
	}
	if (refused + reset > 0) {
		word[k] = "refused";
		n[k++] = refused + reset;
	}
	for (i = 1; i < k; i++) {	/* most frequent first: five at most */
		for (j = i; j > 0 && n[j] > n[j - 1]; j--) {
			const char *w = word[j];
			double x = n[j];

			word[j] = word[j - 1];
			n[j] = n[j - 1];
			word[j - 1] = w;
			n[j - 1] = x;
		}
	}
	if (k == 0) {
		snprintf(out, len, "clean");
		return;
	}
	out[0] = '\0';
	for (i = 0; i < k; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? " + " : "", word[i]);
}

/* The phases of a setup, or NULL. */
static const cJSON *setup_phases(const cJSON *setup)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(setup, "phases");

	return cJSON_IsObject(p) ? p : NULL;
}

/*
 * The figures of one phase and setup as a row of the main table:
 * answered, p50/p95/p99, upstream requests per answer (the summary's
 * upstream_per_answer when it has one, else upstream_requests / ok),
 * requests that reached the primary (primary_requests, else the
 * primary's attempts in upstream_by_provider), fallback share, stop ms, and the
 * label of where the upstream figures came from.
 */
static void main_row(struct buf *b, const struct stamp *st, const char *phase,
		     const char *name, const cJSON *setup, const cJSON *ph)
{
	const char *kind = setup_kind(st, name);
	const char *source = label(ph, "upstream_source");
	double v = 0, up = 0, ok = 0;
	bool have;

	if (!source)
		source = label(setup, "upstream_source");
	if (!source)
		source = label(ph, "join");
	if (!source)
		source = label(setup, "join");
	buf_printf(b, "| %s | %s | %s |", phase, name, kind ? kind : DASH);
	have = fig(ph, "requests", &v);
	put_num(b, have, v, 0);
	have = fig(ph, "answered_share", &v);
	put_share(b, have, v);
	have = fig2(ph, "latency_ms", "p50", &v);
	put_num(b, have, v, 1);
	have = fig2(ph, "latency_ms", "p95", &v);
	put_num(b, have, v, 1);
	have = fig2(ph, "latency_ms", "p99", &v);
	put_num(b, have, v, 1);
	have = fig(ph, "upstream_per_answer", &v);
	if (!have && fig(ph, "upstream_requests", &up) && fig(ph, "ok", &ok) && ok > 0) {
		v = up / ok;
		have = true;
	}
	put_num(b, have, v, 2);
	have = fig(ph, "primary_requests", &v);
	if (!have) {	/* the primary's own log: its attempts in the phase */
		const cJSON *by = cJSON_GetObjectItemCaseSensitive(ph, "upstream_by_provider");
		const char *primary = json_get_string(setup, "primary");

		have = primary && fig2(by, primary, "attempts", &v);
	}
	put_num(b, have, v, 0);
	have = fig(ph, "fallback_share", &v);
	put_share(b, have, v);
	have = fig(ph, "stop_ms", &v);
	put_num(b, have, v, 0);
	put_text(b, source);
	buf_puts(b, "\n");
}

/* The streams table's row of one phase and setup (one with streams). */
static void stream_row(struct buf *b, const char *phase, const char *name, const cJSON *ph)
{
	char got[64];
	double v = 0;
	bool have;

	client_got(ph, got, sizeof(got));
	buf_printf(b, "| %s | %s |", phase, name);
	have = fig(ph, "streams", &v);
	put_num(b, have, v, 0);
	have = fig(ph, "error_events", &v);
	put_num(b, have, v, 0);
	have = fig(ph, "silent_breaks", &v);
	put_num(b, have, v, 0);
	have = fig(ph, "stalls", &v);
	put_num(b, have, v, 0);
	have = fig(ph, "truncations", &v);
	put_num(b, have, v, 0);
	have = fig2(ph, "outcomes", "timeout", &v);
	put_num(b, have, v, 0);
	have = fig2(ph, "ttft_ms", "p95", &v);
	put_num(b, have, v, 1);
	have = fig(ph, "max_gap_ms", &v);
	put_num(b, have, v, 0);
	buf_printf(b, " %s |\n", got);
}

/* Whether any setup of the group's stamps has a phase with streams. */
static bool group_streams(struct stamp *sts, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const cJSON *setups = cJSON_GetObjectItemCaseSensitive(sts[i].summary, "setups");
		const cJSON *s;

		if (strcmp(sts[i].name, name) != 0)
			continue;
		cJSON_ArrayForEach(s, setups) {
			const cJSON *ph;

			cJSON_ArrayForEach(ph, setup_phases(s)) {
				double v = 0;

				if (fig(ph, "streams", &v) && v > 0)
					return true;
			}
		}
	}
	return false;
}

/*
 * Every row of one table for scenario name: for each phase (in the first
 * stamp's order), each setup of each of the scenario's stamps in turn.
 * streams: the streams table's rows (phases with streams only).
 */
static void group_rows(struct buf *b, struct stamp *sts, size_t n, const char *name,
		       bool streams)
{
	const cJSON *first = NULL;
	const cJSON *phase;
	size_t i;

	for (i = 0; i < n && !first; i++) {
		const cJSON *s;

		if (strcmp(sts[i].name, name) != 0)
			continue;
		cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(sts[i].summary, "setups")) {
			if (setup_phases(s)) {
				first = setup_phases(s);
				break;
			}
		}
	}
	cJSON_ArrayForEach(phase, first) {
		for (i = 0; i < n; i++) {
			const cJSON *setups;
			const cJSON *s;

			if (strcmp(sts[i].name, name) != 0)
				continue;
			setups = cJSON_GetObjectItemCaseSensitive(sts[i].summary, "setups");
			cJSON_ArrayForEach(s, setups) {
				const cJSON *ph = cJSON_GetObjectItemCaseSensitive(setup_phases(s),
										 phase->string);
				double v = 0;

				if (!ph)
					continue;
				if (!streams)
					main_row(b, &sts[i], phase->string, s->string, s, ph);
				else if (fig(ph, "streams", &v) && v > 0)
					stream_row(b, phase->string, s->string, ph);
			}
		}
	}
}

/* The section of one scenario: its stamps, its table and, with streams, the second. */
static void group_write(struct buf *b, struct stamp *sts, size_t n, size_t at)
{
	const char *name = sts[at].name;
	double scale = 0;
	size_t i;

	buf_printf(b, "\n## %s\n\n", name);
	for (i = at; i < n; i++) {
		if (strcmp(sts[i].name, name) != 0)
			continue;
		sts[i].done = true;
		buf_printf(b, "- `%s`", sts[i].dir);
		if (fig(sts[i].summary, "time_scale", &scale)) {
			buf_puts(b, ", time scale ");
			buf_put_fixed(b, scale, 3);
		}
		if (fig(sts[i].summary, "repeat", &scale))
			buf_printf(b, ", %g run(s) a setup", scale);
		buf_puts(b, "\n");
	}
	buf_puts(b, "\n| phase | setup | kind | requests | answered | p50 ms | p95 ms | p99 ms "
		 "| upstream / answer | to primary | fallback | stop ms | upstream from |\n"
		 "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
	group_rows(b, sts, n, name, false);
	if (!group_streams(sts, n, name))
		return;
	buf_puts(b, "\nStreams — what the client got:\n\n"
		 "| phase | setup | streams | error events | silent breaks | stalled | truncated "
		 "| timeouts | TTFT p95 ms | max gap ms | client got |\n"
		 "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
	group_rows(b, sts, n, name, true);
}

/* Loads dir's summary.json (required) and scenario.json (optional) into st. */
static int stamp_load(struct stamp *st, const char *dir, char *err)
{
	char *path = buf_aprintf("%s/summary.json", dir);

	st->dir = dir;
	if (!path)
		return -ENOMEM;
	st->summary = json_load_file(path, err, PT_ERR_LEN);
	free(path);
	if (!st->summary)
		return -EINVAL;
	st->name = json_get_string(st->summary, "scenario");
	if (!st->name || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(st->summary, "setups"))) {
		snprintf(err, PT_ERR_LEN, "%s/summary.json: expected a stamp's summary (with "
			 "\"scenario\" and \"setups\")", dir);
		return -EINVAL;
	}
	path = buf_aprintf("%s/scenario.json", dir);
	if (!path)
		return -ENOMEM;
	st->scenario = json_load_file(path, err, PT_ERR_LEN);	/* optional */
	err[0] = '\0';
	free(path);
	return 0;
}

static const char legend[] =
	"\nPer scenario, phase and setup, from each stamp's `summary.json` (means over a "
	"setup's runs): *answered* is ok / requests; *p50–p99* the latency of answered "
	"requests; *upstream / answer* the providers' logged attempts for the phase's "
	"requests per answered request (1.00: no extra work); *to primary* the attempts "
	"that reached the primary; *fallback* the share of answers from another provider "
	"than the primary; *stop ms* from the phase's start to the last request the primary "
	"got before its first silence of 1 s × the time scale (no request arriving, none in "
	"progress): when the setup stopped sending to it; *upstream from* how "
	"the upstream figures were joined. A dash: the summary has no such figure. For "
	"streams: *error events* ended with an SSE error event (the client is told), "
	"*silent breaks* stalled or cut without one, *stalled* silent past the client's "
	"stall timeout, *truncated* ended without `[DONE]`, *timeouts* no first token within "
	"the client's timeout.\n";

int peers_table_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, 't' },
		{ "note", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[PT_ERR_LEN] = "";
	const char *out = NULL;
	const char *title = "Peer comparison";
	const char *note = NULL;
	struct stamp *sts = NULL;
	struct buf b = { 0 };
	size_t n = 0;
	size_t i;
	int status = 2;
	int c;

	optind = 2;
	for (;;) {
		c = getopt_long(argc, argv, "", longopts, NULL);
		if (c == -1)
			break;
		if (c == 'o') {
			out = optarg;
		} else if (c == 't') {
			title = optarg;
		} else if (c == 'n') {
			note = optarg;
		} else if (c == 'h') {
			fputs(usage_text, stdout);
			return 0;
		} else {
			fputs(usage_text, stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "chaos: peers-table: at least one STAMP_DIR is required\n");
		return 2;
	}
	n = (size_t)(argc - optind);
	sts = calloc(n, sizeof(*sts));
	if (!sts)
		goto out_oom;
	for (i = 0; i < n; i++) {
		int rc = stamp_load(&sts[i], argv[optind + (int)i], err);

		if (rc == -ENOMEM)
			goto out_oom;
		if (rc) {
			fprintf(stderr, "chaos: peers-table: %s\n", err);
			goto out_free;
		}
	}
	buf_printf(&b, "# %s\n", title);
	if (note)
		buf_printf(&b, "\n%s\n", note);
	buf_puts(&b, legend);
	for (i = 0; i < n; i++) {
		if (!sts[i].done)
			group_write(&b, sts, n, i);
	}
	if (!b.data)
		goto out_oom;
	if (!out) {
		fputs(b.data, stdout);
		status = fflush(stdout) == 0 ? 0 : 1;
		goto out_free;
	}
	if (outfile_write_text(out, b.data, err, sizeof(err))) {
		fprintf(stderr, "chaos: %s\n", err);
		status = 1;
		goto out_free;
	}
	status = 0;
	goto out_free;
out_oom:
	fprintf(stderr, "chaos: peers-table: out of memory\n");
	status = 1;
out_free:
	for (i = 0; sts && i < n; i++) {
		cJSON_Delete(sts[i].summary);
		cJSON_Delete(sts[i].scenario);
	}
	free(sts);
	buf_free(&b);
	return status;
}
