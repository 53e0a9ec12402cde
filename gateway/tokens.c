/* tokens: a token count as written, by the rule in tokens.h. */
#include "gateway/tokens.h"

int64_t token_count(struct json_span v)
{
	double d;

	if (json_number(v, &d) && d > 0 && d < TOKENS_MAX)
		return (int64_t)d;
	return 0;
}
