#!/usr/bin/env bash
# bench/loadgen.sh — `make bench-loadgen`: how fast loadgen sends, next to
# wrk measured in the same run against the same server, how closely it
# keeps an open-loop schedule, and that driving the gateway it is not the
# bottleneck.
#
#  1. Closed loop: loadgen (--concurrency CONNS, recording on), bin/curlfloor
#     (libcurl alone through the same curl_uv glue, CONNS handles, nothing
#     recorded: the floor under loadgen's own work) and wrk (-c
#     CONNS, POSTing the body loadgen sends through bench/chat_post.lua;
#     loadgen's request also carries Accept, x-faultline-class and
#     x-request-id headers) against nginx (one worker, bench/nginx.conf.in)
#     answering every request with one static 347-byte chat completion
#     (with a usage object). wrk runs with WRK_THREADS threads for the
#     ratio — loadgen has one thread, so the default is 1 — and with
#     WRK_THREADS_CONTEXT for context.
#     Target: loadgen >= 0.5 x wrk -t WRK_THREADS. loadgen's rate counts
#     what wrk's counts: requests whose answer was complete within the
#     window (end_ms <= the --duration, from requests.csv), divided by the
#     --duration; wrk's is the responses it read divided by its run time.
#  2. Open loop: loadgen --rate OPEN_RATE --duration OPEN_SECS against the
#     same nginx: the achieved rate (target: within 1 % of OPEN_RATE), the
#     send lag (actual − intended send time) p50/p99/max, the errors, and
#     the rows of requests.csv as a cross-check of summary.json.
#  3. Through the gateway: bin/mockprov (one provider, no latency, 16
#     tokens) and bin/gateway in front of it (the alias chat), driven by
#     loadgen's closed loop (recording on) and by wrk -t WRK_THREADS with
#     the same body and CONNS connections, in alternating rounds: each
#     one's rate and latency, and the CPU of the gateway, the client and
#     mockprov. loadgen must not be the bottleneck: targets, loadgen's rate
#     >= 0.9 x wrk's, and the gateway saturated first (>= 85% of a core
#     while loadgen drove it, and above loadgen's own). With GW_PIN=1 (the
#     default) each client has a CPU of its own and the gateway shares
#     another with mockprov, so "the gateway" there is that CPU: the
#     gateway's and mockprov's CPU together.
#
# Everything runs on 127.0.0.1 on a port free at run time, from a temp dir
# that is removed at the end, with every process stopped (on Ctrl-C too).
# It reports and does not gate: it exits 0 when a target is missed,
# non-zero only when something could not run. Programs come from
# $FAULTLINE_BIN (default bin). Knobs (environment): CONNS (64: loadgen's
# --concurrency and wrk's -c), CLOSED_SECS (10 per client, split into ROUNDS
# (2) rounds, the clients' order reversed every other round), WARMUP_SECS
# (2, each client first), WRK_THREADS (1), WRK_THREADS_CONTEXT (2; 0 leaves
# it out), OPEN_RATE (5000 requests/s), OPEN_SECS (10), GW_SECS (12 per
# client through the gateway, split into GW_ROUNDS (4) rounds; 0 leaves
# section 3 out), GW_PIN (1: section 3 pins each client to one CPU and the
# gateway and mockprov to another with taskset, the first two the bench
# may use; 0 pins nothing).
set -eu -o pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
BIN=${FAULTLINE_BIN:-bin}
CONNS=${CONNS:-64}
CLOSED_SECS=${CLOSED_SECS:-10}
ROUNDS=${ROUNDS:-2}
WARMUP_SECS=${WARMUP_SECS:-2}
WRK_THREADS=${WRK_THREADS:-1}
WRK_THREADS_CONTEXT=${WRK_THREADS_CONTEXT:-2}
OPEN_RATE=${OPEN_RATE:-5000}
OPEN_SECS=${OPEN_SECS:-10}
GW_SECS=${GW_SECS:-12}
GW_PIN=${GW_PIN:-1}
GW_ROUNDS=${GW_ROUNDS:-4}
RATIO_TARGET=0.5
GW_RATIO_TARGET=0.9
GW_SATURATED_PCT=85
RATE_TOLERANCE=0.01
CHAT_PATH=/v1/chat/completions
# What loadgen sends by default (--model chat, 16 prompt words, max_tokens 16):
# wrk sends the same body.
REQUEST='{"model":"chat","messages":[{"role":"user","content":"the quick brown fox jumps over a lazy dog while seven clocks measure every outage slowly"}],"max_tokens":16}'
BODY='{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"chat","choices":[{"index":0,"message":{"role":"assistant","content":"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore."},"finish_reason":"stop"}],"usage":{"prompt_tokens":16,"completion_tokens":16,"total_tokens":32}}'

