#!/usr/bin/env bash
# bench/stream.sh — `make bench-stream`: what the gateway adds to streamed
# tokens, and what it costs, with 1,000 streams open at once.
#
# bin/streamclient holds STREAMS (1,000) concurrent streaming chat requests
# to one mockprov provider that sends STREAM_TOKENS (200) tokens, the first
# TTFT_MS (20) ms after the request and then one every TOKEN_MS (20) ms (a
# a stream lasts about 4 s): direct to mockprov, through the gateway (one
# provider, the alias "chat" -> mock-small, stream.stall_timeout_ms
# STALL_TIMEOUT_MS) and, as the reference, through HAProxy (one thread,
# mode http, option http-no-delay: each chunk forwarded as it comes) in
# front of the same mockprov. One warm-up run each, then ROUNDS (4) rounds
# of one run each, the order reversed every other round (direct gateway
# haproxy, haproxy gateway direct, ...) so that load from elsewhere falls
# on all alike; a figure is the median of the rounds'.
#
# A token's arrival is the kernel's receive timestamp of its bytes
# (streamclient's raw engine), so it does not depend on when the client
# read them. Direct, and for each proxy its figure and added (proxy - direct):
#  - the inter-chunk gap (between a stream's consecutive tokens) p50, p99;
#  - the token lateness (streamclient --token-ms): mockprov sends token k
#    at ttft + k x TOKEN_MS after the request, so arrival - k x TOKEN_MS
#    is constant on a perfect path; less its least value in the stream, it
#    is how late the token came. A late token is one late token (a gap
#    counts it twice: one long gap, then one short), and a constant delay,
#    such as the gateway's cost before the first token, cancels out;
#  - the jitter |gap - TOKEN_MS| p99, and the time to first token;
#  - streams ended with [DONE], failed, unfinished; mockprov's own log;
#  - CPU (user + system, /proc): the proxy's (gateway's, HAProxy's) per
#    stream and per token, mockprov's, streamclient's and the rest of the
#    machine's;
#  - the gateway's RSS: after start, its peak (VmHWM) after every run,
#    after the last; the connections it held (client / upstream, 0.5 s
#    samples).
# Targets: the gateway's added lateness p99 and added gap p99 <= 2 ms
# (HAProxy's are printed beside them); the gateway's CPU per token
# <= 10 us (HAProxy's beside it); the gateway's peak RSS <= 64 MB
# (64,000,000 bytes).
#
# streamclient runs under nice CLIENT_NICE (-10: ahead of the servers),
# so that it reads every token as it comes. A read carries one kernel
# timestamp, its last segment's, so a token left unread until the next
# one of its stream came is stamped with the later time; the share of
# tokens read together with the one before is printed (through a busy
# gateway it is high anyway: the gateway sends a backlog back to back).
# At nice 10 the servers would get the CPU first, but on a busy two-core
# machine the client then lags, and 80% of the tokens through the gateway
# (12% direct) were read with the one before, so their stamps came late.
# Without the privilege for a negative nice it runs at nice 0.
#
# Everything runs on 127.0.0.1 on ports free at run time, from a temp dir
# that is removed at the end, with every process stopped (on Ctrl-C too).
# It reports and does not gate on the targets: it exits 0 when one is
# missed, 1 when a stream failed or did not finish or something could not
# run. Programs come from $FAULTLINE_BIN (default bin). Knobs
# (environment): STREAMS (1000), STREAM_TOKENS (200), TOKEN_MS (20),
# TTFT_MS (20), ROUNDS (4), WARMUP (1; 0 leaves the warm-up out),
# STALL_TIMEOUT_MS (30000), STREAM_BOUND_S (60, per run), CLIENT_NICE
# (-10), STREAM_TARGETS ("direct gateway haproxy"; direct is always run,
# and the list may leave out either proxy).
set -eu -o pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
BIN=${FAULTLINE_BIN:-bin}
STREAMS=${STREAMS:-1000}
STREAM_TOKENS=${STREAM_TOKENS:-200}
TOKEN_MS=${TOKEN_MS:-20}
TTFT_MS=${TTFT_MS:-20}
JITTER_MS=${JITTER_MS:-0}
ROUNDS=${ROUNDS:-4}
WARMUP=${WARMUP:-1}
STALL_TIMEOUT_MS=${STALL_TIMEOUT_MS:-30000}
STREAM_BOUND_S=${STREAM_BOUND_S:-60}
CLIENT_NICE=${CLIENT_NICE:--10}
STREAM_TARGETS=${STREAM_TARGETS:-direct gateway haproxy}
STREAM_ENGINE=raw
ADDED_TARGET_MS=2
TOKEN_CPU_TARGET_US=10
RSS_TARGET_MB=64
CHAT_PATH=/v1/chat/completions
DIRECT_BODY='{"model":"mock-small","stream":true,"messages":[{"role":"user","content":"Say hello"}]}'
GW_BODY='{"model":"chat","stream":true,"messages":[{"role":"user","content":"Say hello"}]}'

