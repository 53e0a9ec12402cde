#!/usr/bin/env bash
# bench/mockprov.sh — `make bench-mockprov`: how fast mockprov answers, next
# to a reference measured in the same run, and how steady its streams are.
#
#  1. Plain answers: wrk POSTs the same chat request to mockprov (no
#     latency, non-streaming) and to nginx (one worker) returning the very
#     bytes mockprov answered, as application/json; both requests/s, wrk's
#     latency p50/p99 and their ratio (target: mockprov >= 0.5 x nginx).
#  2. Streams: bin/streamclient holds 1,000 concurrent streams from
#     mockprov at 20 ms per token; the inter-token gap distribution
#     (target: p99 within 5 ms of 20 ms), mockprov's peak RSS and CPU time.
#
# Everything runs on 127.0.0.1 on ports free at run time, from a temp dir
# that is removed at the end, with every process stopped. It reports and
# does not gate: it exits 0 when a target is missed, non-zero only when
# something could not run. Programs come from $FAULTLINE_BIN (default bin).
# Knobs (environment): WRK_THREADS (2), WRK_CONNS (64), WRK_SECS (10 per
# server, split into WRK_ROUNDS (2) alternating rounds), WARMUP_SECS (2),
# STREAMS (1000), STREAM_TOKENS (100), STREAM_BOUND_S (60), STREAM_ENGINE
# (raw; curl to cross-check with libcurl's multi interface).
set -eu -o pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
BIN=${FAULTLINE_BIN:-bin}
WRK_THREADS=${WRK_THREADS:-2}
WRK_CONNS=${WRK_CONNS:-64}
WRK_SECS=${WRK_SECS:-10}
WARMUP_SECS=${WARMUP_SECS:-2}
WRK_ROUNDS=${WRK_ROUNDS:-2}
STREAMS=${STREAMS:-1000}
STREAM_TOKENS=${STREAM_TOKENS:-100}
STREAM_BOUND_S=${STREAM_BOUND_S:-60}
STREAM_ENGINE=${STREAM_ENGINE:-raw}
TOKEN_MS=20
PLAIN_TOKENS=16
RATIO_TARGET=0.5
GAP_SLACK_MS=5
CHAT_PATH=/v1/chat/completions
REQUEST='{"model":"mock-small","messages":[{"role":"user","content":"Say hello"}]}'
STREAM_REQUEST='{"model":"mock-small","stream":true,"messages":[{"role":"user","content":"Say hello"}]}'

BENCH_NAME=bench-mockprov
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

# Starts mockprov on config $1 (logs in $2); sets MP_PID and MP_ADDR.

# Writes a one-provider mockprov config to $1.
write_config() {
	printf '{"providers":[{"name":"bench","listen":"127.0.0.1:0","model":"mock-small",
	 "ttft_ms":%s,"jitter_ms":0,"token_ms":%s,"output_tokens":%s}]}\n' "$2" "$3" "$4" >"$1"
}

# wrk -d$4 against URL $1 (the server has pid $2); its flbench_ lines into
# file $3, with what the server, wrk and the whole machine used meanwhile
# (see measured).
wrk_round() {
	local url=$1 pid=$2 out=$3 secs=$4
	: >"$out"
	measured "$pid" "$out" timeout $((secs + 30)) wrk -t"$WRK_THREADS" -c"$WRK_CONNS" \
		-d"${secs}s" -s "$here/chat_post.lua" "$url" ||
		die "wrk failed against $url: $(cat "$out" "$out.err")"
	[ "$(get "$out" requests)" -gt 0 ] ||
		die "wrk made no request to $url: $(cat "$out" "$out.err")"
}

# One row of a table: a label, two figures and a note.
line() {
	printf '   %-28s %14s %14s   %s\n' "$1" "${2-}" "${3-}" "${4-}"
}

# wrk's error counts: connect/read/write/status/timeout.
errors() {
	echo "$(get "$1" errors_connect)/$(get "$1" errors_read)/$(get "$1" errors_write)/$(get "$1" errors_status)/$(get "$1" errors_timeout)"
}

# "PASS" when awk expression $1 holds, else "BELOW".
verdict() {
	awk "BEGIN { exit !($1) }" && echo PASS || echo BELOW
}