BENCH_NAME=bench-loadgen
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

# POSTs the request to $1 and checks that the answer is the body, as JSON.
check_server() {
	capture_body "$1" "$tmp/answer.json"
	cmp -s "$tmp/answer.json" "$tmp/body.json" || die "$1 does not answer the body"
}

# Rows of DIR/requests.csv ($1) whose answer ended by $2 ms after t0.
ended_by() {
	awk -F, -v lim="$2" '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i == "end_ms") c = i; next }
		c && $c != "" && $c + 0 <= lim { n++ }
		END { if (!c) exit 1; print n + 0 }' "$1"
}

# Runs loadgen against the server at SRV_ADDR with the options in $5...,
# for at most $4 s, measured into file $2 (see measured), its records into
# directory $3; dies when it fails (naming it as $1) or writes no
# summary.json.
run_loadgen() {
	local what=$1 out=$2 dir=$3 limit=$4
	shift 4
	: >"$out"
	measured "$SRV_PID" "$out" timeout "$limit" "$BIN/loadgen" --target "http://$SRV_ADDR/v1" \
		"$@" --no-progress --out "$dir" ||
		die "$what failed (exit $?): $(cat "$out.err")"
	[ -f "$dir/summary.json" ] || die "loadgen wrote no summary.json: $(cat "$out.err")"
}

# One closed-loop run of loadgen for $2 s; its figures as flbench_ lines
# into file $1 (the same keys chat_post.lua gives for wrk).
loadgen_round() {
	local out=$1 secs=$2 dir=$1.d s=$1.d/summary.json
	run_loadgen loadgen "$out" "$dir" $((secs + 30)) --concurrency "$CONNS" --duration "${secs}s"
	{
		echo "flbench_requests $(ended_by "$dir/requests.csv" "$((secs * 1000))")"
		echo "flbench_duration_s $secs"
		jq -r '"flbench_all_requests \(.requests)",
			"flbench_elapsed_s \(.elapsed_s)",
			"flbench_p50_ms \(.latency_ms.uncorrected.p50)",
			"flbench_p99_ms \(.latency_ms.uncorrected.p99)",
			"flbench_max_ms \(.latency_ms.uncorrected.max)",
			"flbench_errors \(.errors)"' "$s"
	} >>"$out"
	[ "$(get "$out" requests)" -gt 0 ] || die "loadgen completed no request: $(cat "$s")"
	rm -rf "$dir"
}

# One run of wrk with $2 threads for $3 s; its flbench_ lines into file $1.
wrk_round() {
	local out=$1 threads=$2 secs=$3
	: >"$out"
	measured "$SRV_PID" "$out" timeout $((secs + 30)) wrk -t"$threads" -c"$CONNS" -d"${secs}s" \
		-s "$here/chat_post.lua" "http://$SRV_ADDR$CHAT_PATH" ||
		die "wrk failed: $(cat "$out" "$out.err")"
	[ "$(get "$out" requests)" -gt 0 ] || die "wrk made no request: $(cat "$out")"
	echo "flbench_errors $(($(get "$out" errors_connect) + $(get "$out" errors_read) + \
		$(get "$out" errors_write) + $(get "$out" errors_status) + \
		$(get "$out" errors_timeout)))" >>"$out"
}

# One run of bin/curlfloor (libcurl alone, through curl_uv) for $2 s.
curlfloor_round() {
	local out=$1 secs=$2
	: >"$out"
	measured "$SRV_PID" "$out" timeout $((secs + 30)) "$BIN/curlfloor" \
		--url "http://$SRV_ADDR$CHAT_PATH" --connections "$CONNS" --duration "${secs}s" \
		--body "$REQUEST" || die "curlfloor failed: $(cat "$out" "$out.err")"
	[ "$(get "$out" requests)" -gt 0 ] || die "curlfloor made no request: $(cat "$out")"
}

