/*
 * scenario_int: what the files behind runner/scenario.h share and no one
 * else uses. runner/scenario.c loads the file (top level, ci, providers,
 * prices, actions, phases, load) and answers questions about it;
 * runner/setup.c loads the setups, runner/expect.c the expectations;
 * runner/template.c checks and expands the placeholders and builds the
 * programs' configs; runner/timescale.c scales the times. scenario__
 * names are scenario.c's, template_ names template.c's, setup_ names
 * setup.c's, expect_ names expect.c's.
 */
#ifndef FAULTLINE_RUNNER_SCENARIO_INT_H
#define FAULTLINE_RUNNER_SCENARIO_INT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/cfg.h"
#include "runner/scenario.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* What scenario__name_ok accepts, for messages. */
#define NAME_RULE "a name of 1-64 letters, digits, '_', '-' or '.' (not \".\" or \"..\")"

/*
 * Where a template is used: which placeholders it may hold, and their
 * values (v NULL: only check it).
 */
struct subst_ctx {
	char *const *names;		/* provider names */
	size_t nnames;
	bool allow_port;		/* {port} and {listen} (external setups) */
	bool allow_run;			/* {dir}, {ms:N}, {hostport.NAME} (a setup's own strings) */
	double scale;			/* the time scale, for {ms:N} */
	const struct sc_expand_vals *v;	/* the run's values; NULL: only check */
};

/* ---- scenario.c ---- */

/* Says "out of memory" at file and path into err; returns -ENOMEM. */
int scenario__oom(char *err, const char *file, const char *path);

/* A scenario, phase or setup name: 1–64 of [A-Za-z0-9_.-], not "." or "..". */
bool scenario__name_ok(const char *s);

/* "a, b, c" from a list of names into out (len bytes), cut to fit. */
void scenario__names_text(char *const *names, size_t n, char *out, size_t len);

/* The index of the name of len bytes among names, or -1. */
int scenario__find_name(char *const *names, size_t n, const char *name, size_t len);

/*
 * The array under key in *out, or NULL when absent: returns 0; anything
 * else but an array (or an empty one when nonempty) is -EINVAL with the
 * message in err, saying the array holds what.
 */
int scenario__get_array(const cJSON *obj, const char *key, bool nonempty, const char *what,
			const char *file, const char *path, const cJSON **out, char *err);

/*
 * The index of the provider called name in *out: returns 0, or -EINVAL
 * with a message in err naming path.key and the scenario's providers.
 */
int scenario__provider_ref(const struct scenario *sc, const char *name, const char *file,
			   const char *path, const char *key, size_t *out, char *err);

/* ---- template.c ---- */

/*
 * Checks a template at path (the full key path) against cx. Returns 0, or
 * -EINVAL with a message in err saying what is wrong.
 */
int template_check(const struct subst_ctx *cx, const char *tmpl, const char *file,
		   const char *path, char *err);

/*
 * Checks every string value under node (path: node's key path) against
 * cx, as template_check does.
 */
int template_check_strings(const struct subst_ctx *cx, const cJSON *node, const char *file,
			   const char *path, char *err);

/*
 * Replaces every string value under node by its expansion. Returns 0,
 * -ENOMEM, or -EINVAL with why (whylen bytes) saying what is wrong.
 */
int template_expand_strings(const struct subst_ctx *cx, cJSON *node, char *why, size_t whylen);

/* Sets obj's "listen" to value, replacing any. Returns 0 or -ENOMEM. */
int template_set_listen(cJSON *obj, const char *value);

/* ---- setup.c ---- */

/*
 * Loads the "setups" array into sc->setups (sc->nsetups of them, the
 * providers already loaded). Returns 0, or -EINVAL (-ENOMEM) with a
 * message in err; what was loaded before the error stays for
 * scenario_free.
 */
int setup_load_all(const cJSON *root, const char *file, struct scenario *sc, char *err);

/* Frees what a setup holds; st is left empty. */
void setup_free(struct sc_setup *st);

/*
 * The setups' tables (the keys every setup takes, then each kind's), as
 * "setups[]" sections, into out (at most max); returns how many there are.
 */
size_t setup_sections(struct cfg_section *out, size_t max);

/* ---- expect.c ---- */

/*
 * Loads the "expect" array of root (the scaled document) into sc->expects
 * (the setups and phases already loaded), leaving out the entries whose
 * "when" the scenario's values (in doc, the document as written,
 * unscaled) do not match. Returns 0, or -EINVAL (-ENOMEM) with a message
 * in err; what was loaded before the error stays for scenario_free.
 */
int expect_load_all(const cJSON *root, const cJSON *doc, const char *file, struct scenario *sc,
		    char *err);

/* The expectations' table, as the "expect[]" section, into out (at most max); returns 1. */
size_t expect_sections(struct cfg_section *out, size_t max);

/* Sets every bound of e to NAN (not given). */
void expect_blank(struct sc_expect *e);

/* ---- objective.c ---- */

/*
 * Loads the "objective" object into sc->objective (the phases already
 * loaded). Returns 0 (also when there is none), or -EINVAL with a message
 * in err; what was loaded stays for scenario_free.
 */
int objective_load(const cJSON *root, const char *file, struct scenario *sc, char *err);

/* Frees what objective_load stored; o is left empty. */
void objective_free(struct sc_objective *o);

/* The objective's table, as the "objective" section, into out (at most max); returns 1. */
size_t objective_sections(struct cfg_section *out, size_t max);

#endif
