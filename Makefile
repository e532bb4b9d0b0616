# posedge — `make help` lists the targets.

VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -ldflags "-X main.version=$(VERSION)"
# Shipped binaries are stripped (smaller; lintian's unstripped-binary).
REL_LDFLAGS := -ldflags "-s -w -X main.version=$(VERSION)"
CMDS      := ./cmd/posedge ./cmd/posedge-hq ./cmd/posedge-sim
# os/arch[/GOARM]: the store boxes we ship to (armv7 routers included).
PLATFORMS := linux/amd64 linux/arm64 linux/arm/7 windows/amd64
BENCHTIME ?= 2s
FUZZTIME  ?= 60s

# Packages: a version dpkg and rpm accept (starts with a digit; a git
# describe such as 307b91d-dirty becomes 0.0.0~git307b91d.dirty), and the
# MSI's numeric one.
PKG_VERSION := $(shell echo '$(VERSION)' | sed -E 's/^v//; /^[0-9]+(\.[0-9]+)*([-.+~].*)?$$/!s/^/0.0.0~git/; s/-/./g')
MSI_VERSION := $(shell echo '$(PKG_VERSION)' | grep -oE '^[0-9]+(\.[0-9]+){0,2}' || echo 0.0.0)
PKG_ARCHS   := amd64 arm64
NFPM_VERSION := v2.45.2
TOOLS       := $(CURDIR)/bin/tools
NFPM        := $(TOOLS)/nfpm
# Redocly CLI (npm), project-local under bin/tools/node_modules: lints
# docs/openapi.yaml in test-tools and renders it in `make docs`. The stamp
# names the version, so changing it here installs the new one. 1.x: 2.x
# needs Node 20.19+, Debian 12's nodejs (CI's) is 18.
REDOCLY_VERSION := 1.34.20
REDOCLY       := $(TOOLS)/node_modules/.bin/redocly
REDOCLY_STAMP := $(TOOLS)/.redocly-$(REDOCLY_VERSION)
# No usage data sent, no update check: the same run offline as online.
export REDOCLY_TELEMETRY := off
export REDOCLY_SUPPRESS_UPDATE_NOTICE := true
# Packages whose tests build on Windows (the test harness internal/testenv
# drives Unix processes; its users are vetted for Linux only).
WIN_VET_PKGS = $(shell GOOS=windows go list -e -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | grep -v internal/testenv | cut -d' ' -f1)
# The others (cmd/posedge's service code among them): their Windows source
# files, vetted without their tests.
WIN_VET_SRC_PKGS = $(shell GOOS=windows go list -e -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | grep internal/testenv | cut -d' ' -f1 | grep -v '/internal/testenv$$')

.DEFAULT_GOAL := help
.PHONY: help build test test-race clients fuzz-short test-long test-nemesis test-tools check cross package docs demo bench bench-pkg bench-hq profile fuzz clean pkgmap

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build posedge, posedge-hq and posedge-sim into ./bin/
	go build $(LDFLAGS) -o bin/ $(CMDS)

# go test runs every fuzz target over its seed corpus (f.Add and
# testdata/fuzz/); fuzz-short explores beyond it for a few seconds a
# target, `make fuzz` for longer. Every package runs under the race
# detector (RACE_PKGS) but two, run plain (PLAIN_PKGS): e2e (its daemons
# are separate processes; `make test-race` builds them with -race) and the
# bench smoke (it measures time). sync/replay and sync/hq cost 103 s and
# 191 s under -race here (docs/development.md, Race detector).
PLAIN_PKGS_RE = /(e2e|bench)$$
RACE_PKGS = $(shell go list ./... | grep -Ev '$(PLAIN_PKGS_RE)')
PLAIN_PKGS = $(shell go list ./... | grep -E '$(PLAIN_PKGS_RE)')
# The e2e tests make test runs again with race-built daemons: the money
# paths with no time bound a slower daemon could break (docs/
# development.md, Race detector); a race report in a daemon's log fails
# the test (internal/testenv Proc.RaceReport).
E2E_RACE_RUN = ^(TestOddCentsAddUpAtHQ|TestScarceStockRace|TestDegradedRefundsAppliedOnce|TestDaemonKilledWhileSelling|TestSaleIsJournaledBeforeAnswerAndReachesHQOnce|TestHQKilledMidBatchAndTwoInstances|TestRedisMasterKilledUnderLoad)$$
test: ## the CI gate: installs what is missing (test-deps), check, every test (all but e2e and bench under -race; starts its own Redis, Sentinel, NATS, PostgreSQL; fuzz targets over their corpus), fuzz-short, test-tools, clients
	./scripts/test-deps.sh
	$(MAKE) check
	go build -o bin/testfilter ./internal/testfilter
	bash -o pipefail -c "go test -race -json -p 1 -count=1 -timeout 40m -skip '^TestTool' $(RACE_PKGS) | bin/testfilter"
	bash -o pipefail -c "go test -json -p 1 -count=1 -timeout 60m -skip '^TestTool' $(PLAIN_PKGS) | bin/testfilter"
	bash -o pipefail -c "POSEDGE_RACE=1 go test -json -p 1 -count=1 -timeout 30m -run '$(E2E_RACE_RUN)' ./e2e | bin/testfilter"
	$(MAKE) fuzz-short
	$(MAKE) test-tools
	$(MAKE) clients