# Runs client $1 (loadgen, curlfloor, or wrk-N for wrk -tN) for $3 s into
# file $2, against the server SRV_PID at SRV_ADDR; with BACK_PID (the
# process behind that server) set, appends the CPU it used meanwhile as
# flbench_backend_ticks.
client_round() {
	local b0=0 b1=0
	[ -n "$BACK_PID" ] && b0=$(cpu_ticks "$BACK_PID")
	case $1 in
	loadgen) loadgen_round "$2" "$3" ;;
	curlfloor) curlfloor_round "$2" "$3" ;;
	wrk-*) wrk_round "$2" "${1#wrk-}" "$3" ;;
	esac
	if [ -n "$BACK_PID" ]; then
		b1=$(cpu_ticks "$BACK_PID")
		echo "flbench_backend_ticks $((b1 - b0))" >>"$2"
	fi
}

# Runs each client of $3... as alternate_rounds does: a warm-up, then $1
# rounds of $2 s each; combines each client's rounds into
# $tmp/$PHASE-CLIENT.
client_rounds() {
	local rounds=$1 secs=$2 who clients
	shift 2
	clients="$*"
	alternate_rounds client_round "$tmp/$PHASE" "$rounds" "$secs" "$@"
	for who in $clients; do
		combine "$tmp/$PHASE-$who" "$tmp/$PHASE-$who".[0-9]*
	done
}

# One row of a table: a label, three figures and a note.
line() {
	printf '   %-30s %12s %12s %12s   %s\n' "$1" "${2-}" "${3-}" "${4-}" "${5-}"
}

# One row of the closed-loop table: a label, four figures and a note.
line4() {
	printf '   %-30s %12s %12s %12s %12s   %s\n' "$1" "${2-}" "${3-}" "${4-}" "${5-}" "${6-}"
}

# One row of the summary: a label, two figures, a target and a verdict.
row() {
	printf '   %-34s %22s %12s %14s   %s\n' "$1" "${2-}" "${3-}" "${4-}" "${5-}"
}

# "PASS" when awk expression $1 holds, else "MISS".
verdict() {
	awk "BEGIN { exit !($1) }" && echo PASS || echo MISS
}

closed_bench() {
	local clients="loadgen curlfloor wrk-$WRK_THREADS" key ratio f
	local round_secs=$((CLOSED_SECS / ROUNDS)) l w c=""
	[ "$round_secs" -ge 1 ] || die "CLOSED_SECS ($CLOSED_SECS) must be at least ROUNDS ($ROUNDS)"
	if [ "$WRK_THREADS_CONTEXT" != 0 ] && [ "$WRK_THREADS_CONTEXT" != "$WRK_THREADS" ]; then
		clients="$clients wrk-$WRK_THREADS_CONTEXT"
		c=$tmp/closed-wrk-$WRK_THREADS_CONTEXT
	fi
	PHASE=closed
	# shellcheck disable=SC2086 # a list of words
	client_rounds "$ROUNDS" "$round_secs" $clients
	l=$tmp/closed-loadgen
	f=$tmp/closed-curlfloor
	w=$tmp/closed-wrk-$WRK_THREADS
	ratio=$(awk -v a="$(get "$l" rps)" -v b="$(get "$w" rps)" 'BEGIN { printf "%.2f", a / b }')
	CLOSED_RATIO=$ratio
	CLOSED_L=$(get "$l" rps)
	CLOSED_F=$(get "$f" rps)
	CLOSED_W=$(get "$w" rps)
	CLOSED_C=$([ -n "$c" ] && get "$c" rps || echo "")

	echo
	echo "1. Closed loop: $CONNS connections, POST $CHAT_PATH (the same $(printf %s "$REQUEST" |
		wc -c)-byte body), nginx answering"
	echo "   a static $(wc -c <"$tmp/body.json")-byte chat completion; ${WARMUP_SECS} s" \
		"warm-up each, then $ROUNDS rounds of ${round_secs} s each,"
	echo "   the order reversed every other round (p50/p99: mean of the rounds)"
	line4 "" "loadgen" "curlfloor" "wrk -t$WRK_THREADS" "${c:+wrk -t$WRK_THREADS_CONTEXT}"
	for key in rps requests p50_ms p99_ms max_ms errors cpu_client_pct client_us_per_req \
		cpu_server_pct cpu_other_pct; do
		line4 "$(label "$key" nginx client)" "$(get "$l" "$key")" "$(get "$f" "$key")" \
			"$(get "$w" "$key")" "${c:+$(get "$c" "$key")}"
	done
	line4 "ratio loadgen / wrk -t$WRK_THREADS" "$ratio" "" "" "" \
		">= $RATIO_TARGET: $(verdict "$ratio >= $RATIO_TARGET")"
	line4 "ratio curlfloor / wrk -t$WRK_THREADS" \
		"$(awk -v a="$CLOSED_F" -v b="$(get "$w" rps)" 'BEGIN { printf "%.2f", a / b }')" \
		"" "" "" "(libcurl alone: the floor under loadgen's own work)"
	echo "   requests/s: loadgen's are the rows of requests.csv with end_ms <= the --duration"
	echo "   (answered within the window from its t0) / the --duration, as wrk's are the"
	echo "   responses it read / its run time; every row / summary.json's elapsed_s (t0 to"
	echo "   the last answer) gives $(get "$l" rps_elapsed). Latency: loadgen's"
	echo "   latency_ms.uncorrected (end − start), wrk's own."
	busy_warning "$(get "$l" cpu_other_pct)" "$(get "$w" cpu_other_pct)" \
		"$([ -n "$c" ] && get "$c" cpu_other_pct)"
}

