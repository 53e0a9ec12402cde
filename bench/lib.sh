# shellcheck shell=bash
# bench/lib.sh — what the benchmark scripts (bench/mockprov.sh,
# bench/loadgen.sh, bench/gateway.sh, bench/stream.sh) share; they source
# it (`. "$here/lib.sh"`) after setting BENCH_NAME, the prefix of their
# messages and of the temp dir (bench-mockprov, bench-loadgen,
# bench-gateway, bench-stream).
#
# It offers:
#  - the globals tmp (the temp dir, "" until bench_start makes it) and pids
#    (the background processes still running), and traps on EXIT, INT and
#    TERM that stop those processes and remove tmp (exit 130 / 143 on a
#    signal);
#  - die, stop_pid, forget_pid and run_waited, to end with a message and to
#    start and stop processes so that the traps can find them;
#  - install_tools and bench_start: the tools from Debian packages, the
#    temp dir and the report's first line;
#  - cpu_ticks, machine_ticks, measured and combine: the CPU time a
#    process, the whole machine and a command used, and rounds of figures
#    summed up; label, the name of such a figure in a table; calc and mb,
#    an awk expression's value and kB in MB;
#  - port_used, nginx_quote and start_nginx: nginx (bench/nginx.conf.in)
#    answering one static body on a free port; established, the TCP
#    connections on a port; raise_fd_limit, room for many of them;
#  - capture_body, get and busy_warning: a POST of $REQUEST, a figure from
#    a "flbench_KEY VALUE" file, the note on a busy machine;
#  - await_ready, start_mockprov, start_one_mockprov and start_gateway_on: a
#    program's "ready" line waited for; bin/mockprov on a config, or on one
#    provider "bench" with the timing given, its address in MP_ADDR (port
#    MP_PORT) and pid in MP_PID; bin/gateway on a config, the same in
#    GW_ADDR, GW_PORT and GW_PID;
#  - alternate_rounds: a warm-up, then rounds whose order reverses every
#    other round, of the clients or targets a script compares;
#  - haproxy_write_config: the one HAProxy config in front of mockprov,
#    its threads, limits, timeouts and extra options given;
#  - start_haproxy_with: HAProxy on a free port with the config a function
#    of the script writes, the same in HA_ADDR, HA_PORT and HA_PID.

tmp=""
pids=""
OTHERS_WARN_PCT=20
bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() {
	echo "$BENCH_NAME: $*" >&2
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

# The tools named ($@: wrk, nginx, haproxy, curl, jq …) from Debian
# packages when missing; nginx is nginx-light, and is there when
# /usr/sbin/nginx is; haproxy is there when /usr/sbin/haproxy is.
install_tools() {
	local tool missing="" sudo=""
	for tool in "$@"; do
		case $tool in
		nginx) command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] ||
			missing="$missing nginx-light" ;;
		haproxy) command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] ||
			missing="$missing haproxy" ;;
		*) command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool" ;;
		esac
	done
	[ -z "$missing" ] && return 0
	echo "$BENCH_NAME: installing:$missing" >&2
	[ "$(id -u)" = 0 ] || sudo=sudo
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq >&2
	# shellcheck disable=SC2086
	$sudo apt-get install -y -qq --no-install-recommends $missing >&2
}