BENCH_NAME=bench-stream
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

# "met" when awk expression $1 holds, else "missed".
verdict() {
	awk "BEGIN { exit !($1) }" && echo met || echo missed
}

# The field $2 (VmRSS, VmHWM) of /proc/PID/status for pid $1, in kB.
proc_kb() {
	awk -v k="$2:" '$1 == k { print $2; exit }' "/proc/$1/status"
}

# Nanoseconds the threads of process $1 have spent runnable, waiting for
# a CPU (/proc/PID/task/*/schedstat, second field).
sched_wait_ns() {
	cat "/proc/$1/task/"*/schedstat 2>/dev/null | awk '{ s += $2 } END { printf "%.0f", s }'
}

# Starts mockprov: one provider on a free port with the stream's timing;
# sets MP_PID, MP_ADDR and MP_PORT.
start_stream_mockprov() {
	start_one_mockprov "$TTFT_MS" "$JITTER_MS" "$TOKEN_MS" "$STREAM_TOKENS"
}

# Starts the gateway in front of mockprov; sets GW_PID, GW_ADDR, GW_PORT.
start_stream_gateway() {
	local dir=$tmp/gateway
	mkdir -p "$dir"
	cat >"$dir/config.json" <<EOF
{
  "listen": "127.0.0.1:0",
  "request_deadline_ms": 60000,
  "providers": {
    "mock": {"base_url": "http://$MP_ADDR/v1", "timeout_ms": 60000}
  },
  "models": {
    "chat": {"targets": [{"provider": "mock", "model": "mock-small"}]}
  },
  "breaker": {"enabled": true},
  "stream": {"first_token_timeout_ms": 10000, "stall_timeout_ms": $STALL_TIMEOUT_MS}
}
EOF
	start_gateway_on "$dir/config.json" "$dir"
}

# Writes HAProxy's config for port $2 to file $1: one thread, mode http,
# option http-no-delay (each chunk of a streamed answer forwarded as it
# comes, not held to fill a packet), keep-alive both ways, no logging, the
# one server (mockprov) without health checks, room for every stream.
haproxy_stream_config() {
	haproxy_write_config "$1" "$2" 1 $((STREAMS * 2 + 100)) $((STREAM_BOUND_S + 30)) \
		"	option http-no-delay"
}

# The pid of proxy $1 (gateway or haproxy).
proxy_pid() {
	case $1 in
	gateway) echo "$GW_PID" ;;
	haproxy) echo "$HA_PID" ;;
	esac
}

# Ends the script when proxy $1 (gateway or haproxy) is gone, with the end
# of its output; $2 says when.
proxy_alive() {
	case $1 in
	gateway) kill -0 "$GW_PID" 2>/dev/null ||
		die "the gateway exited ($2): $(tail -n 20 "$tmp/gateway/gateway.err")" ;;
	haproxy) kill -0 "$HA_PID" 2>/dev/null ||
		die "haproxy exited ($2): $(tail -n 20 "$tmp/haproxy/haproxy.out")" ;;
	esac
}

