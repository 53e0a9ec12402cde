#!/usr/bin/env bash
# bench/gateway.sh — `make bench-gateway`: what the gateway costs in front of
# a provider, next to HAProxy measured in the same run, and its memory with
# 1,000 client connections open.
#
#  1. Throughput and latency: wrk (-t WRK_THREADS -c CONNS, --latency,
#     POSTing one small chat request through bench/chat_post.lua) against
#     (a) mockprov directly (no latency, non-streaming), (b) HAProxy (one
#     thread, mode http, keep-alive and http-reuse always to mockprov, no
#     logging, no health checks) in front of it and (c) the gateway (one
#     provider, the alias "chat" -> mock-small, breaker on) in front of it.
#     The gateway gets "model":"chat" and sends mockprov "model":"mock-small",
#     so mockprov sees the same body on all three paths. Requests/s, wrk's
#     p50/p99, CPU per request. Targets: gateway >= 0.75 x HAProxy's
#     requests/s; its CPU per request <= 1.4 x HAProxy's; the gateway's
#     p99 over direct's <= 1.5 x HAProxy's.
#     (d) the same gateway with its breakers shared through a real
#     redis-server (shared_state backend redis, started here on a free
#     port, no persistence), measured in the same rounds. Target: its
#     requests/s >= 0.95 x the local gateway's, and its p99 within 5% of it.
#     (e) the same gateway to an Anthropic-dialect mockprov provider (the
#     alias "chat_anth": each request translated into a Messages body and
#     the answer back into a chat completion), and (f, g) streaming
#     ("stream": true) through the gateway to the OpenAI and to the
#     Anthropic provider (each stream event translated), all in the same
#     rounds. Target: the Anthropic target's requests/s >= 0.8 x the
#     OpenAI target's, plain and streaming.
#  2. Memory: a fresh gateway with RSS_CONNS (1,000) client connections
#     open — first held idle, each after one chat request (a small python3
#     client; left out when there is no python3), then busy, wrk -c
#     RSS_CONNS for RSS_SECS — VmRSS sampled meanwhile from /proc, and the
#     peak (VmHWM). Target: peak <= 50 MB (50,000,000 bytes).
#
# Everything runs on 127.0.0.1 on ports free at run time, from a temp dir
# that is removed at the end, with every process stopped (on Ctrl-C too).
# It reports and does not gate: it exits 0 when a target is missed,
# non-zero only when something could not run. Programs come from
# $FAULTLINE_BIN (default bin); wrk, haproxy, curl and jq are installed
# when missing. Knobs (environment): CONNS (64), WRK_THREADS (2), WRK_SECS
# (12 per target, split into ROUNDS (4) rounds, the targets' order reversed
# every other round; p50 and p99 are the median of the rounds', so that one
# round hit by other load does not decide a ratio), WARMUP_SECS (2, each
# target first), RSS_CONNS (1000), RSS_SECS (5), HOLD_SECS (2: how long the
# idle connections are sampled).
set -eu -o pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
BIN=${FAULTLINE_BIN:-bin}
CONNS=${CONNS:-64}
WRK_THREADS=${WRK_THREADS:-2}
WRK_SECS=${WRK_SECS:-12}
ROUNDS=${ROUNDS:-4}
WARMUP_SECS=${WARMUP_SECS:-2}
RSS_CONNS=${RSS_CONNS:-1000}
RSS_SECS=${RSS_SECS:-5}
HOLD_SECS=${HOLD_SECS:-2}
WORKERS=${WORKERS:-2}
RPS_TARGET=0.75
CPU_TARGET=1.4
P99_TARGET=1.5
RSS_TARGET_MB=50
# HAProxy's maxconn: with one much lower (a few hundred) it keeps fewer
# server connections than it has clients and its requests/s drop by 3-4x.
HA_MAXCONN=4096
PLAIN_TOKENS=16
CHAT_PATH=/v1/chat/completions
REQUEST='{"model":"mock-small","messages":[{"role":"user","content":"Say hello"}]}'
GW_REQUEST='{"model":"chat","messages":[{"role":"user","content":"Say hello"}]}'
GW_ANTH_REQUEST='{"model":"chat_anth","messages":[{"role":"user","content":"Say hello"}]}'
GW_STREAM_REQUEST='{"model":"chat","stream":true,"messages":[{"role":"user","content":"Say hello"}]}'
GW_ANTH_STREAM_REQUEST='{"model":"chat_anth","stream":true,"messages":[{"role":"user","content":"Say hello"}]}'
TARGETS="direct haproxy gateway gateway_redis gateway_anth gateway_stream gateway_anth_stream"
REDIS_TARGET=0.95
DIALECT_TARGET=0.8
# The key the gateway sends its Anthropic provider (mockprov takes any).
export FL_BENCH_ANTH_KEY=bench-key

BENCH_NAME=bench-gateway
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

# The open-files limit (inherited by every process started here) raised so
# that RSS_CONNS connections fit at both ends and upstream, and HAProxy's
# HA_MAXCONN (two descriptors each).
gateway_fd_limit() {
	local want=$((RSS_CONNS * 2 + 1024))
	[ "$want" -ge $((HA_MAXCONN * 2 + 256)) ] || want=$((HA_MAXCONN * 2 + 256))
	raise_fd_limit "$want" "RSS_CONNS=$RSS_CONNS"
}