# Every package under the race detector, the e2e daemons as race builds
# too (make test runs e2e plain: docs/development.md, Race detector).
test-race: ## every test with -race, the e2e daemons race-built too
	go build -o bin/testfilter ./internal/testfilter
	bash -o pipefail -c "POSEDGE_RACE=1 go test -race -json -p 1 -count=1 -timeout 120m -skip '^TestTool' ./... | bin/testfilter"

# Every fuzz target for FUZZSHORT executions beyond its committed corpus
# (inside make test). A count, not a duration: Go 1.26's fuzzer can end a
# timed run with a bare "context deadline exceeded" on a busy machine
# (golang/go#75804; scripts/fuzz.sh).
FUZZSHORT ?= 2000x
fuzz-short: ## every fuzz target for FUZZSHORT executions each (2000x; in make test)
	FUZZTIME=$(FUZZSHORT) FUZZMINIMIZETIME=100x ./scripts/fuzz.sh

test-long: ## soaks: the 7-day WAN outage (350,000 sales), a 60 s black-holed WAN, 100 daemon kills, the 30-minute nemesis (~75 min; not in CI)
	POSEDGE_LONG=1 go test -count=1 -timeout 60m -run TestSevenDayOutageDrainsOnceWithinTheSyncPolicy -v ./sync/replay/
	POSEDGE_LONG=1 POSEDGE_KILL_RUNS=100 go test -p 1 -count=1 -timeout 60m -run '^(TestHungHQIsNotOK|TestDaemonKillLoop)$$' -v ./e2e/
	$(MAKE) test-nemesis

# The nemesis (e2e TestNemesis, 2 minutes inside make test) for
# NEMESIS_DURATION; POSEDGE_NEMESIS_SEED=<seed printed by a run> replays
# its choices.
NEMESIS_DURATION ?= 30m
test-nemesis: ## the overlapping-fault nemesis for NEMESIS_DURATION (30m): money checked, no-sale window per fault kind printed
	bash -o pipefail -c "POSEDGE_NEMESIS_DURATION=$(NEMESIS_DURATION) go test -p 1 -count=1 -timeout 90m -run '^TestNemesis$$' -v ./e2e/ | tee nemesis.log | grep -E 'nemesis|no-sale|moneycheck|^(---|ok|FAIL)'"

test-tools: package $(REDOCLY_STAMP) ## outside checkers: promtool, systemd-analyze verify, lintian on the .deb, Redocly lint of openapi.yaml
	POSEDGE_DIST=$(CURDIR)/dist POSEDGE_PKG_VERSION=$(PKG_VERSION) POSEDGE_REDOCLY=$(REDOCLY) go test -count=1 -timeout 10m -run '^TestTool' -v ./cmd/posedge ./cmd/posedge-hq

check: ## go vet (Linux and Windows), gofmt and CGO-free cross-builds into ./dist/
	go vet ./...
	GOOS=windows go vet $(WIN_VET_PKGS)
	@set -e; for p in $(WIN_VET_SRC_PKGS); do \
		GOOS=windows go vet $$(GOOS=windows go list -f '{{range .GoFiles}}{{$$.Dir}}/{{.}} {{end}}' $$p); \
	done
	@bad=$$(gofmt -l $$(find . -name '*.go' -not -path './.demo/*')); \
	if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	$(MAKE) cross

