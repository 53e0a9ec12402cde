#!/bin/sh
# make peers: the same outages replayed through faultline's own setups and
# through other gateways — HAProxy, nginx and Portkey, as peers/NAME/setup.json
# (or peers/NAME/SCENARIO.json for that scenario) configures them — and one
# comparison report (docs/peers.md).
#   scripts/peers.sh           install what is missing, run, write the report
#   scripts/peers.sh regen     rewrite each peers/*/NAME.json from its NAME.in.json
#   scripts/peers.sh check     exit 1 when a NAME.json is not its NAME.in.json's
# Environment: PEERS_SCALE (time scale, 0.5), PEERS_SCENARIOS (names under
# scenarios/), PEERS (peer folders under peers/), PEERS_OUT (results root,
# results/peers), FAULTLINE_BIN (bin).
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

bin=${FAULTLINE_BIN:-bin}
scale=${PEERS_SCALE:-0.5}
scenarios=${PEERS_SCENARIOS:-"outage-hang outage-5xx outage-kill stream-stall three-setups cross-vendor"}
peers=${PEERS:-"haproxy nginx portkey"}
portkey_dir=build/peers/portkey

# ---- NAME.json from NAME.in.json ----
# Each peers/PEER/NAME.in.json makes NAME.json: setup.in.json the peer's
# recipe for every scenario, SCENARIO.in.json its recipe for that scenario
# alone (peers/portkey/cross-vendor.in.json). A string "@FILE" in it
# becomes FILE's text (a config written into the run folder);
# "@line:FILE" becomes FILE's lines, trimmed and joined into one (a config
# sent as a header).

# expand IN: the file IN (peers/PEER/NAME.in.json) with its files' texts,
# on stdout.
expand() {
	command -v jq >/dev/null 2>&1 ||
		{ echo "peers: jq is missing (apt-get install jq)" >&2; exit 1; }
	src=$1
	dir=$(dirname "$src")
	tmp=$(mktemp -d)
	set --
	i=0
	for ref in $(jq -r '[.. | strings | select(startswith("@"))] | unique[]' "$src"); do
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
		else . end)' "$src"
	rm -rf "$tmp"
}

regen() {
	for src in peers/*/*.in.json; do
		[ -f "$src" ] || continue
		gen=${src%.in.json}.json
		expand "$src" > "$gen.tmp"
		mv "$gen.tmp" "$gen"
		echo "peers: wrote $gen"
	done
}

check() {
	stale=""
	for src in peers/*/*.in.json; do
		[ -f "$src" ] || continue
		gen=${src%.in.json}.json
		expand "$src" | cmp -s - "$gen" || stale="$stale $gen"
	done
	if [ -n "$stale" ]; then
		echo "peers: not what their .in.json and its files make:$stale (run scripts/peers.sh regen)" >&2
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

# mixed_dialects SCENARIO: true when the scenario's providers do not all
# speak one API (mockprov's "dialect"; cross-vendor: OpenAI and Anthropic).
mixed_dialects() {
	[ "$(jq '[.providers[] | .dialect // "openai"] | unique | length' "scenarios/$1.json")" -gt 1 ]
}

# setup_for SCENARIO PEER OUT: the peer's recipe for the scenario into
# OUT/setups/ and its path on stdout — peers/PEER/SCENARIO.json when the
# peer has one (made from SCENARIO.in.json), else its setup.json — with
# {upstream.primary} and {upstream.secondary} (and {hostport.…}) renamed
# to the scenario's first and second providers, and the paths into the
# repository (./peers/, build/peers/) made absolute. Nothing on stdout
# when the scenario's providers speak different APIs and the peer has no
# recipe of its own for it: a proxy that forwards a request as it came
# cannot send an OpenAI request to an Anthropic provider (docs/peers.md).
setup_for() {
	scen=$1
	peer=$2
	dst="$3/setups/$scen-$peer.json"
	src="peers/$peer/setup.json"
	if [ -f "peers/$peer/$scen.in.json" ]; then
		src="peers/$peer/$scen.json"
	elif mixed_dialects "$scen"; then
		echo "peers: $peer left out of $scen: its providers speak different APIs and peers/$peer has no $scen.in.json" >&2
		return 0
	fi
	first=$(jq -r '.providers[0].name' "scenarios/$scen.json")
	second=$(jq -r '.providers[1].name // empty' "scenarios/$scen.json")
	[ -n "$second" ] || { echo "peers: $scen has one provider; a peer needs two" >&2; exit 1; }
	mkdir -p "$3/setups"
	sed -e "s/{upstream\\.primary}/{upstream.@1@}/g; s/{hostport\\.primary}/{hostport.@1@}/g" \
		-e "s/{upstream\\.secondary}/{upstream.@2@}/g; s/{hostport\\.secondary}/{hostport.@2@}/g" \
		-e "s/@1@/$first/g; s/@2@/$second/g" \
		-e "s#\"\\./peers/#\"$root/peers/#g; s#\"build/peers/#\"$root/build/peers/#g" \
		"$src" > "$dst"
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
	left=""
	for scen in $scenarios; do
		set --
		ran=""
		for p in $peers; do
			dst=$(setup_for "$scen" "$p" "$out") || exit 1
			[ -n "$dst" ] || { left="$left $p ($scen)"; continue; }
			set -- "$@" --add-setup "$dst"
			ran="$ran $p"
		done
		echo "== $scen through its own setups and${ran:- no peer}, time scale $scale"
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
	[ -z "$left" ] || note="$note Left out, their providers speaking different APIs (docs/peers.md):$left."
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