# Starts mockprov: two providers on free ports, no latency, alike but for
# the dialect — "bench" speaks OpenAI's, "bench_anth" Anthropic's; sets
# MP_PID, MP_ADDR and MP_PORT (bench's) and MA_ADDR (bench_anth's).
start_bench_mockprov() {
	local dir=$tmp/mockprov p
	mkdir -p "$dir"
	p='"listen":"127.0.0.1:0","model":"mock-small","ttft_ms":0,"jitter_ms":0,"token_ms":0'
	printf '{"providers":[{"name":"bench",%s,"output_tokens":%s},
	 {"name":"bench_anth","dialect":"anthropic",%s,"output_tokens":%s}]}\n' \
		"$p" "$PLAIN_TOKENS" "$p" "$PLAIN_TOKENS" >"$dir/config.json"
	start_mockprov "$dir/config.json" "$dir"
	MA_ADDR=$(awk '$1 == "listening" && $2 == "bench_anth" { print $3; exit }' \
		"$dir/mockprov.out")
	[ -n "$MA_ADDR" ] || die "mockprov printed no 'listening' line for bench_anth"
}

# Writes HAProxy's config for port $2 to file $1: one thread ($3 threads
# when given), no logging, keep-alive both ways, idle server connections
# shared by every client (http-reuse always), the one server without
# health checks.
haproxy_config() {
	haproxy_write_config "$1" "$2" "${3:-1}" "$HA_MAXCONN" 60 "	http-reuse always"
}

# The table of targets $1 after wrk_rounds: requests/s, the rounds'
# median p50 and p99, the worst max, requests and errors.
wrk_table() {
	local who f
	row "target" "req/s" "p50 (ms)" "p99 (ms)" "max (ms)" "requests" "errors c/r/w/s/t"
	for who in $1; do
		f=$tmp/wrk-$who
		row "$(target_name "$who")" "$(get "$f" rps)" "$(get "$f" p50_med_ms)" \
			"$(get "$f" p99_med_ms)" "$(get "$f" max_ms)" "$(get "$f" requests)" "$(errors "$f")"
	done
}

# The throughput rounds of targets $1 (names wrk_round knows), as
# alternate_rounds runs them: a warm-up, then ROUNDS rounds of $2 s each;
# each target's rounds combined into $tmp/wrk-NAME, with the rounds'
# medians.
wrk_rounds() {
	local targets=$1 secs=$2 who
	# shellcheck disable=SC2086 # a list of words
	alternate_rounds wrk_round "$tmp/wrk" "$ROUNDS" "$secs" $targets
	for who in $targets; do
		combine "$tmp/wrk-$who" "$tmp/wrk-$who".[0-9]*
		medians "$tmp/wrk-$who" "$tmp/wrk-$who".[0-9]*
	done
}

# haproxy_config with HA_THREADS threads (1 unless set).
haproxy_config_threads() {
	haproxy_config "$1" "$2" "${HA_THREADS:-1}"
}

# Starts HAProxy (foreground, one process; HA_THREADS threads, 1 unless
# set) on a free port in front of mockprov, its files in dir $1
# ($tmp/haproxy when not given); sets HA_PID and HA_ADDR.
start_haproxy() {
	start_haproxy_with haproxy_config_threads "${1:-$tmp/haproxy}"
}

# Starts a gateway in front of mockprov with its files in dir $1; sets
# GW_PID, GW_ADDR and GW_PORT.
start_gateway() {
	local dir=$1
	mkdir -p "$dir"
	cat >"$dir/config.json" <<EOF
{
  "listen": "127.0.0.1:0",
  "request_deadline_ms": 10000,
  "providers": {
    "mock": {"base_url": "http://$MP_ADDR/v1", "timeout_ms": 5000},
    "mock_anth": {"base_url": "http://$MA_ADDR/v1", "timeout_ms": 5000,
                  "dialect": "anthropic", "api_key_env": "FL_BENCH_ANTH_KEY"}
  },
  "models": {
    "chat": {"targets": [{"provider": "mock", "model": "mock-small"}]},
    "chat_anth": {"targets": [{"provider": "mock_anth", "model": "mock-small"}]}
  },
  "breaker": {"enabled": true}
}
EOF
	start_gateway_on "$dir/config.json" "$dir"
}

# Starts redis-server on a free loopback port (no persistence) with its
# files in $tmp/redis; sets RD_PID and RD_PORT.
start_redis() {
	local dir=$tmp/redis redis port
	redis=$(command -v redis-server || echo /usr/bin/redis-server)
	[ -x "$redis" ] || die "redis-server is not installed (scripts/deps.sh installs it)"
	mkdir -p "$dir"
	for _ in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 12000))
		port_used "$port" && continue
		"$redis" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
			>"$dir/redis.out" 2>&1 &
		RD_PID=$!
		pids="$pids $RD_PID"
		for _ in $(seq 100); do
			kill -0 "$RD_PID" 2>/dev/null || break
			if grep -q 'Ready to accept connections' "$dir/redis.out"; then
				RD_PORT=$port
				return 0
			fi
			sleep 0.05
		done
		stop_pid "$RD_PID"
	done
	die "redis-server did not start: $(cat "$dir/redis.out")"
}

# Starts a second gateway, alike but for shared_state backend redis (the
# redis-server of start_redis), in dir $1; sets GR_PID and GR_ADDR.
start_gateway_redis() {
	local dir=$1 gw_pid=$GW_PID gw_addr=$GW_ADDR gw_port=$GW_PORT
	mkdir -p "$dir"
	jq --arg url "redis://127.0.0.1:$RD_PORT/0" \
		'. + {shared_state: {backend: "redis", url: $url, key_prefix: "bench:", replica: "r1"}}' \
		"$tmp/gateway/config.json" >"$dir/config.json"
	start_gateway_on "$dir/config.json" "$dir"
	GR_PID=$GW_PID GR_ADDR=$GW_ADDR
	GW_PID=$gw_pid GW_ADDR=$gw_addr GW_PORT=$gw_port
	# The link is up (connected, subscribed, synced) before it is measured.
	for _ in $(seq 100); do
		curl -sf --max-time 1 "http://$GR_ADDR/metrics" | grep -q '^faultline_shared_state_up 1' &&
			return 0
		sleep 0.05
	done
	die "the redis-backed gateway never shared its state: $(cat "$dir/gateway.err")"
}

