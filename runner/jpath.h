/*
 * jpath: a value inside a JSON document addressed by a dotted path, as a
 * sweep's --vary (and an expectation's "when") names one. Components are
 * separated by '.'; in an object a component is a member's key; in an
 * array it is an element's index from 0 (faults.0.from_s) or, when it is
 * not all digits, the name of the element whose "name" member is that
 * string (setups.gateway.config.providers.primary.timeout_ms: setups is
 * an array of named objects, providers an object). A key holding '.'
 * cannot be addressed. Pure: no I/O. Every error names the path up to
 * the component that failed and why, in err.
 */
#ifndef FAULTLINE_RUNNER_JPATH_H
#define FAULTLINE_RUNNER_JPATH_H

#include <cjson/cJSON.h>
#include <stddef.h>

/*
 * The value at path under root, into *out (root's: not to be freed).
 * Returns 0; -EINVAL for a path with an empty component; -ENOENT when a
 * component names nothing ("setups.gatewy: no setup named \"gatewy\"
 * (setups: direct, gateway)", "….timeout_mss: no such key",
 * "faults.3: no element 3 (faults has 2)") or goes inside a value that is
 * neither an object nor an array. err (errlen bytes) says which.
 */
int jpath_get(const cJSON *root, const char *path, const cJSON **out, char *err,
	      size_t errlen);

/*
 * Whether jpath_set would set path: as jpath_get, except that the last
 * component may be a key absent from an object (jpath_set then adds it).
 * Returns 0 with *cur the value there now, or NULL when it would be made;
 * else jpath_get's errors.
 */
int jpath_settable(const cJSON *root, const char *path, const cJSON **cur, char *err,
		   size_t errlen);

/*
 * Puts value at path, replacing what is there or adding the last
 * component's key to its object (jpath_settable's rule). Takes value over
 * whatever the result (freed on failure). Returns 0 or jpath_get's errors.
 */
int jpath_set(cJSON *root, const char *path, cJSON *value, char *err, size_t errlen);

#endif
