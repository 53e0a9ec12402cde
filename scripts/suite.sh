#!/bin/sh
# make suite: the classic outage suite and stream-stall through bin/chaos,
# each scenario's results checked by chaos gate against its expect block
# (and, when results/baselines/NAME-SCALE.json exists, against that
# baseline). Exit status
# 1 when a run failed or a check broke. SCALE sets the time scale.
set -eu
cd "$(dirname "$0")/.."

bin=${FAULTLINE_BIN:-bin}
scale=${SCALE:-0.2}
out=${OUT:-results}
status=0

for name in outage-kill outage-hang outage-5xx stream-stall; do
	log="$out/$name.suite.log"
	mkdir -p "$out"
	if ! "$bin/chaos" run "scenarios/$name.json" --time-scale "$scale" --out "$out" --quiet \
		> "$log" 2>&1; then
		cat "$log"
		status=1
		continue
	fi
	cat "$log"
	stamp=$(sed -n 's/^results: \([^ ]*\).*/\1/p' "$log")
	echo "== chaos gate $stamp"
	baseline="results/baselines/$name-$scale.json"
	if [ -f "$baseline" ]; then
		"$bin/chaos" gate "$stamp" --baseline "$baseline" || status=1
	else
		"$bin/chaos" gate "$stamp" || status=1
	fi
	echo
done
exit "$status"