# POSTs body $2 to $1 and checks for a 200 chat completion from mock-small.
check_target() {
	local answer=$tmp/answer.json
	REQUEST=$2 capture_body "$1" "$answer"
	jq -e '(.choices | length) > 0 and .model == "mock-small"' "$answer" >/dev/null ||
		die "$1 did not answer a chat completion from mock-small: $(cat "$answer")"
}

# POSTs streaming body $2 to $1 and checks for $PLAIN_TOKENS content chunks
# and data: [DONE].
check_stream() {
	local answer=$tmp/answer.sse status
	status=$(curl -sS -o "$answer" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/json' --data-binary "$2" --max-time 5 "$1")
	[ "$status" = 200 ] || die "$1 answered $status to a stream: $(cat "$answer")"
	[ "$(grep -c '"content":"[^"]' "$answer")" = "$PLAIN_TOKENS" ] &&
		grep -q '^data: \[DONE\]' "$answer" ||
		die "$1 did not stream $PLAIN_TOKENS tokens and [DONE]: $(cat "$answer")"
}

# One wrk run of $3 s against target $1 (direct, haproxy or gateway); its
# flbench_ lines into file $2 with what the server (for the proxies: the
# proxy), wrk, mockprov behind a proxy (flbench_backend_ticks) and the
# whole machine used meanwhile.
wrk_round() {
	local who=$1 out=$2 secs=$3 url pid body b0 b1
	case $who in
	direct) url=http://$MP_ADDR$CHAT_PATH pid=$MP_PID body=$REQUEST ;;
	haproxy) url=http://$HA_ADDR$CHAT_PATH pid=$HA_PID body=$REQUEST ;;
	gateway) url=http://$GW_ADDR$CHAT_PATH pid=$GW_PID body=$GW_REQUEST ;;
	gateway_redis) url=http://$GR_ADDR$CHAT_PATH pid=$GR_PID body=$GW_REQUEST ;;
	gateway_anth) url=http://$GW_ADDR$CHAT_PATH pid=$GW_PID body=$GW_ANTH_REQUEST ;;
	gateway_stream) url=http://$GW_ADDR$CHAT_PATH pid=$GW_PID body=$GW_STREAM_REQUEST ;;
	gateway_anth_stream) url=http://$GW_ADDR$CHAT_PATH pid=$GW_PID body=$GW_ANTH_STREAM_REQUEST ;;
	haproxy_n) url=http://$HN_ADDR$CHAT_PATH pid=$HN_PID body=$REQUEST ;;
	gateway_n) url=http://$GN_ADDR$CHAT_PATH pid=$GN_PID body=$GW_REQUEST ;;
	esac
	: >"$out"
	b0=$(cpu_ticks "$MP_PID")
	measured "$pid" "$out" env FL_BENCH_REQUEST="$body" timeout $((secs + 30)) \
		wrk -t"$WRK_THREADS" -c"$CONNS" -d"${secs}s" --latency -s "$here/chat_post.lua" "$url" ||
		die "wrk failed against $url: $(cat "$out" "$out.err")"
	b1=$(cpu_ticks "$MP_PID")
	[ "$who" = direct ] || echo "flbench_backend_ticks $((b1 - b0))" >>"$out"
	[ "$(get "$out" requests)" -gt 0 ] ||
		die "wrk made no request to $url: $(cat "$out" "$out.err")"
	echo "flbench_errors $(($(get "$out" errors_connect) + $(get "$out" errors_read) + \
		$(get "$out" errors_write) + $(get "$out" errors_status) + \
		$(get "$out" errors_timeout)))" >>"$out"
}

# Appends to file $1 the median over the rounds in files $2... of
# flbench_p50_ms and flbench_p99_ms, as flbench_p50_med_ms and
# flbench_p99_med_ms.
medians() {
	local out=$1 key
	shift
	for key in p50_ms p99_ms; do
		awk -v k="flbench_$key" '$1 == k { print $2 + 0 }' "$@" | sort -g |
			awk -v k="flbench_${key%_ms}_med_ms" '{ v[NR] = $1 }
				END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
					printf "%s %.3f\n", k, m }' >>"$out"
	done
}

# wrk's error counts: connect/read/write/status/timeout.
errors() {
	echo "$(get "$1" errors_connect)/$(get "$1" errors_read)/$(get "$1" errors_write)/$(get "$1" errors_status)/$(get "$1" errors_timeout)"
}

# "met" when awk expression $1 holds, else "missed".
verdict() {
	awk "BEGIN { exit !($1) }" && echo met || echo missed
}

# The name of target $1 in the tables.
target_name() {
	case $1 in
	direct) echo "mockprov direct" ;;
	haproxy) echo "HAProxy (1 thread)" ;;
	gateway) echo "gateway" ;;
	gateway_redis) echo "gateway, Redis-shared" ;;
	gateway_anth) echo "gateway -> Anthropic" ;;
	gateway_stream) echo "gateway, stream" ;;
	gateway_anth_stream) echo "gw -> Anthropic, stream" ;;
	haproxy_n) echo "HAProxy ($WORKERS threads)" ;;
	gateway_n) echo "gateway ($WORKERS workers)" ;;
	esac
}