plain_bench() {
	local dir=$tmp/plain body=$tmp/body.json ngbody=$tmp/nginx-body.json m n ratio key
	local round order who round_secs=$((WRK_SECS / WRK_ROUNDS))
	[ "$round_secs" -ge 1 ] || die "WRK_SECS ($WRK_SECS) must be at least WRK_ROUNDS ($WRK_ROUNDS)"
	mkdir -p "$dir"
	write_config "$dir/config.json" 0 0 "$PLAIN_TOKENS"
	start_mockprov "$dir/config.json" "$dir"
	capture_body "http://$MP_ADDR$CHAT_PATH" "$body"
	start_nginx "$tmp/nginx" "$body"
	capture_body "http://$NG_ADDR$CHAT_PATH" "$ngbody"
	cmp -s "$body" "$ngbody" || die "nginx does not answer the bytes mockprov did"

	export FL_BENCH_REQUEST=$REQUEST
	m=$tmp/wrk-mockprov
	n=$tmp/wrk-nginx
	wrk_round "http://$MP_ADDR$CHAT_PATH" "$MP_PID" "$m.warmup" "$WARMUP_SECS"
	wrk_round "http://$NG_ADDR$CHAT_PATH" "$NG_PID" "$n.warmup" "$WARMUP_SECS"
	# Alternate (ABBA…) so that load from elsewhere falls on both alike.
	for round in $(seq "$WRK_ROUNDS"); do
		if [ $((round % 2)) = 1 ]; then order="m n"; else order="n m"; fi
		for who in $order; do
			if [ "$who" = m ]; then
				wrk_round "http://$MP_ADDR$CHAT_PATH" "$MP_PID" "$m.$round" "$round_secs"
			else
				wrk_round "http://$NG_ADDR$CHAT_PATH" "$NG_PID" "$n.$round" "$round_secs"
			fi
		done
	done
	PLAIN_RSS_KB=$(awk '/^VmHWM/ { print $2 }' "/proc/$MP_PID/status")
	stop_pid "$MP_PID"
	stop_pid "$NG_PID"
	combine "$m" "$m".[0-9]*
	combine "$n" "$n".[0-9]*

	ratio=$(awk -v a="$(get "$m" rps)" -v b="$(get "$n" rps)" 'BEGIN { printf "%.2f", a / b }')
	echo
	echo "1. Plain answers: wrk -t$WRK_THREADS -c$WRK_CONNS, POST $CHAT_PATH, the same" \
		"$(wc -c <"$body")-byte application/json body"
	echo "   from both; ${WARMUP_SECS} s warm-up each, then $WRK_ROUNDS rounds of" \
		"${round_secs} s each, alternating (p50/p99: mean of the rounds)"
	line "" "mockprov" "nginx (1 wkr)"
	for key in rps requests p50_ms p99_ms max_ms cpu_server_pct server_us_per_req cpu_client_pct \
		cpu_other_pct; do
		line "$(label "$key" server wrk)" "$(get "$m" "$key")" "$(get "$n" "$key")"
	done
	line "errors c/r/w/status/timeout" "$(errors "$m")" "$(errors "$n")"
	line "mockprov peak RSS (VmHWM)" "${PLAIN_RSS_KB} kB"
	line "ratio mockprov / nginx" "$ratio" ">= $RATIO_TARGET" \
		"$(verdict "$ratio >= $RATIO_TARGET")"
	busy_warning "$(get "$m" cpu_other_pct)" "$(get "$n" cpu_other_pct)"
	SUMMARY_PLAIN="requests/s: mockprov $(get "$m" rps), nginx $(get "$n" rps), ratio $ratio (target >= $RATIO_TARGET: $(verdict "$ratio >= $RATIO_TARGET"))"
}

