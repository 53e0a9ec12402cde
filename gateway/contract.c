/*
 * contract: response_format in, a compiled contract out; a completion's
 * choices checked against it with the schema checker.
 */
#include "gateway/contract.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "gateway/schema.h"

int contract_from_response_format(const cJSON *rf, struct contract **out, char *err,
				  size_t errlen)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(rf, "type");
	const cJSON *js;
	const cJSON *schema;
	struct contract *c;

	*out = NULL;
	if (!cJSON_IsObject(rf) || !cJSON_IsString(type)) {
		snprintf(err, errlen, "expected an object with a string \"type\"");
		return -EINVAL;
	}
	if (strcmp(type->valuestring, "text") == 0)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (strcmp(type->valuestring, "json_object") == 0) {
		*out = c;
		return 0;
	}
	if (strcmp(type->valuestring, "json_schema") != 0) {
		free(c);
		snprintf(err, errlen, "expected \"type\" text, json_object or json_schema, got "
			 "\"%.64s\"", type->valuestring);
		return -EINVAL;
	}
	js = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
	schema = cJSON_GetObjectItemCaseSensitive(js, "schema");
	if (!cJSON_IsObject(js) || !(cJSON_IsObject(schema) || cJSON_IsBool(schema))) {
		free(c);
		snprintf(err, errlen, "expected json_schema.schema, a JSON Schema (an object)");
		return -EINVAL;
	}
	c->schema = schema_compile(schema, err, errlen);
	if (!c->schema) {
		int rc = strcmp(err, "out of memory") == 0 ? -ENOMEM : -EINVAL;

		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void contract_free(struct contract *c)
{
	if (!c)
		return;
	schema_free(c->schema);
	free(c);
}

bool contract_check(const struct contract *c, const cJSON *completion, char *why,
		    size_t whylen)
{
	const cJSON *choice;
	char inner[256];
	char full[320];
	int i = 0;

	cJSON_ArrayForEach(choice, cJSON_GetObjectItemCaseSensitive(completion, "choices")) {
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(choice, "message");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");

		if (!cJSON_IsString(content)) {
			snprintf(why, whylen, "choices[%d].message.content: not a string", i);
			return false;
		}
		if (!schema_check_text(c->schema, content->valuestring,
				       strlen(content->valuestring), inner, sizeof(inner))) {
			/* Cut whole characters only: the reason goes to the events file. */
			snprintf(full, sizeof(full), "choices[%d].message.content: %s", i, inner);
			json_copy_cut(why, whylen, full, whylen ? whylen - 1 : 0);
			return false;
		}
		i++;
	}
	return true;
}