# One short stream (max_tokens 3) of body $2 from $1: it must be a 200
# text/event-stream that ends with data: [DONE].
check_stream() {
	local url=$1 body=$2 hdr=$tmp/check.hdr out=$tmp/check.body status ctype
	body=${body/\"stream\":true/\"stream\":true,\"max_tokens\":3}
	curl -sS -N -D "$hdr" -o "$out" -X POST -H 'Content-Type: application/json' \
		--data-binary "$body" --max-time 10 "$url" ||
		die "$url: the check stream failed (curl exit $?)"
	status=$(awk 'NR == 1 { print $2 }' "$hdr")
	ctype=$(awk -F': *' 'tolower($1) == "content-type" { sub(/\r$/, "", $2); print $2 }' "$hdr")
	case $status/$ctype in
	200/text/event-stream*) ;;
	*) die "$url did not answer a stream: HTTP $status, $ctype: $(head -c 300 "$out")" ;;
	esac
	grep -q '^data: \[DONE\]' "$out" || die "$url: the check stream has no [DONE]: $(head -c 300 "$out")"
}

# Samples, every 0.5 s until stopped, the most client and upstream
# connections the gateway held; writes "CLIENTS UPSTREAM" to file $1.
sample_connections() {
	local out=$1 c u max_c=0 max_u=0
	while :; do
		sleep 0.5
		c=$(established "$GW_PORT")
		u=$(established "$MP_PORT" rem)
		[ "$c" -gt "$max_c" ] && max_c=$c
		[ "$u" -gt "$max_u" ] && max_u=$u
		echo "$max_c $max_u" >"$out.tmp" && mv "$out.tmp" "$out"
	done
}

# stream_run as alternate_rounds calls a round ($1 WHO, $2 FILE, $3 the
# seconds, which a run of streams does not take).
stream_round() {
	stream_run "$1" "$2"
}

# One streamclient run against $1 (direct, gateway or haproxy) into file
# $2: its --kv figures, then what mockprov, the proxy (gw_ticks: the
# gateway's or HAProxy's) and the machine used meanwhile (mp_ticks,
# gw_ticks, busy_ticks, total_ticks), and for the gateway its connections
# and VmHWM and VmRSS after the run.
stream_run() {
	local who=$1 out=$2 url body rc=0 g0=0 g1=0 gw0=0 gw1=0 p0 p1 pw0 pw1 m0 m1 spid=""
	local others proxy=""
	case $who in
	direct) url=http://$MP_ADDR$CHAT_PATH body=$DIRECT_BODY ;;
	gateway) url=http://$GW_ADDR$CHAT_PATH body=$GW_BODY proxy=$GW_PID ;;
	haproxy) url=http://$HA_ADDR$CHAT_PATH body=$DIRECT_BODY proxy=$HA_PID ;;
	esac
	if [ -n "$proxy" ]; then
		proxy_alive "$who" "before a run"
		g0=$(cpu_ticks "$proxy")
		gw0=$(sched_wait_ns "$proxy")
	fi
	if [ "$who" = gateway ]; then
		echo "0 0" >"$out.conns"
		sample_connections "$out.conns" &
		spid=$!
		pids="$pids $spid"
	fi
	p0=$(cpu_ticks "$MP_PID")
	pw0=$(sched_wait_ns "$MP_PID")
	m0=$(machine_ticks)
	run_waited timeout $((STREAM_BOUND_S + 30)) nice -n "$CLIENT_NICE" "$BIN/streamclient" \
		--url "$url" --streams "$STREAMS" --duration-bound "$STREAM_BOUND_S" \
		--engine "$STREAM_ENGINE" --token-ms "$TOKEN_MS" --body "$body" --kv \
		>"$out" 2>"$out.err" || rc=$?
	m1=$(machine_ticks)
	p1=$(cpu_ticks "$MP_PID")
	pw1=$(sched_wait_ns "$MP_PID")
	if [ -n "$proxy" ]; then
		[ -n "$spid" ] && stop_pid "$spid"
		proxy_alive "$who" "during a run of $STREAMS streams"
		g1=$(cpu_ticks "$proxy")
		gw1=$(sched_wait_ns "$proxy")
	fi
	if [ "$who" = gateway ]; then
		{
			echo "gw_conns $(cat "$out.conns")"
			echo "gw_hwm_kb $(proc_kb "$GW_PID" VmHWM)"
			echo "gw_rss_kb $(proc_kb "$GW_PID" VmRSS)"
		} >>"$out"
	fi
	[ "$rc" -le 1 ] || die "streamclient against the $who failed (exit $rc): $(cat "$out.err" "$out")"
	{
		echo "mp_ticks $((p1 - p0))"
		echo "gw_ticks $((g1 - g0))"
		echo "mp_wait_ms $(calc "($pw1 - $pw0) / 1e6" %.1f)"
		echo "gw_wait_ms $(calc "($gw1 - $gw0) / 1e6" %.1f)"
		echo "busy_ticks $((${m1% *} - ${m0% *}))"
		echo "total_ticks $((${m1#* } - ${m0#* }))"
	} >>"$out"
	others=$(awk -v hz="$(getconf CLK_TCK)" -v ncpu="$(getconf _NPROCESSORS_ONLN)" '
		{ v[$1] = $2 }
		END {
			wall = v["total_ticks"] / ncpu / hz
			cpu = v["cpu_user_s"] + v["cpu_sys_s"]
			o = ((v["busy_ticks"] - v["mp_ticks"] - v["gw_ticks"]) / hz - cpu) / wall * 100
			printf "%.0f", o < 0 ? 0 : o
		}' "$out")
	echo "others_pct $others" >>"$out"
	echo "shared_pct $(calc "$(get "$out" shared_stamps) * 100 / ($(get "$out" gap_count) + 1e-9)" %.2f)" \
		>>"$out"
}

