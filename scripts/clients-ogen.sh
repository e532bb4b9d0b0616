#!/usr/bin/env bash
# ogen (issue 27): generate a Go client with the pinned ogen from
# docs/openapi.yaml and docs/openapi-hq.yaml into bin/clients/ogen-<name>/
# (a throwaway module, not committed) and compile it. Called by `make
# clients`: a description change ogen cannot read fails `make test`.
set -euo pipefail
OGEN_VERSION=${OGEN_VERSION:-v1.24.0}
root="$(cd "$(dirname "$0")/.." && pwd)"
for d in till:openapi hq:openapi-hq; do
	name=${d%%:*}
	spec=${d#*:}
	dir="$root/bin/clients/ogen-$name"
	rm -rf "$dir"
	mkdir -p "$dir"
	# ogen's log (INFO/WARN: header names it canonicalizes, no "default"
	# responses) is kept beside it; its exit status decides.
	if ! (cd "$dir" && go run "github.com/ogen-go/ogen/cmd/ogen@$OGEN_VERSION" \
		--target "$dir/${name}ogen" --package "${name}ogen" --clean "$root/docs/$spec.yaml" >"$dir/ogen.log" 2>&1); then
		grep -v -e '^INFO' -e '^WARN' "$dir/ogen.log" >&2
		echo "clients-ogen: ogen $OGEN_VERSION cannot generate from docs/$spec.yaml (log: $dir/ogen.log)" >&2
		exit 1
	fi
	(cd "$dir" && go mod init "example.com/${name}ogen" >/dev/null 2>&1 &&
		go get "github.com/ogen-go/ogen@$OGEN_VERSION" >/dev/null 2>&1 &&
		go mod tidy >/dev/null 2>&1 && go build ./... && go vet ./...)
	echo "clients-ogen: generated and compiled $dir (ogen $OGEN_VERSION, docs/$spec.yaml)"
done
