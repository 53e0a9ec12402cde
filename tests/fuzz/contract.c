/*
 * fuzz: mockprov's content for a request's response_format (contract.c)
 * on any text taken as the response_format: whatever it holds, every
 * violation gives a content; under a JSON contract, but for prose, one
 * JSON value (json_parse_whole takes it), holding the words verbatim at
 * text_at when it says so.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "mockprov/contract.h"

#define WORDS "Lorem ipsum dolor sit"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct contract c;
	enum contract_violation v;
	cJSON *rf;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	rf = json_parse_whole(text, size);
	contract_read(rf, &c);
	for (v = VIOLATION_PROSE; v <= VIOLATION_NONE; v++) {
		struct buf out = { 0 };
		size_t at;
		cJSON *doc;

		if (contract_content(&c, v, WORDS, strlen(WORDS), &out, &at))
			abort();	/* out of memory, under a fuzzer's limits: a bug */
		if (at != SIZE_MAX && (at + strlen(WORDS) > out.len ||
				       memcmp(out.data + at, WORDS, strlen(WORDS)) != 0)) {
			fprintf(stderr, "the words are not at %zu: %s\n", at, out.data);
			abort();
		}
		if (c.kind != CONTRACT_NONE && v != VIOLATION_PROSE) {
			doc = json_parse_whole(out.data, out.len);
			if (!doc) {
				fprintf(stderr, "not one JSON value: %s\n", out.data);
				abort();
			}
			cJSON_Delete(doc);
		}
		buf_free(&out);
	}
	cJSON_Delete(rf);
	free(text);
	return 0;
}
