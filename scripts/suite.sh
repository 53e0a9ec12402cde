#!/bin/sh
# make suite: the classic outage suite, stream-stall, three-setups,
# slow-tail, detect-hang and policy-ab through bin/chaos, then a 3-point sweep of
# timeout-knee, each at
# the time scale it gives CI
# ("ci": {"time_scale", "why"} in the scenario; --time-scale ci), each
# result checked by chaos gate against its expect block and, when
# scenarios/baselines/NAME-SCALE.json exists for the scale it ran at (the
# stamp's summary.json says), against that baseline. Exit status 1 when a
# run failed or a check broke. SCALE, when set, runs every scenario at that
# scale instead (by hand: the baselines are for the CI scales). SCENARIOS
# (names), SCENARIO_DIR (scenarios) and BASELINE_DIR (SCENARIO_DIR/baselines)
# choose others, for the suite's own test.
set -eu
cd "$(dirname "$0")/.."

bin=${FAULTLINE_BIN:-bin}
scale=${SCALE:-ci}
out=${OUT:-results}
scenarios=${SCENARIOS:-outage-kill outage-hang outage-5xx stream-stall three-setups slow-tail detect-hang policy-ab}
scenario_dir=${SCENARIO_DIR:-scenarios}
baseline_dir=${BASELINE_DIR:-$scenario_dir/baselines}
status=0

for name in $scenarios; do
	log="$out/$name.suite.log"
	mkdir -p "$out"
	if ! "$bin/chaos" run "$scenario_dir/$name.json" --time-scale "$scale" --out "$out" --quiet \
		> "$log" 2>&1; then
		cat "$log"
		status=1
		continue
	fi
	cat "$log"
	stamp=$(sed -n 's/^results: \([^ ]*\).*/\1/p' "$log")
	# The scale it ran at, as the stamp's summary.json has it ("time_scale": 0.2).
	at=$(sed -n 's/^[[:space:]]*"time_scale":[[:space:]]*\([0-9.eE+-]*\).*/\1/p' \
		"$stamp/summary.json" | head -n 1)
	echo "== chaos gate $stamp (time scale $at)"
	baseline="$baseline_dir/$name-$at.json"
	if [ -f "$baseline" ]; then
		"$bin/chaos" gate "$stamp" --baseline "$baseline" || status=1
	else
		"$bin/chaos" gate "$stamp" || status=1
	fi
	echo
done

# The CI sweep: timeout-knee over one per-attempt timeout for both
# providers (the trap below the backup's latency, the knee, far above), each
# point gated by the expectations its "when" selects; the sweep's objective
# verdicts, knee and best point are in its table (and sweep.csv/json).
if [ -z "${SCENARIOS:-}" ]; then
	p=setups.gateway.config.providers
	log="$out/timeout-knee.sweep.log"
	mkdir -p "$out"
	if "$bin/chaos" sweep "$scenario_dir/timeout-knee.json" --time-scale "$scale" --out "$out" \
		--quiet --vary "$p.primary.timeout_ms+$p.backup.timeout_ms=1000,2500,8000" > "$log" 2>&1; then
		cat "$log"
		sweep=$(sed -n 's/^sweep: \([^ ]*\) .*/\1/p' "$log")
		echo "== chaos gate $sweep"
		"$bin/chaos" gate "$sweep" || status=1
	else
		cat "$log"
		status=1
	fi
fi
exit "$status"