# One row of a table: a label and up to six columns.
row() {
	printf '   %-22s %10s %10s %10s %10s %10s %12s\n' "$1" "${2-}" "${3-}" "${4-}" "${5-}" \
		"${6-}" "${7-}"
}

# One row of the ratios: a label, a figure, a target and a verdict.
ratio_row() {
	printf '   %-46s %10s   %-8s %s\n' "$1" "$2" "${3-}" "${4-}" | sed 's/ *$//'
}

throughput_bench() {
	local round_secs=$((WRK_SECS / ROUNDS)) who round order f d h g
	[ "$round_secs" -ge 1 ] || die "WRK_SECS ($WRK_SECS) must be at least ROUNDS ($ROUNDS)"
	start_haproxy
	start_gateway "$tmp/gateway"
	start_redis
	start_gateway_redis "$tmp/gateway-redis"
	check_target "http://$MP_ADDR$CHAT_PATH" "$REQUEST"
	check_target "http://$HA_ADDR$CHAT_PATH" "$REQUEST"
	check_target "http://$GW_ADDR$CHAT_PATH" "$GW_REQUEST"
	check_target "http://$GR_ADDR$CHAT_PATH" "$GW_REQUEST"
	check_target "http://$GW_ADDR$CHAT_PATH" "$GW_ANTH_REQUEST"
	check_stream "http://$GW_ADDR$CHAT_PATH" "$GW_STREAM_REQUEST"
	check_stream "http://$GW_ADDR$CHAT_PATH" "$GW_ANTH_STREAM_REQUEST"

	wrk_rounds "$TARGETS" "$round_secs"
	GW_HWM_KB=$(awk '/^VmHWM/ { print $2 }' "/proc/$GW_PID/status")
	GW_ERR_LINES=$(wc -l <"$tmp/gateway/gateway.err")
	GR_UP=$(curl -sf --max-time 1 "http://$GR_ADDR/metrics" |
		awk '$1 == "faultline_shared_state_up" { print $2 }')
	stop_pid "$GW_PID"
	stop_pid "$GR_PID"
	stop_pid "$RD_PID"
	stop_pid "$HA_PID"

	d=$tmp/wrk-direct
	h=$tmp/wrk-haproxy
	g=$tmp/wrk-gateway
	r=$tmp/wrk-gateway_redis
	RPS_D=$(get "$d" rps) RPS_H=$(get "$h" rps) RPS_G=$(get "$g" rps)
	RPS_RATIO=$(calc "$RPS_G / $RPS_H" %.2f)
	RPS_VERDICT=$(verdict "$RPS_RATIO >= $RPS_TARGET")
	CPU_RATIO=$(calc "$(get "$g" server_us_per_req) / $(get "$h" server_us_per_req)" %.2f)
	CPU_VERDICT=$(verdict "$CPU_RATIO <= $CPU_TARGET")
	ADD_H=$(calc "$(get "$h" p99_med_ms) - $(get "$d" p99_med_ms)" %.3f)
	ADD_G=$(calc "$(get "$g" p99_med_ms) - $(get "$d" p99_med_ms)" %.3f)
	if awk "BEGIN { exit !($ADD_H > 0) }"; then
		P99_RATIO=$(calc "$ADD_G / $ADD_H" %.2f)
		P99_VERDICT=$(verdict "$P99_RATIO <= $P99_TARGET")
	else
		P99_RATIO=n/a
		P99_VERDICT="$(verdict "$ADD_G <= 0") (HAProxy added no p99 here)"
	fi

	echo
	echo "1. Throughput: wrk -t$WRK_THREADS -c$CONNS --latency, POST $CHAT_PATH" \
		"($(printf %s "$REQUEST" | wc -c)-byte body; the gateway's says \"chat\"),"
	echo "   mockprov answering at once ($PLAIN_TOKENS tokens, non-streaming); ${WARMUP_SECS} s" \
		"warm-up each, then $ROUNDS rounds of ${round_secs} s"
	echo "   each, the order reversed every other round (p50/p99: the median of the rounds';"
	echo "   max: the worst)"
	wrk_table "$TARGETS"
	for who in $TARGETS; do
		printf '   %s' "$(target_name "$who") p99 by round (ms):"
		for round in $(seq "$ROUNDS"); do
			printf ' %s' "$(get "$tmp/wrk-$who.$round" p99_ms)"
		done
		echo
	done
	echo "   CPU, % of a core (and us per request):"
	row "target" "proxy" "proxy/req" "mockprov" "mock/req" "wrk" "others'"
	row "$(target_name direct)" "" "" "$(get "$d" cpu_server_pct)" \
		"$(get "$d" server_us_per_req)" "$(get "$d" cpu_client_pct)" "$(get "$d" cpu_other_pct)"
	for who in haproxy gateway gateway_redis gateway_anth gateway_stream gateway_anth_stream; do
		f=$tmp/wrk-$who
		row "$(target_name "$who")" "$(get "$f" cpu_server_pct)" "$(get "$f" server_us_per_req)" \
			"$(get "$f" cpu_backend_pct)" "$(get "$f" backend_us_per_req)" \
			"$(get "$f" cpu_client_pct)" "$(get "$f" cpu_other_pct)"
	done
	echo "   ratios:"
	ratio_row "gateway / HAProxy requests/s" "$RPS_RATIO" ">= $RPS_TARGET" "$RPS_VERDICT"
	ratio_row "HAProxy / direct requests/s" "$(calc "$RPS_H / $RPS_D" %.2f)"
	ratio_row "gateway / direct requests/s" "$(calc "$RPS_G / $RPS_D" %.2f)"
	ratio_row "added p50 over direct, HAProxy (ms)" \
		"$(calc "$(get "$h" p50_med_ms) - $(get "$d" p50_med_ms)" %.3f)"
	ratio_row "added p50 over direct, gateway (ms)" \
		"$(calc "$(get "$g" p50_med_ms) - $(get "$d" p50_med_ms)" %.3f)"
	ratio_row "added p99 over direct, HAProxy (ms)" "$ADD_H"
	ratio_row "added p99 over direct, gateway (ms)" "$ADD_G"
	ratio_row "gateway's added p99 / HAProxy's" "$P99_RATIO" "<= $P99_TARGET" "$P99_VERDICT"
	ratio_row "gateway p99 / HAProxy p99 (context)" \
		"$(calc "$(get "$g" p99_med_ms) / $(get "$h" p99_med_ms)" %.2f)"
	ratio_row "gateway CPU per request / HAProxy's" "$CPU_RATIO" "<= $CPU_TARGET" "$CPU_VERDICT"
	RD_RATIO=$(calc "$(get "$r" rps) / $RPS_G" %.3f)
	RD_P99=$(calc "$(get "$r" p99_med_ms) / $(get "$g" p99_med_ms)" %.3f)
	ratio_row "Redis-shared / local gateway requests/s" "$RD_RATIO" ">= $REDIS_TARGET" \
		"$(verdict "$RD_RATIO >= $REDIS_TARGET")"
	ratio_row "Redis-shared / local gateway p99" "$RD_P99" "<= 1.05" \
		"$(verdict "$RD_P99 <= 1.05")"
	ratio_row "Redis-shared / local gateway CPU per request" \
		"$(calc "$(get "$r" server_us_per_req) / $(get "$g" server_us_per_req)" %.3f)"
	dialect_ratios
	echo "   the Redis-shared gateway's faultline_shared_state_up at the end: ${GR_UP:-none}" \
		"(1: shared throughout)"
	echo "   gateway peak RSS over these rounds (VmHWM): $GW_HWM_KB kB; $GW_ERR_LINES lines" \
		"on its stderr (--log-level warn)"
	echo "   wrk's latency runs from its send to the end of the answer; at $CONNS connections" \
		"in closed loop"
	echo "   the latency is mostly queueing, so the added p99 follows the lost requests/s"
	busy_warning "$(get "$d" cpu_other_pct)" "$(get "$h" cpu_other_pct)" \
		"$(get "$g" cpu_other_pct)" "$(get "$r" cpu_other_pct)"
}