# Installs the tools named ($@), makes the temp dir tmp and prints the
# report's first line: when, and on what machine. PINNED, when set, says
# what a section pins (the default: nothing pinned).
bench_start() {
	install_tools "$@"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/fl-$BENCH_NAME.XXXXXX")
	echo "$BENCH_NAME: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) cores" \
		"($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), ${PINNED:-nothing pinned};" \
		"load average $(cut -d' ' -f1-3 /proc/loadavg)"
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

# Runs "$@" (with run_waited) under bash's time (user + system seconds
# into $2.time), its output appended to file $2 and its errors in $2.err;
# then appends to $2 what the server (pid $1, with its children), the
# command and the whole machine used meanwhile: flbench_server_ticks,
# flbench_client_cpu_s, flbench_busy_ticks and flbench_total_ticks (all
# cores). Returns the command's exit status.
measured() {
	local pid=$1 out=$2 s0 s1 m0 m1 rc=0
	shift 2
	s0=$(cpu_ticks "$pid")
	m0=$(machine_ticks)
	TIMEFORMAT='%U %S'
	{ time run_waited "$@" >>"$out" 2>"$out.err"; } 2>"$out.time" || rc=$?
	s1=$(cpu_ticks "$pid")
	m1=$(machine_ticks)
	{
		echo "flbench_server_ticks $((s1 - s0))"
		echo "flbench_client_cpu_s $(awk '{ print $1 + $2 }' "$out.time")"
		echo "flbench_busy_ticks $((${m1% *} - ${m0% *}))"
		echo "flbench_total_ticks $((${m1#* } - ${m0#* }))"
	} >>"$out"
	return "$rc"
}

# Combines the rounds in files $2... (flbench_ lines: the client's and
# measured's) into file $1: requests/s over all of them (and over
# summary.json's elapsed_s where loadgen gave it), latency p50/p99 as the
# mean of the rounds', the worst max, summed errors (in all, and wrk's by
# kind), CPU as % of one core: the server's, the client's and the others'
# (the machine's busy time less both), and the server's and the client's
# CPU per request. Where the rounds have flbench_backend_ticks (the CPU of
# a server behind the measured one, a proxy's upstream), that backend's
# CPU (% of a core, per request) is given too and is not counted as the
# others'.
combine() {
	local out=$1
	shift
	awk -v hz="$(getconf CLK_TCK)" -v ncpu="$(getconf _NPROCESSORS_ONLN)" '
		$1 ~ /^flbench_/ { k = substr($1, 9); v = $2 + 0; n[k]++
			if (k == "max_ms") { if (v > sum[k]) sum[k] = v } else sum[k] += v }
		END {
			wall = sum["total_ticks"] / ncpu / hz
			server = sum["server_ticks"] / hz / wall * 100
			client = sum["client_cpu_s"] / wall * 100
			backend = sum["backend_ticks"] / hz / wall * 100
			other = sum["busy_ticks"] / hz / wall * 100 - server - client - backend
			printf "flbench_rounds %d\nflbench_requests %d\n", n["requests"], sum["requests"]
			printf "flbench_rps %.1f\n", sum["requests"] / sum["duration_s"]
			if (n["all_requests"])
				printf "flbench_rps_elapsed %.1f\n", sum["all_requests"] / sum["elapsed_s"]
			if (n["p50_ms"]) {
				printf "flbench_p50_ms %.3f\n", sum["p50_ms"] / n["p50_ms"]
				printf "flbench_p99_ms %.3f\n", sum["p99_ms"] / n["p99_ms"]
				printf "flbench_max_ms %.3f\n", sum["max_ms"]
			}
			printf "flbench_errors %d\n", sum["errors"]
			split("connect read write status timeout", e, " ")
			for (i = 1; i <= 5; i++)
				printf "flbench_errors_%s %d\n", e[i], sum["errors_" e[i]]
			printf "flbench_cpu_server_pct %.0f\nflbench_cpu_client_pct %.0f\n", server, client
			printf "flbench_cpu_other_pct %.0f\n", other < 0 ? 0 : other
			printf "flbench_server_us_per_req %.1f\n",
				sum["server_ticks"] / hz * 1e6 / sum["requests"]
			printf "flbench_client_us_per_req %.1f\n", sum["client_cpu_s"] * 1e6 / sum["requests"]
			if (n["backend_ticks"]) {
				printf "flbench_cpu_backend_pct %.0f\n", backend
				printf "flbench_backend_us_per_req %.1f\n",
					sum["backend_ticks"] / hz * 1e6 / sum["requests"]
			}
		}' "$@" >"$out"
}

# The label of combine's figure $1 in a report's table, calling the
# server $2 and the client $3.
label() {
	case $1 in
	rps) echo "requests/s" ;;
	requests) echo "requests" ;;
	p50_ms) echo "latency p50 (ms)" ;;
	p99_ms) echo "latency p99 (ms)" ;;
	max_ms) echo "latency max (ms)" ;;
	errors) echo "errors" ;;
	cpu_server_pct) echo "$2 CPU (% of a core)" ;;
	server_us_per_req) echo "$2 CPU per request (us)" ;;
	cpu_client_pct) echo "$3 CPU (% of a core)" ;;
	client_us_per_req) echo "$3 CPU per request (us)" ;;
	cpu_other_pct) echo "others' CPU (% of a core)" ;;
	esac
}

# awk's value of expression $1, printed with format $2.
calc() {
	awk "BEGIN { printf \"$2\", $1 }"
}

# kB ($1, KiB as /proc gives them) in MB (10^6 bytes).
mb() {
	calc "$1 * 1024 / 1e6" %.1f
}

# True when something on this machine uses TCP port $1 (any address).
port_used() {
	local hex
	hex=$(printf '%04X' "$1")
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p { f = 1 }
			END { exit !f }'
}