cross: ## CGO-free builds for every platform into ./dist/<os>-<arch>/
	@set -e; for p in $(PLATFORMS); do \
		set -- $$(echo $$p | tr / ' '); \
		out=dist/$$1-$$2$${3:+v$$3}/; \
		echo "build $$out"; \
		CGO_ENABLED=0 GOOS=$$1 GOARCH=$$2 GOARM=$${3:-} go build -trimpath $(REL_LDFLAGS) -o $$out $(CMDS); \
	done

# Client generators till and HQ developers use (issue 27), pinned.
# Go: oapi-codegen (version in clients/tillclient/doc.go and
# clients/hqclient/doc.go, go:generate) into committed packages; go test
# ./clients/tillclient holds them to a fresh generation and drives a real
# daemon through them. TypeScript: openapi-typescript and tsc pinned in
# clients/ts/package-lock.json (scripts/clients-ts.sh). `make clients`
# regenerates each from docs/openapi.yaml and docs/openapi-hq.yaml and
# compiles it: a description change that breaks a generator fails `make
# test`. ogen (scripts/clients-ogen.sh, version pinned there) generates
# into bin/clients/ (throwaway modules) and is compiled. Not here:
# C#/Kotlin/Java (docs/tills.md: no generator installs from the
# registries CI reaches).
clients: ## generate the Go (oapi-codegen, ogen) and TypeScript (openapi-typescript) clients from docs/openapi*.yaml and compile each
	go generate ./clients/...
	go build ./clients/...
	./scripts/clients-ogen.sh
	./scripts/clients-ts.sh

$(REDOCLY_STAMP):
	npm install --prefix $(TOOLS) --no-save --no-package-lock --no-audit --no-fund @redocly/cli@$(REDOCLY_VERSION)
	touch $@

# The page is generated, not committed (.gitignore): the YAML is the source.
docs: $(REDOCLY_STAMP) ## render docs/openapi.yaml to one static page, docs/api.html (Redocly build-docs)
	$(REDOCLY) build-docs --config docs/redocly.yaml --disableGoogleFont --title 'posedge store API' \
		-o docs/api.html docs/openapi.yaml

$(NFPM):
	GOBIN=$(TOOLS) go install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)

package: cross $(NFPM) ## .deb and .rpm (amd64, arm64), the Windows zip, and an MSI where wixl exists, into ./dist/
	@set -e; mkdir -p dist/pkgdoc; \
	printf 'posedge (%s-1) unstable; urgency=medium\n\n  * posedge %s, built from git %s.\n\n -- posedge maintainers <posedge@example.com>  %s\n' \
		'$(PKG_VERSION)' '$(PKG_VERSION)' '$(VERSION)' "$$(LC_ALL=C date -R)" | gzip -9n > dist/pkgdoc/changelog.Debian.gz
	@set -e; for arch in $(PKG_ARCHS); do for fmt in deb rpm; do \
		PKG_ARCH=$$arch PKG_VERSION='$(PKG_VERSION)' PKG_BIN=dist/linux-$$arch/posedge \
		PKG_CONFIG=configs/posedge.example.yaml PKG_CHANGELOG=dist/pkgdoc/changelog.Debian.gz \
		$(NFPM) package --config packaging/nfpm/nfpm.yaml --packager $$fmt --target dist/; \
	done; done
	@set -e; mkdir -p dist/pkgdoc-hq; \
	printf 'posedge-hq (%s-1) unstable; urgency=medium\n\n  * posedge-hq %s, built from git %s.\n\n -- posedge maintainers <posedge@example.com>  %s\n' \
		'$(PKG_VERSION)' '$(PKG_VERSION)' '$(VERSION)' "$$(LC_ALL=C date -R)" | gzip -9n > dist/pkgdoc-hq/changelog.Debian.gz
	@set -e; for arch in $(PKG_ARCHS); do for fmt in deb rpm; do \
		PKG_ARCH=$$arch PKG_VERSION='$(PKG_VERSION)' PKG_BIN=dist/linux-$$arch/posedge-hq \
		PKG_CONFIG=configs/posedge-hq.example.yaml PKG_CHANGELOG=dist/pkgdoc-hq/changelog.Debian.gz \
		$(NFPM) package --config packaging/nfpm/posedge-hq/nfpm.yaml --packager $$fmt --target dist/; \
	done; done
	@set -e; stage=dist/windows-amd64-pkg/posedge; rm -rf dist/windows-amd64-pkg; mkdir -p $$stage; \
	cp dist/windows-amd64/posedge.exe $$stage/; \
	sed -e "s|^  path: \"/var/lib/posedge/journal.db\"|  path: 'C:\\\\ProgramData\\\\posedge\\\\journal.db'|" \
		configs/posedge.example.yaml | sed 's/$$/\r/' > $$stage/posedge.example.yaml; \
	sed 's/$$/\r/' packaging/windows/README.txt > $$stage/README.txt; \
	rm -f dist/posedge_$(PKG_VERSION)_windows_amd64.zip; \
	(cd dist/windows-amd64-pkg && zip -q -r ../posedge_$(PKG_VERSION)_windows_amd64.zip posedge); \
	echo "dist/posedge_$(PKG_VERSION)_windows_amd64.zip"; \
	if command -v wixl >/dev/null; then \
		wixl --arch x64 -D Version=$(MSI_VERSION) -D SourceDir=$$stage \
			-o dist/posedge_$(PKG_VERSION)_windows_amd64.msi packaging/windows/posedge.wxs; \
		echo "dist/posedge_$(PKG_VERSION)_windows_amd64.msi"; \
	else echo "no wixl (apt-get install wixl): MSI skipped"; fi

