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
OTHERS_WARN_PCT=20
CHAT_PATH=/v1/chat/completions
REQUEST='{"model":"mock-small","messages":[{"role":"user","content":"Say hello"}]}'
STREAM_REQUEST='{"model":"mock-small","stream":true,"messages":[{"role":"user","content":"Say hello"}]}'

tmp=""
pids=""

die() {
	echo "bench-mockprov: $*" >&2
	exit 1
}

# Stops one process: SIGTERM, then SIGKILL after 5 s.
stop_pid() {
	local pid=$1
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	forget_pid "$pid"
}

# Drops a pid from the ones cleanup stops.
forget_pid() {
	pids=$(echo "$pids" | tr ' ' '\n' | grep -vx "$1" | tr '\n' ' ' || true)
}

# Runs a command in the background, so that a signal to this script is
# handled at once and stops it too, and returns its exit status.
run_waited() {
	local pid rc=0
	"$@" &
	pid=$!
	pids="$pids $pid"
	wait "$pid" || rc=$?
	forget_pid "$pid"
	return "$rc"
}

cleanup() {
	local pid
	trap - EXIT INT TERM
	for pid in $pids; do
		stop_pid "$pid"
	done
	[ -n "$tmp" ] && rm -rf "$tmp"
	return 0
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# wrk, nginx and curl from Debian packages when missing.
install_tools() {
	local missing="" sudo=""
	command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
	command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx-light"
	command -v curl >/dev/null 2>&1 || missing="$missing curl"
	[ -z "$missing" ] && return 0
	echo "bench-mockprov: installing:$missing" >&2
	[ "$(id -u)" = 0 ] || sudo=sudo
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq >&2
	# shellcheck disable=SC2086
	$sudo apt-get install -y -qq --no-install-recommends $missing >&2
}

# CPU time (user + system, in clock ticks) a running process and its
# children (nginx's worker) have used.
cpu_ticks() {
	local pid t=0
	for pid in "$1" $(cat "/proc/$1/task/$1/children" 2>/dev/null); do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
	done
	echo "$t"
}

# Ticks the whole machine spent running processes (user, nice, system:
# not interrupts, which the kernel counts apart) and ticks in all, from
# /proc/stat.
machine_ticks() {
	awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i;
		print $2 + $3 + $4, t; exit }' /proc/stat
}

# True when something on this machine uses TCP port $1 (any address).
port_used() {
	local hex
	hex=$(printf '%04X' "$1")
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p { f = 1 }
			END { exit !f }'
}

# Starts mockprov on config $1 (logs in $2); sets MP_PID and MP_ADDR.
start_mockprov() {
	local config=$1 dir=$2
	"$BIN/mockprov" --config "$config" --log-dir "$dir" --log-level warn \
		>"$dir/mockprov.out" 2>"$dir/mockprov.err" &
	MP_PID=$!
	pids="$pids $MP_PID"
	for _ in $(seq 100); do
		grep -q '^ready' "$dir/mockprov.out" 2>/dev/null && break
		kill -0 "$MP_PID" 2>/dev/null ||
			die "mockprov exited at start: $(cat "$dir/mockprov.err")"
		sleep 0.05
	done
	grep -q '^ready' "$dir/mockprov.out" || die "mockprov did not print 'ready' within 5 s"
	MP_ADDR=$(awk '$1 == "listening" { print $3; exit }' "$dir/mockprov.out")
	[ -n "$MP_ADDR" ] || die "mockprov printed no 'listening' line"
}

# Writes a one-provider mockprov config to $1.
write_config() {
	printf '{"providers":[{"name":"bench","listen":"127.0.0.1:0","model":"mock-small",
	 "ttft_ms":%s,"jitter_ms":0,"token_ms":%s,"output_tokens":%s}]}\n' "$2" "$3" "$4" >"$1"
}

# Escapes stdin for an nginx single-quoted string.
nginx_quote() {
	sed -e 's/\\/\\\\/g' -e "s/'/\\\\'/g"
}

