/*
 * wire: what a mock provider's requests, answers, stream events and errors
 * look like in one API dialect — OpenAI's chat completions
 * (wire_openai.c) or Anthropic's Messages (wire_anthropic.c). provider.c
 * decides what happens to a request and when; a dialect only reads a
 * request's headers and body and writes bytes into a buffer. Pure: no I/O,
 * and the time comes in.
 */
#ifndef FAULTLINE_MOCKPROV_WIRE_H
#define FAULTLINE_MOCKPROV_WIRE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/http_server.h"
#include "mockprov/fault.h"

enum wire_dialect {
	WIRE_OPENAI,
	WIRE_ANTHROPIC,
};

/* The dialects' config names, NULL-terminated, in enum order ("openai", "anthropic"). */
extern const char *const wire_dialect_names[];

/* The most rate-limit headers a dialect adds, and the room for each value. */
#define WIRE_RATE_HEADERS 6
#define WIRE_HDR_LEN 32

/* An error answer, in terms both dialects can write. */
struct wire_error {
	int status;
	const char *type;	/* the dialect's error type */
	const char *param;	/* OpenAI's param, or NULL */
	const char *code;	/* OpenAI's code, or NULL */
	struct buf message;	/* free with wire_error_free */
};

/* What a dialect read from a request it accepted. */
struct wire_request {
	struct buf model;	/* the model asked for, as a JSON string literal */
	bool streaming;
	bool include_usage;	/* OpenAI: stream_options.include_usage */
	int max_tokens;		/* -1 when the request sets none */
	int prompt_tokens;
	cJSON *rf;		/* the output contract as an OpenAI response_format
				 * (contract_read reads it), or NULL; the caller's */
};

/*
 * One answer as a writer needs it. Token k of the content is
 * text[off[k] … off[k+1]), to be JSON-escaped when escape is set (a
 * content of the request's own) and put in verbatim otherwise (the
 * provider's words, which need no escaping).
 */
struct wire_answer {
	const char *id;			/* chatcmpl-mock-NAME-N, msg_mock-NAME-N */
	const struct buf *model;	/* a JSON string literal */
	long long created;		/* Unix seconds, for dialects that say it */
	int prompt_tokens;
	int tokens;			/* output tokens */
	bool capped;			/* max_tokens cut it short */
	bool include_usage;
	const char *text;
	const size_t *off;
	bool escape;
	struct buf prefix;		/* built by stream_begin: what each event repeats */
};

/* The errors provider.c answers with itself, whatever the request said. */
enum wire_situation {
	WIRE_ERR_STATUS,		/* a `status` fault (its status) */
	WIRE_ERR_RATE_LIMIT,		/* a `rate_limit` fault: 429 */
	WIRE_ERR_ERROR_EVENT,		/* an `error_event` on a plain answer: 500 */
	WIRE_ERR_NOT_FOUND,		/* an unknown path: 404 */
	WIRE_ERR_METHOD_ANSWER,		/* not POST on the answer path: 405 */
	WIRE_ERR_METHOD_MODELS,		/* not GET on …/models: 405 */
};

struct wire {
	const char *name;
	const char *answer_path;	/* without /v1: "/chat/completions", "/messages" */
	const char *id_prefix;		/* of answer ids: "chatcmpl-mock-", "msg_mock-" */

	/*
	 * Checks a request's headers (answers and model listings). Returns
	 * 0, or -1 with the error to answer in e.
	 */
	int (*check_headers)(const struct http_request *req, struct wire_error *e);

	/*
	 * Reads a request body into r (initially zeroed; the caller frees
	 * r->model and r->rf whatever the result). model_only, when not NULL,
	 * is the one model served (strict_model). Returns 0, or -1 with the
	 * error to answer in e.
	 */
	int (*parse)(const char *body, size_t len, const char *model_only,
		     struct wire_request *r, struct wire_error *e);

	/* Fills e for situation s (status: the status of a `status` fault). */
	void (*error_for)(enum wire_situation s, int status, struct wire_error *e);

	/* Appends e's body. */
	void (*error_body)(struct buf *b, const struct wire_error *e);

	/*
	 * Writes the rate-limit headers of d (a rate_limit window was open:
	 * d->rate_rpm or d->rate_tpm > 0) into h, values in bufs, now_unix_ms
	 * being the wall clock. Returns how many (at most WIRE_RATE_HEADERS).
	 */
	size_t (*rate_headers)(const struct fault_decision *d, double now_unix_ms,
			       struct http_kv *h, char bufs[][WIRE_HDR_LEN]);

	/*
	 * Appends the whole (non-streaming) answer; *cut_at is the body
	 * offset just after the content of its first `cut` tokens.
	 */
	void (*whole)(struct buf *b, const struct wire_answer *a, int cut, size_t *cut_at);

	/* Appends the model listing of a provider serving model. */
	void (*models)(struct buf *b, const char *model);

	/*
	 * Starts a stream: builds a->prefix, and appends what goes out with
	 * the headers, before any token (possibly nothing).
	 */
	void (*stream_begin)(struct buf *b, struct wire_answer *a);

	/* Appends the event carrying token k. */
	void (*stream_token)(struct buf *b, const struct wire_answer *a, int k);

	/* Appends what ends a stream that sent every token. */
	void (*stream_finish)(struct buf *b, const struct wire_answer *a);

	/* Appends an `error_event` fault's error event. */
	void (*stream_error)(struct buf *b);

	/* Appends a `malformed` fault's broken event and the stream's end. */
	void (*stream_malformed)(struct buf *b, const struct wire_answer *a);
};

extern const struct wire wire_openai;
extern const struct wire wire_anthropic;

/* The dialect d's wire. */
const struct wire *wire_of(enum wire_dialect d);

/* Appends tokens [from, to) of a's content as they go inside a JSON string. */
void wire_put_tokens(struct buf *b, const struct wire_answer *a, int from, int to);

/*
 * Sets e (zeroed, or set before: its message is reused) to status and a printf-style
 * message, type, param and code NULL.
 */
void wire_error_set(struct wire_error *e, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Frees e's message. */
void wire_error_free(struct wire_error *e);

#endif
