/*
 * mix: a mix file fills every field of its streams, absent keys take the
 * command line's defaults, and every kind of mistake is refused with a
 * message naming the file, the key path and what was expected.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loadgen/mix.h"

static const struct mix_defaults defs = {
	.model = "mock-small",
	.stream_p = 0.25,
	.prompt_tokens = 100,
	.max_tokens = 32,
};

static char err[CFG_ERR_LEN];
static char file[128];

/* Writes json to a fresh temporary directory, loads it, removes it again. */
static int load(const char *json, struct mix *m)
{
	char dir[64];
	FILE *fp;
	int rc;

	snprintf(dir, sizeof(dir), "/tmp/fl-mix-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/mix.json", dir);
	fp = fopen(file, "w");
	cr_assert_not_null(fp);
	cr_assert_eq(fputs(json, fp) >= 0, true);
	cr_assert_eq(fclose(fp), 0);
	err[0] = '\0';
	rc = mix_load(m, file, &defs, err);
	unlink(file);
	rmdir(dir);
	return rc;
}

/* Asserts that mix_free (or a refused load) left m empty. */
static void assert_emptied(const struct mix *m)
{
	cr_assert_null(m->streams);
	cr_assert_eq(m->n, 0);
	cr_assert_null(m->hdr_provider);
}

/*
 * Asserts that every key of st but its name and share took its default:
 * defs's, or the built-in one.
 */
static void assert_stream_defaults(const struct mix_stream *st)
{
	cr_assert_float_eq(st->rate, 0, 0);
	cr_assert_str_eq(st->class_name, "interactive");
	cr_assert_str_eq(st->tenant, "");
	cr_assert_str_eq(st->feature, "");
	cr_assert_str_eq(st->model, "mock-small");
	cr_assert_float_eq(st->stream_p, 0.25, 0);
	cr_assert_eq(st->prompt_tokens, 100);
	cr_assert_eq(st->prompts, 1);
	cr_assert_eq(st->max_tokens, 32);
	cr_assert_null(st->response_format);
	cr_assert_eq(st->arrival, -1);
	cr_assert_eq(st->nheaders, 0);
}

/* Asserts that m reads the x-faultline-* response headers. */
static void assert_faultline_response_headers(const struct mix *m)
{
	cr_assert_str_eq(m->hdr_provider, "x-faultline-provider");
	cr_assert_str_eq(m->hdr_attempts, "x-faultline-attempts");
	cr_assert_str_eq(m->hdr_hedged, "x-faultline-hedged");
	cr_assert_str_eq(m->hdr_cost, "x-faultline-cost-usd");
	cr_assert_str_eq(m->hdr_degraded, "x-faultline-degraded");
}

/*
 * Asserts the load was refused, that the message starts with the file and
 * contains each of the wanted pieces, and that nothing was left allocated.
 */
static void assert_refused(const char *json, const char *want1, const char *want2)
{
	struct mix m;
	int rc = load(json, &m);

	cr_assert_eq(rc, -EINVAL, "accepted %s (rc %d, err \"%s\")", json, rc, err);
	cr_assert(strncmp(err, file, strlen(file)) == 0 && err[strlen(file)] == ':',
		  "error \"%s\" does not start with the file", err);
	cr_assert(strstr(err, want1), "error \"%s\" lacks \"%s\"", err, want1);
	if (want2)
		cr_assert(strstr(err, want2), "error \"%s\" lacks \"%s\"", err, want2);
	assert_emptied(&m);
}

/* Asserts stream st carries header line `want` ("Name: value"). */
static void assert_header(const struct mix_stream *st, const char *want)
{
	size_t i;

	for (i = 0; i < st->nheaders; i++) {
		if (strcmp(st->headers[i], want) == 0)
			return;
	}
	cr_assert_fail("stream %s lacks header \"%s\"", st->name, want);
}