# Fills in nginx.conf.in; starts nginx on a free port; sets NG_PID, NG_ADDR.
start_nginx() {
	local dir=$1 body_file=$2 nginx port
	nginx=$(command -v nginx || echo /usr/sbin/nginx)
	mkdir -p "$dir"
	if grep -q '\$' "$body_file"; then
		die "the body contains '\$', which nginx's return would read as a variable"
	fi
	for _ in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 12000))
		port_used "$port" && continue
		PREFIX=$dir PORT=$port BODY=$(tr -d '\n' <"$body_file" | nginx_quote) awk '
			function fill(s, key, val,   out, i) {
				out = ""
				while ((i = index(s, key)) > 0) {
					out = out substr(s, 1, i - 1) val
					s = substr(s, i + length(key))
				}
				return out s
			}
			{
				s = fill($0, "@PREFIX@", ENVIRON["PREFIX"])
				s = fill(s, "@PORT@", ENVIRON["PORT"])
				print fill(s, "@BODY@", ENVIRON["BODY"])
			}' "$here/nginx.conf.in" >"$dir/nginx.conf"
		: >"$dir/error.log"
		"$nginx" -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" \
			>"$dir/nginx.out" 2>&1 &
		NG_PID=$!
		pids="$pids $NG_PID"
		for _ in $(seq 100); do
			kill -0 "$NG_PID" 2>/dev/null || break
			if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
				NG_ADDR=127.0.0.1:$port
				return 0
			fi
			sleep 0.05
		done
		if grep -q 'Address already in use' "$dir/error.log" "$dir/nginx.out"; then
			stop_pid "$NG_PID"
			continue
		fi
		die "nginx did not start: $(cat "$dir/nginx.out" "$dir/error.log")"
	done
	die "found no free port for nginx in 5 tries"
}

# POSTs the plain request to $1 and stores the body in $2; checks for 200.
capture_body() {
	local status
	status=$(curl -sS -o "$2" -w '%{http_code} %{content_type}' -X POST \
		-H 'Content-Type: application/json' --data-binary "$REQUEST" \
		--max-time 5 "$1")
	case $status in
	"200 application/json"*) ;;
	*) die "$1 answered '$status', not 200 application/json" ;;
	esac
}

# wrk -d$4 against URL $1 (the server has pid $2); its flbench_ lines into
# file $3, with what the server, wrk and the whole machine used meanwhile:
# server_ticks, wrk_cpu_s, busy_ticks and total_ticks (all cores).
wrk_round() {
	local url=$1 pid=$2 out=$3 secs=$4 s0 s1 m0 m1
	s0=$(cpu_ticks "$pid")
	m0=$(machine_ticks)
	TIMEFORMAT='%U %S'
	{ time run_waited timeout $((secs + 30)) wrk -t"$WRK_THREADS" -c"$WRK_CONNS" \
		-d"${secs}s" -s "$here/chat_post.lua" "$url" >"$out" 2>&1; } 2>"$out.time" ||
		die "wrk failed against $url: $(cat "$out")"
	s1=$(cpu_ticks "$pid")
	m1=$(machine_ticks)
	[ "$(get "$out" requests)" -gt 0 ] || die "wrk made no request to $url: $(cat "$out")"
	{
		echo "flbench_server_ticks $((s1 - s0))"
		echo "flbench_wrk_cpu_s $(awk '{ print $1 + $2 }' "$out.time")"
		echo "flbench_busy_ticks $((${m1% *} - ${m0% *}))"
		echo "flbench_total_ticks $((${m1#* } - ${m0#* }))"
	} >>"$out"
}

