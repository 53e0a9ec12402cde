/*
 * curlfloor: the floor under loadgen's closed loop — libcurl alone, through
 * the same curl_uv glue, with nothing else: N easy handles POSTing the same
 * body, each added again the moment it comes back, for a fixed time; no
 * recording, no parsing, no timers of its own. bench/loadgen.sh runs it
 * next to loadgen and wrk, so the cost of libcurl and the cost of
 * loadgen's own work can be told apart.
 *
 * Prints flbench_* lines (requests answered with a 2xx, duration, errors)
 * on stdout; exit 0, or 2 for a bad command line.
 */
#include <curl/curl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/clock.h"
#include "common/curl_uv.h"
#include "common/opt.h"

static const char usage_text[] =
	"usage: curlfloor --url URL [--connections N] [--duration D] [--body JSON]\n";

struct floor_run {
	uint64_t end_ns;
	long ok;
	long errors;
};

static size_t on_write(char *data, size_t size, size_t n, void *userp)
{
	(void)data;
	(void)userp;
	return size * n;
}

static void on_done(struct curl_uv *cu, CURL *easy, CURLcode result)
{
	struct floor_run *fr = cu->data;
	long status = 0;

	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
	if (result == CURLE_OK && status >= 200 && status <= 299 &&
	    clock_mono_ns() <= fr->end_ns)
		fr->ok++;
	else if (result != CURLE_OK || status < 200 || status > 299)
		fr->errors++;
	if (clock_mono_ns() < fr->end_ns && curl_uv_add(cu, easy) == 0)
		return;
	curl_easy_cleanup(easy);
	if (cu->transfers == 0)
		curl_uv_close(cu, NULL);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "connections", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "body", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *url = NULL;
	const char *body = "{\"model\":\"chat\",\"messages\":[{\"role\":\"user\","
			   "\"content\":\"hello\"}],\"max_tokens\":16}";
	struct curl_slist *headers;
	struct floor_run fr = { 0 };
	struct curl_uv cu;
	uv_loop_t loop;
	CURLU *uh;
	double duration_ms = 5000;
	int64_t conns = 64;
	const char *val;
	CURL *easy;
	int64_t i;
	int c;

	while ((c = opt_next("curlfloor", argc, argv, NULL, opts, &val)) != -1) {
		switch (c) {
		case 'u':
			url = val;
			break;
		case 'c':
			if (opt_parse_i64(val, 1, 10000, &conns))
				opt_usage_error("curlfloor", "--connections: expected 1 to 10000");
			break;
		case 'd':
			if (opt_parse_duration_ms(val, &duration_ms) || duration_ms <= 0)
				opt_usage_error("curlfloor", "--duration: expected a duration");
			break;
		case 'b':
			body = val;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		}
	}
	if (!url)
		opt_usage_error("curlfloor", "--url URL is required");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) || uv_loop_init(&loop))
		return 1;
	headers = curl_slist_append(NULL, "Content-Type: application/json");
	uh = curl_url();
	if (!uh || curl_url_set(uh, CURLUPART_URL, url, 0))
		opt_usage_error("curlfloor", "--url: not a URL libcurl takes");
	if (!headers || curl_uv_init(&cu, &loop, on_done))
		return 1;
	cu.data = &fr;
	curl_multi_setopt(cu.multi, CURLMOPT_MAXCONNECTS, (long)conns);
	fr.end_ns = clock_mono_ns() + (uint64_t)(duration_ms * 1e6);
	for (i = 0; i < conns; i++) {
		easy = curl_easy_init();
		if (!easy)
			return 1;
		curl_easy_setopt(easy, CURLOPT_URL, url);
		curl_easy_setopt(easy, CURLOPT_CURLU, uh);
		curl_easy_setopt(easy, CURLOPT_PROXY, "");
		curl_easy_setopt(easy, CURLOPT_NOPROXY, "*");
		curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
		curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
		if (curl_uv_add(&cu, easy))
			return 1;
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	curl_slist_free_all(headers);
	curl_url_cleanup(uh);
	curl_global_cleanup();
	printf("flbench_requests %ld\nflbench_duration_s %g\nflbench_errors %ld\n", fr.ok,
	       duration_ms / 1000.0, fr.errors);
	return 0;
}