Test(mix, full_file_round_trips_every_field, .timeout = 10)
{
	struct mix m;
	const struct mix_stream *a;
	const struct mix_stream *b;

	cr_assert_eq(load("{\n"
			  "  \"streams\": [\n"
			  "    {\"name\": \"chat\", \"rate\": 5.5, \"class\": \"interactive\",\n"
			  "     \"tenant\": \"acme\", \"feature\": \"search\", \"model\": \"chat\",\n"
			  "     \"stream\": true, \"prompt_tokens\": 200, \"max_tokens\": 64,\n"
			  "     \"prompts\": 12, \"response_format\": {\"type\": \"json_schema\",\n"
			  "       \"json_schema\": {\"name\": \"answer\", \"schema\": {\"type\": \"object\",\n"
			  "        \"required\": [\"a\"], \"properties\": {\"a\": {\"type\": \"integer\",\n"
			  "        \"maximum\": 1e3}}}}},\n"
			  "     \"arrival\": \"poisson\",\n"
			  "     \"headers\": {\"x-foo\": \"bar\", \"Authorization\": \"Bearer k\"}},\n"
			  "    {\"name\": \"nightly\", \"rate\": 1000000, \"class\": \"batch\",\n"
			  "     \"tenant\": \"globex\", \"feature\": \"summarise\", \"model\": \"big\",\n"
			  "     \"stream\": false, \"prompt_tokens\": 1000000, \"max_tokens\": 1,\n"
			  "     \"prompts\": 0, \"arrival\": \"constant\"}\n"
			  "  ],\n"
			  "  \"response_headers\": {\"provider\": \"x-litellm-model-id\",\n"
			  "     \"attempts\": \"x-attempts\", \"hedged\": \"x-hedged\",\n"
			  "     \"cost_usd\": \"x-cost\", \"degraded\": \"X-Fallback\"}\n"
			  "}\n", &m), 0, "%s", err);
	cr_assert_eq(m.n, 2);
	cr_assert_eq(m.by_rate, true);
	a = &m.streams[0];
	b = &m.streams[1];
	cr_assert_str_eq(a->name, "chat");
	cr_assert_float_eq(a->rate, 5.5, 0);
	cr_assert_float_eq(a->share, 0, 0);
	cr_assert_str_eq(a->class_name, "interactive");
	cr_assert_str_eq(a->tenant, "acme");
	cr_assert_str_eq(a->feature, "search");
	cr_assert_str_eq(a->model, "chat");
	cr_assert_float_eq(a->stream_p, 1, 0);
	cr_assert_eq(a->prompt_tokens, 200);
	cr_assert_eq(a->max_tokens, 64);
	cr_assert_eq(a->prompts, 12);
	/* Compact, members in their order, numbers as cJSON writes them. */
	cr_assert_str_eq(a->response_format,
			 "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"answer\","
			 "\"schema\":{\"type\":\"object\",\"required\":[\"a\"],\"properties\":"
			 "{\"a\":{\"type\":\"integer\",\"maximum\":1000}}}}}");
	cr_assert_eq(a->arrival, ARRIVAL_POISSON);
	cr_assert_eq(a->nheaders, 2);
	assert_header(a, "x-foo: bar");
	assert_header(a, "Authorization: Bearer k");

	cr_assert_str_eq(b->name, "nightly");
	cr_assert_float_eq(b->rate, 1e6, 0);
	cr_assert_str_eq(b->class_name, "batch");
	cr_assert_str_eq(b->tenant, "globex");
	cr_assert_str_eq(b->feature, "summarise");
	cr_assert_str_eq(b->model, "big");
	cr_assert_float_eq(b->stream_p, 0, 0);
	cr_assert_eq(b->prompt_tokens, 1000000);
	cr_assert_eq(b->max_tokens, 1);
	cr_assert_eq(b->prompts, 0);
	cr_assert_null(b->response_format);
	cr_assert_eq(b->arrival, ARRIVAL_CONSTANT);
	cr_assert_eq(b->nheaders, 0);

	cr_assert_str_eq(m.hdr_provider, "x-litellm-model-id");
	cr_assert_str_eq(m.hdr_attempts, "x-attempts");
	cr_assert_str_eq(m.hdr_hedged, "x-hedged");
	cr_assert_str_eq(m.hdr_cost, "x-cost");
	cr_assert_str_eq(m.hdr_degraded, "x-fallback");
	cr_assert_float_eq(mix_total_rate(&m), 1000005.5, 1e-9);
	mix_free(&m);
	assert_emptied(&m);
}

Test(mix, absent_keys_take_defaults, .timeout = 10)
{
	struct mix m;
	const struct mix_stream *st;

	cr_assert_eq(load("{\"streams\": [{\"name\": \"s\", \"share\": 2}]}", &m), 0, "%s", err);
	cr_assert_eq(m.n, 1);
	cr_assert_eq(m.by_rate, false);
	st = &m.streams[0];
	cr_assert_str_eq(st->name, "s");
	cr_assert_float_eq(st->share, 2, 0);
	assert_stream_defaults(st);
	assert_faultline_response_headers(&m);
	cr_assert_float_eq(mix_total_rate(&m), 0, 0, "a mix of shares has no total rate");
	mix_free(&m);
}

