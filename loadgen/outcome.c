/*
 * outcome: classifying an attempt into the outcomes of docs/results-format.md.
 */
#include <curl/curl.h>

#include "loadgen/outcome.h"

#include <stdio.h>

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

void outcome_describe(const struct outcome_words *w, char *out, size_t len)
{
	const char *detail = w->detail ? w->detail : "";

	switch (w->o) {
	case OUT_OK:
		out[0] = '\0';
		return;
	case OUT_TIMEOUT:
		if (w->cut == CUT_TIMEOUT && w->streaming)
			snprintf(out, len, "no first token within %.0f ms", w->timeout_ms);
		else if (w->cut == CUT_TIMEOUT)
			snprintf(out, len, "no answer within %.0f ms", w->timeout_ms);
		else if (w->cut == CUT_MAX_TIME)
			snprintf(out, len, "stream still going at --max-time %.0f ms",
				 w->max_time_ms);
		else
			snprintf(out, len, "%s", w->transport ? w->transport : "timed out");
		return;
	case OUT_STALLED:
		if (w->cut != CUT_STALL)
			break;	/* the server said so: its error event, below */
		snprintf(out, len, "stream silent for %.0f ms after %lld tokens",
			 w->stall_timeout_ms, (long long)w->content_chunks);
		return;
	case OUT_HTTP_ERROR:
		snprintf(out, len, "HTTP %ld%s%s", w->status, detail[0] ? ": " : "", detail);
		return;
	default:
		break;
	}
	if (w->transport) {
		snprintf(out, len, "%s", w->transport);
	} else if (detail[0]) {
		snprintf(out, len, "%s", detail);
	} else if (w->o == OUT_TRUNCATED) {
		snprintf(out, len, "stream ended without [DONE] after %lld tokens",
			 (long long)w->content_chunks);
	} else if (w->o == OUT_INVALID && w->streaming) {
		snprintf(out, len, "answer is not an event stream");
	} else if (w->o == OUT_INVALID) {
		snprintf(out, len, "answer is not a chat completion");
	} else {
		out[0] = '\0';
	}
}