# Combines the rounds in files $2... into file $1: requests/s over all of
# them, latency p50/p99 as the mean of the rounds', the worst max, summed
# errors, and CPU as % of one core: the server's, wrk's and the others'
# (the machine's busy time less both); and the server's CPU per request.
combine() {
	local out=$1
	shift
	awk -v hz="$(getconf CLK_TCK)" -v ncpu="$(nproc)" '
		$1 ~ /^flbench_/ { k = substr($1, 9); v = $2 + 0; n[k]++
			if (k == "max_ms") { if (v > sum[k]) sum[k] = v } else sum[k] += v }
		END {
			wall = sum["total_ticks"] / ncpu / hz
			server = sum["server_ticks"] / hz / wall * 100
			wrk = sum["wrk_cpu_s"] / wall * 100
			other = sum["busy_ticks"] / hz / wall * 100 - server - wrk
			printf "flbench_rounds %d\nflbench_requests %d\n", n["requests"], sum["requests"]
			printf "flbench_rps %.1f\n", sum["requests"] / sum["duration_s"]
			printf "flbench_p50_ms %.3f\n", sum["p50_ms"] / n["p50_ms"]
			printf "flbench_p99_ms %.3f\n", sum["p99_ms"] / n["p99_ms"]
			printf "flbench_max_ms %.3f\n", sum["max_ms"]
			split("connect read write status timeout", e, " ")
			for (i = 1; i <= 5; i++)
				printf "flbench_errors_%s %d\n", e[i], sum["errors_" e[i]]
			printf "flbench_cpu_server_pct %.0f\nflbench_cpu_wrk_pct %.0f\n", server, wrk
			printf "flbench_cpu_other_pct %.0f\n", other < 0 ? 0 : other
			printf "flbench_cpu_us_per_req %.1f\n",
				sum["server_ticks"] / hz * 1e6 / sum["requests"]
		}' "$@" >"$out"
}

# The value of "flbench_KEY VALUE" in file $1 (wrk), or "KEY VALUE" (kv).
get() {
	awk -v k="$2" '$1 == "flbench_" k || $1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "$1"
}

# One row of a table: a label, two figures and a note.
line() {
	printf '   %-28s %14s %14s   %s\n' "$1" "${2-}" "${3-}" "${4-}"
}

# Warns when other processes took more than OTHERS_WARN_PCT of a core.
busy_warning() {
	local pct max=0
	for pct in "$@"; do
		[ "$pct" -gt "$max" ] && max=$pct
	done
	if [ "$max" -gt "$OTHERS_WARN_PCT" ]; then
		echo "   note: other processes used up to ${max}% of a core meanwhile;" \
			"these figures are not from a quiet machine"
	fi
	return 0
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
	local dir=$tmp/plain body=$tmp/body.json ngbody=$tmp/nginx-body.json m n ratio key label
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
	for key in rps requests p50_ms p99_ms max_ms cpu_server_pct cpu_us_per_req cpu_wrk_pct \
		cpu_other_pct; do
		case $key in
		rps) label="requests/s" ;;
		requests) label="requests" ;;
		p50_ms) label="latency p50 (ms)" ;;
		p99_ms) label="latency p99 (ms)" ;;
		max_ms) label="latency max (ms)" ;;
		cpu_server_pct) label="server CPU (% of a core)" ;;
		cpu_us_per_req) label="server CPU per request (us)" ;;
		cpu_wrk_pct) label="wrk CPU (% of a core)" ;;
		cpu_other_pct) label="others' CPU (% of a core)" ;;
		esac
		line "$label" "$(get "$m" "$key")" "$(get "$n" "$key")"
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
	other=$(awk -v m0="$m0" -v m1="$m1" -v s="$ticks" -v hz="$hz" -v ncpu="$(nproc)" \
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
	install_tools
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/fl-bench-mockprov.XXXXXX")
	echo "bench-mockprov: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) cores" \
		"($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), nothing pinned;" \
		"load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "   servers, wrk and streamclient share these cores; \"others' CPU\" is the" \
		"process time (user + system) the rest of the machine used meanwhile"
	plain_bench
	stream_bench
	echo
	echo "summary: $SUMMARY_PLAIN"
	echo "         $SUMMARY_STREAM"
}

main "$@"