Test(mix, stream_as_probability, .timeout = 10)
{
	struct mix m;

	cr_assert_eq(load("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"stream\": 0.3},"
			  "{\"name\": \"b\", \"share\": 1, \"stream\": 1},"
			  "{\"name\": \"c\", \"share\": 1, \"stream\": 0}]}", &m), 0, "%s", err);
	cr_assert_float_eq(m.streams[0].stream_p, 0.3, 0);
	cr_assert_float_eq(m.streams[1].stream_p, 1, 0);
	cr_assert_float_eq(m.streams[2].stream_p, 0, 0);
	mix_free(&m);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"stream\": 1.5}]}",
		       "streams[0].stream: expected true, false or a probability from 0 to 1",
		       "got 1.5");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"stream\": \"yes\"}]}",
		       "streams[0].stream: expected", "got the string \"yes\"");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"stream\": -0.1}]}",
		       "streams[0].stream: expected", NULL);
}

Test(mix, rate_out_of_bounds_names_stream_and_key, .timeout = 10)
{
	assert_refused("{\"streams\": [{\"name\": \"a\", \"rate\": 1},"
		       "{\"name\": \"b\", \"rate\": -2}]}",
		       ": streams[1].rate: expected a number above 0", "got -2");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"rate\": 0}]}",
		       "streams[0].rate: expected a number above 0 and at most 1000000, got 0",
		       NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"rate\": 1000001}]}",
		       "streams[0].rate: expected", "got 1000001");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"rate\": \"5/s\"}]}",
		       "streams[0].rate: expected", "got the string \"5/s\"");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 0}]}",
		       "streams[0].share: expected a number above 0", NULL);
}

Test(mix, table_keys_refused_with_their_bounds, .timeout = 10)
{
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"prompt_tokens\": 0}]}",
		       "streams[0].prompt_tokens: expected a whole number from 1 to 1000000",
		       "got 0");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"max_tokens\": 2.5}]}",
		       "streams[0].max_tokens: expected a whole number", "got 2.5");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"class\": \"bulk\"}]}",
		       "streams[0].class: expected one of interactive, batch",
		       "got the string \"bulk\"");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"arrival\": \"burst\"}]}",
		       "streams[0].arrival: expected one of constant, poisson", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"model\": 3}]}",
		       "streams[0].model: expected a non-empty string", "got 3");
	assert_refused("{\"streams\": [{\"share\": 1}]}",
		       "streams[0].name: missing (required)", NULL);
	assert_refused("{\"streams\": [{\"name\": \"\", \"share\": 1}]}",
		       "streams[0].name: expected a non-empty string", NULL);
}

Test(mix, prompts_is_a_count_from_zero, .timeout = 10)
{
	struct mix m;

	cr_assert_eq(load("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"prompts\": 1000000000},"
			  "{\"name\": \"b\", \"share\": 1, \"prompts\": 1}]}", &m), 0, "%s", err);
	cr_assert_eq(m.streams[0].prompts, 1000000000);
	cr_assert_eq(m.streams[1].prompts, 1);
	mix_free(&m);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"prompts\": -1}]}",
		       "streams[0].prompts: expected a whole number from 0 to 1000000000",
		       "got -1");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1}, {\"name\": \"b\","
		       " \"share\": 1, \"prompts\": 2.5}]}",
		       "streams[1].prompts: expected a whole number", "got 2.5");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"prompts\": \"3\"}]}",
		       "streams[0].prompts: expected a whole number", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"prompts\": 1000000001}]}", "streams[0].prompts: expected", NULL);
}

