#!/bin/sh
# make peers: the same outages replayed through faultline's own setups and
# through other gateways — HAProxy, nginx and Portkey, as peers/NAME/setup.json
# configures them — and one comparison report (docs/peers.md).
#   scripts/peers.sh           install what is missing, run, write the report
#   scripts/peers.sh regen     rewrite peers/*/setup.json from setup.in.json
#   scripts/peers.sh check     exit 1 when a setup.json is not its setup.in.json's
# Environment: PEERS_SCALE (time scale, 0.5), PEERS_SCENARIOS (names under
# scenarios/), PEERS (peer folders under peers/), PEERS_OUT (results root,
# results/peers), FAULTLINE_BIN (bin).
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

bin=${FAULTLINE_BIN:-bin}
scale=${PEERS_SCALE:-0.5}
scenarios=${PEERS_SCENARIOS:-"outage-hang outage-5xx outage-kill stream-stall three-setups"}
peers=${PEERS:-"haproxy nginx portkey"}
portkey_dir=build/peers/portkey

# ---- setup.json from setup.in.json ----
# A string "@FILE" in setup.in.json becomes FILE's text (a config written
# into the run folder); "@line:FILE" becomes FILE's lines, trimmed and
# joined into one (a config sent as a header).

# expand DIR: setup.in.json of DIR with its files' texts, on stdout.
expand() {
	command -v jq >/dev/null 2>&1 ||
		{ echo "peers: jq is missing (apt-get install jq)" >&2; exit 1; }
	dir=$1
	tmp=$(mktemp -d)
	set --
	i=0
	for ref in $(jq -r '[.. | strings | select(startswith("@"))] | unique[]' "$dir/setup.in.json"); do
		case $ref in
		@line:*) sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$dir/${ref#@line:}" |
				tr -d '\n' > "$tmp/$i" ;;
		*) cat "$dir/${ref#@}" > "$tmp/$i" ;;
		esac
		set -- "$@" --arg "m$i" "$ref" --rawfile "v$i" "$tmp/$i"
		i=$((i + 1))
	done
	jq --indent 2 "$@" --argjson n "$i" 'walk(if type == "string" then
		(. as $s | reduce range(0; $n) as $k ($s;
			if . == $ARGS.named["m\($k)"] then $ARGS.named["v\($k)"] else . end))
		else . end)' "$dir/setup.in.json"
	rm -rf "$tmp"
}

regen() {
	for d in peers/*/; do
		[ -f "$d/setup.in.json" ] || continue
		expand "$d" > "$d/setup.json.tmp"
		mv "$d/setup.json.tmp" "$d/setup.json"
		echo "peers: wrote ${d}setup.json"
	done
}

check() {
	stale=""
	for d in peers/*/; do
		[ -f "$d/setup.in.json" ] || continue
		expand "$d" | cmp -s - "$d/setup.json" || stale="$stale ${d}setup.json"
	done
	if [ -n "$stale" ]; then
		echo "peers: not what setup.in.json and its files make:$stale (run scripts/peers.sh regen)" >&2
		return 1
	fi
}

# ---- installing ----
apt_install() {	# Debian packages; through sudo when not root (as .ci/run)
	sudo=""
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null 2>&1 ||
			{ echo "peers: missing: $*; not root and no sudo to install them" >&2; exit 1; }
		sudo="sudo"
	fi
	echo "peers: installing $*" >&2
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq >&2
	# shellcheck disable=SC2086
	$sudo apt-get install -y -qq --no-install-recommends "$@" >&2
}

install_deps() {
	missing=""
	command -v jq >/dev/null 2>&1 || missing="$missing jq"
	for p in $peers; do
		case $p in
		haproxy) command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] ||
				missing="$missing haproxy" ;;
		nginx) command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] ||
				missing="$missing nginx-light" ;;
		portkey) { command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; } ||
				missing="$missing nodejs npm" ;;
		esac
	done
	# shellcheck disable=SC2086
	[ -z "$missing" ] || apt_install $missing
	case " $peers " in
	*" portkey "*) install_portkey ;;
	esac
}

# Portkey and its dependencies exactly as peers/portkey/package-lock.json
# pins them, into build/peers/portkey (npm ci; again only when the lock changed).
install_portkey() {
	if [ -f "$portkey_dir/.installed" ] &&
		cmp -s peers/portkey/package-lock.json "$portkey_dir/.installed"; then
		return 0
	fi
	mkdir -p "$portkey_dir"
	cp peers/portkey/package.json peers/portkey/package-lock.json "$portkey_dir/"
	npm ci --no-audit --no-fund --prefix "$portkey_dir" >&2
	cp peers/portkey/package-lock.json "$portkey_dir/.installed"
}

