# sweeper — developer commands. `make help` lists them.
GO ?= go
BIN := bin/sweeper

.PHONY: help quickstart build test lint gotest nodetest fuzz clean

help:
	@echo "make quickstart  migrate a database (found or started) and validate config.example.toml"
	@echo "make test        gofmt check, go vet, go test -race ./..., payload-hash vectors in node"
	@echo "make build       static binary in $(BIN), as the Dockerfile builds it"
	@echo "make fuzz        run each fuzz target for FUZZTIME (default 30s)"

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/sweeper

quickstart: build
	SWEEPER_CONFIG=config.example.toml $(GO) run ./internal/withpg -- \
		sh -c '$(BIN) migrate && $(BIN) migrate --status && $(BIN) check-config'

test: lint gotest nodetest

lint:
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

gotest:
	$(GO) test -race -count=1 ./...

nodetest:
	@command -v node >/dev/null || { echo "node is needed for the payload-hash vectors (Debian: apt-get install nodejs)"; exit 1; }
	node --test ledger/payloadhash_test.mjs

FUZZTIME ?= 30s
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzCanonicalize -fuzztime=$(FUZZTIME) ./ledger

clean:
	rm -rf bin