/* The stream's own response_format, else the command line's, else none. */
Test(mix, response_format_from_the_stream_or_the_defaults, .timeout = 10)
{
	struct mix_defaults d = defs;
	struct mix m;
	cJSON *root;

	d.response_format = "{\"type\":\"json_object\"}";
	root = cJSON_Parse("{\"streams\": [{\"name\": \"a\", \"share\": 1},"
			   "{\"name\": \"b\", \"share\": 1,"
			   " \"response_format\": {\"type\": \"text\", \"x\": [1, 2]}}]}");
	cr_assert_not_null(root);
	cr_assert_eq(mix_from_json(&m, root, "inline", &d, err), 0, "%s", err);
	cJSON_Delete(root);
	cr_assert_str_eq(m.streams[0].response_format, "{\"type\":\"json_object\"}");
	cr_assert_str_eq(m.streams[1].response_format, "{\"type\":\"text\",\"x\":[1,2]}");
	mix_free(&m);
	cr_assert_eq(mix_default(&m, &d), 0);
	cr_assert_str_eq(m.streams[0].response_format, "{\"type\":\"json_object\"}");
	cr_assert_eq(m.streams[0].prompts, 1);
	mix_free(&m);
}

Test(mix, response_format_must_be_an_object_with_a_type, .timeout = 10)
{
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1},"
		       " {\"name\": \"b\", \"share\": 1, \"response_format\": \"json\"}]}",
		       "streams[1].response_format: expected an object with a string \"type\"",
		       "got the string \"json\"");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"response_format\": {\"json_schema\": {}}}]}",
		       "streams[0].response_format: expected an object with a string", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"response_format\": {\"type\": 3}}]}",
		       "streams[0].response_format: expected", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"response_format\": [{\"type\": \"text\"}]}]}",
		       "streams[0].response_format: expected", NULL);
}

Test(mix, unknown_keys_refused, .timeout = 10)
{
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"rps\": 3}]}",
		       "streams[0].rps: unknown key", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1}], \"seed\": 4}",
		       ": seed: unknown key", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1}],"
		       " \"response_headers\": {\"model\": \"x-model\"}}",
		       "response_headers.model: unknown key", NULL);
}

Test(mix, streams_must_be_a_non_empty_array, .timeout = 10)
{
	assert_refused("{}", ": streams: missing (required)", NULL);
	assert_refused("{\"streams\": []}", ": streams: expected a non-empty array",
		       "got an empty array");
	assert_refused("{\"streams\": {\"name\": \"a\"}}",
		       ": streams: expected a non-empty array", "got an object");
	assert_refused("[1]", "expected an object, got an array", NULL);
	assert_refused("{\"streams\": [3]}", "streams[0]: expected an object, got 3", NULL);
}

Test(mix, duplicate_stream_name_refused, .timeout = 10)
{
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1},"
		       "{\"name\": \"b\", \"share\": 1}, {\"name\": \"a\", \"share\": 2}]}",
		       "streams[2].name: expected a name no other stream has",
		       "(also streams[0])");
}

Test(mix, rate_or_share_exactly_one, .timeout = 10)
{
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1},"
		       "{\"name\": \"b\", \"tenant\": \"t\"}]}",
		       ": streams[1]: expected \"rate\"", "got neither");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"rate\": 1, \"share\": 1}]}",
		       ": streams[0]: expected either \"rate\" or \"share\", got both", NULL);
}

Test(mix, mixed_rate_and_share_refused, .timeout = 10)
{
	assert_refused("{\"streams\": [{\"name\": \"a\", \"rate\": 1},"
		       "{\"name\": \"b\", \"rate\": 2}, {\"name\": \"c\", \"share\": 1}]}",
		       "streams[2].share: expected a \"rate\" like streams[0]", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1},"
		       "{\"name\": \"b\", \"rate\": 2}]}",
		       "streams[1].rate: expected a \"share\" like streams[0]", NULL);
}

Test(mix, bad_header_name_refused, .timeout = 10)
{
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"headers\": {\"x-ok\": \"1\", \"bad name\": \"v\"}}]}",
		       "streams[0].headers: expected header names made of", "\"bad name\"");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"headers\": {\"x:y\": \"v\"}}]}",
		       "streams[0].headers: expected header names", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"headers\": {\"\": \"v\"}}]}",
		       "streams[0].headers: expected header names", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"headers\": [\"x\"]}]}",
		       "streams[0].headers: expected an object", NULL);
}

Test(mix, bad_header_value_refused, .timeout = 10)
{
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"headers\": {\"x-a\": \"v\\r\\nx-evil: 1\"}}]}",
		       "streams[0].headers.x-a: expected a string without control characters",
		       NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"headers\": {\"x-a\": 5}}]}",
		       "streams[0].headers.x-a: expected a string", "got 5");
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"headers\": {\"x-a\": \"1\", \"X-A\": \"2\"}}]}",
		       "streams[0].headers.X-A: given twice", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1, \"tenant\": \"a\\nb\"}]}",
		       "streams[0].tenant: expected a string without control characters", NULL);
}

