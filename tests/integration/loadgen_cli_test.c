/*
 * loadgen's command line as a user meets it: each bad flag or mix file
 * exits with status 2 before anything is sent or written, with a message on
 * stderr that names the flag (or the file and the key) and what was
 * expected; --help prints the usage and exits 0.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/harness.h"
#include "tests/support/lgharness.h"

static void teardown(void)
{
	lg_cleanup();
}

TestSuite(loadgen_cli, .fini = teardown);

/* A results dir that does not exist yet (in a new temp dir). */
static const char *new_out(char *out, size_t len)
{
	char dir[64];

	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
	snprintf(out, len, "%s/out", dir);
	return out;
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/*
 * Runs loadgen with args (plus --out, a fresh dir) and asserts exit status
 * 2, that stderr holds every one of needles, and that the results dir was
 * not created.
 */
static void usage_error(const char *const args[], const char *const needles[])
{
	char out[128];
	struct lg_proc p;
	double t = now_ms();
	int rc;
	size_t i;

	rc = lg_run(&p, new_out(out, sizeof(out)), args, 10);
	cr_assert_eq(rc, 2, "exit status %d, expected 2; stderr:\n%s", rc, p.err);
	for (i = 0; needles[i]; i++)
		cr_assert_not_null(strstr(p.err, needles[i]), "stderr does not mention \"%s\":\n%s",
				   needles[i], p.err);
	cr_assert_str_empty(p.out, "a usage error wrote to stdout: %s", p.out);
	cr_assert_not(exists(out), "a usage error created %s", out);
	/* Refused at once, without trying to reach anything. */
	cr_assert_lt(now_ms() - t, 5000);
}

/* Writes a mix file into a new temp dir; returns its path in out. */
static const char *mix_file(const char *text, char *out, size_t len)
{
	char dir[64];

	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
	cr_assert_not_null(write_file(dir, "mix.json", text, out, len));
	return out;
}

#define OK_TARGET "http://127.0.0.1:9/v1"

Test(loadgen_cli, bad_url, .timeout = 10)
{
	usage_error((const char *[]){ "--target", "not a url", "--duration", "1s", "--rate", "5",
				      NULL },
		    (const char *[]){ "--target", "not a url", NULL });
}

Test(loadgen_cli, ftp_url, .timeout = 10)
{
	usage_error((const char *[]){ "--target", "ftp://127.0.0.1/v1", "--duration", "1s",
				      "--rate", "5", NULL },
		    (const char *[]){ "--target", "http://", "ftp://127.0.0.1/v1", NULL });
}

Test(loadgen_cli, remote_target_needs_allow_remote, .timeout = 10)
{
	usage_error((const char *[]){ "--target", "http://192.0.2.1/", "--duration", "1s",
				      "--rate", "5", NULL },
		    (const char *[]){ "--target", "192.0.2.1", "loopback", "--allow-remote",
				      NULL });
}

Test(loadgen_cli, remote_target_among_local_ones, .timeout = 10)
{
	/* One remote target is enough to refuse the whole run. */
	usage_error((const char *[]){ "--target", OK_TARGET, "--target",
				      "http://[::ffff:192.0.2.1]:80/", "--duration", "1s",
				      "--rate", "5", NULL },
		    (const char *[]){ "--target", "192.0.2.1", "--allow-remote", NULL });
}

Test(loadgen_cli, bad_duration, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "10x", "--rate",
				      "5", NULL },
		    (const char *[]){ "--duration", "10x", NULL });
}

Test(loadgen_cli, zero_duration, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "0s", "--rate",
				      "5", NULL },
		    (const char *[]){ "--duration", "0s", NULL });
}

Test(loadgen_cli, zero_rate, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate",
				      "0", NULL },
		    (const char *[]){ "--rate", "\"0\"", NULL });
}

Test(loadgen_cli, negative_rate, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate",
				      "-5", NULL },
		    (const char *[]){ "--rate", "\"-5\"", NULL });
}

