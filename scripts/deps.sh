#!/bin/sh
# Checks that the Debian packages faultline builds with are present, installs
# the missing ones with apt-get (through sudo when not root), and prints the
# compiler and linker flags as a make fragment on stdout.
#   scripts/deps.sh              check, install what is missing, print flags
#   scripts/deps.sh --packages   print the package list (for .ci/run)
set -eu

# clang and libclang-rt-dev (its sanitizer and libFuzzer runtimes, only
# recommended by clang) are for `make fuzz` only; groff-base is for
# tests/install.sh, which renders the man pages (and skips that without
# groff); a plain build does not check for them. redis-server is what the
# gateway's shared state is tested and benched against, and what the
# runner starts for replicas setups; the gateway itself needs libhiredis.
# json-schema-test-suite is the official JSON Schema Test Suite, which the
# unit tests run the gateway's schema checker through (draft 7).
PACKAGES="pkg-config libuv1-dev libcurl4-openssl-dev libcjson-dev libhttp-parser-dev
libcriterion-dev gnuplot-nox libhiredis-dev redis-server clang libclang-rt-dev groff-base
json-schema-test-suite"
if [ "${1:-}" = --packages ]; then
	echo $PACKAGES
	exit 0
fi

missing=""
need_pc() {	# pkg-config name, Debian package
	pkg-config --exists "$1" 2>/dev/null || missing="$missing $2"
}

command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
need_pc libuv libuv1-dev
need_pc libcurl libcurl4-openssl-dev
need_pc libcjson libcjson-dev
need_pc criterion libcriterion-dev
need_pc hiredis libhiredis-dev
# Debian's http-parser ships no .pc file: look for its header instead.
[ -f /usr/include/http_parser.h ] || missing="$missing libhttp-parser-dev"
command -v gnuplot >/dev/null 2>&1 || missing="$missing gnuplot-nox"
command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || missing="$missing redis-server"
[ -d /usr/share/json-schema-test-suite/tests/draft7 ] || missing="$missing json-schema-test-suite"

if [ -n "$missing" ]; then
	echo "deps: installing:$missing" >&2
	sudo=""
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null 2>&1 || { echo "deps: missing:$missing; not root and no sudo to install them" >&2; exit 1; }
		sudo="sudo"
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq >&2
	# shellcheck disable=SC2086
	$sudo apt-get install -y -qq --no-install-recommends $missing >&2
fi

echo "DEP_CFLAGS := $(pkg-config --cflags libuv libcurl libcjson hiredis)"
echo "DEP_LIBS := $(pkg-config --libs libuv libcjson hiredis) -lhttp_parser -lm"
echo "CURL_LIBS := $(pkg-config --libs libcurl)"
echo "TEST_CFLAGS := $(pkg-config --cflags criterion)"
echo "TEST_LIBS := $(pkg-config --libs criterion)"
