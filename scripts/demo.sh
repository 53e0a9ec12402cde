#!/bin/sh
# make demo: starts bin/mockprov with mockprov/example.json on free ports and
# walks a client through its fault timeline — healthy, 503s, a hang, a stalled
# stream, a refused connection — printing what the client saw at each step,
# then the provider's per-request log. Meanwhile bin/loadgen sends 20
# requests/s (half of them streams) through the same timeline, and its
# per-request record is shown second by second: what an outage looks like
# to clients.
set -eu
cd "$(dirname "$0")/.."

bin=${FAULTLINE_BIN:-bin}
dir=$(mktemp -d /tmp/faultline-demo-XXXXXX)
pid=""
lpid=""
cleanup() {
	[ -n "$lpid" ] && kill "$lpid" 2>/dev/null && wait "$lpid" 2>/dev/null
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Same config, but on free ports so the demo never collides with anything.
sed 's/127\.0\.0\.1:900[12]/127.0.0.1:0/' mockprov/example.json > "$dir/mock.json"
t0=$(( $(date +%s%3N) + 500 ))
"$bin/mockprov" --config "$dir/mock.json" --t0 "$t0" --log-dir "$dir" \
	--admin 127.0.0.1:0 --log-level warn > "$dir/out" &
pid=$!
i=0
until grep -q '^ready' "$dir/out" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -lt 100 ] || { echo "demo: mockprov did not start" >&2; exit 1; }
	sleep 0.05
done
primary=$(awk '$1 == "listening" && $2 == "primary" {print $3}' "$dir/out")
secondary=$(awk '$1 == "listening" && $2 == "secondary" {print $3}' "$dir/out")
admin=$(awk '$1 == "admin" {print $2}' "$dir/out")

body='{"model":"mock-small","messages":[{"role":"user","content":"Hello"}]}'
sbody='{"model":"mock-small","stream":true,"messages":[{"role":"user","content":"Hello"}]}'

at() {	# waits until t0 + $1 seconds
	while [ "$(date +%s%3N)" -lt $((t0 + $1)) ]; do sleep 0.02; done
}
ask() {	# label, url, body, timeout
	printf '%-34s ' "$1"
	rm -f "$dir/body"
	curl -s -o "$dir/body" -w '%{http_code} in %{time_total}s' -m "$4" \
		-H 'Content-Type: application/json' -d "$3" "$2" 2>/dev/null ||
		printf ' (curl exit %s)' "$?"
	printf '  %s\n' "$(head -c 90 "$dir/body" 2>/dev/null | tr -d '\n')"
}

# The load: same t0, so its schedule lines up with the fault windows.
"$bin/loadgen" --target "http://$primary/v1" --t0 "$t0" --duration 11s --rate 20 \
	--stream 0.5 --model mock-small --timeout 1s --no-progress --out "$dir/load" \
	2> "$dir/load.err" &
lpid=$!

echo "mockprov: primary $primary, secondary $secondary, admin $admin"
echo "timeline (s after t0): 2-4 status 503, 4-6 hang, 6-8 stall after 3 tokens, 8-10 down"
echo
at 500;   ask "t=0.5  primary healthy"       "http://$primary/v1/chat/completions" "$body" 3
at 2500;  ask "t=2.5  primary 503 window"     "http://$primary/v1/chat/completions" "$body" 3
at 4500;  ask "t=4.5  primary hangs (1s cap)" "http://$primary/v1/chat/completions" "$body" 1
at 6500;  ask "t=6.5  stream stalls (1s cap)" "http://$primary/v1/chat/completions" "$sbody" 1
printf '%-34s %s tokens before the silence\n' "" "$(grep -c '"content"' "$dir/body" || true)"
at 8500;  ask "t=8.5  primary down"           "http://$primary/v1/chat/completions" "$body" 1
at 10200; ask "t=10.2 primary back"           "http://$primary/v1/chat/completions" "$body" 3
for n in 1 2 3 4; do
	ask "secondary, rate limit 3 rpm, #$n" "http://$secondary/v1/chat/completions" "$body" 3
done
echo
echo "admin: inject 'status 500' on primary for 1 s"
curl -s -X POST "http://$admin/faults" \
	-d '{"provider":"primary","kind":"status","status":500,"duration_s":1}'
echo
ask "primary after injection" "http://$primary/v1/chat/completions" "$body" 3
wait "$lpid" || { echo "demo: loadgen failed:" >&2; cat "$dir/load.err" >&2; exit 1; }
lpid=""
kill "$pid"
wait "$pid" || true
pid=""
echo
echo "loadgen, 20 requests/s at the primary (half streaming, 1 s timeout), by the"
echo "second each request was due (requests.csv: outcome; latency from the due time):"
awk -F, 'NR > 1 {
	s = int($7 / 1000); n[s]++; o[s, $14]++; lat[s] += $11
	if ($11 > mx[s]) mx[s] = $11
} END {
	split("ok http_error timeout stalled truncated reset refused", k, " ")
	printf "%3s %5s", "s", "reqs"
	for (i = 1; i <= 7; i++) printf " %10s", k[i]
	printf " %7s %9s %9s\n", "other", "mean_ms", "max_ms"
	for (s = 0; s in n; s++) {
		other = n[s]
		printf "%3d %5d", s, n[s]
		for (i = 1; i <= 7; i++) { printf " %10d", o[s, k[i]]; other -= o[s, k[i]] }
		printf " %7d %9.1f %9.1f\n", other, lat[s] / n[s], mx[s]
	}
}' "$dir/load/requests.csv"
echo
echo "mock-primary.csv (what the provider saw), requests by fault and outcome:"
awk -F, 'NR > 1 { n[($4 == "" ? "-" : $4) "," $9]++ }
	END { for (k in n) { split(k, f, ","); printf "  %-10s %-15s %5d\n", f[1], f[2], n[k] } }' \
	"$dir/mock-primary.csv" | sort