stream_bench() {
	local dir=$tmp/stream out=$tmp/streamclient.txt rc=0 t0 t1 m0 m1 ticks hz rss p99 limit
	local other stamps
	mkdir -p "$dir"
	write_config "$dir/config.json" "$TOKEN_MS" "$TOKEN_MS" "$STREAM_TOKENS"
	start_mockprov "$dir/config.json" "$dir"
	t0=$(cpu_ticks "$MP_PID")
	m0=$(machine_ticks)
	run_waited timeout $((STREAM_BOUND_S + 30)) "$BIN/streamclient" \
		--url "http://$MP_ADDR$CHAT_PATH" \
		--streams "$STREAMS" --duration-bound "$STREAM_BOUND_S" --engine "$STREAM_ENGINE" \
		--body "$STREAM_REQUEST" --kv >"$out" 2>"$out.err" || rc=$?
	t1=$(cpu_ticks "$MP_PID")
	m1=$(machine_ticks)
	rss=$(awk '/^VmHWM/ { print $2 }' "/proc/$MP_PID/status")
	stop_pid "$MP_PID"
	[ "$rc" -le 1 ] || die "streamclient failed (exit $rc): $(cat "$out.err" "$out")"
	[ "$(get "$out" completed)" -gt 0 ] ||
		die "no stream completed: $(get "$out" first_error)"
	hz=$(getconf CLK_TCK)
	ticks=$((t1 - t0))
	other=$(awk -v m0="$m0" -v m1="$m1" -v s="$ticks" -v hz="$hz" -v ncpu="$(getconf _NPROCESSORS_ONLN)" \
		-v c="$(get "$out" cpu_user_s) $(get "$out" cpu_sys_s)" '
		BEGIN {
			split(m0, a, " "); split(m1, b, " "); split(c, u, " ")
			wall = (b[2] - a[2]) / ncpu / hz
			o = ((b[1] - a[1]) / hz - s / hz - u[1] - u[2]) / wall * 100
			printf "%.0f", o < 0 ? 0 : o
		}')
	p99=$(get "$out" gap_p99_ms)
	limit=$((TOKEN_MS + GAP_SLACK_MS))
	echo
	echo "2. Streams: $STREAMS concurrent, ${STREAM_TOKENS} tokens each, ttft ${TOKEN_MS} ms," \
		"${TOKEN_MS} ms per token"
	if [ "$(get "$out" arrival_stamps)" = kernel ]; then
		stamps="the kernel's receive timestamp of the bytes"
	else
		stamps="when the client read the bytes"
	fi
	echo "   (streamclient, engine $(get "$out" engine); a token's arrival = $stamps)"
	line "" "measured" "reference"
	line "streams ended with [DONE]" "$(get "$out" completed)" "$STREAMS"
	line "failed / unfinished" "$(get "$out" failed) / $(get "$out" unfinished)" "0 / 0"
	line "inter-token gaps" "$(get "$out" gap_count)" "$((STREAMS * (STREAM_TOKENS - 1)))"
	line "inter-token p50 (ms)" "$(get "$out" gap_p50_ms)" "$TOKEN_MS"
	line "inter-token p90 (ms)" "$(get "$out" gap_p90_ms)" "$TOKEN_MS"
	line "inter-token p99 (ms)" "$p99" "<= $limit" "$(verdict "$p99 <= $limit")"
	line "inter-token p99.9 (ms)" "$(get "$out" gap_p999_ms)"
	line "inter-token max (ms)" "$(get "$out" gap_max_ms)"
	[ "$(get "$out" arrival_stamps)" = kernel ] &&
		line "  p99 by client read time" "$(get "$out" read_gap_p99_ms)"
	line "ttft p50 (ms)" "$(get "$out" ttft_p50_ms)" "$TOKEN_MS"
	line "ttft p99 (ms)" "$(get "$out" ttft_p99_ms)"
	line "mockprov peak RSS (VmHWM)" "$rss kB"
	line "mockprov CPU time" \
		"$(awk -v t="$ticks" -v hz="$hz" 'BEGIN { printf "%.2f s", t / hz }')" "" \
		"$(awk -v t="$ticks" -v hz="$hz" -v w="$(get "$out" wall_s)" \
			'BEGIN { printf "%.0f", 100 * t / hz / w }')% of a core over $(get "$out" wall_s) s"
	line "mockprov CPU per token (us)" "$(awk -v t="$ticks" -v hz="$hz" \
		-v n="$(get "$out" gap_count)" -v s="$(get "$out" ttft_count)" \
		'BEGIN { printf "%.1f", (n + s > 0 ? t / hz * 1e6 / (n + s) : 0) }')"
	line "streamclient CPU (% of a core)" "$(get "$out" cpu_pct)"
	line "others' CPU (% of a core)" "$other"
	busy_warning "$other"
	if [ "$(get "$out" failed)" != 0 ] || [ "$(get "$out" unfinished)" != 0 ]; then
		echo "   first failure: $(get "$out" first_error)"
	fi
	SUMMARY_STREAM="inter-token p50 $(get "$out" gap_p50_ms) ms, p99 $p99 ms, max $(get "$out" gap_max_ms) ms (target p99 <= $limit: $(verdict "$p99 <= $limit")); mockprov RSS $rss kB"
}

main() {
	[ -x "$BIN/mockprov" ] || die "$BIN/mockprov is missing (make, or set FAULTLINE_BIN)"
	[ -x "$BIN/streamclient" ] ||
		die "$BIN/streamclient is missing (make bin/streamclient, or set FAULTLINE_BIN)"
	bench_start wrk nginx curl
	echo "   servers, wrk and streamclient share these cores; \"others' CPU\" is the" \
		"process time (user + system) the rest of the machine used meanwhile"
	plain_bench
	stream_bench
	echo
	echo "summary: $SUMMARY_PLAIN"
	echo "         $SUMMARY_STREAM"
}

main "$@"