# ---- running ----

# setup_for SCENARIO PEER OUT: the peer's setup.json for the scenario into
# OUT/setups/, its {upstream.primary} and {upstream.secondary} (and
# {hostport.…}) renamed to the scenario's first and second providers, and
# the paths into the repository (./peers/, build/peers/) made absolute.
setup_for() {
	scen=$1
	peer=$2
	dst="$3/setups/$scen-$peer.json"
	first=$(jq -r '.providers[0].name' "scenarios/$scen.json")
	second=$(jq -r '.providers[1].name // empty' "scenarios/$scen.json")
	[ -n "$second" ] || { echo "peers: $scen has one provider; a peer needs two" >&2; exit 1; }
	mkdir -p "$3/setups"
	sed -e "s/{upstream\\.primary}/{upstream.@1@}/g; s/{hostport\\.primary}/{hostport.@1@}/g" \
		-e "s/{upstream\\.secondary}/{upstream.@2@}/g; s/{hostport\\.secondary}/{hostport.@2@}/g" \
		-e "s/@1@/$first/g; s/@2@/$second/g" \
		-e "s#\"\\./peers/#\"$root/peers/#g; s#\"build/peers/#\"$root/build/peers/#g" \
		"peers/$peer/setup.json" > "$dst"
	echo "$dst"
}

versions() {
	v=""
	for p in $peers; do
		case $p in
		haproxy) v="$v HAProxy $(haproxy -v 2>/dev/null | sed -n '1s/^HAProxy version \([^ ]*\).*/\1/p');" ;;
		nginx) v="$v nginx $(nginx -v 2>&1 | sed 's#.*nginx/##');" ;;
		portkey) v="$v Portkey $(jq -r .version "$portkey_dir/node_modules/@portkey-ai/gateway/package.json")"
			v="$v (@hono/node-server $(jq -r .version "$portkey_dir/node_modules/@hono/node-server/package.json"), node $(node --version));" ;;
		esac
	done
	echo "${v# }"
}

run() {
	install_deps		# jq first: check needs it
	check
	if ! "$bin/chaos" --help | grep -q -- '--add-setup'; then
		echo "peers: $bin/chaos has no 'run --add-setup' (the runner's external-setup features); build one that has" >&2
		exit 1
	fi
	stamp=$(date -u +%Y%m%dT%H%M%SZ)
	out=${PEERS_OUT:-results/peers}/$stamp
	mkdir -p "$out"
	load_before=$(uptime | sed 's/.*load average: //')
	started=$(date -u '+%Y-%m-%d %H:%M UTC')
	stamps=""
	failed=""
	for scen in $scenarios; do
		set --
		for p in $peers; do
			dst=$(setup_for "$scen" "$p" "$out") || exit 1
			set -- "$@" --add-setup "$dst"
		done
		echo "== $scen through its own setups and$(printf ' %s' $peers), time scale $scale"
		if "$bin/chaos" run "scenarios/$scen.json" "$@" --time-scale "$scale" --out "$out" \
			--quiet > "$out/$scen.txt" 2>&1; then
			:
		else
			failed="$failed $scen"
			tail -n 20 "$out/$scen.txt"
		fi
		s=$(sed -n 's/^results: \([^ ]*\).*/\1/p' "$out/$scen.txt")
		if [ -n "$s" ] && [ -f "$s/summary.json" ]; then
			stamps="$stamps $s"
		fi
	done
	load_after=$(uptime | sed 's/.*load average: //')
	note="Measured $started on $(hostname) ($(nproc) cores; load average before: $load_before, after: $load_after) at time scale $scale: every duration of the scenarios is $scale of the file's (providers answer in $(awk -v s="$scale" 'BEGIN { printf "%g", 200 * s }') ms, the per-attempt timeout is $(awk -v s="$scale" 'BEGIN { printf "%g", 1000 * s }') ms). Peers: $(versions) configured as peers/NAME/README.md explains."
	[ -z "$failed" ] || note="$note Runs that failed (see their .txt):$failed."
	if [ -z "$stamps" ]; then
		echo "peers: no scenario finished; nothing to tabulate" >&2
		exit 1
	fi
	# shellcheck disable=SC2086
	"$bin/chaos" peers-table --out "$out/peers.md" --title "Peer comparison, $started" \
		--note "$note" $stamps
	echo "report: $out/peers.md"
	[ -z "$failed" ]
}

case ${1:-run} in
regen) regen ;;
check) check ;;
run) run ;;
*) echo "usage: scripts/peers.sh [run|regen|check]" >&2; exit 2 ;;
esac