# The Anthropic target against the OpenAI one, plain and streaming: sets
# ANTH_RATIO, ANTH_STREAM_RATIO and their verdicts, and prints them.
dialect_ratios() {
	local g=$tmp/wrk-gateway ga=$tmp/wrk-gateway_anth s=$tmp/wrk-gateway_stream
	local sa=$tmp/wrk-gateway_anth_stream
	ANTH_RATIO=$(calc "$(get "$ga" rps) / $(get "$g" rps)" %.3f)
	ANTH_VERDICT=$(verdict "$ANTH_RATIO >= $DIALECT_TARGET")
	ANTH_STREAM_RATIO=$(calc "$(get "$sa" rps) / $(get "$s" rps)" %.3f)
	ANTH_STREAM_VERDICT=$(verdict "$ANTH_STREAM_RATIO >= $DIALECT_TARGET")
	ratio_row "Anthropic / OpenAI target requests/s, plain" "$ANTH_RATIO" \
		">= $DIALECT_TARGET" "$ANTH_VERDICT"
	ratio_row "Anthropic / OpenAI target requests/s, stream" "$ANTH_STREAM_RATIO" \
		">= $DIALECT_TARGET" "$ANTH_STREAM_VERDICT"
	ratio_row "Anthropic / OpenAI gateway CPU per request, plain" \
		"$(calc "$(get "$ga" server_us_per_req) / $(get "$g" server_us_per_req)" %.3f)"
	ratio_row "Anthropic / OpenAI gateway CPU per request, stream" \
		"$(calc "$(get "$sa" server_us_per_req) / $(get "$s" server_us_per_req)" %.3f)"
}

# Samples the gateway $1 times, every 0.2 s, while process $2 (when given)
# runs: the most VmRSS (kB), client and upstream connections seen, as
# "RSS CLIENTS UPSTREAM".
sample_gateway() {
	local n=$1 watch=${2-} rss c u max_rss=0 max_c=0 max_u=0
	for _ in $(seq "$n"); do
		[ -n "$watch" ] && ! kill -0 "$watch" 2>/dev/null && break
		rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$GW_PID/status")
		c=$(established "$GW_PORT")
		u=$(established "$MP_PORT" rem)
		[ "$rss" -gt "$max_rss" ] && max_rss=$rss
		[ "$c" -gt "$max_c" ] && max_c=$c
		[ "$u" -gt "$max_u" ] && max_u=$u
		sleep 0.2
	done
	echo "$max_rss $max_c $max_u"
}