Test(loadgen_cli, missing_out, .timeout = 10)
{
	struct lg_proc p;
	int rc;

	rc = lg_run(&p, NULL, (const char *[]){ "--target", OK_TARGET, "--duration", "1s",
						"--rate", "5", NULL }, 10);
	cr_assert_eq(rc, 2, "exit status %d; stderr:\n%s", rc, p.err);
	cr_assert_not_null(strstr(p.err, "--out"), "stderr:\n%s", p.err);
}

Test(loadgen_cli, missing_rate_and_concurrency, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", NULL },
		    (const char *[]){ "--rate", "--concurrency", NULL });
}

Test(loadgen_cli, rate_and_concurrency_together, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate",
				      "5", "--concurrency", "2", NULL },
		    (const char *[]){ "--rate", "--concurrency", NULL });
}

Test(loadgen_cli, mix_bad_value_names_file_and_key, .timeout = 10)
{
	char mix[128];

	mix_file("{\"streams\":[{\"name\":\"a\",\"rate\":-1}]}", mix, sizeof(mix));
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--mix", mix,
				      NULL },
		    (const char *[]){ mix, "streams[0].rate", NULL });
}

Test(loadgen_cli, mix_bad_response_format_names_file_and_key, .timeout = 10)
{
	char mix[128];

	mix_file("{\"streams\":[{\"name\":\"a\",\"rate\":5},"
		 "{\"name\":\"b\",\"rate\":5,\"response_format\":{\"json_schema\":{}}}]}",
		 mix, sizeof(mix));
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--mix", mix,
				      NULL },
		    (const char *[]){ mix, "streams[1].response_format",
				      "an object with a string \"type\"", NULL });
}

Test(loadgen_cli, mix_bad_prompts_names_file_and_key, .timeout = 10)
{
	char mix[128];

	mix_file("{\"streams\":[{\"name\":\"a\",\"rate\":5,\"prompts\":-3}]}", mix, sizeof(mix));
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--mix", mix,
				      NULL },
		    (const char *[]){ mix, "streams[0].prompts", "got -3", NULL });
}

Test(loadgen_cli, bad_response_format, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate", "5",
				      "--response-format", "{\"type\":1}", NULL },
		    (const char *[]){ "--response-format", "an object with a string \"type\"",
				      NULL });
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate", "5",
				      "--response-format", "json_object", NULL },
		    (const char *[]){ "--response-format", "expected JSON (or @FILE)", NULL });
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate", "5",
				      "--response-format", "@/nonexistent/rf.json", NULL },
		    (const char *[]){ "--response-format", "/nonexistent/rf.json", NULL });
}

Test(loadgen_cli, mix_unknown_key_names_file_and_key, .timeout = 10)
{
	char mix[128];

	mix_file("{\"streams\":[{\"name\":\"a\",\"rate\":5},"
		 "{\"name\":\"b\",\"rate\":5,\"tenat\":\"acme\"}]}", mix, sizeof(mix));
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--mix", mix,
				      NULL },
		    (const char *[]){ mix, "streams[1].tenat", NULL });
}

Test(loadgen_cli, mix_reserved_header_names_file_and_key, .timeout = 10)
{
	char mix[128];

	mix_file("{\"streams\":[{\"name\":\"a\",\"share\":1,"
		 "\"headers\":{\"x-request-id\":\"mine\"}}]}", mix, sizeof(mix));
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate", "5",
				      "--mix", mix, NULL },
		    (const char *[]){ mix, "streams[0].headers.x-request-id", NULL });
}

/* -H may not set a header loadgen sets itself: the message names it. */
Test(loadgen_cli, header_loadgen_sets_itself, .timeout = 10)
{
	static const struct { const char *arg; const char *name; } cases[] = {
		{ "x-request-id: mine", "x-request-id" },
		{ "Content-Type: text/plain", "Content-Type" },
		{ "accept: x", "accept" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate",
					      "5", "-H", cases[i].arg, NULL },
			    (const char *[]){ "--header", cases[i].name, NULL });
}

