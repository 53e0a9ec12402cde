/*
 * jassert: Criterion assertions on a summary's figures, each addressed by
 * its dotted path (runner/jpath.h: "phases.outage.latency_ms.p50",
 * "windows.2.ok"), the test failing where the path names nothing.
 */
#ifndef FAULTLINE_TESTS_JASSERT_H
#define FAULTLINE_TESTS_JASSERT_H

#include <cjson/cJSON.h>

/* The value at path under root, asserted there. */
const cJSON *jget(const cJSON *root, const char *path);

/* The number at path: NAN for a null, asserted a number or null otherwise. */
double jnum(const cJSON *root, const char *path);

/* Asserts the number at path is want within 1e-9 (want NAN: a null). */
void expect_num(const cJSON *root, const char *path, double want);

/* Asserts the string at path is want. */
void expect_str(const cJSON *root, const char *path, const char *want);

#endif