open_bench() {
	local out=$tmp/open dir=$tmp/open.d s rows started hz other achieved dev
	run_loadgen "loadgen (open loop)" "$out" "$dir" $((OPEN_SECS + 60)) \
		--rate "$OPEN_RATE" --duration "${OPEN_SECS}s"
	s=$dir/summary.json
	rows=$(($(wc -l <"$dir/requests.csv") - 1))
	started=$(awk -F, -v lim="$((OPEN_SECS * 1000))" '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i == "start_ms") c = i; next }
		$c + 0 < lim { n++ } END { print n + 0 }' "$dir/requests.csv")
	hz=$(getconf CLK_TCK)
	other=$(awk -v hz="$hz" -v ncpu="$(getconf _NPROCESSORS_ONLN)" -v s="$(get "$out" server_ticks)" \
		-v c="$(get "$out" client_cpu_s)" -v b="$(get "$out" busy_ticks)" \
		-v t="$(get "$out" total_ticks)" 'BEGIN {
			wall = t / ncpu / hz
			o = (b / hz - s / hz - c) / wall * 100
			printf "%.0f", o < 0 ? 0 : o }')
	achieved=$(jq -r .achieved_rate_per_s "$s")
	dev=$(awk -v a="$achieved" -v r="$OPEN_RATE" 'BEGIN { printf "%+.2f", (a - r) / r * 100 }')
	OPEN_ACHIEVED=$achieved
	OPEN_VERDICT=$(verdict "$achieved >= $OPEN_RATE * (1 - $RATE_TOLERANCE) && \
		$achieved <= $OPEN_RATE * (1 + $RATE_TOLERANCE)")
	OPEN_LAG=$(jq -r '"\(.send_lag_ms.p50) / \(.send_lag_ms.p99) / \(.send_lag_ms.max)"' "$s")
	OPEN_ERRORS=$(jq -r .errors "$s")

	echo
	echo "2. Open loop: loadgen --rate $OPEN_RATE --duration ${OPEN_SECS}s (constant" \
		"arrivals), the same nginx"
	line "" "measured" "target"
	line "achieved rate (req/s)" "$achieved" "$OPEN_RATE" "" \
		"${dev}%, within 1%: $OPEN_VERDICT (summary.json: sent in the window / duration)"
	line "sent within the window" "$started" "$((OPEN_RATE * OPEN_SECS))" "" \
		"requests.csv rows with start_ms < $((OPEN_SECS * 1000))"
	line "requests recorded" "$(jq -r .requests "$s")" "" "" \
		"summary.json ($(jq -r .unfinished "$s") unfinished)"
	line "rows in requests.csv" "$rows" "" "" \
		"$([ "$rows" = "$(jq -r .requests "$s")" ] && echo "= summary.json" ||
			echo "DIFFERS from summary.json")"
	line "errors" "$OPEN_ERRORS" "0" "" "$(jq -r '.outcomes | to_entries |
		map(select(.value > 0) | "\(.key) \(.value)") | join(", ")' "$s")"
	line "send lag p50 (ms)" "$(jq -r .send_lag_ms.p50 "$s")" "" "" "actual − intended send"
	line "send lag p99 (ms)" "$(jq -r .send_lag_ms.p99 "$s")"
	line "send lag p99.9 (ms)" "$(jq -r '.send_lag_ms["p99.9"]' "$s")"
	line "send lag max (ms)" "$(jq -r .send_lag_ms.max "$s")"
	line "latency p50 (ms)" "$(jq -r .latency_ms.corrected.p50 "$s")" "" "" \
		"corrected: end − intended send"
	line "latency p99 (ms)" "$(jq -r .latency_ms.corrected.p99 "$s")"
	line "loadgen CPU (% of a core)" "$(awk -v c="$(get "$out" client_cpu_s)" \
		-v e="$(jq -r .elapsed_s "$s")" 'BEGIN { printf "%.0f", c / e * 100 }')" "" "" \
		"$(awk -v c="$(get "$out" client_cpu_s)" -v n="$(jq -r .requests "$s")" \
			'BEGIN { printf "%.1f us per request", c * 1e6 / n }')"
	line "nginx CPU (% of a core)" "$(awk -v t="$(get "$out" server_ticks)" -v hz="$hz" \
		-v e="$(jq -r .elapsed_s "$s")" 'BEGIN { printf "%.0f", t / hz / e * 100 }')"
	line "others' CPU (% of a core)" "$other"
	busy_warning "$other"
}

