/*
 * outcome: classifying an attempt into the outcomes of docs/results-format.md.
 */
#include <curl/curl.h>

#include "loadgen/outcome.h"

static enum outcome from_curl(CURLcode code)
{
	switch (code) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return OUT_REFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return OUT_TIMEOUT;
	case CURLE_PARTIAL_FILE:
		return OUT_TRUNCATED;
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_BAD_CONTENT_ENCODING:
	case CURLE_WRITE_ERROR:
	case CURLE_FILESIZE_EXCEEDED:
		return OUT_INVALID;
	default:
		/* RECV_ERROR, SEND_ERROR, GOT_NOTHING and the rest. */
		return OUT_RESET;
	}
}

static enum outcome classify(const struct attempt_facts *f)
{
	if (f->cut == CUT_STALL)
		return OUT_STALLED;
	if (f->cut == CUT_TIMEOUT || f->cut == CUT_MAX_TIME)
		return OUT_TIMEOUT;
	/* A stream whole at [DONE] is what an SDK hands on, whatever came after. */
	if (f->streaming && f->saw_done && f->status >= 200 && f->status <= 299 && f->sse &&
	    !f->bad_frame && !f->error_event)
		return OUT_OK;
	if (f->curl_code != CURLE_OK)
		return from_curl((CURLcode)f->curl_code);
	if (f->status < 200 || f->status > 299)
		return OUT_HTTP_ERROR;
	if (!f->streaming)
		return f->body_valid ? OUT_OK : OUT_INVALID;
	if (!f->sse || f->bad_frame)
		return OUT_INVALID;
	if (f->error_event || !f->saw_done)
		return OUT_TRUNCATED;
	return OUT_OK;
}

enum outcome outcome_classify(const struct attempt_facts *f)
{
	enum outcome o = classify(f);

	/* The server's own word for the cut: its upstream went silent. */
	if (o == OUT_TRUNCATED && f->streaming && f->stall_event)
		return OUT_STALLED;
	return o;
}

bool outcome_retryable(enum outcome o, long status, bool content_seen)
{
	if (content_seen)
		return false;
	switch (o) {
	case OUT_REFUSED:
	case OUT_RESET:
	case OUT_TIMEOUT:
		return true;
	case OUT_HTTP_ERROR:
		return status == 408 || status == 409 || status == 429 || status >= 500;
	default:
		return false;
	}
}

enum outcome outcome_within_retries(enum outcome o, int64_t retries, int64_t allowed)
{
	return retries > allowed ? OUT_RESET : o;
}
