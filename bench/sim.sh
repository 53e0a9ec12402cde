#!/bin/bash
# bench/sim.sh — make bench-sim: how fast chaos sim is, in rounds (ROUNDS,
# 3), each figure beside its reference measured in the same round: the
# virtual time it simulated (the real run's length) and, for the sweep,
# the same sweep's first 10 points.
#  1. three-setups, every setup (720 s of timelines): wall time of the
#     whole command (runs, summaries, report, plots), and the speed-up;
#  2. outage-kill's direct setup, whose closed loop spins against the dead
#     primary (about 734,000 requests): chaos sim's own requests/s line;
#  3. timeout-knee swept over 1,000 simulated points, against 10.
# The load average is printed with each round: the machine is shared.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
bin=${FAULTLINE_BIN:-bin}
rounds=${ROUNDS:-3}
tmp=$(mktemp -d /tmp/bench-sim.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
p=setups.gateway.config.providers
knee="$p.primary.timeout_ms+$p.backup.timeout_ms"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

printf '%-6s %-34s %12s %14s %s\n' round figure value reference load
for r in $(seq 1 "$rounds"); do
	load=$(cut -d' ' -f1 /proc/loadavg)
	t=$(now)
	"$bin/chaos" sim scenarios/three-setups.json --out "$tmp/r$r" --quiet > /dev/null
	w=$(secs "$t" "$(now)")
	printf '%-6s %-34s %10s s %12s s %s\n' "$r" "three-setups, all setups" "$w" "720.0" "$load"

	line=$("$bin/chaos" sim scenarios/outage-kill.json --setup direct --out "$tmp/k$r" 2>&1 \
		>/dev/null | sed -n 's/^chaos: simulated //p')
	rps=$(echo "$line" | sed -n 's/.*: \([0-9]*\) requests\/s$/\1/p')
	wall=$(echo "$line" | sed -n 's/.* in \([0-9.]*\) s: .*/\1/p')
	printf '%-6s %-34s %10s/s %12s s %s\n' "$r" "outage-kill direct, requests" "$rps" "60.0" "$load"
	printf '%-6s %-34s %10s s %12s s %s\n' "$r" "outage-kill direct, runs' wall" "$wall" "60.0" "$load"
	rm -rf "$tmp/k$r"

	t=$(now)
	"$bin/chaos" sweep scenarios/timeout-knee.json --sim --out "$tmp/s10-$r" --quiet \
		--vary "$knee=100..1000/100" > /dev/null
	ten=$(secs "$t" "$(now)")
	t=$(now)
	"$bin/chaos" sweep scenarios/timeout-knee.json --sim --out "$tmp/s$r" --quiet \
		--vary "$knee=10..10000/10" > /dev/null
	w=$(secs "$t" "$(now)")
	printf '%-6s %-34s %10s s %12s s %s\n' "$r" "sweep --sim, 1,000 points" "$w" "$ten (10)" "$load"
	rm -rf "$tmp/s$r" "$tmp/s10-$r" "$tmp/r$r"
done