# ESTABLISHED TCP sockets whose local port is $1 (with $2 = rem: whose
# remote port is $1), from ss (netlink) or else /proc/net/tcp (which can
# count a socket twice while others come and go).
established() {
	local hex col=2 dir=sport
	if command -v ss >/dev/null 2>&1; then
		[ "${2-}" = rem ] && dir=dport
		ss -Htn state established "( $dir = :$1 )" | wc -l
		return 0
	fi
	hex=$(printf '%04X' "$1")
	[ "${2-}" = rem ] && col=3
	awk -v p=":$hex" -v c="$col" 'FNR > 1 && $4 == "01" && substr($c, length($c) - 4) == p { n++ }
		END { print n + 0 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# Raises the open-files limit (inherited by every process started after)
# to $1 descriptors, or to the hard limit when that is lower; ends the
# script when fewer than $1 are allowed then ($2 says what needs them).
raise_fd_limit() {
	local want=$1 cur hard
	cur=$(ulimit -n)
	[ "$cur" = unlimited ] && return 0
	[ "$cur" -ge "$want" ] && return 0
	hard=$(ulimit -Hn)
	if [ "$hard" != unlimited ] && [ "$hard" -lt "$want" ]; then
		ulimit -n "$hard"
	else
		ulimit -n "$want"
	fi
	[ "$(ulimit -n)" -ge "$want" ] ||
		die "the open-files limit is $(ulimit -n) (hard $hard); $want are needed for $2"
}

# Escapes stdin for an nginx single-quoted string.
nginx_quote() {
	sed -e 's/\\/\\\\/g' -e "s/'/\\\\'/g"
}

# Fills in nginx.conf.in with the body in file $2; starts nginx on a free
# port with prefix $1; sets NG_PID and NG_ADDR.
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
			}' "$bench_dir/nginx.conf.in" >"$dir/nginx.conf"
		: >"$dir/error.log"
		"$nginx" -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" \
			>"$dir/nginx.out" 2>&1 &
		NG_PID=$!
		pids="$pids $NG_PID"
		for _ in $(seq 100); do
			kill -0 "$NG_PID" 2>/dev/null || break
			if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
				# shellcheck disable=SC2034 # the scripts read it
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

# POSTs $REQUEST to $1 and stores the body in $2; checks for 200 and JSON.
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

# The value of "flbench_KEY VALUE" in file $1 (wrk, measured), or of
# "KEY VALUE" (streamclient --kv).
get() {
	awk -v k="$2" '$1 == "flbench_" k || $1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "$1"
}

# Warns when other processes took more than OTHERS_WARN_PCT of a core
# (the figures in $@; empty ones are skipped).
busy_warning() {
	local pct max=0
	for pct in "$@"; do
		[ -n "$pct" ] && [ "$pct" -gt "$max" ] && max=$pct
	done
	if [ "$max" -gt "$OTHERS_WARN_PCT" ]; then
		echo "   note: other processes used up to ${max}% of a core meanwhile;" \
			"these figures are not from a quiet machine"
	fi
	return 0
}

# Waits (5 s at most) for a program started in the background to print its
# "ready" line: $1 names it, $2 is its pid, $3 and $4 its stdout and stderr
# files. Ends the script with its stderr when it exits or never gets there.
await_ready() {
	local name=$1 pid=$2 out=$3 err=$4
	for _ in $(seq 100); do
		grep -q '^ready' "$out" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || die "$name exited at start: $(cat "$err")"
		sleep 0.05
	done
	grep -q '^ready' "$out" || die "$name did not print 'ready' within 5 s"
}

# Starts $BIN/mockprov on config $1 with logs in $2 and waits for its
# "ready" line; sets MP_PID and MP_ADDR (HOST:PORT).
start_mockprov() {
	local config=$1 dir=$2
	"$BIN/mockprov" --config "$config" --log-dir "$dir" --log-level warn \
		>"$dir/mockprov.out" 2>"$dir/mockprov.err" &
	MP_PID=$!
	pids="$pids $MP_PID"
	await_ready mockprov "$MP_PID" "$dir/mockprov.out" "$dir/mockprov.err"
	MP_ADDR=$(awk '$1 == "listening" { print $3; exit }' "$dir/mockprov.out")
	[ -n "$MP_ADDR" ] || die "mockprov printed no 'listening' line"
	# shellcheck disable=SC2034 # the scripts read it
	MP_PORT=${MP_ADDR##*:}
}

# Starts mockprov with one provider, "bench" (model mock-small), on a free
# port, its files in $tmp/mockprov: ttft_ms $1, jitter_ms $2, token_ms $3,
# output_tokens $4. Sets MP_PID, MP_ADDR and MP_PORT.
start_one_mockprov() {
	local dir=$tmp/mockprov
	mkdir -p "$dir"
	printf '{"providers":[{"name":"bench","listen":"127.0.0.1:0","model":"mock-small",
	 "ttft_ms":%s,"jitter_ms":%s,"token_ms":%s,"output_tokens":%s}]}\n' \
		"$1" "$2" "$3" "$4" >"$dir/config.json"
	start_mockprov "$dir/config.json" "$dir"
}