demo: ## a whole store on loopback (Redis Sentinel, NATS, posedge-hq, posedge) with simulated terminals
	./scripts/demo.sh

# It rewrites the table of docs/performance.md (between its markers) and
# the whole output into docs/perf/bench-latest.txt from this one run.
bench: ## every figure of docs/performance.md against its raw baseline, 3 times with the load average, at two sizes, on a whole store on loopback (~9 min; not in CI); rewrites docs/performance.md's table
	./scripts/test-deps.sh
	POSEDGE_BENCH=full POSEDGE_BENCH_DOC=$(CURDIR)/docs/performance.md POSEDGE_BENCH_OUT=$(CURDIR)/docs/perf/bench-latest.txt \
		go test -count=1 -timeout 40m -run '^TestFigures$$' -v ./bench/

bench-pkg: ## the per-package go test benchmarks (BENCHTIME=2s)
	go test -p 1 -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

profile: ## pprof CPU and allocation summaries of the lookup, sale, replay and ingest paths into docs/perf/
	./scripts/profile.sh docs/perf

fuzz: ## every fuzz target for FUZZTIME each (default 60s), one at a time: executions and crashes per target
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

# The chain of bench-hq: stores × transactions per store, the posedge-hq
# counts it runs (one after the other) and their batch_size; CHAIN_DRAIN=1
# fills the stream first (not timed) and times posedge-hq alone on it.
CHAIN_STORES ?= 1000
CHAIN_TXNS   ?= 5000
CHAIN_HQ     ?= 1,2,4
CHAIN_BATCH  ?= 256
CHAIN_DRAIN  ?= 0

bench-hq: ## HQ at chain scale: CHAIN_STORES stores replay CHAIN_TXNS each to 1, 2, 4 posedge-hq over a 3-node cluster (long)
	./scripts/test-deps.sh
	POSEDGE_CHAIN_STORES=$(CHAIN_STORES) POSEDGE_CHAIN_TXNS=$(CHAIN_TXNS) POSEDGE_CHAIN_HQ=$(CHAIN_HQ) POSEDGE_CHAIN_BATCH=$(CHAIN_BATCH) POSEDGE_CHAIN_DRAIN=$(CHAIN_DRAIN) \
		go test -p 1 -count=1 -run '^$$' -bench '^BenchmarkChainReplay$$' -benchtime 1x -timeout 600m -v ./sync/hq/ | tee bench-hq.log | grep '^figure'

pkgmap: ## rewrite the package diagram in docs/design.md from go list (TestPackageDiagram checks it)
	go test -count=1 -run '^TestPackageDiagram$$' ./internal/conventions -update

clean: ## stop what a demo left running; remove ./bin, ./dist, ./.demo and docs/api.html
	@[ ! -f .demo/pids ] || ./scripts/demo.sh stop
	rm -rf bin dist .demo docs/api.html