Test(mix, reserved_header_refused, .timeout = 10)
{
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"headers\": {\"X-Request-ID\": \"r1\"}}]}",
		       "streams[0].headers.X-Request-ID: expected a header loadgen does not set",
		       NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1},"
		       "{\"name\": \"b\", \"share\": 1, \"headers\": {\"content-type\": \"text/plain\"}}]}",
		       "streams[1].headers.content-type: expected", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"share\": 1,"
		       " \"headers\": {\"x-faultline-TENANT\": \"t\"}}]}",
		       "streams[0].headers.x-faultline-TENANT", NULL);
}

Test(mix, response_headers_lowercased_and_partial, .timeout = 10)
{
	struct mix m;

	cr_assert_eq(load("{\"streams\": [{\"name\": \"a\", \"rate\": 2}],"
			  " \"response_headers\": {\"provider\": \"X-LiteLLM-Model-Id\","
			  " \"cost_usd\": \"X-Response-Cost\"}}", &m), 0, "%s", err);
	cr_assert_str_eq(m.hdr_provider, "x-litellm-model-id");
	cr_assert_str_eq(m.hdr_cost, "x-response-cost");
	cr_assert_str_eq(m.hdr_attempts, "x-faultline-attempts");
	cr_assert_str_eq(m.hdr_hedged, "x-faultline-hedged");
	cr_assert_str_eq(m.hdr_degraded, "x-faultline-degraded");
	cr_assert_float_eq(mix_total_rate(&m), 2, 0);
	mix_free(&m);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"rate\": 2}],"
		       " \"response_headers\": {\"hedged\": \"x hedged\"}}",
		       "response_headers.hedged: expected a header name", NULL);
	assert_refused("{\"streams\": [{\"name\": \"a\", \"rate\": 2}],"
		       " \"response_headers\": \"x-provider\"}",
		       "response_headers: expected an object", NULL);
}

Test(mix, invalid_json_located, .timeout = 10)
{
	assert_refused("{\"streams\": [\n  {\"name\": \"a\",, \"share\": 1}\n]}\n",
		       ":2:", "invalid JSON");
}

Test(mix, missing_file_refused, .timeout = 10)
{
	struct mix m;

	cr_assert_eq(mix_load(&m, "/nonexistent/fl-mix.json", &defs, err), -EINVAL);
	cr_assert(strstr(err, "/nonexistent/fl-mix.json: cannot open"), "%s", err);
	cr_assert_null(m.streams);
}

Test(mix, default_mix_has_one_share_stream, .timeout = 10)
{
	struct mix m;
	const struct mix_stream *st;

	cr_assert_eq(mix_default(&m, &defs), 0);
	cr_assert_eq(m.n, 1);
	cr_assert_eq(m.by_rate, false);
	st = &m.streams[0];
	cr_assert_str_eq(st->name, "default");
	cr_assert_float_eq(st->share, 1, 0);
	assert_stream_defaults(st);
	cr_assert_null(st->headers);
	assert_faultline_response_headers(&m);
	cr_assert_float_eq(mix_total_rate(&m), 0, 0);
	mix_free(&m);
	assert_emptied(&m);
	mix_free(&m);
}

Test(mix, rates_feed_the_schedule, .timeout = 10)
{
	struct mix m;
	struct sched s;
	double rates[2];
	enum arrival arr[2];
	double at;
	int stream;
	int per[2] = { 0, 0 };
	size_t i;

	cr_assert_eq(load("{\"streams\": [{\"name\": \"a\", \"rate\": 10},"
			  " {\"name\": \"b\", \"rate\": 30, \"arrival\": \"constant\"}]}", &m),
		     0, "%s", err);
	for (i = 0; i < m.n; i++) {
		rates[i] = m.streams[i].rate;
		arr[i] = m.streams[i].arrival < 0 ? ARRIVAL_CONSTANT
						   : (enum arrival)m.streams[i].arrival;
	}
	cr_assert_eq(sched_init_rates(&s, rates, arr, m.n, 10000, 1), 0);
	while (sched_next(&s, &at, &stream))
		per[stream]++;
	cr_assert_eq(per[0], 100);
	cr_assert_eq(per[1], 300);
	sched_free(&s);
	mix_free(&m);
}
