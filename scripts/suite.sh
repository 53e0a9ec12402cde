#!/bin/sh
# make suite: the classic outage suite, stream-stall, three-setups,
# slow-tail, detect-hang, policy-ab, replicas-hang and the failover traps
# (contract-drift, flapping, correlated, good-day, all-down-degraded) and
# cross-vendor (an Anthropic-dialect fallback) through bin/chaos, then a 3-point sweep of
# timeout-knee, each at
# the time scale it gives CI
# ("ci": {"time_scale", "why"} in the scenario; --time-scale ci), each
# result checked by chaos gate against its expect block and, when
# scenarios/baselines/NAME-SCALE.json exists for the scale it ran at (the
# stamp's summary.json says), against that baseline; each real run is also
# simulated (chaos sim, same scale; it must run) and chaos compare's table
# of the two printed (not gating: see docs/chaos.md). Then every other
# scenario of SCENARIO_DIR is simulated (it must run), and timeout-knee is
# swept over 100 simulated points, gated. Exit status 1 when a run failed
# or a check broke. SCALE, when set, runs every scenario at that
# scale instead (by hand: the baselines are for the CI scales). SCENARIOS
# (names), SCENARIO_DIR (scenarios) and BASELINE_DIR (SCENARIO_DIR/baselines)
# choose others, for the suite's own test. UNSIMULATED names the scenarios
# chaos sim refuses or cannot model for now (gateway replicas and Redis:
# replicas-hang; answers' content — contracts and degraded answers:
# contract-drift, all-down-degraded), which are neither simulated nor
# compared.
set -eu
cd "$(dirname "$0")/.."

bin=${FAULTLINE_BIN:-bin}
scale=${SCALE:-ci}
out=${OUT:-results}
scenarios=${SCENARIOS:-outage-kill outage-hang outage-5xx stream-stall three-setups slow-tail detect-hang policy-ab replicas-hang contract-drift flapping correlated good-day all-down-degraded cross-vendor}
scenario_dir=${SCENARIO_DIR:-scenarios}
baseline_dir=${BASELINE_DIR:-$scenario_dir/baselines}
unsimulated=${UNSIMULATED:-replicas-hang contract-drift all-down-degraded}
status=0

# Whether chaos sim models scenario $1 (it refuses those in $unsimulated).
simulated() {
	case " $unsimulated " in *" $1 "*) return 1 ;; esac
	return 0
}

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
	# The same scenario in virtual time, held to the real run.
	simlog="$out/$name.sim.log"
	if ! simulated "$name"; then
		echo "== chaos sim: not for $name (chaos sim does not model gateway replicas or answers' content yet)"
	elif "$bin/chaos" sim "$scenario_dir/$name.json" --time-scale "$scale" --out "$out/sim" \
		--quiet > "$simlog" 2>&1; then
		simstamp=$(sed -n 's/^results: \([^ ]*\).*/\1/p' "$simlog")
		echo "== chaos compare $stamp $simstamp"
		# Printed, not gating: the checks that break are figures two real
		# runs do not reproduce either (hedge counts in tens, a closed
		# loop's phase at a fault's edge: docs/chaos.md, make suite).
		"$bin/chaos" compare "$stamp" "$simstamp" ||
			echo "(chaos compare: out of bounds; not gating in make suite)"
	else
		cat "$simlog"
		status=1
	fi
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

	# Every other scenario, simulated: each must run whole.
	for file in "$scenario_dir"/*.json; do
		name=$(basename "$file" .json)
		case " $scenarios $unsimulated " in *" $name "*) continue ;; esac
		echo "== chaos sim $file"
		"$bin/chaos" sim "$file" --time-scale "$scale" --out "$out/sim" --quiet > /dev/null ||
			status=1
	done

	# The 100-point simulated sweep: the knee at a resolution no real sweep affords.
	log="$out/timeout-knee.sim-sweep.log"
	if "$bin/chaos" sweep "$scenario_dir/timeout-knee.json" --sim --time-scale "$scale" \
		--out "$out/sim" --quiet \
		--vary "$p.primary.timeout_ms+$p.backup.timeout_ms=100..10000/100" > "$log" 2>&1; then
		tail -n 4 "$log"
		sweep=$(sed -n 's/^sweep: \([^ ]*\) .*/\1/p' "$log")
		echo "== chaos gate $sweep"
		"$bin/chaos" gate "$sweep" > "$out/timeout-knee.sim-sweep.gate.log" 2>&1 || {
			cat "$out/timeout-knee.sim-sweep.gate.log"
			status=1
		}
		tail -n 1 "$out/timeout-knee.sim-sweep.gate.log"
	else
		cat "$log"
		status=1
	fi
fi
exit "$status"
