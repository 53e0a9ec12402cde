#!/bin/sh
# make install / make uninstall, checked: installs into a staging
# directory (DESTDIR, with PREFIX=/usr/local), then checks that the
# installed commands run (chaos --help, faultline-gateway --help), that an
# installed chaos finds the installed mockprov and loadgen and its plot
# scripts (a one-second scenario, run and gated), that each man page
# renders without a warning (when groff is here), and that make uninstall
# leaves no file or link behind. Run by `make test` after the programs are
# built (MAKE and O from the Makefile); exit 1 on the first failure.
set -eu
cd "$(dirname "$0")/.."

make=${MAKE:-make}
build=${O:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage="$tmp/stage"
prefix=/usr/local
root="$stage$prefix"

fail() {
	echo "tests/install.sh: $*" >&2
	exit 1
}

"$make" --no-print-directory -s install O="$build" DESTDIR="$stage" PREFIX="$prefix" \
	>"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "make install failed"; }

for p in mockprov loadgen gateway chaos; do
	[ -x "$root/bin/faultline-$p" ] || fail "no $prefix/bin/faultline-$p"
	[ -f "$root/share/man/man1/faultline-$p.1" ] || fail "no man page faultline-$p.1"
done
[ -x "$root/bin/chaos" ] || fail "no $prefix/bin/chaos"
[ -f "$root/share/faultline/gateway-example.json" ] || fail "no gateway-example.json"
[ -f "$root/share/faultline/mockprov-example.json" ] || fail "no mockprov-example.json"
[ -f "$root/share/faultline/scenarios/outage-hang.json" ] || fail "no example scenarios"

"$root/bin/chaos" --help | grep -q '^usage: chaos run' || fail "chaos --help"
"$root/bin/faultline-gateway" --help | grep -q 'usage: gateway' || fail "faultline-gateway --help"
"$root/bin/faultline-loadgen" --help >/dev/null || fail "faultline-loadgen --help"
"$root/bin/faultline-mockprov" --help >/dev/null || fail "faultline-mockprov --help"
"$root/bin/chaos" list "$root/share/faultline/scenarios" | grep -q outage-hang ||
	fail "chaos list does not show the installed scenarios"

# The installed chaos, run from elsewhere, must find its programs and plots.
cat >"$tmp/tiny.json" <<'JSON'
{"name": "tiny", "description": "install check", "duration_s": 1,
 "providers": [{"name": "p", "ttft_ms": 5}],
 "load": {"rate": 10},
 "setups": [{"name": "direct", "kind": "direct", "provider": "p"}],
 "expect": [{"setup": "direct", "phase": "*", "answered_min": 1}]}
JSON
(cd "$tmp" && env -u FAULTLINE_BIN -u FAULTLINE_PLOTS "$root/bin/chaos" run tiny.json \
	--out "$tmp/results" --quiet >"$tmp/run.log" 2>&1) ||
	{ cat "$tmp/run.log"; fail "the installed chaos could not run a scenario"; }
stamp=$(sed -n 's/^results: \([^ ]*\).*/\1/p' "$tmp/run.log")
[ -f "$stamp/plots/answered.png" ] || fail "the installed chaos drew no plots"
"$root/bin/chaos" gate "$stamp" >"$tmp/gate.log" 2>&1 ||
	{ cat "$tmp/gate.log"; fail "the installed chaos's run failed its gate"; }

if command -v groff >/dev/null 2>&1; then
	for page in "$root"/share/man/man1/faultline-*.1; do
		warnings=$(groff -mandoc -Tutf8 -ww -z "$page" 2>&1)
		[ -z "$warnings" ] || fail "$page: $warnings"
		groff -mandoc -Tutf8 -P-cbou "$page" 2>/dev/null | grep -q 'SYNOPSIS' ||
			fail "$page renders without a SYNOPSIS"
	done
else
	echo "tests/install.sh: no groff, the man pages are not rendered" >&2
fi

"$make" --no-print-directory -s uninstall O="$build" DESTDIR="$stage" PREFIX="$prefix" \
	>"$tmp/uninstall.log" 2>&1 || { cat "$tmp/uninstall.log"; fail "make uninstall failed"; }
left=$(find "$stage" ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
[ ! -d "$root/share/faultline" ] || fail "make uninstall left share/faultline"
[ ! -d "$root/libexec/faultline" ] || fail "make uninstall left libexec/faultline"
echo "tests/install.sh: install, run, man pages and uninstall: ok"
