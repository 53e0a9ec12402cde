/*
 * engine_curl: the libcurl streamclient engine — one easy handle per
 * stream in one multi handle, driven by libuv through curl's socket
 * interface (a uv_poll_t per socket curl watches, one uv_timer_t for curl's
 * timeout), with every chunk curl writes handed on with the time it came.
 *
 * It exists to check the raw engine against an independent HTTP client,
 * and to show what a general-purpose client costs at this load.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/curl_uv.h"
#include "bench/streamclient.h"

struct curl_run {
	struct curl_uv cu;
	struct curl_slist *headers;
	bool cu_open;
	bool aborted;
	struct run *r;
};

struct curl_stream {
	CURL *easy;
	struct stream *s;
	char errbuf[CURL_ERROR_SIZE];
};

static size_t on_write(char *data, size_t size, size_t n, void *userp)
{
	struct curl_stream *cs = userp;
	uint64_t now = clock_mono_ns();

	stream_on_body(cs->s, data, size * n, now, now);
	return size * n;
}

/* A transfer ended: the stream is finished. */
static void on_done(struct curl_uv *cu, CURL *easy, CURLcode result)
{
	struct curl_stream *cs;
	long status = 0;

	(void)cu;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&cs);
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(cs->easy);
	cs->easy = NULL;
	stream_finish(cs->s, (int)status, result == CURLE_OK ? NULL :
		      cs->errbuf[0] ? cs->errbuf : curl_easy_strerror(result));
}

static int start_stream(struct curl_run *cr, struct stream *s)
{
	struct curl_stream *cs = calloc(1, sizeof(*cs));
	struct run *r = cr->r;

	if (!cs)
		return UV_ENOMEM;
	s->conn = cs;
	cs->s = s;
	cs->easy = curl_easy_init();
	if (!cs->easy)
		return UV_ENOMEM;
	curl_easy_setopt(cs->easy, CURLOPT_URL, r->url);
	curl_easy_setopt(cs->easy, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(cs->easy, CURLOPT_POSTFIELDSIZE, (long)r->body_len);
	curl_easy_setopt(cs->easy, CURLOPT_HTTPHEADER, cr->headers);
	curl_easy_setopt(cs->easy, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(cs->easy, CURLOPT_WRITEDATA, cs);
	curl_easy_setopt(cs->easy, CURLOPT_PRIVATE, cs);
	curl_easy_setopt(cs->easy, CURLOPT_ERRORBUFFER, cs->errbuf);
	curl_easy_setopt(cs->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(cs->easy, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(cs->easy, CURLOPT_PROXY, "");
	s->state = STREAM_RUNNING;
	r->nactive++;
	s->start_ns = clock_mono_ns();
	if (curl_uv_add(&cr->cu, cs->easy)) {
		curl_easy_cleanup(cs->easy);
		cs->easy = NULL;
		stream_finish(s, 0, "curl_multi_add_handle failed");
	}
	return 0;
}

static int curl_start(struct run *r)
{
	struct curl_run *cr = calloc(1, sizeof(*cr));
	struct curl_slist *h;
	int rc;
	int i;

	if (!cr)
		return UV_ENOMEM;
	r->engine = cr;
	cr->r = r;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(r->first_error, sizeof(r->first_error), "curl_global_init failed");
		return UV_EINVAL;
	}
	if (curl_uv_init(&cr->cu, r->loop, on_done))
		return UV_ENOMEM;
	cr->cu_open = true;
	h = curl_slist_append(NULL, "Content-Type: application/json");
	if (h)
		cr->headers = curl_slist_append(h, "Accept: text/event-stream");
	if (!h || !cr->headers)
		return UV_ENOMEM;
	for (i = 0; i < r->nstreams; i++) {
		rc = start_stream(cr, &r->streams[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static void curl_abort(struct run *r)
{
	struct curl_run *cr = r->engine;
	struct curl_stream *cs;
	int i;

	if (!cr || cr->aborted)
		return;
	/* Removing a handle closes its socket, and curl tells curl_uv. */
	for (i = 0; i < r->nstreams; i++) {
		cs = r->streams[i].conn;
		if (cs && cs->easy) {
			curl_uv_remove(&cr->cu, cs->easy);
			curl_easy_cleanup(cs->easy);
			cs->easy = NULL;
		}
	}
	cr->aborted = true;
	if (cr->cu_open) {
		curl_uv_close(&cr->cu, NULL);
		cr->cu_open = false;
	}
}

static void curl_cleanup(struct run *r)
{
	struct curl_run *cr = r->engine;
	int i;

	if (!cr)
		return;
	curl_abort(r);
	for (i = 0; i < r->nstreams; i++) {
		free(r->streams[i].conn);
		r->streams[i].conn = NULL;
	}
	curl_slist_free_all(cr->headers);
	curl_global_cleanup();
	free(cr);
	r->engine = NULL;
}

const struct engine engine_curl = {
	.name = "curl",
	.start = curl_start,
	.abort = curl_abort,
	.cleanup = curl_cleanup,
};
