/*
 * cfg: config files as tables. Each program describes the keys of a JSON
 * object as rows (name, type, target field, default, bounds); cfg_apply
 * validates an object against its table once, fills the target struct, and
 * on the first bad or unknown key writes an error naming the file, the key's
 * path and what was expected.
 */
#ifndef FAULTLINE_CFG_H
#define FAULTLINE_CFG_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

enum cfg_type {
	CFG_INT,	/* int64_t, a whole number in [min, max] */
	CFG_NUM,	/* double in [min, max] */
	CFG_BOOL,	/* bool */
	CFG_STR,	/* char *, strdup'ed; free with cfg_free */
	CFG_ENUM,	/* int, the index of the value in choices */
	CFG_SKIP,	/* allowed here, handled by the caller (objects, arrays) */
};

struct cfg_key {
	const char *name;
	enum cfg_type type;
	size_t offset;			/* of the field in the target struct */
	bool required;
	double def;			/* CFG_INT, CFG_NUM, CFG_BOOL (0/1) */
	double min;
	double max;
	const char *def_str;		/* CFG_STR and CFG_ENUM; may be NULL */
	const char *const *choices;	/* CFG_ENUM: NULL-terminated */
};

#define CFG_ERR_LEN 512

/*
 * Fills target from obj by the table: defaults for absent keys, checked
 * values for present ones. file and path (e.g. "providers[1]") name the
 * object in messages. Keys of obj not in the table are errors. Returns 0, or
 * -EINVAL with a message in err ("FILE: PATH.KEY: expected …, got …").
 */
int cfg_apply(const struct cfg_key *keys, size_t nkeys, const cJSON *obj,
	      void *target, const char *file, const char *path, char *err);

/*
 * Writes an error message for a key (key may be NULL for the object itself)
 * into err in the same form as cfg_apply. Returns -EINVAL.
 */
int cfg_error(char *err, const char *file, const char *path, const char *key,
	      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Describes a JSON value for an error message: "a string \"x\"", "3.5"... */
void cfg_describe(const cJSON *v, char *out, size_t len);

/* Frees the strings cfg_apply stored in target. */
void cfg_free(const struct cfg_key *keys, size_t nkeys, void *target);

/*
 * One table of a config file and where it sits: path is the dotted path of
 * its object ("breaker", "providers.NAME.health_check", "setups[]"), ""
 * for the top level. The loaders list their tables this way so that a
 * test can check every key is documented (tests/unit/dockeys_test.c).
 */
struct cfg_section {
	const char *path;
	const struct cfg_key *keys;
	size_t nkeys;
};

#endif
