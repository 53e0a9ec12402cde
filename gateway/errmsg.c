/*
 * errmsg: the words of the gateway's own error answers.
 */
#include "gateway/errmsg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "common/json.h"
#include "gateway/router.h"

/* Writes "P/M: outcome (HTTP s, N ms)" for a note. */
static int note_text(struct buf *b, const struct policy_note *n)
{
	int rc = buf_printf(b, "%s/%s: %s", n->t->prov->name, n->t->model, n->outcome);

	if (n->status && !isnan(n->ms))
		rc |= buf_printf(b, " (HTTP %ld, %.0f ms)", n->status, n->ms);
	else if (!isnan(n->ms))
		rc |= buf_printf(b, " (%.0f ms)", n->ms);
	return rc;
}

/* No attempt succeeded: why, and every attempt made. */
static int final_text(struct buf *b, const struct policy_action *a, const struct policy_state *st,
		      const struct gw_config *cfg, const char *alias)
{
	int rc;
	size_t i;

	if (a->status == 504)
		rc = buf_printf(b, "The request deadline (%.0f ms) ran out", cfg->deadline_ms);
	else if (a->status == 503)
		rc = buf_printf(b, "No provider of model '%s' is available", alias);
	else
		rc = buf_printf(b, "Every upstream attempt for model '%s' failed", alias);
	rc |= buf_printf(b, " after %u attempt%s", st->budget.attempts,
			 st->budget.attempts == 1 ? "" : "s");
	for (i = 0; i < st->nnotes; i++) {
		rc |= buf_puts(b, i ? "; " : ": ");
		rc |= note_text(b, &st->notes[i]);
	}
	rc |= buf_puts(b, ".");
	return rc;
}

int errmsg_write(struct buf *b, const struct policy_action *a, const struct policy_state *st,
		 const struct gw_config *cfg, const char *alias, const char *why)
{
	size_t start = b->len;
	size_t cap = 191;	/* the bytes these messages were always cut to */
	int rc;

	switch (a->error) {
	case POLICY_ERR_FINAL:
		return final_text(b, a, st, cfg, alias) ? -ENOMEM : 0;
	case POLICY_ERR_OVERLOADED:
		rc = buf_printf(b, "The gateway is out of resources (%s); retry shortly.",
				why ? why : "unknown");
		break;
	case POLICY_ERR_QUEUE_FULL:
		/* 160 bytes, as these messages always were: a long alias is cut the same way. */
		rc = buf_printf(b, "The batch queue of model '%s' is full (%u requests).", alias,
				cfg->batch.queue_max);
		cap = 159;
		break;
	case POLICY_ERR_QUEUE_TIMEOUT:
		rc = buf_printf(b, "No provider of model '%s' took the batch request within %.0f ms.",
				alias, cfg->batch.max_wait_ms);
		cap = 159;
		break;
	case POLICY_ERR_STOPPING:
	default:
		rc = buf_puts(b, "The gateway is stopping; the batch request was not sent.");
		break;
	}
	if (rc)
		return -ENOMEM;
	if (b->len - start > cap) {
		b->len = start + cap;
		b->data[b->len] = '\0';
	}
	return 0;
}

void errmsg_unknown_model(char *msg, size_t len, const char *model)
{
	char name[160];

	json_copy_cut(name, sizeof(name), model, 128);
	snprintf(msg, len, "The model '%s' does not exist.", name);
}