# Writes the python3 client that opens N connections to HOST:PORT, POSTs
# BODY to PATH once on each, keeps them open and prints flbench_ lines when
# every answer is in (or after 30 s); then it waits to be stopped (60 s at
# most).
write_holder() {
	cat >"$1" <<'EOF'
import errno, os, selectors, socket, sys, time

host, port, n, path, body = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
body = body.encode()
req = ("POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
       "Content-Length: %d\r\n\r\n" % (path, host, port, len(body))).encode() + body
sel = selectors.DefaultSelector()
socks, ok, failed, first_error = [], 0, 0, ""


def fail(why):
    global failed, first_error
    failed += 1
    first_error = first_error or why


def complete(buf):
    """The status when buf holds a whole answer, else None."""
    head, sep, rest = buf.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        fields[k.strip().lower()] = v.strip().lower()
    if "content-length" in fields:
        return status if len(rest) >= int(fields["content-length"]) else None
    if fields.get("transfer-encoding") == "chunked":
        return status if rest.endswith(b"0\r\n\r\n") else None
    return None


for _ in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    err = s.connect_ex((host, port))
    if err not in (0, errno.EINPROGRESS):
        fail("connect: " + os.strerror(err))
        s.close()
        continue
    socks.append(s)
    sel.register(s, selectors.EVENT_WRITE, {"sent": False, "buf": b""})
pending = len(socks)
deadline = time.monotonic() + 30
while pending and time.monotonic() < deadline:
    for key, _ in sel.select(timeout=1):
        s, st = key.fileobj, key.data
        if not st["sent"]:
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                fail("connect: " + os.strerror(err))
                sel.unregister(s)
                pending -= 1
                continue
            s.sendall(req)
            st["sent"] = True
            sel.modify(s, selectors.EVENT_READ, st)
            continue
        try:
            chunk = s.recv(65536)
        except OSError as e:
            chunk, why = None, "recv: " + str(e)
        else:
            why = "closed before the answer"
        if not chunk:
            fail(why)
            sel.unregister(s)
            pending -= 1
            continue
        st["buf"] += chunk
        status = complete(st["buf"])
        if status is not None:
            if status == 200:
                ok += 1
            else:
                fail("HTTP %d" % status)
            sel.unregister(s)
            pending -= 1
if pending:
    fail("%d without an answer within 30 s" % pending)
    failed += pending - 1
print("flbench_opened %d" % len(socks))
print("flbench_answered_200 %d" % ok)
print("flbench_failed %d" % failed)
print("flbench_first_error %s" % (first_error or "none"))
print("flbench_held")
sys.stdout.flush()
time.sleep(60)
EOF
}

