#!/usr/bin/env bash
# make test-deps (first step of make test): install from Debian's archive
# (apt-get) what the tests start or call and the machine lacks, then stop
# the system services those packages start on install (the tests start
# their own servers on free loopback ports). Nothing is installed when
# everything is there. Go modules and nfpm come later from the Go module
# proxy (go test, go install); Redocly CLI from npm (make test-tools).
set -euo pipefail

# command package: a missing command means its package is installed.
need=(
	"redis-server redis-server"
	"redis-sentinel redis-sentinel"
	"redis-cli redis-tools"
	"initdb postgresql"
	"promtool prometheus"
	"lintian lintian"
	"systemd-analyze systemd"
	"zip zip"
	"wixl wixl"
	"git git"
	"curl curl"
	"gcc gcc" # go test -race needs cgo, so a C compiler (make test runs -race)
)
# PostgreSQL's initdb lives outside PATH on Debian.
has() {
	command -v "$1" >/dev/null && return 0
	[ "$1" = initdb ] && compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

pkgs=()
for n in "${need[@]}"; do
	set -- $n
	has "$1" || pkgs+=("$2")
done
# A machine with Node.js and its npm (NodeSource's nodejs bundles npm and
# conflicts with Debian's npm) keeps it; otherwise Debian's.
command -v npm >/dev/null || pkgs+=(nodejs npm)
command -v go >/dev/null || { echo "test-deps: Go is needed: https://go.dev/doc/install (or /usr/local/go/bin on PATH)" >&2; exit 1; }

if [ ${#pkgs[@]} -eq 0 ]; then
	echo "test-deps: everything installed"
	exit 0
fi
command -v apt-get >/dev/null || { echo "test-deps: please install ${pkgs[*]}" >&2; exit 1; }
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "test-deps: run as root, or: apt-get install ${pkgs[*]}" >&2; exit 1; }
	sudo=(sudo)
fi
echo "test-deps: apt-get install ${pkgs[*]} (Debian archive)"
"${sudo[@]}" apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}"
# Debian starts the packages' services on install; the tests never use
# them (they start their own on free ports): stop them.
for s in redis-server redis-sentinel postgresql prometheus; do
	"${sudo[@]}" service "$s" stop >/dev/null 2>&1 || true
done
