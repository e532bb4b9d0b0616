# posedge — `make help` lists the targets.

VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -ldflags "-X main.version=$(VERSION)"
CMDS      := ./cmd/posedge ./cmd/posedge-hq ./cmd/posedge-sim
# os/arch[/GOARM]: the store boxes we ship to (armv7 routers included).
PLATFORMS := linux/amd64 linux/arm64 linux/arm/7 windows/amd64
BENCHTIME ?= 2s

.DEFAULT_GOAL := help
.PHONY: help build test check demo bench clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build posedge, posedge-hq and posedge-sim into ./bin/
	go build $(LDFLAGS) -o bin/ $(CMDS)

test: ## the CI gate: go vet, then every test (starts its own Redis, Sentinel, NATS)
	go vet ./...
	go test -p 1 -count=1 -timeout 45m ./...

check: ## go vet, gofmt and CGO-free cross-builds into ./dist/
	go vet ./...
	@bad=$$(gofmt -l $$(find . -name '*.go' -not -path './.demo/*')); \
	if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	@set -e; for p in $(PLATFORMS); do \
		set -- $$(echo $$p | tr / ' '); \
		out=dist/$$1-$$2$${3:+v$$3}/; \
		echo "build $$out"; \
		CGO_ENABLED=0 GOOS=$$1 GOARCH=$$2 GOARM=$${3:-} go build -trimpath $(LDFLAGS) -o $$out $(CMDS); \
	done

demo: ## a whole store on loopback (Redis Sentinel, NATS, posedge-hq, posedge) with simulated terminals
	./scripts/demo.sh

bench: ## benchmarks of every package (BENCHTIME=2s)
	go test -p 1 -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

clean: ## remove ./bin, ./dist and ./.demo
	rm -rf bin dist .demo
