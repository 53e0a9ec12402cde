/*
 * Request trailers, as a client on a raw socket sends them: a chunked chat
 * request whose trailer (after the body) names x-faultline-provider,
 * x-request-id or x-faultline-class is answered as if the trailer were not
 * there — the gateway's headers are those of the request's head — and a
 * trailer cannot turn a good request into a refused one either.
 */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"
#include "tests/support/rawhttp.h"

#define FAST "'ttft_ms':10,'jitter_ms':0,'token_ms':0,'output_tokens':4"

static struct mock_proc mock;
static struct gw_proc gw;
static struct raw_http conn;
static bool opened;

static void teardown(void)
{
	if (opened)
		raw_free(&conn);
	gw_cleanup();
	mock_cleanup(&mock);
}

TestSuite(trailers, .fini = teardown);

/* A primary and a secondary mock provider, and an alias "chat" trying them in that order. */
static void start(void)
{
	gw_mock_start_template(&mock, "{'providers':["
			       "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
			       "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	gw_start_template(&gw, "{'request_deadline_ms':5000,"
			  "'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000},"
			  "'secondary':{'base_url':'@secondary@','timeout_ms':3000}},"
			  "'models':{'chat':{'targets':["
			  "{'provider':'primary','model':'mock-small'},"
			  "{'provider':'secondary','model':'mock-small'}]}}}", &mock, NULL);
}

/*
 * Sends a chat request for "chat" with its body in two chunks, head
 * headers in head (CRLF-terminated lines, may be ""), and trailer lines
 * in trailer, and reads the whole answer.
 */
static void send_chunked(const char *head, const char *trailer)
{
	static const char part1[] = "{\"model\":\"chat\",";
	static const char part2[] = "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
	char req[2048];
	const char *addr = gw.addr;
	int n;

	n = snprintf(req, sizeof(req),
		     "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\n"
		     "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n%s\r\n"
		     "%zx\r\n%s\r\n%zx\r\n%s\r\n0\r\n%s\r\n",
		     addr, head, strlen(part1), part1, strlen(part2), part2, trailer);
	cr_assert(n > 0 && (size_t)n < sizeof(req));
	cr_assert_eq(raw_open(&conn, addr, 0), 0, "cannot connect to %s", addr);
	opened = true;
	cr_assert_eq(raw_send(&conn, req, (size_t)n), 0);
	cr_assert_eq(raw_read(&conn, NULL, NULL, 5000), 0, "no whole answer: %s",
		     raw_tail(&conn, 600));
}

/* The answer's header name, or "" when absent. */
static const char *header(const char *name)
{
	static char v[256];

	return raw_header(&conn, name, v, sizeof(v)) ? v : "";
}

Test(trailers, a_trailer_does_not_pick_the_provider_or_the_id, .timeout = 20)
{
	start();
	send_chunked("", "x-faultline-provider: secondary\r\nx-request-id: from-the-trailer\r\n");
	cr_assert_eq(conn.status, 200, "%s", raw_tail(&conn, 600));
	cr_assert_str_eq(header("x-faultline-provider"), "primary",
			 "the trailer picked the provider");
	cr_assert_str_neq(header("x-request-id"), "from-the-trailer",
			  "the trailer set the request id");
	cr_assert_neq(header("x-request-id")[0], '\0');
}

Test(trailers, the_head_decides_and_a_trailer_cannot_refuse, .timeout = 20)
{
	start();
	/* The head's provider and id stand; the trailer's unknown provider and
	 * class would each have been a 400. */
	send_chunked("x-faultline-provider: secondary\r\nx-request-id: from-the-head\r\n",
		     "x-faultline-provider: nosuch\r\nx-faultline-class: nosuch\r\n"
		     "x-request-id: from-the-trailer\r\n");
	cr_assert_eq(conn.status, 200, "%s", raw_tail(&conn, 600));
	cr_assert_str_eq(header("x-faultline-provider"), "secondary");
	cr_assert_str_eq(header("x-request-id"), "from-the-head");
}
