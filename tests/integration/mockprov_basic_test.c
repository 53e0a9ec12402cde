/*
 * The mock answers like an OpenAI provider when no fault is active: JSON
 * and SSE completions with usage, /v1/models, /healthz, and a log row for
 * every completion.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>

#include "tests/support/harness.h"

static const char *config =
	"{\"providers\":[{\"name\":\"p\",\"listen\":\"127.0.0.1:0\",\"model\":\"mock-small\","
	"\"ttft_ms\":40,\"token_ms\":10,\"output_tokens\":6}]}";

Test(mockprov_basic, json_and_sse_answers, .timeout = 20)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	const char *hdrs[] = { "x-request-id: req-1", NULL };
	struct http_opts o = { .headers = hdrs };
	char url[128];
	char body[256];
	char v[64];
	char **ev;
	size_t nerr;
	size_t n;

	cr_assert_eq(mock_start(&m, config, 0), 0);
	mock_url(&m, "p", "/v1/chat/completions", url, sizeof(url));

	o.body = chat_body(false, body, sizeof(body));
	cr_assert_eq(http_do(url, &o, &r), 0);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "\"content\":\"Lorem ipsum dolor sit amet consectetur\""), "%s", r.body);
	cr_assert(strstr(r.body, "\"completion_tokens\":6"), "%s", r.body);
	cr_assert_str_eq(http_header(&r, "x-request-id", v, sizeof(v)), "req-1");
	/* ttft 40 + 5 × 10 = 90 ms */
	cr_assert(r.total_ms >= 89 && r.total_ms < 250, "took %.1f ms", r.total_ms);
	http_result_free(&r);

	o.body = chat_body(true, body, sizeof(body));
	cr_assert_eq(http_do(url, &o, &r), 0);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	n = sse_parse(r.body, &ev, &nerr);
	/* 6 tokens, the finish chunk, the usage chunk, [DONE] */
	cr_assert_eq(n, 9, "%zu events: %s", n, r.body);
	cr_assert_eq(nerr, 0);
	cr_assert_str_eq(ev[n - 1], "[DONE]");
	cr_assert(strstr(ev[n - 2], "\"usage\""));
	sse_free(ev, n);
	http_result_free(&r);

	cr_assert_eq(http_do(mock_url(&m, "p", "/v1/models", url, sizeof(url)), NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "\"id\":\"mock-small\""));
	http_result_free(&r);

	cr_assert_eq(mock_stop(&m, SIGTERM), 0);
	cr_assert_eq(mock_log(&m, "p", &log), 0);
	cr_assert_eq(log.nrows, 4, "rows: %zu", log.nrows);
	cr_assert_str_eq(csv_get(&log, 1, "request_id"), "req-1");
	cr_assert_str_eq(csv_get(&log, 1, "outcome"), "completed");
	cr_assert_str_eq(csv_get(&log, 1, "kind"), "chat");
	cr_assert_str_eq(csv_get(&log, 2, "streaming"), "1");
	cr_assert_str_eq(csv_get(&log, 2, "tokens_out"), "6");
	/* the model listing has its row too */
	cr_assert_str_eq(csv_get(&log, 3, "kind"), "models");
	cr_assert_str_eq(csv_get(&log, 3, "status"), "200");
	cr_assert_str_eq(csv_get(&log, 3, "streaming"), "0");
	cr_assert_str_eq(csv_get(&log, 3, "tokens_out"), "0");
	cr_assert_str_eq(csv_get(&log, 3, "outcome"), "completed");
	csv_free(&log);
	mock_cleanup(&m);
}
