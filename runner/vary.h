/*
 * vary: a sweep's grid — the values each `--vary PATH=SPEC` gives a
 * scenario's value at PATH (runner/jpath.h), and the points of their
 * cartesian product (the first --vary varying slowest), each a copy of
 * the scenario with its values put in and a folder name. SPEC is a list
 * V1,V2,… or a range FROM..TO/STEP (TO included when it falls on a step,
 * within 1e-9 of a step; values rounded to 12 significant digits, so
 * 0.1..0.3/0.1 is 0.1, 0.2, 0.3). Values take the type of the value at
 * PATH now: a number (whole numbers stay whole in the JSON), a string,
 * true or false; for a key the scenario does not have yet (its parent an
 * object), numbers when every value reads as one, true/false when every
 * one is, else strings. PATH may link several paths with '+' ("A+B"): one
 * axis whose values every one of them takes (each settable, all of one
 * type) — a per-attempt timeout shared by two providers. Pure: no I/O.
 */
#ifndef FAULTLINE_RUNNER_VARY_H
#define FAULTLINE_RUNNER_VARY_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/buf.h"

#define VARY_MAX_VALUES 1000		/* per --vary */
#define VARY_MAX_POINTS 1000		/* in the grid */
#define VARY_DIR_MAX 120		/* a point folder name's length */
#define VARY_PATH_MAX 512		/* one part of a path, with its NUL */

/* One varied path and its values, in order. */
struct vary {
	char *path;
	const char *leaf;		/* path's last component (inside path) */
	cJSON *values;			/* an array of numbers, strings or booleans (owned) */
};

/* The grid: the varied paths in the order given. */
struct vary_plan {
	struct vary *v;
	size_t n;
	size_t npoints;			/* the product of the values' counts; 1 when n is 0 */
};

/*
 * Adds one `--vary PATH=SPEC` (arg) to plan, its values typed by base's
 * value at PATH. Returns 0; -EINVAL with a message in err (errlen bytes)
 * that starts "--vary PATH: " and says what was expected — an unknown
 * path (jpath's message), a path given twice, an empty list or value, a
 * value of the wrong type, a bad range (FROM > TO, STEP ≤ 0, more than
 * VARY_MAX_VALUES values), a grid of more than VARY_MAX_POINTS points;
 * -ENOMEM.
 */
int vary_add(struct vary_plan *plan, const cJSON *base, const char *arg, char *err,
	     size_t errlen);

/*
 * Adds a varied path with its values as a sweep.json holds them
 * ({"path": …, "values": […]}), checked as vary_add checks a list.
 * Returns as vary_add.
 */
int vary_add_json(struct vary_plan *plan, const cJSON *base, const cJSON *item, char *err,
		  size_t errlen);

/* Point i's (from 0) value of varied path j. */
const cJSON *vary_value(const struct vary_plan *plan, size_t i, size_t j);

/*
 * Point i's scenario: a copy of base with each varied path set to the
 * point's value (jpath_set). A new document the caller deletes; NULL with
 * a message in err when memory runs out.
 */
cJSON *vary_scenario(const struct vary_plan *plan, const cJSON *base, size_t i, char *err,
		     size_t errlen);

/*
 * Point i's values as text, "LEAF=VALUE,LEAF=VALUE" (strings without their
 * quotes), malloc'ed; NULL when out of memory.
 */
char *vary_label(const struct vary_plan *plan, size_t i);

/*
 * Point i's folder name: "pNNN-LEAF=VALUE,LEAF=VALUE" (NNN = i + 1, three
 * digits at least; LEAF the last component of each varied path, VALUE as
 * written in the scenario), every character of a leaf or value but
 * [A-Za-z0-9_.=-] made '_', cut to VARY_DIR_MAX bytes. Malloc'ed; NULL
 * when out of memory.
 */
char *vary_dir_name(const struct vary_plan *plan, size_t i);

/*
 * A path's leaf, its last component, for names and labels: of a linked
 * path "A+B", B's ("load.rate+seed": "seed").
 */
const char *vary_leaf(const char *path);

/* A value as written in the scenario's JSON (a string without its quotes) onto out. */
int vary_value_text(const cJSON *v, struct buf *out);

/* Frees the plan; it is left empty. */
void vary_plan_free(struct vary_plan *plan);

#endif
