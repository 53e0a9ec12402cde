#!/bin/sh
# make suite: the classic outage suite, stream-stall, three-setups and
# slow-tail through bin/chaos, each scenario's results checked by chaos gate
# against its expect block (and, when results/baselines/NAME-SCALE.json
# exists, against that baseline). Exit status
# 1 when a run failed or a check broke. SCALE sets the time scale (the
# classic suite's and three-setups': 48 s a setup at 0.2);
# stream-stall runs at STREAM_SCALE (0.5): its bound on the silence before
# an error event is the stall timeout + 100 ms, scaled like every bound, and
# at 0.2 the 20 ms left is within a busy 2-core machine's scheduling noise;
# slow-tail runs at TAIL_SCALE (0.5, 30 s a setup): the 1,200 requests its
# p99 ratio needs are the same at any scale, but at 0.2 the hedge delay
# (80 ms) is within two of the primary's answers (40 ms) plus the
# machine's jitter.
set -eu
cd "$(dirname "$0")/.."

bin=${FAULTLINE_BIN:-bin}
scale=${SCALE:-0.2}
stream_scale=${STREAM_SCALE:-0.5}
tail_scale=${TAIL_SCALE:-0.5}
out=${OUT:-results}
status=0

for name in outage-kill outage-hang outage-5xx stream-stall three-setups slow-tail; do
	log="$out/$name.suite.log"
	at=$scale
	[ "$name" = stream-stall ] && at=$stream_scale
	[ "$name" = slow-tail ] && at=$tail_scale
	mkdir -p "$out"
	if ! "$bin/chaos" run "scenarios/$name.json" --time-scale "$at" --out "$out" --quiet \
		> "$log" 2>&1; then
		cat "$log"
		status=1
		continue
	fi
	cat "$log"
	stamp=$(sed -n 's/^results: \([^ ]*\).*/\1/p' "$log")
	echo "== chaos gate $stamp"
	baseline="results/baselines/$name-$at.json"
	if [ -f "$baseline" ]; then
		"$bin/chaos" gate "$stamp" --baseline "$baseline" || status=1
	else
		"$bin/chaos" gate "$stamp" || status=1
	fi
	echo
done
exit "$status"
