/*
 * sanitizer_workers: leak checking that works under Criterion. The runner
 * process leaks a little inside libcriterion, and a suppression naming
 * libcriterion would also hide every leak of a test (each test's stack
 * runs through libcriterion). So `make asan` starts the runner with
 * detect_leaks=0, and this hook — run by the runner before any test —
 * hands the test processes (started afterwards, one per test) the options
 * in $FAULTLINE_WORKER_ASAN_OPTIONS: leak detection on, reports written to
 * files that `make asan` checks once the tests are done. Programs the
 * integration tests start inherit the same options.
 */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdlib.h>

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	const char *opts = getenv("FAULTLINE_WORKER_ASAN_OPTIONS");

	(void)set;
	if (opts && opts[0])
		setenv("ASAN_OPTIONS", opts, 1);
}