# Starts the gateway (one provider: mockprov at MP_ADDR, the alias chat,
# breaker on) with its files in $tmp/gateway; sets GW_PID, GW_ADDR, GW_PORT.
start_bench_gateway() {
	local dir=$tmp/gateway
	mkdir -p "$dir"
	cat >"$dir/config.json" <<EOF
{
  "listen": "127.0.0.1:0",
  "request_deadline_ms": 10000,
  "providers": {
    "mock": {"base_url": "http://$MP_ADDR/v1", "timeout_ms": 5000}
  },
  "models": {
    "chat": {"targets": [{"provider": "mock", "model": "mock-small"}]}
  },
  "breaker": {"enabled": true}
}
EOF
	start_gateway_on "$dir/config.json" "$dir"
}

# 3. loadgen and wrk driving the gateway in the same rounds: which one
# saturates first.
gateway_bench() {
	local clients="loadgen wrk-$WRK_THREADS" round_secs=$((GW_SECS / GW_ROUNDS)) l w key
	local affinity="" cpus="" pin_client="" pin_server=""
	[ "$round_secs" -ge 1 ] || die "GW_SECS ($GW_SECS) must be at least GW_ROUNDS ($GW_ROUNDS)"
	# Each client on a CPU of its own, the gateway and mockprov (the
	# system under test) on another: three busy processes on two CPUs
	# otherwise take turns, and the client's turns would read as the
	# gateway's rate. A client inherits this shell's affinity.
	GW_PINNED=""
	if [ "$GW_PIN" = 1 ] && command -v taskset >/dev/null; then
		affinity=$(taskset -pc $$ | sed 's/.*: //')	# to put back
		# the first two CPUs this shell may use ("0-3,6" gives 0 and 1)
		cpus=$(echo "$affinity" | tr ',' '\n' |
			awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }' | head -n 2)
		if [ "$(echo "$cpus" | wc -l)" -ge 2 ]; then
			pin_client=$(echo "$cpus" | sed -n 1p)
			pin_server=$(echo "$cpus" | sed -n 2p)
			GW_PINNED=1
		fi
	fi
	start_one_mockprov 0 0 0 16
	start_bench_gateway
	if [ -n "$GW_PINNED" ]; then
		taskset -a -pc "$pin_server" "$MP_PID" >/dev/null
		taskset -a -pc "$pin_server" "$GW_PID" >/dev/null
		taskset -pc "$pin_client" $$ >/dev/null
	fi
	capture_body "http://$GW_ADDR$CHAT_PATH" "$tmp/gateway/answer.json"
	SRV_PID=$GW_PID SRV_ADDR=$GW_ADDR BACK_PID=$MP_PID
	PHASE=gateway
	# shellcheck disable=SC2086 # a list of words
	client_rounds "$GW_ROUNDS" "$round_secs" $clients
	kill -0 "$GW_PID" 2>/dev/null || die "the gateway exited: $(tail -n 20 "$tmp/gateway/gateway.err")"
	stop_pid "$GW_PID"
	stop_pid "$MP_PID"
	[ -z "$GW_PINNED" ] || taskset -pc "$affinity" $$ >/dev/null
	SRV_PID="" SRV_ADDR="" BACK_PID=""
	l=$tmp/gateway-loadgen
	w=$tmp/gateway-wrk-$WRK_THREADS
	GW_L=$(get "$l" rps)
	GW_W=$(get "$w" rps)
	GW_RATIO=$(calc "$GW_L / $GW_W" %.2f)
	GW_RATIO_VERDICT=$(verdict "$GW_RATIO >= $GW_RATIO_TARGET")
	GW_CPU=$(get "$l" cpu_server_pct)
	GW_LG_CPU=$(get "$l" cpu_client_pct)
	# pinned, the gateway shares its CPU with mockprov: that CPU is what saturates
	GW_SIDE=$GW_CPU GW_SIDE_NAME=gateway
	if [ -n "$GW_PINNED" ]; then
		GW_SIDE=$((GW_CPU + $(get "$l" cpu_backend_pct)))
		GW_SIDE_NAME=gateway+mockprov
	fi
	GW_SAT_VERDICT=$(verdict "$GW_SIDE >= $GW_SATURATED_PCT && $GW_LG_CPU < $GW_SIDE")
	# With a core taken by others, the gateway, mockprov and the client
	# share what is left: the client's own cost then shows in the rate.
	if [ "$(get "$l" cpu_other_pct)" -gt "$OTHERS_WARN_PCT" ] ||
		[ "$(get "$w" cpu_other_pct)" -gt "$OTHERS_WARN_PCT" ]; then
		GW_RATIO_VERDICT="$GW_RATIO_VERDICT (busy machine)"
		GW_SAT_VERDICT="$GW_SAT_VERDICT (busy machine)"
	fi

	echo
	echo "3. Through the gateway: loadgen --concurrency $CONNS (recording on) and wrk -t$WRK_THREADS" \
		"-c$CONNS POSTing the same body"
	echo "   to bin/gateway (one provider: bin/mockprov, no latency, 16 tokens, not streamed);" \
		"${WARMUP_SECS} s warm-up each,"
	echo "   then $GW_ROUNDS rounds of ${round_secs} s each, the order reversed every other round;"
	if [ -n "$GW_PINNED" ]; then
		echo "   pinned (taskset): the client alone on CPU $pin_client, the gateway and mockprov on CPU $pin_server"
	else
		echo "   nothing pinned (GW_PIN=0, a single CPU to use, or no taskset)"
	fi
	line "" "loadgen" "wrk -t$WRK_THREADS"
	for key in rps requests p50_ms p99_ms max_ms errors cpu_server_pct server_us_per_req \
		cpu_client_pct client_us_per_req; do
		line "$(label "$key" gateway client)" "$(get "$l" "$key")" "$(get "$w" "$key")"
	done
	line "mockprov CPU (% of a core)" "$(get "$l" cpu_backend_pct)" "$(get "$w" cpu_backend_pct)"
	line "others' CPU (% of a core)" "$(get "$l" cpu_other_pct)" "$(get "$w" cpu_other_pct)"
	line "ratio loadgen / wrk -t$WRK_THREADS" "$GW_RATIO" "" "" \
		">= $GW_RATIO_TARGET: $GW_RATIO_VERDICT"
	line "$GW_SIDE_NAME / loadgen CPU (%)" "$GW_SIDE / $GW_LG_CPU" "" "" \
		"the $GW_SIDE_NAME saturated first (>= $GW_SATURATED_PCT% of a core, above loadgen): $GW_SAT_VERDICT"
	echo "   While loadgen drives it, the gateway's side is the one at a full core, and loadgen's"
	echo "   rate is within $GW_RATIO_TARGET x of wrk's (which records nothing): the rate measured"
	echo "   is the gateway's. Pinned, the client has a CPU to itself and the gateway shares"
	echo "   another with mockprov, its upstream; unpinned, the three take turns on both, and the"
	echo "   client's own CPU per request shows in the rate. Either way this needs two CPUs free."
	busy_warning "$(get "$l" cpu_other_pct)" "$(get "$w" cpu_other_pct)"
}