# The median over files $2... of figure $1, with three decimals.
median() {
	local key=$1
	shift
	for f in "$@"; do get "$f" "$key"; done | sort -g |
		awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The sum over files $2... of figure $1.
total() {
	local key=$1
	shift
	for f in "$@"; do get "$f" "$key"; done | awk '{ s += $1 } END { printf "%.10g", s }'
}

# The largest over files $2... of figure $1.
largest() {
	local key=$1
	shift
	for f in "$@"; do get "$f" "$key"; done | sort -g | tail -n 1
}

# The rounds' files of target $1.
runs_of() {
	local r
	for r in $(seq "$ROUNDS"); do echo "$tmp/run-$1.$r"; done
}

# One row of the latency table: a label, direct, gateway, its added,
# HAProxy, its added, the target (of the gateway's added) and verdict.
row() {
	printf '   %-30s %9s %9s %9s %9s %9s   %-7s %s\n' "$1" "${2-}" "${3-}" "${4-}" "${5-}" \
		"${6-}" "${7-}" "${8-}" | sed 's/ *$//'
}

# One row of the figure $2 (a streamclient key) labelled $1: the
# median of each target's rounds and each proxy's difference from direct;
# with $3, the target (<= $3) of the gateway's added figure and its
# verdict. Sets ADDED and HA_ADDED to the gateway's and HAProxy's
# differences.
figure_row() {
	local label=$1 key=$2 limit=${3-} d="" g="" h="" v=""
	# shellcheck disable=SC2046
	d=$(median "$key" $(runs_of direct))
	ADDED="" HA_ADDED=""
	if [ -n "$GW" ]; then
		# shellcheck disable=SC2046
		g=$(median "$key" $(runs_of gateway))
		ADDED=$(calc "$g - $d" %+.3f)
		[ -n "$limit" ] && v=$(verdict "$ADDED <= $limit")
	fi
	if [ -n "$HA" ]; then
		# shellcheck disable=SC2046
		h=$(median "$key" $(runs_of haproxy))
		HA_ADDED=$(calc "$h - $d" %+.3f)
	fi
	row "$label" "$d" "$g" "$ADDED" "$h" "$HA_ADDED" "${limit:+<= $limit}" "$v"
}

# Figure $1 of target $2 in each round (printed with format $3, %.2f
# by default), or with $2 = PROXY-added (gateway-added, haproxy-added)
# the differences PROXY - direct, each round's runs one after the other,
# and their median.
by_round() {
	local r s="" p=${2%-added}
	for r in $(seq "$ROUNDS"); do
		if [ "$p" != "$2" ]; then
			s="$s $(calc "$(get "$tmp/run-$p.$r" "$1") - $(get "$tmp/run-direct.$r" "$1")" %+.2f)"
		else
			s="$s $(calc "$(get "$tmp/run-$2.$r" "$1")" "${3:-%.2f}")"
		fi
	done
	[ "$p" != "$2" ] && s="$s (median $(paired_median "$1" "$p"))"
	echo "${s# }"
}

# The median over the rounds of PROXY ($2: gateway, the default, or
# haproxy) - direct of figure $1.
paired_median() {
	local r p=${2:-gateway}
	for r in $(seq "$ROUNDS"); do
		calc "$(get "$tmp/run-$p.$r" "$1") - $(get "$tmp/run-direct.$r" "$1")" '%.3f\n'
	done | sort -g |
		awk '{ v[NR] = $1 } END { printf "%+.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# CPU of target $1 over its rounds: "PCT_GW PCT_MP PCT_CLIENT PCT_OTHERS
# GW_MS_PER_STREAM GW_US_PER_TOKEN MP_MS_PER_STREAM GW_WAIT_PCT
# MP_WAIT_PCT" (% of one core; the waits: of the time).
cpu_figures() {
	local who=$1 files
	# shellcheck disable=SC2046
	files=$(runs_of "$who")
	# shellcheck disable=SC2086
	awk -v hz="$(getconf CLK_TCK)" -v ncpu="$(getconf _NPROCESSORS_ONLN)" -v streams="$STREAMS" \
		-v tokens="$(($(total gap_count $files) + $(total ttft_count $files)))" \
		-v gw="$(total gw_ticks $files)" -v mp="$(total mp_ticks $files)" \
		-v cl="$(calc "$(total cpu_user_s $files) + $(total cpu_sys_s $files)" %.3f)" \
		-v busy="$(total busy_ticks $files)" -v all="$(total total_ticks $files)" \
		-v gwait="$(total gw_wait_ms $files)" -v mwait="$(total mp_wait_ms $files)" \
		-v rounds="$ROUNDS" '
		BEGIN {
			wall = all / ncpu / hz
			g = gw / hz; m = mp / hz
			o = (busy / hz - g - m - cl) / wall * 100
			printf "%.0f %.0f %.0f %.0f %.3f %.1f %.3f %.1f %.1f\n", g / wall * 100,
				m / wall * 100, cl / wall * 100, o < 0 ? 0 : o, g * 1e3 / (rounds * streams),
				tokens ? g * 1e6 / tokens : 0, m * 1e3 / (rounds * streams),
				gwait / 1e3 / wall * 100, mwait / 1e3 / wall * 100
		}'
}

# Counts of mockprov's logged outcomes, "completed N, client_aborted M...".
mockprov_outcomes() {
	awk -F, 'NR > 1 { n[$9]++ } END { for (k in n) printf "%s %d, ", k, n[k] }' \
		"$tmp/mockprov/mock-bench.csv" 2>/dev/null | sed 's/, $//'
}

main() {
	local r order who f hwm_kb start_kb end_kb failed=0 cd cg ch fd fg fh stamps hwms=""
	local rss_verdict lat_added gap_added ha_lat_added="" ha_gap_added="" others="" conns_c conns_u
	local label waits first gw_us="" ha_us="" cpu_verdict=""
	[ -x "$BIN/mockprov" ] || die "$BIN/mockprov is missing (make, or set FAULTLINE_BIN)"
	[ -x "$BIN/streamclient" ] || die "$BIN/streamclient is missing (make, or set FAULTLINE_BIN)"
	[ "$ROUNDS" -ge 1 ] || die "ROUNDS must be at least 1"
	GW="" HA=""
	for who in $STREAM_TARGETS; do
		case $who in
		direct) ;;
		gateway)
			GW=yes
			[ -x "$BIN/gateway" ] || die "$BIN/gateway is missing (make, or set FAULTLINE_BIN)"
			;;
		haproxy) HA=yes ;;
		*) die "STREAM_TARGETS: unknown target '$who' (direct, gateway, haproxy)" ;;
		esac
	done
	# Direct first, every time: the proxies' figures are added to it.
	STREAM_TARGETS="direct${GW:+ gateway}${HA:+ haproxy}"
	# Each stream: the client's socket, and mockprov's; through a proxy,
	# its two; the gateway's idle upstream connections stay.
	raise_fd_limit $((STREAMS * 3 + 1024)) "STREAMS=$STREAMS"
	bench_start curl ${HA:+haproxy}
	# What nice gives: without the privilege a negative nice is 0.
	CLIENT_NICENESS=$(nice -n "$CLIENT_NICE" nice 2>/dev/null) ||
		die "CLIENT_NICE ($CLIENT_NICE) is not a niceness"
	echo "   mockprov, the proxies and streamclient share these cores; \"others' CPU\" is" \
		"the process time (user + system) the rest of the machine used meanwhile"
	start_stream_mockprov
	check_stream "http://$MP_ADDR$CHAT_PATH" "$DIRECT_BODY"
	if [ -n "$GW" ]; then
		start_stream_gateway
		start_kb=$(proc_kb "$GW_PID" VmRSS)
		check_stream "http://$GW_ADDR$CHAT_PATH" "$GW_BODY"
	fi
	if [ -n "$HA" ]; then
		start_haproxy_with haproxy_stream_config
		check_stream "http://$HA_ADDR$CHAT_PATH" "$DIRECT_BODY"
	fi

	# A run is its streams, not a time: WARMUP (1 or 0) stands for the
	# warm-up's seconds, and stream_round takes no seconds.
	# shellcheck disable=SC2086 # a list of words
	WARMUP_SECS=$WARMUP alternate_rounds stream_round "$tmp/run" "$ROUNDS" 0 $STREAM_TARGETS
	if [ -n "$GW" ]; then
		hwm_kb=$(proc_kb "$GW_PID" VmHWM)
		end_kb=$(proc_kb "$GW_PID" VmRSS)
		GW_ERR_LINES=$(wc -l <"$tmp/gateway/gateway.err")
		stop_pid "$GW_PID"
	fi
	[ -n "$HA" ] && stop_pid "$HA_PID"
	stop_pid "$MP_PID"

	f=$tmp/run-direct.1
	if [ "$(get "$f" arrival_stamps)" = kernel ]; then
		stamps="the kernel's receive timestamp of its bytes"
	else
		stamps="when the client read its bytes"
	fi
	echo
	echo "Streams: $STREAMS concurrent, $STREAM_TOKENS tokens each, ttft $TTFT_MS ms, then" \
		"one token every $TOKEN_MS ms (mockprov),"
	echo "   direct${GW:+, through the gateway (stall_timeout_ms $STALL_TIMEOUT_MS)}${HA:+ and through HAProxy}"
	[ -n "$HA" ] && echo "   (1 thread, mode http, option http-no-delay), the same mockprov behind each;"
	echo "   $([ "$WARMUP" != 0 ] && echo "a warm-up run each, then ")$ROUNDS rounds, the order" \
		"reversed every other round; figures: the median of the rounds'."
	echo "   A token's arrival = $stamps (streamclient, engine $(get "$f" engine)," \
		"nice $CLIENT_NICENESS)."
	echo "   lateness: a token's arrival - k x $TOKEN_MS ms, less the least in its stream" \
		"(see bench/stream.sh)"
	row "" "direct" "gateway" "added" "haproxy" "added" "target" ""
	# shellcheck disable=SC2046
	{
		cd=$(total completed $(runs_of direct))
		fd="$(total failed $(runs_of direct))/$(total unfinished $(runs_of direct))"
		cg="" fg="" ch="" fh=""
		if [ -n "$GW" ]; then
			cg=$(total completed $(runs_of gateway))
			fg="$(total failed $(runs_of gateway))/$(total unfinished $(runs_of gateway))"
		fi
		if [ -n "$HA" ]; then
			ch=$(total completed $(runs_of haproxy))
			fh="$(total failed $(runs_of haproxy))/$(total unfinished $(runs_of haproxy))"
		fi
	}
	row "streams ended with [DONE]" "$cd" "$cg" "" "$ch" "" "$((ROUNDS * STREAMS))"
	row "failed / unfinished" "$fd" "$fg" "" "$fh" "" "0/0"
	figure_row "ttft p50 (ms)" ttft_p50_ms
	figure_row "ttft p99 (ms)" ttft_p99_ms
	figure_row "inter-chunk gap p50 (ms)" gap_p50_ms
	figure_row "inter-chunk gap p99 (ms)" gap_p99_ms "$ADDED_TARGET_MS"
	gap_added=$ADDED ha_gap_added=$HA_ADDED
	figure_row "inter-chunk gap p99.9 (ms)" gap_p999_ms
	figure_row "|gap - $TOKEN_MS ms| p99 (ms)" jitter_p99_ms
	figure_row "token lateness p50 (ms)" lateness_p50_ms
	figure_row "token lateness p90 (ms)" lateness_p90_ms
	figure_row "token lateness p99 (ms)" lateness_p99_ms "$ADDED_TARGET_MS"
	lat_added=$ADDED ha_lat_added=$HA_ADDED
	figure_row "token lateness p99.9 (ms)" lateness_p999_ms
	figure_row "tokens in one read w/ prior (%)" shared_pct
	for f in gap lateness; do
		# shellcheck disable=SC2046
		row "worst $f, any round (ms)" "$(largest "${f}_max_ms" $(runs_of direct))" \
			"$([ -n "$GW" ] && largest "${f}_max_ms" $(runs_of gateway))" "" \
			"$([ -n "$HA" ] && largest "${f}_max_ms" $(runs_of haproxy))"
	done
	echo "   by round (round 1, 2, ...):"
	for f in gap_p99_ms lateness_p99_ms others_pct; do
		for who in direct ${GW:+gateway gateway-added} ${HA:+haproxy haproxy-added}; do
			case $f/$who in */*-added) [ "$f" = others_pct ] && continue ;; esac
			case $f in
			gap_p99_ms) label="gap p99 (ms)" ;;
			lateness_p99_ms) label="lateness p99 (ms)" ;;
			others_pct) label="others' CPU (%)" ;;
			esac
			printf '   %-30s %s\n' "  $label, ${who/-/, }" \
				"$(by_round "$f" "$who" "$([ "$f" = others_pct ] && echo %.0f)")"
		done
	done

	echo
	echo "   CPU (user + system, /proc), % of one core over the rounds; per stream and" \
		"token: CPU time / streams, tokens"
	printf '   %-20s %8s %8s %8s %8s %11s %10s %11s\n' "" "proxy" "mockprov" "client" \
		"others'" "px ms/strm" "px us/tok" "mp ms/strm"
	for who in direct ${GW:+gateway} ${HA:+haproxy}; do
		# shellcheck disable=SC2046
		set -- $(cpu_figures "$who")
		case $who in
		direct)
			printf '   %-20s %8s %8s %8s %8s %11s %10s %11s\n' direct "" "$2" "$3" "$4" "" "" "$7"
			waits="direct: mockprov $9%"
			;;
		gateway)
			printf '   %-20s %8s %8s %8s %8s %11s %10s %11s\n' "through the gateway" "$1" "$2" \
				"$3" "$4" "$5" "$6" "$7"
			GW_MS_PER_STREAM=$5 gw_us=$6
			waits="$waits; through the gateway: gateway $8%, mockprov $9%"
			;;
		haproxy)
			printf '   %-20s %8s %8s %8s %8s %11s %10s %11s\n' "through HAProxy" "$1" "$2" \
				"$3" "$4" "$5" "$6" "$7"
			ha_us=$6
			waits="$waits; through HAProxy: haproxy $8%, mockprov $9%"
			;;
		esac
		others="$others $4"
	done
	echo "   runnable but waiting for a CPU (schedstat), % of the time: $waits"
	if [ -n "$GW" ]; then
		cpu_verdict=$(verdict "$gw_us <= $TOKEN_CPU_TARGET_US")
		row "gateway CPU per token (us)" "" "$gw_us" "" "$ha_us" "" "<= $TOKEN_CPU_TARGET_US" \
			"$cpu_verdict"
	fi

	if [ -n "$GW" ]; then
		for f in "$tmp/run-gateway.warmup" $(runs_of gateway); do
			[ -f "$f" ] && hwms="$hwms $(mb "$(get "$f" gw_hwm_kb)")"
		done
		conns_c=$(for f in $(runs_of gateway); do get "$f" gw_conns | cut -d' ' -f1; done |
			sort -g | tail -n 1)
		conns_u=$(for f in $(runs_of gateway); do get "$f" gw_conns | cut -d' ' -f2; done |
			sort -g | tail -n 1)
		rss_verdict=$(verdict "$hwm_kb * 1024 <= $RSS_TARGET_MB * 1e6")
		echo
		echo "   gateway memory (MB = 10^6 bytes): RSS after start $(mb "$start_kb")," \
			"after the last run $(mb "$end_kb");"
		echo "   peak (VmHWM) after each run ($([ "$WARMUP" != 0 ] && echo "warm-up, ")rounds 1...):$hwms"
		echo "   connections seen (the most in 0.5 s samples): $conns_c client, $conns_u upstream;" \
			"$GW_ERR_LINES lines on its stderr (--log-level warn)"
		row "gateway peak RSS (MB)" "" "$(mb "$hwm_kb")" "" "" "" "<= $RSS_TARGET_MB" "$rss_verdict"
	fi
	echo "   mockprov logged: $(mockprov_outcomes)"
	# shellcheck disable=SC2086
	busy_warning $others

	for f in "$tmp"/run-*.warmup "$tmp"/run-*.[0-9]*; do
		case $f in *.err | *.conns) continue ;; esac
		[ -f "$f" ] || continue
		if [ "$(get "$f" completed)" != "$STREAMS" ]; then
			failed=1
			first=$(get "$f" first_error)
			echo "   $(basename "$f"): $(get "$f" completed) of $STREAMS ended with [DONE];" \
				"failed $(get "$f" failed) (HTTP $(get "$f" http_errors), error event" \
				"$(get "$f" error_events), malformed $(get "$f" malformed), no [DONE]" \
				"$(get "$f" no_done), transport $(get "$f" transport_errors)), unfinished" \
				"$(get "$f" unfinished)${first:+; first: $first}"
		fi
	done

	echo
	echo "summary"
	if [ -n "$GW" ]; then
		echo "   added inter-chunk p99 (gateway - direct): token lateness $lat_added ms" \
			"(target <= $ADDED_TARGET_MS: $(verdict "$lat_added <= $ADDED_TARGET_MS")), gap" \
			"$gap_added ms ($(verdict "$gap_added <= $ADDED_TARGET_MS"));"
		echo "   the rounds' paired differences, median: lateness $(paired_median lateness_p99_ms) ms," \
			"gap $(paired_median gap_p99_ms) ms"
	fi
	if [ -n "$HA" ]; then
		echo "   HAProxy (1 thread, option http-no-delay), the same rounds: token lateness" \
			"$ha_lat_added ms, gap $ha_gap_added ms;"
		echo "   the rounds' paired differences, median: lateness" \
			"$(paired_median lateness_p99_ms haproxy) ms, gap $(paired_median gap_p99_ms haproxy) ms"
	fi
	if [ -n "$GW" ]; then
		echo "   CPU per token: gateway $gw_us us (target <= $TOKEN_CPU_TARGET_US: $cpu_verdict)${HA:+, HAProxy $ha_us us};" \
			"gateway CPU per stream $GW_MS_PER_STREAM ms"
		echo "   gateway peak RSS $(mb "$hwm_kb") MB (target <= $RSS_TARGET_MB: $rss_verdict)"
	fi
	echo "   streams ended with [DONE]: direct $cd of $((ROUNDS * STREAMS))${GW:+, through the gateway $cg of $((ROUNDS * STREAMS))}${HA:+, through HAProxy $ch of $((ROUNDS * STREAMS))}"
	if [ "$failed" != 0 ]; then
		[ -n "$GW" ] && [ "$GW_ERR_LINES" -gt 0 ] &&
			echo "   the gateway's stderr ends: $(tail -n 5 "$tmp/gateway/gateway.err")"
		die "some streams did not end with [DONE] (above)"
	fi
}

main "$@"
