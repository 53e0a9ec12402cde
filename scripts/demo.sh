#!/bin/sh
# make demo: the classic outage suite (scenarios/outage-{kill,hang,5xx}.json)
# through bin/chaos — each outage replayed straight at the primary, through
# bin/gateway with its circuit breaker on, and with it off — at a time
# scale that finishes in about two minutes (SCALE=1 runs the full 60 s
# timelines). Prints each scenario's table and where its results are.
set -eu
cd "$(dirname "$0")/.."

bin=${FAULTLINE_BIN:-bin}
scale=${SCALE:-0.15}
out=${OUT:-results}
stamps=""

for s in kill hang 5xx; do
	echo "== outage-$s: $(sed -n 's/.*"description": "\(.*\)",/\1/p' "scenarios/outage-$s.json")"
	"$bin/chaos" run "scenarios/outage-$s.json" --time-scale "$scale" --out "$out" --quiet \
		> "$out.demo-$s.txt" || { cat "$out.demo-$s.txt"; rm -f "$out.demo-$s.txt"; exit 1; }
	sed '$d' "$out.demo-$s.txt"
	stamp=$(sed -n 's/^results: \([^ ]*\).*/\1/p' "$out.demo-$s.txt")
	rm -f "$out.demo-$s.txt"
	stamps="$stamps $stamp"
	echo
done
echo "Time scale $scale: latencies, timeouts and windows are $scale of the scenario's"
echo "(providers answer in $(awk -v s="$scale" 'BEGIN { printf "%g", 200 * s }') ms, the provider timeout is $(awk -v s="$scale" 'BEGIN { printf "%g", 1000 * s }') ms)."
echo "direct: straight at the primary; breaker-on/off: through bin/gateway (primary, then"
echo "secondary). 'open after' is from the phase's start to the breaker opening."
echo
echo "results (report.md, summary.json, plots/*.png, per-request files under SETUP/run-1/):"
for stamp in $stamps; do
	echo "  $stamp"
done