main() {
	local f
	[ -x "$BIN/loadgen" ] || die "$BIN/loadgen is missing (make, or set FAULTLINE_BIN)"
	if [ "$GW_SECS" != 0 ]; then
		for f in gateway mockprov; do
			[ -x "$BIN/$f" ] || die "$BIN/$f is missing (make, or set FAULTLINE_BIN)"
		done
	fi
	[ "$GW_SECS" = 0 ] || [ "$GW_PIN" != 1 ] ||
		PINNED="nothing pinned but section 3 (GW_PIN=1, below)"
	bench_start wrk nginx curl jq
	printf '%s' "$BODY" >"$tmp/body.json"
	echo "   nginx, loadgen and wrk share these cores; \"others' CPU\" is the" \
		"process time (user + system) the rest of the machine used meanwhile"
	start_nginx "$tmp/nginx" "$tmp/body.json"
	check_server "http://$NG_ADDR$CHAT_PATH"
	export FL_BENCH_REQUEST=$REQUEST
	SRV_PID=$NG_PID SRV_ADDR=$NG_ADDR BACK_PID=""
	closed_bench
	open_bench
	stop_pid "$NG_PID"
	[ "$GW_SECS" = 0 ] || gateway_bench

	echo
	echo "summary"
	row "closed loop, $CONNS connections" "requests/s" "x wrk -t$WRK_THREADS" "target"
	row "loadgen (1 thread, recording)" "$CLOSED_L" "$CLOSED_RATIO" ">= $RATIO_TARGET" \
		"$(verdict "$CLOSED_RATIO >= $RATIO_TARGET")"
	row "curlfloor (libcurl alone)" "$CLOSED_F" \
		"$(awk -v a="$CLOSED_F" -v b="$CLOSED_W" 'BEGIN { printf "%.2f", a / b }')"
	row "wrk -t$WRK_THREADS" "$CLOSED_W" "1.00"
	if [ -n "$CLOSED_C" ]; then
		row "wrk -t$WRK_THREADS_CONTEXT (context)" "$CLOSED_C" \
			"$(awk -v a="$CLOSED_C" -v b="$CLOSED_W" 'BEGIN { printf "%.2f", a / b }')"
	fi
	row "open loop, $OPEN_RATE/s for ${OPEN_SECS} s" "measured" "" "target"
	row "achieved rate (req/s)" "$OPEN_ACHIEVED" "" "$OPEN_RATE ± 1%" "$OPEN_VERDICT"
	row "send lag p50/p99/max (ms)" "$OPEN_LAG" "" "(reported)"
	row "errors" "$OPEN_ERRORS" "" "0" "$(verdict "$OPEN_ERRORS == 0")"
	if [ "$GW_SECS" != 0 ]; then
		row "through the gateway, $CONNS conns" "requests/s" "x wrk -t$WRK_THREADS" "target"
		row "loadgen (recording)" "$GW_L" "$GW_RATIO" ">= $GW_RATIO_TARGET" "$GW_RATIO_VERDICT"
		row "wrk -t$WRK_THREADS" "$GW_W" "1.00"
		row "$GW_SIDE_NAME / loadgen CPU (%)" "$GW_SIDE / $GW_LG_CPU" "" \
			">= $GW_SATURATED_PCT / less" "$GW_SAT_VERDICT"
	fi
}

main "$@"
