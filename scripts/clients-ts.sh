#!/usr/bin/env bash
# TypeScript client (issue 27): install the pinned openapi-typescript and
# tsc from clients/ts/package-lock.json (npm ci), generate the types of
# docs/openapi.yaml and docs/openapi-hq.yaml into clients/ts/gen/ and
# compile them with clients/ts/tillcheck.ts into clients/ts/dist/. Called
# by `make clients` and by clients/tillclient's Go test (which then runs
# dist/tillcheck.js against a real daemon). A description the generator
# cannot read, or whose types no longer fit the program, fails here.
set -euo pipefail
cd "$(dirname "$0")/../clients/ts"
command -v npm >/dev/null || { echo "clients-ts: npm is needed (scripts/test-deps.sh installs nodejs and npm)" >&2; exit 1; }
# npm ci again only when the lock file changed since the last install.
stamp=node_modules/.posedge-lock
if ! cmp -s package-lock.json "$stamp" 2>/dev/null; then
	npm ci --no-audit --no-fund --loglevel=error
	cp package-lock.json "$stamp"
fi
rm -rf gen dist
npm run --silent generate
npm run --silent build
echo "clients-ts: generated and compiled clients/ts/dist/tillcheck.js"
