/*
 * correlated: callouts for chains whose every target failed together
 * (runner/correlated.h).
 */
#include "runner/correlated.h"

#include <math.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "runner/stats.h"

/* The most aliases and targets a callout looks at (the gateway allows 16 targets). */
#define MAX_ALIASES 32
#define MAX_TARGETS 16

const char *correlated_group(const cJSON *providers, const char *const *names, size_t n)
{
	const char *group = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		const cJSON *p;
		const char *g = NULL;

		cJSON_ArrayForEach(p, providers) {
			const char *name = json_get_string(p, "name");

			if (name && strcmp(name, names[i]) == 0)
				g = json_get_string(p, "group");
		}
		if (!g || (group && strcmp(g, group) != 0))
			return NULL;
		group = g;
	}
	return group;
}

bool correlated_target_failed(const cJSON *fig, const char *provider)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(fig, "upstream_by_provider"), provider);
	double attempts = stats_mean(p, "attempts", NULL);
	double faulted = stats_mean(p, "faulted", NULL);

	if (!p || isnan(attempts) || attempts == 0)
		return true;
	return !isnan(faulted) && faulted >= attempts - 1e-9 * attempts;
}

/* The aliases the load asks for, each once: load.model, or each mix stream's. */
static size_t load_aliases(const struct scenario *sc, const char **out, size_t max)
{
	const cJSON *streams = cJSON_GetObjectItemCaseSensitive(sc->load.mix, "streams");
	const cJSON *st;
	size_t n = 0;
	size_t i;

	if (!cJSON_GetArraySize(streams)) {
		out[0] = sc->load.model;
		return max ? 1 : 0;
	}
	cJSON_ArrayForEach(st, streams) {
		const char *m = json_get_string(st, "model");
		bool seen = false;

		m = m ? m : sc->load.model;
		for (i = 0; i < n; i++)
			seen = seen || strcmp(out[i], m) == 0;
		if (!seen && n < max)
			out[n++] = m;
	}
	return n;
}

/* The providers of an alias's chain in a gateway config, each once. */
static size_t chain_of(const cJSON *config, const char *alias, const char **out, size_t max)
{
	const cJSON *targets = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(config, "models"),
						 alias), "targets");
	const cJSON *t;
	size_t n = 0;
	size_t i;

	cJSON_ArrayForEach(t, targets) {
		const char *p = json_get_string(t, "provider");
		bool seen = false;

		for (i = 0; p && i < n; i++)
			seen = seen || strcmp(out[i], p) == 0;
		if (p && !seen && n < max)
			out[n++] = p;
	}
	return n;
}

/* The callout's words into b: "failover cannot work: every target of …". */
static void callout_text(struct buf *b, const char *alias, const char *const *chain, size_t n,
			 const char *phase, const char *group)
{
	size_t i;

	buf_printf(b, "failover cannot work: every target of %s (", alias);
	for (i = 0; i < n; i++)
		buf_printf(b, "%s%s", i ? ", " : "", chain[i]);
	buf_printf(b, ") failed together in phase %s", phase);
	if (group)
		buf_printf(b, " — they share group %s", group);
}

size_t correlated_report(FILE *fp, const struct scenario *sc, const cJSON *summary,
			 bool markdown)
{
	const cJSON *setups = cJSON_GetObjectItemCaseSensitive(summary, "setups");
	const char *aliases[MAX_ALIASES];
	size_t naliases = load_aliases(sc, aliases, MAX_ALIASES);
	size_t count = 0;
	size_t s, p, a, i;

	for (s = 0; s < sc->nsetups; s++) {
		const struct sc_setup *st = &sc->setups[s];
		const cJSON *phases = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(setups, st->name), "phases");

		for (p = 0; st->kind == SC_GATEWAY && phases && p < sc->nphases; p++) {
			const cJSON *fig = cJSON_GetObjectItemCaseSensitive(phases,
									    sc->phases[p].name);
			double answered = stats_mean(fig, "answered_share", NULL);

			if (!fig || isnan(answered) || !(answered < CORRELATED_ANSWERED_BELOW))
				continue;
			for (a = 0; a < naliases; a++) {
				const char *chain[MAX_TARGETS];
				size_t n = chain_of(st->config, aliases[a], chain, MAX_TARGETS);
				struct buf b = { 0 };
				bool all = n > 0;

				for (i = 0; i < n; i++)
					all = all && correlated_target_failed(fig, chain[i]);
				if (!all)
					continue;
				if (!count++)
					fputs(markdown ? "\n## Correlated failures\n\nPhases in which "
						       "every target of an alias's chain failed at once "
						       "(each provider's attempts in the phase all "
						       "faulted, or none reached it) and under half the "
						       "requests were answered: no order of the chain "
						       "helps — only a target that fails apart from the "
						       "others (another region, another provider) "
						       "would.\n\n" : "\ncorrelated failures:\n", fp);
				callout_text(&b, aliases[a], chain, n, sc->phases[p].name,
					     correlated_group(sc->providers, chain, n));
				if (markdown)
					fprintf(fp, "- **%s**: %s (answered %.1f%%).\n", st->name,
						b.data ? b.data : "", 100 * answered);
				else
					fprintf(fp, "  %s: %s (answered %.1f%%)\n", st->name,
						b.data ? b.data : "", 100 * answered);
				buf_free(&b);
			}
		}
	}
	return count;
}