# Starts $BIN/gateway on config file $1 with its output in dir $2 and waits
# for its "ready" line; sets GW_PID, GW_ADDR (HOST:PORT) and GW_PORT.
start_gateway_on() {
	local config=$1 dir=$2
	"$BIN/gateway" --config "$config" --listen 127.0.0.1:0 --log-level warn \
		>"$dir/gateway.out" 2>"$dir/gateway.err" &
	GW_PID=$!
	pids="$pids $GW_PID"
	await_ready "the gateway" "$GW_PID" "$dir/gateway.out" "$dir/gateway.err"
	GW_ADDR=$(awk '$1 == "listening" { print $2; exit }' "$dir/gateway.out")
	[ -n "$GW_ADDR" ] || die "the gateway printed no 'listening' line"
	# shellcheck disable=SC2034 # the scripts read it
	GW_PORT=${GW_ADDR##*:}
}

# Runs function $1 (as $1 WHO FILE SECS) for each WHO of $5...: a warm-up
# of WARMUP_SECS each into file $2-WHO.warmup (none when WARMUP_SECS is
# 0), then $3 rounds of $4 s each into $2-WHO.ROUND, forwards, then
# backwards (ABC CBA ...), so that load from elsewhere falls on every one
# alike.
alternate_rounds() {
	local run=$1 prefix=$2 rounds=$3 secs=$4 who round order all
	shift 4
	all="$*"
	for who in $all; do
		[ "$WARMUP_SECS" = 0 ] || "$run" "$who" "$prefix-$who.warmup" "$WARMUP_SECS"
	done
	for round in $(seq "$rounds"); do
		if [ $((round % 2)) = 1 ]; then
			order=$all
		else
			order=$(echo "$all" | tr ' ' '\n' | tac | tr '\n' ' ')
		fi
		for who in $order; do
			"$run" "$who" "$prefix-$who.$round" "$secs"
		done
	done
}

# Writes to file $1 HAProxy's config for port $2 in front of mockprov at
# MP_ADDR: $3 threads, maxconn $4, client and server timeouts of $5 s, and
# $6 (lines, possibly none) added to the defaults; mode http, keep-alive
# both ways, no logging, the one server without health checks. The
# scripts' config functions (start_haproxy_with's $1) call it.
haproxy_write_config() {
	cat >"$1" <<EOF
global
	nbthread $3
	maxconn $4

defaults
	mode http
	maxconn $4
	option http-keep-alive
	timeout connect 5s
	timeout client ${5}s
	timeout server ${5}s
	timeout http-keep-alive 60s
	timeout http-request 10s
${6:+$6
}
frontend bench
	bind 127.0.0.1:$2
	default_backend mockprov

backend mockprov
	server mockprov $MP_ADDR
EOF
}

# Starts HAProxy (foreground, one process) on a free port, its files in
# dir $2 ($tmp/haproxy when not given): function $1 writes its config for
# a port ($1 FILE PORT) with a backend that answers GET /healthz (mockprov
# does); waits until a /healthz through it answers; sets HA_PID, HA_ADDR
# and HA_PORT.
start_haproxy_with() {
	local write_config=$1 dir=${2:-$tmp/haproxy} haproxy port
	haproxy=$(command -v haproxy || echo /usr/sbin/haproxy)
	mkdir -p "$dir"
	for _ in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 12000))
		port_used "$port" && continue
		"$write_config" "$dir/haproxy.cfg" "$port"
		"$haproxy" -db -f "$dir/haproxy.cfg" >"$dir/haproxy.out" 2>&1 &
		HA_PID=$!
		pids="$pids $HA_PID"
		for _ in $(seq 100); do
			kill -0 "$HA_PID" 2>/dev/null || break
			if curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$port/healthz"; then
				# shellcheck disable=SC2034 # the scripts read them
				HA_ADDR=127.0.0.1:$port HA_PORT=$port
				return 0
			fi
			sleep 0.05
		done
		if grep -qi 'cannot bind\|address already in use' "$dir/haproxy.out"; then
			stop_pid "$HA_PID"
			continue
		fi
		die "haproxy did not start: $(cat "$dir/haproxy.out")"
	done
	die "found no free port for haproxy in 5 tries"
}
