#!/bin/sh
# make demo-walkthrough: starts bin/mockprov with mockprov/example.json on free ports and
# walks a client through its fault timeline — healthy, 503s, a hang, a stalled
# stream, a refused connection — printing what the client saw at each step,
# then the provider's per-request log. Meanwhile bin/loadgen sends 20
# requests/s (half of them streams) through the same timeline, and its
# per-request record is shown second by second: what an outage looks like
# to clients. At the same time a second mockprov replays the primary's
# timeline behind bin/gateway (with a healthy secondary), and loadgen sends
# the same load through the gateway: the same outage, failed over.
set -eu
cd "$(dirname "$0")/.."

bin=${FAULTLINE_BIN:-bin}
dir=$(mktemp -d /tmp/faultline-demo-XXXXXX)
pid=""
lpid=""
gpid=""
gmpid=""
glpid=""
cleanup() {
	for p in "$lpid" "$glpid" "$gpid" "$gmpid" "$pid"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
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
await_ready() {	# file, what
	i=0
	until grep -q '^ready' "$1" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -lt 100 ] || { echo "demo: $2 did not start" >&2; exit 1; }
		sleep 0.05
	done
}
await_ready "$dir/out" mockprov
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

# The gateway's own pair: the primary's timeline, a healthy secondary.
mkdir "$dir/gw"
cat > "$dir/gw/mock.json" <<EOF
{"providers": [
  {"name": "primary", "listen": "127.0.0.1:0", "ttft_ms": 120, "jitter_ms": 20,
   "token_ms": 15, "output_tokens": 12, "faults": [
     {"kind": "status", "status": 503, "from_s": 2, "to_s": 4},
     {"kind": "hang", "from_s": 4, "to_s": 6},
     {"kind": "stall", "after_tokens": 3, "from_s": 6, "to_s": 8},
     {"kind": "down", "from_s": 8, "to_s": 10}]},
  {"name": "secondary", "listen": "127.0.0.1:0", "ttft_ms": 250, "token_ms": 25,
   "output_tokens": 12}
]}
EOF
"$bin/mockprov" --config "$dir/gw/mock.json" --t0 "$t0" --log-dir "$dir/gw" \
	--log-level warn > "$dir/gw/mock.out" &
gmpid=$!
await_ready "$dir/gw/mock.out" "the gateway's mockprov"
gprimary=$(awk '$1 == "listening" && $2 == "primary" {print $3}' "$dir/gw/mock.out")
gsecondary=$(awk '$1 == "listening" && $2 == "secondary" {print $3}' "$dir/gw/mock.out")
cat > "$dir/gw/gateway.json" <<EOF
{"request_deadline_ms": 2000,
 "providers": {
   "primary": {"base_url": "http://$gprimary/v1", "timeout_ms": 400},
   "secondary": {"base_url": "http://$gsecondary/v1", "timeout_ms": 1500}},
 "models": {"chat": {"targets": [{"provider": "primary", "model": "mock-small"},
                                 {"provider": "secondary", "model": "mock-small"}]}},
 "breaker": {"consecutive_failures": 3, "cooldown_ms": 1000, "cooldown_jitter": 0,
             "cooldown_multiplier": 1, "half_open_probes": 2}}
EOF
"$bin/gateway" --config "$dir/gw/gateway.json" --listen 127.0.0.1:0 \
	--events "$dir/gw/events.jsonl" --log-level warn > "$dir/gw/gateway.out" &
gpid=$!
await_ready "$dir/gw/gateway.out" gateway
gateway=$(awk '$1 == "listening" {print $2}' "$dir/gw/gateway.out")

# The load: same t0, so its schedule lines up with the fault windows.
"$bin/loadgen" --target "http://$primary/v1" --t0 "$t0" --duration 11s --rate 20 \
	--stream 0.5 --model mock-small --timeout 1s --no-progress --out "$dir/load" \
	2> "$dir/load.err" &
lpid=$!
"$bin/loadgen" --target "http://$gateway/v1" --t0 "$t0" --duration 11s --rate 20 \
	--model chat --timeout 3s --no-progress --out "$dir/gw/load" \
	2> "$dir/gw/load.err" &
glpid=$!

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
wait "$glpid" || { echo "demo: loadgen failed:" >&2; cat "$dir/gw/load.err" >&2; exit 1; }
glpid=""
for p in "$gpid" "$gmpid" "$pid"; do
	kill "$p"
	wait "$p" || true
done
pid=""
gpid=""
gmpid=""

# A requests.csv second by second: outcomes, answers from the secondary, latency.
by_second() {
	awk -F, 'NR > 1 {
		s = int($7 / 1000); n[s]++; o[s, $14]++; lat[s] += $11
		if ($16 == "secondary") fb[s]++
		if ($11 > mx[s]) mx[s] = $11
	} END {
		split("ok http_error timeout stalled truncated reset refused", k, " ")
		printf "%3s %5s", "s", "reqs"
		for (i = 1; i <= 7; i++) printf " %10s", k[i]
		printf " %7s %9s %9s %9s\n", "other", "secondary", "mean_ms", "max_ms"
		for (s = 0; s in n; s++) {
			other = n[s]
			printf "%3d %5d", s, n[s]
			for (i = 1; i <= 7; i++) { printf " %10d", o[s, k[i]]; other -= o[s, k[i]] }
			printf " %7d %9d %9.1f %9.1f\n", other, fb[s], lat[s] / n[s], mx[s]
		}
	}' "$1"
}
echo
echo "loadgen, 20 requests/s at the primary (half streaming, 1 s timeout), by the"
echo "second each request was due (requests.csv: outcome; latency from the due time):"
by_second "$dir/load/requests.csv"
echo
echo "the same timeline behind bin/gateway (primary timeout 400 ms, deadline 2 s;"
echo "breaker: 3 failures, 1 s cooldown, 2 probes; a healthy secondary), 20 plain"
echo "requests/s through it:"
by_second "$dir/gw/load/requests.csv"
echo
echo "the gateway's breaker events (events.jsonl; s after t0):"
awk -v t0="$t0" -F'"' '{
	split($3, a, "[:,]")
	printf "  %5.1f  %s/%s  %s -> %s  (%s)\n", (a[2] - t0) / 1000, $6, $10, $14, $18, $22
}' "$dir/gw/events.jsonl"
echo "  the gateway's primary saw $(($(wc -l < "$dir/gw/mock-primary.csv") - 1)) of its" \
	"$(($(wc -l < "$dir/gw/load/requests.csv") - 1)) requests (mock-primary.csv)"
echo
echo "the direct run's mock-primary.csv (what the provider saw), by fault and outcome:"
awk -F, 'NR > 1 { n[($4 == "" ? "-" : $4) "," $9]++ }
	END { for (k in n) { split(k, f, ","); printf "  %-10s %-15s %5d\n", f[1], f[2], n[k] } }' \
	"$dir/mock-primary.csv" | sort
