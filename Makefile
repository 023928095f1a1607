# sweeper — developer commands. `make help` lists them.
GO ?= go
BIN := bin/sweeper

.PHONY: help quickstart build test lint gotest nodetest fuzz clean

help:
	@echo "make quickstart  migrate a database (found or started) and validate config.example.toml"
	@echo "make test        installs what the tests need (scripts/test-setup.sh, as root), gofmt check, go vet, go test -race ./..., the node tests"
	@echo "make test-setup  what make test runs first: installs the tests' tools as root (apt), or says what to install"
	@echo "make long        the long measurements at full size, one after the other: make toil soak chaos flood scale (about 25 minutes)"
	@echo "make toil        the toil measurement at full size (1,000 operations, a provider outage; about 4 minutes)"
	@echo "make soak        Slack at 20 new stale operations a second for 8 minutes: the outbox stays flat"
	@echo "make build       static binary in $(BIN), as the Dockerfile builds it"
	@echo "make fuzz        run each fuzz target for FUZZTIME (default 30s)"
	@echo "make chaos       the chaos test at full size: kill -9s and a PostgreSQL restart under load"
	@echo "make screenshots the review page's screenshots in docs/images, from the browser test (needs chromium)"
	@echo "make n8n-e2e     the n8n templates in a real n8n (installed into .cache/n8n), with fakes of the providers and sweeper"

# The version and commit `sweeper version`, the startup log line, traces and
# sweeper_build_info report: the nearest tag (empty without one: the
# module's version), the commit, "-dirty" after it when the tree has changes.
VERSION ?= $(shell git describe --tags --dirty 2>/dev/null)
REVISION ?= $(shell r=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || r=$$r-dirty; echo $$r; })

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION) -X main.revision=$(REVISION)" -o $(BIN) ./cmd/sweeper

# The example's placeholders are chosen in the environment: withpg sets
# SWEEPER_DATABASE_URL (a database of its own, never postgres), and the
# orders_api block's endpoint is QUICKSTART_ORDERS_URL.
QUICKSTART_ORDERS_URL ?= http://127.0.0.1:8081/sweeper/lookup

quickstart: build
	SWEEPER_CONFIG=config.example.toml SWEEPER_PROVIDERS_ORDERS_API_URL=$(QUICKSTART_ORDERS_URL) $(GO) run ./tools/withpg -- \
		sh -c '$(BIN) migrate && $(BIN) migrate --status && $(BIN) check-config'

# scripts/test-setup.sh first: as root it installs what the tests need
# (apt) and starts the machine's PostgreSQL; otherwise it says what to
# install and stops. No test is ever skipped for want of a tool.
test: test-setup lint gotest nodetest

.PHONY: test-setup
test-setup:
	@scripts/test-setup.sh

# vet builds as the Dockerfile does (-trimpath, no cgo), and so do the
# tests that build sweeper: the packages it compiles are theirs too.
lint: test-setup
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting:"; echo "$$unformatted"; exit 1; fi
	CGO_ENABLED=0 $(GO) vet -trimpath ./...

# Three packages at a time (go test's default is one per core): most of
# the tests wait on the database, on timers and on processes they start,
# and the two largest packages (app, cmd/sweeper) would otherwise hold
# both slots while the others queue. go test starts the packages in the
# order given, so the longest go first and the short ones fill in beside
# them; in ./...'s alphabetical order tools/demo started last and ran
# alone (measured: 273 s of tests in that order, 195 s in this one).
LONGEST_FIRST := ./cmd/sweeper ./tools/demo ./app ./notify/slack
gotest: test-setup axe
	$(GO) test -race -count=1 -p 3 -timeout 20m $(LONGEST_FIRST) ./...

# axe-core, which the review page's browser test runs in Chromium: from
# web/testdata/axe's package-lock.json, into its node_modules (not
# committed; the test installs it too when it is missing).
AXE := web/testdata/axe/node_modules/axe-core/axe.min.js
.PHONY: axe
axe: test-setup $(AXE)
$(AXE): web/testdata/axe/package.json web/testdata/axe/package-lock.json
	@command -v npm >/dev/null || { echo "npm is needed for axe-core, the browser test's accessibility check (Debian: apt-get install npm)"; exit 1; }
	cd web/testdata/axe && npm ci --no-audit --no-fund
	@touch $@

nodetest: test-setup
	@command -v node >/dev/null || { echo "node is needed for the payload-hash vectors (Debian: apt-get install nodejs)"; exit 1; }
	node --test ledger/payloadhash_test.mjs examples/n8n/workflows_test.mjs examples/webhook/verify_test.mjs

# Every fuzz target for FUZZTIME each (scripts/fuzz.sh says how a failure
# is told from Go's own fuzzing deadline race). FUZZFLAGS adds flags, e.g.
# FUZZFLAGS=-parallel=1.
FUZZTIME ?= 30s
FUZZFLAGS ?=
fuzz:
	@scripts/fuzz.sh $(FUZZTIME) $(GO) $(FUZZFLAGS)

# The long measurements `make test` runs at CI size, at full size: not
# part of `make test` or CI (.ci/run), whose budget is 15 minutes.
.PHONY: long
long: toil soak chaos flood scale

# The ledger-scale test on a million rows (make test: a quarter).
.PHONY: scale
scale:
	$(GO) test -race -count=1 -timeout 15m -run '^TestBigLedgerCostsWhatIsUnsettled$$' ./app -v -scale.full

# The scrape flood on a million rows of history (make test: a quarter).
.PHONY: flood
flood:
	$(GO) test -race -count=1 -timeout 15m -run '^TestScrapeFloodKeepsTheDaemonReady$$' ./cmd/sweeper -v -flood.full

# The chaos test at full size: three `sweeper run` processes, 5,000
# operations, 20 kill -9s and a PostgreSQL restart (several minutes). `make
# test` runs it at CI size.
.PHONY: chaos
chaos:
	$(GO) test -race -count=1 -timeout 30m -run '^TestChaos$$' ./cmd/sweeper -v -chaos.full

# The toil measurement at full size: one `sweeper run`, 1,000 stale
# operations over an HTTP provider down for its first 45 s (about four
# minutes; see README "Toil"). `make test` runs it at a fifth of the size.
.PHONY: toil
toil:
	$(GO) test -count=1 -timeout 15m -run '^TestToil$$' ./cmd/sweeper -v -toil.full

# The Slack soak at full length: one daemon's sweep and dispatcher take 20
# new stale operations a second for 8 minutes (30 % to review, one channel,
# a Slack fake keeping Slack's pace); figures every 30 s (see README
# "Reliability"). `make test` runs it for 60 s.
.PHONY: soak
soak:
	$(GO) test -race -count=1 -timeout 15m -run '^TestSlackKeepsUpAtAnyRate$$' ./app -v -soak.full

# The workflows in examples/n8n run in a real n8n: installs n8n (pinned in
# examples/n8n/e2e/package.json) into .cache/n8n on first use, a few
# minutes and about 2.3 GB; needs node and npm, and PostgreSQL as the
# tests find it. Not part of `make test`.
.PHONY: n8n-e2e
n8n-e2e:
	$(GO) run ./examples/n8n/e2e

# The README's pictures of the review page, taken by the browser test in
# Chromium (apt-get install -y chromium).
.PHONY: screenshots
screenshots: axe
	mkdir -p docs/images
	$(GO) test -count=1 -run '^TestInABrowser$$' ./web -screenshots "$(CURDIR)/docs/images"

clean:
	rm -rf bin
