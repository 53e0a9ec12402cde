/*
 * anthropic: the gateway's translation between OpenAI chat completions,
 * which every client speaks to the gateway, and Anthropic's Messages API,
 * which a provider of "dialect": "anthropic" speaks — the request, a 2xx
 * answer, each event of a stream, an error body. Pure: no I/O, no clock
 * (the time comes in), no state outside the structs passed in.
 * docs/dialects.md has the field-by-field mapping.
 */
#ifndef FAULTLINE_GATEWAY_ANTHROPIC_H
#define FAULTLINE_GATEWAY_ANTHROPIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/buf.h"

/* The anthropic-version header the gateway sends. */
#define ANTH_VERSION "2023-06-01"

/*
 * default_max_tokens when a provider gives none: the max_tokens sent when a
 * request gives neither max_tokens nor max_completion_tokens.
 */
#define ANTH_MAX_TOKENS_DEFAULT 4096

/* Why a request cannot go to an Anthropic target: the 400's message and param. */
struct anth_refusal {
	char message[256];
	const char *param;	/* the offending request member ("messages", "n"…), or NULL */
};

/* What the translation of one request needs of its target. */
struct anth_req_opts {
	const char *model;		/* the upstream model */
	int64_t max_tokens_default;	/* when the request gives none */
	const char *add_rf;		/* a response_format to add (compact JSON), or NULL */
};

/*
 * Appends to out the Anthropic Messages body for the OpenAI chat completion
 * request root, which the gateway has checked already (an object, a
 * non-empty string model, messages a non-empty array, stream a boolean if
 * given). Returns 0; -EINVAL when a member cannot be translated, with why
 * filled (out then holds garbage); -ENOMEM.
 */
int anth_request(const cJSON *root, const struct anth_req_opts *o, struct buf *out,
		 struct anth_refusal *why);

/*
 * Appends to out the OpenAI chat completion for an Anthropic message (a 2xx
 * non-streaming body): created is created_s. Its usage's prompt and
 * completion tokens go to usage[0], usage[1] when usage is not NULL, so a
 * caller need not parse the translation again for them. Returns 0;
 * -EINVAL when body is not an Anthropic message (out then holds garbage);
 * -ENOMEM.
 */
int anth_response(const char *body, size_t len, long long created_s, struct buf *out,
		  int64_t *usage);

/*
 * Appends to out OpenAI's error body for an Anthropic error body
 * ({"type":"error","error":{"type","message"}}). Returns 0; -EINVAL when
 * body is not one (the caller passes it on as it is); -ENOMEM.
 */
int anth_error(const char *body, size_t len, struct buf *out);

/* One Anthropic stream's translation: one per upstream attempt. */
struct anth_stream {
	bool include_usage;	/* the client asked for stream_options.include_usage */
	long long created_s;
	bool started;		/* message_start was seen */
	bool finished;		/* the finish chunk went out (message_delta, or message_stop without one) */
	bool stopped;		/* message_stop was seen: data: [DONE] went out, the rest is NONE */
	char id[128];		/* message_start's message.id, as JSON string text (cut to fit) */
	char model[256];	/* its model, as JSON string text (cut to fit) */
	char finish[24];	/* the OpenAI finish_reason of stop_reason */
	int64_t input[3];	/* the latest input_tokens, cache_creation_input_tokens and
				 * cache_read_input_tokens (message_start's, then message_delta's) */
	int64_t tokens_in;	/* input (with cache) tokens: input's sum */
	int64_t tokens_out;	/* output_tokens, the latest (message_delta's are cumulative) */
	bool has_usage;		/* a usage object was seen; tokens_* are its, kept here
				 * whether or not the client gets a usage chunk */
};

/* What one event was, for the client. */
enum anth_ev {
	ANTH_EV_NONE,		/* nothing for the client: ping, block start/stop, unknown types */
	ANTH_EV_CHUNK,		/* chunks appended */
	ANTH_EV_DONE,		/* message_stop: the last chunks and data: [DONE] appended */
	ANTH_EV_ERROR,		/* an error event: its message in the facts */
	ANTH_EV_INVALID,	/* not JSON, or not the event its name says */
};

/* The facts of one event. */
struct anth_ev_facts {
	bool text;		/* a chunk with non-empty delta content */
	bool commit;		/* text, the finish or the end (DONE): the stream's commit point */
	char message[256];	/* ANTH_EV_ERROR: the upstream's error message (cut) */
};

/* Starts a stream's translation. */
void anth_stream_init(struct anth_stream *s, bool include_usage, long long created_s);

/*
 * Translates one event of an Anthropic stream (its event name, "" when
 * none, and its data) into the OpenAI chunks the client gets, each appended
 * to out as "data: {…}\n\n": message_start gives the first chunk (the
 * role, empty content), each text_delta a chunk of content, message_delta
 * the finish chunk, message_stop the usage chunk (with include_usage) and
 * "data: [DONE]". The usage of message_start and message_delta is kept in
 * s, not put in those chunks: a chunk with usage would commit the relay.
 * An event that is not a chunk leaves out as it was. Returns an enum
 * anth_ev, or -ENOMEM.
 */
int anth_stream_event(struct anth_stream *s, const char *event, const char *data, size_t len,
		      struct buf *out, struct anth_ev_facts *f);

#endif