# Idle connections: RSS_CONNS connections opened, one chat request on each,
# then held while the gateway is sampled; sets HOLD_* figures.
hold_phase() {
	local out=$tmp/hold.txt holder=$tmp/holder.py pid s
	write_holder "$holder"
	python3 "$holder" 127.0.0.1 "$GW_PORT" "$RSS_CONNS" "$CHAT_PATH" "$GW_REQUEST" \
		>"$out" 2>"$out.err" &
	pid=$!
	pids="$pids $pid"
	for _ in $(seq 400); do
		grep -q '^flbench_held' "$out" && break
		kill -0 "$pid" 2>/dev/null || die "the python3 client failed: $(cat "$out.err")"
		sleep 0.1
	done
	grep -q '^flbench_held' "$out" || die "the python3 client did not finish within 40 s"
	s=$(sample_gateway $((HOLD_SECS * 5)))
	stop_pid "$pid"
	HOLD_RSS_KB=${s%% *}
	s=${s#* }
	HOLD_CLIENTS=${s%% *}
	HOLD_UPSTREAM=${s#* }
	HOLD_OK=$(get "$out" answered_200)
	HOLD_FAILED=$(get "$out" failed)
	HOLD_FIRST_ERROR=$(get "$out" first_error)
	# Let the gateway see the connections close before the busy phase.
	for _ in $(seq 50); do
		[ "$(established "$GW_PORT")" -eq 0 ] && break
		sleep 0.1
	done
}

# Busy connections: wrk -c RSS_CONNS for RSS_SECS, the gateway sampled
# meanwhile; sets BUSY_* figures.
busy_phase() {
	local out=$tmp/busy.txt pid s
	env FL_BENCH_REQUEST="$GW_REQUEST" timeout $((RSS_SECS + 30)) wrk -t"$WRK_THREADS" \
		-c"$RSS_CONNS" -d"${RSS_SECS}s" -s "$here/chat_post.lua" \
		"http://$GW_ADDR$CHAT_PATH" >"$out" 2>"$out.err" &
	pid=$!
	pids="$pids $pid"
	s=$(sample_gateway $(((RSS_SECS + 30) * 5)) "$pid")
	wait "$pid" || die "wrk -c$RSS_CONNS failed: $(cat "$out" "$out.err")"
	forget_pid "$pid"
	BUSY_RSS_KB=${s%% *}
	s=${s#* }
	BUSY_CLIENTS=${s%% *}
	BUSY_UPSTREAM=${s#* }
	BUSY_RPS=$(get "$out" rps)
	BUSY_ERRORS=$(errors "$out")
}

rss_bench() {
	local start_kb hwm_kb hold=""
	start_gateway "$tmp/gateway-rss"
	check_target "http://$GW_ADDR$CHAT_PATH" "$GW_REQUEST"
	start_kb=$(awk '/^VmRSS/ { print $2 }' "/proc/$GW_PID/status")
	if command -v python3 >/dev/null 2>&1 && python3 -c 'import selectors' 2>/dev/null; then
		hold=yes
		hold_phase
	fi
	busy_phase
	hwm_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$GW_PID/status")
	stop_pid "$GW_PID"
	RSS_MB=$(mb "$hwm_kb")
	RSS_VERDICT=$(verdict "$hwm_kb * 1024 <= $RSS_TARGET_MB * 1e6")

	echo
	echo "2. Memory: a fresh gateway with $RSS_CONNS client connections open (MB = 10^6" \
		"bytes; kB from /proc are KiB)"
	printf '   %-50s %10s   %s\n' "" "RSS (MB)" "connections seen (client / upstream)"
	printf '   %-50s %10s\n' "after start and one request" "$(mb "$start_kb")"
	if [ -n "$hold" ]; then
		printf '   %-50s %10s   %s / %s\n' "idle: $RSS_CONNS held, one request each" \
			"$(mb "$HOLD_RSS_KB")" "$HOLD_CLIENTS" "$HOLD_UPSTREAM"
		printf '   %-50s %s\n' "" "(answered 200: $HOLD_OK, failed: $HOLD_FAILED${HOLD_FIRST_ERROR:+, first: $HOLD_FIRST_ERROR})"
	else
		echo "   idle: left out (no python3)"
	fi
	printf '   %-50s %10s   %s / %s\n' "busy: wrk -t$WRK_THREADS -c$RSS_CONNS for ${RSS_SECS} s" \
		"$(mb "$BUSY_RSS_KB")" "$BUSY_CLIENTS" "$BUSY_UPSTREAM"
	printf '   %-50s %s\n' "" "($BUSY_RPS requests/s, errors c/r/w/s/t $BUSY_ERRORS)"
	printf '   %-50s %10s   target <= %s MB: %s\n' "peak (VmHWM, $hwm_kb kB)" "$RSS_MB" \
		"$RSS_TARGET_MB" "$RSS_VERDICT"
	echo "   (VmRSS sampled every 0.2 s: the most seen; connections: ESTABLISHED sockets on" \
		"the gateway's port, and its own to mockprov)"
}

# ---- workers: `make bench-gateway-workers` (bench/gateway.sh workers) ----
#
# The gateway with workers: WORKERS (2) against HAProxy with nbthread
# WORKERS, in the same alternating rounds as part 1, with mockprov direct,
# HAProxy's one thread and the one-process gateway for context. Target:
# the workers' requests/s >= 0.75 x HAProxy's at as many threads. CPU is
# the whole proxy's (the supervisor and its workers; HAProxy's threads).
# On a box of few cores wrk, mockprov and the proxy share them: the
# "others'" column and the proxy's share say how far a proxy could use
# its N threads or workers at all.

# Starts HAProxy with WORKERS threads; sets HN_PID and HN_ADDR (HA_* kept).
start_haproxy_n() {
	local ha_pid=$HA_PID ha_addr=$HA_ADDR
	HA_THREADS=$WORKERS start_haproxy "$tmp/haproxy-n"
	HN_PID=$HA_PID HN_ADDR=$HA_ADDR
	HA_PID=$ha_pid HA_ADDR=$ha_addr
}

# Starts the gateway of part 1's config with "workers": WORKERS in dir $1;
# sets GN_PID and GN_ADDR (GW_* kept).
start_gateway_n() {
	local dir=$1 gw_pid=$GW_PID gw_addr=$GW_ADDR gw_port=$GW_PORT
	mkdir -p "$dir"
	jq --argjson n "$WORKERS" '. + {workers: $n}' "$tmp/gateway/config.json" >"$dir/config.json"
	start_gateway_on "$dir/config.json" "$dir"
	GN_PID=$GW_PID GN_ADDR=$GW_ADDR
	GW_PID=$gw_pid GW_ADDR=$gw_addr GW_PORT=$gw_port
}

workers_bench() {
	local round_secs=$((WRK_SECS / ROUNDS)) who round order f d h hn g gn targets
	targets="direct haproxy haproxy_n gateway gateway_n"
	[ "$round_secs" -ge 1 ] || die "WRK_SECS ($WRK_SECS) must be at least ROUNDS ($ROUNDS)"
	start_haproxy
	start_haproxy_n
	start_gateway "$tmp/gateway"
	start_gateway_n "$tmp/gateway-n"
	check_target "http://$HN_ADDR$CHAT_PATH" "$REQUEST"
	check_target "http://$GW_ADDR$CHAT_PATH" "$GW_REQUEST"
	check_target "http://$GN_ADDR$CHAT_PATH" "$GW_REQUEST"
	wrk_rounds "$targets" "$round_secs"
	GN_UP=$(curl -sf --max-time 2 "http://$GN_ADDR/metrics" |
		awk '$1 ~ /^faultline_worker_up/ { s += $2 } END { print s + 0 }')
	GN_SPREAD=$(curl -sf --max-time 2 "http://$GN_ADDR/metrics" |
		awk '$1 ~ /^faultline_worker_requests_total/ { printf "%s%s", sep, $2; sep = " / " }')
	stop_pid "$GN_PID"
	stop_pid "$GW_PID"
	stop_pid "$HN_PID"
	stop_pid "$HA_PID"

	d=$tmp/wrk-direct h=$tmp/wrk-haproxy hn=$tmp/wrk-haproxy_n
	g=$tmp/wrk-gateway gn=$tmp/wrk-gateway_n
	WK_RATIO=$(calc "$(get "$gn" rps) / $(get "$hn" rps)" %.2f)
	WK_VERDICT=$(verdict "$WK_RATIO >= $RPS_TARGET")
	echo
	echo "W. Workers: the gateway with $WORKERS workers against HAProxy with nbthread" \
		"$WORKERS; wrk -t$WRK_THREADS -c$CONNS,"
	echo "   ${WARMUP_SECS} s warm-up each, then $ROUNDS rounds of ${round_secs} s each," \
		"the order reversed every other round"
	wrk_table "$targets"
	for who in $targets; do
		printf '   %s' "$(target_name "$who") req/s by round:"
		for round in $(seq "$ROUNDS"); do
			printf ' %s' "$(calc "$(get "$tmp/wrk-$who.$round" requests) / $(get "$tmp/wrk-$who.$round" duration_s)" %.0f)"
		done
		echo
	done
	echo "   CPU, % of a core (and us per request):"
	row "target" "proxy" "proxy/req" "mockprov" "mock/req" "wrk" "others'"
	row "$(target_name direct)" "" "" "$(get "$d" cpu_server_pct)" \
		"$(get "$d" server_us_per_req)" "$(get "$d" cpu_client_pct)" "$(get "$d" cpu_other_pct)"
	for who in haproxy haproxy_n gateway gateway_n; do
		f=$tmp/wrk-$who
		row "$(target_name "$who")" "$(get "$f" cpu_server_pct)" "$(get "$f" server_us_per_req)" \
			"$(get "$f" cpu_backend_pct)" "$(get "$f" backend_us_per_req)" \
			"$(get "$f" cpu_client_pct)" "$(get "$f" cpu_other_pct)"
	done
	echo "   ratios:"
	ratio_row "gateway $WORKERS workers / HAProxy $WORKERS threads requests/s" "$WK_RATIO" \
		">= $RPS_TARGET" "$WK_VERDICT"
	ratio_row "gateway 1 process / HAProxy 1 thread requests/s" \
		"$(calc "$(get "$g" rps) / $(get "$h" rps)" %.2f)"
	ratio_row "gateway $WORKERS workers / 1 process requests/s" \
		"$(calc "$(get "$gn" rps) / $(get "$g" rps)" %.2f)"
	ratio_row "HAProxy $WORKERS threads / 1 thread requests/s" \
		"$(calc "$(get "$hn" rps) / $(get "$h" rps)" %.2f)"
	ratio_row "gateway $WORKERS workers / HAProxy CPU per request" \
		"$(calc "$(get "$gn" server_us_per_req) / $(get "$hn" server_us_per_req)" %.2f)"
	echo "   the workers' requests as the gateway counted them (faultline_worker_requests_total):" \
		"$GN_SPREAD; workers up at the end: $GN_UP of $WORKERS"
	echo "   $(nproc) cores for wrk ($WRK_THREADS threads), mockprov (one loop) and the proxy:" \
		"a proxy of N threads or"
	echo "   workers can use at most what wrk and mockprov leave (the proxy column against" \
		"$((WORKERS * 100))%)"
	busy_warning "$(get "$d" cpu_other_pct)" "$(get "$hn" cpu_other_pct)" \
		"$(get "$gn" cpu_other_pct)"
}

main_workers() {
	[ "$WORKERS" -ge 2 ] 2>/dev/null || die "WORKERS must be 2 or more, got \"$WORKERS\""
	[ -x "$BIN/mockprov" ] || die "$BIN/mockprov is missing (make, or set FAULTLINE_BIN)"
	[ -x "$BIN/gateway" ] || die "$BIN/gateway is missing (make, or set FAULTLINE_BIN)"
	gateway_fd_limit
	bench_start wrk haproxy curl jq
	echo "   mockprov, the proxies and wrk share these cores; \"others' CPU\" is the" \
		"process time (user + system) the rest of the machine used meanwhile"
	start_bench_mockprov
	workers_bench
	stop_pid "$MP_PID"
	echo
	echo "summary"
	ratio_row "gateway $WORKERS workers / HAProxy $WORKERS threads requests/s" "$WK_RATIO" \
		">= $RPS_TARGET" "$WK_VERDICT"
}

main() {
	[ -x "$BIN/mockprov" ] || die "$BIN/mockprov is missing (make, or set FAULTLINE_BIN)"
	[ -x "$BIN/gateway" ] || die "$BIN/gateway is missing (make, or set FAULTLINE_BIN)"
	gateway_fd_limit
	bench_start wrk haproxy curl jq
	echo "   mockprov, the proxies and wrk share these cores; \"others' CPU\" is the" \
		"process time (user + system) the rest of the machine used meanwhile"
	start_bench_mockprov
	throughput_bench
	rss_bench
	stop_pid "$MP_PID"

	echo
	echo "summary"
	echo "   requests/s: direct $RPS_D, HAProxy $RPS_H, gateway $RPS_G"
	echo "   added p99 over direct (ms): HAProxy $ADD_H, gateway $ADD_G"
	ratio_row "gateway / HAProxy requests/s" "$RPS_RATIO" ">= $RPS_TARGET" "$RPS_VERDICT"
	ratio_row "gateway CPU per request / HAProxy's" "$CPU_RATIO" "<= $CPU_TARGET" "$CPU_VERDICT"
	ratio_row "gateway's added p99 / HAProxy's" "$P99_RATIO" "<= $P99_TARGET" "$P99_VERDICT"
	ratio_row "Anthropic / OpenAI target requests/s, plain" "$ANTH_RATIO" \
		">= $DIALECT_TARGET" "$ANTH_VERDICT"
	ratio_row "Anthropic / OpenAI target requests/s, stream" "$ANTH_STREAM_RATIO" \
		">= $DIALECT_TARGET" "$ANTH_STREAM_VERDICT"
	ratio_row "gateway peak RSS, $RSS_CONNS connections (MB)" "$RSS_MB" "<= $RSS_TARGET_MB" \
		"$RSS_VERDICT"
}

if [ "${1-}" = workers ]; then
	main_workers
else
	main "$@"
fi