/* A first backoff above its cap is refused, not quietly raised. */
Test(loadgen_cli, retry_backoff_above_its_cap, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate", "5",
				      "--retry-backoff", "2s", "--retry-backoff-max", "1s", NULL },
		    (const char *[]){ "--retry-backoff-max", NULL });
}

/* Arrivals are an open-loop notion: --arrival with --concurrency is refused. */
Test(loadgen_cli, arrival_with_concurrency, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--arrival",
				      "poisson", "--concurrency", "2", NULL },
		    (const char *[]){ "--arrival", NULL });
}

/* A ramp-up staggers a closed loop's clients: with --rate it is refused. */
Test(loadgen_cli, ramp_up_with_an_open_loop, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate",
				      "5", "--ramp-up", "1s", NULL },
		    (const char *[]){ "--ramp-up", "--concurrency", NULL });
}

Test(loadgen_cli, ramp_up_as_long_as_the_run, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s",
				      "--concurrency", "2", "--ramp-up", "1s", NULL },
		    (const char *[]){ "--ramp-up", "--duration", NULL });
}

Test(loadgen_cli, bad_ramp_up, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s",
				      "--concurrency", "2", "--ramp-up", "soon", NULL },
		    (const char *[]){ "--ramp-up", "soon", NULL });
}

/* An error's think time paces a closed loop's clients: with --rate it is refused. */
Test(loadgen_cli, error_think_with_an_open_loop, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate",
				      "5", "--error-think", "10ms", NULL },
		    (const char *[]){ "--error-think", "--concurrency", NULL });
}

Test(loadgen_cli, bad_error_think, .timeout = 10)
{
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s",
				      "--concurrency", "2", "--error-think", "soon", NULL },
		    (const char *[]){ "--error-think", "soon", NULL });
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s",
				      "--concurrency", "2", "--error-think", "-5ms", NULL },
		    (const char *[]){ "--error-think", "-5ms", NULL });
}

/* A stream with a share follows --arrival: "arrival" on it is refused. */
Test(loadgen_cli, mix_share_stream_with_arrival, .timeout = 10)
{
	char mix[128];

	mix_file("{\"streams\":[{\"name\":\"a\",\"share\":1,\"arrival\":\"poisson\"}]}",
		 mix, sizeof(mix));
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate", "5",
				      "--mix", mix, NULL },
		    (const char *[]){ mix, "streams[0].arrival", NULL });
}

Test(loadgen_cli, mix_file_missing, .timeout = 10)
{
	char dir[64];
	char mix[128];

	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
	snprintf(mix, sizeof(mix), "%s/no-such-mix.json", dir);
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate", "5",
				      "--mix", mix, NULL },
		    (const char *[]){ mix, NULL });
}

Test(loadgen_cli, mix_file_unreadable, .timeout = 10)
{
	char dir[64];

	/* A directory cannot be read as a file, not even by root. */
	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
	usage_error((const char *[]){ "--target", OK_TARGET, "--duration", "1s", "--rate", "5",
				      "--mix", dir, NULL },
		    (const char *[]){ dir, NULL });
}

Test(loadgen_cli, help_exits_0, .timeout = 10)
{
	struct lg_proc p;
	int rc;

	cr_assert_eq(lg_spawn(&p, (const char *[]){ "loadgen", "--help", NULL }), 0);
	rc = lg_wait(&p, 10);
	cr_assert_eq(rc, 0, "--help exited %d; stderr:\n%s", rc, p.err);
	cr_assert_not_null(strstr(p.out, "usage: loadgen"), "stdout:\n%s", p.out);
	cr_assert_not_null(strstr(p.out, "--target URL"));
	cr_assert_not_null(strstr(p.out, "--out DIR"));
	cr_assert_str_empty(p.err);
}
