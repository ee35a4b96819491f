# paywatch: the two commands a newcomer needs are `make run` and `make test`.

export GOTOOLCHAIN := local
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

# The server the tests create their databases on; one set in the
# environment wins, and .ci/setup leaves a non-local one alone.
export PAYWATCH_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/paywatch_ci?sslmode=disable

.PHONY: run test test-cluster test-deps bench bench-scale bench-rpc build lint migrate apiref-update clean

## run: everything in one process: API, pages, worker, embedded Temporal + Web UI, devnet chains
## (starts the local PostgreSQL cluster first if it is down)
run: bin/paywatch
	.ci/setup run
	./bin/paywatch dev

## test: every test, against the local PostgreSQL and in-process Temporal servers, then the cluster test
test: test-deps
	$(GO) test -count=1 -timeout 45m ./...
	$(MAKE) --no-print-directory test-cluster

## test-cluster: bin/paywatch as a cluster on this machine: `temporal serve` on PostgreSQL, 2 api and 2 worker
## processes, `devnet serve`; hundreds of payments while kill -9 hits a worker, an api and Temporal (about 5 min).
## It drops and recreates the databases paywatch_cluster and temporal_cluster(_visibility), and prints its figures
test-cluster: test-deps bin/paywatch
	PAYWATCH_CLUSTER_TEST=1 PAYWATCH_BIN=$(CURDIR)/bin/paywatch \
		$(GO) test -count=1 -v -run '^TestCluster$$' -timeout 20m ./cmd/paywatch

## test-deps: what the tests need, installed or started only if missing: PostgreSQL and its
## paywatch_ci database, anvil (npm, into chains/evm/testdata/anvil), Chromium (apt, as root)
test-deps:
	.ci/setup test

## bench: the benchmarks whose figures docs/scale-and-performance.md quotes
bench:
	$(GO) test -run '^$$' -bench . -skip '^BenchmarkRPCCost$$' -benchmem -timeout 30m ./...

## bench-rpc: the devnet chain of every network at its mainnet block time, a scanner each behind a counting proxy:
## requests and bytes per block and per day, with nothing open, with 1,000 expired payments in their late windows,
## with 1 and with 1,000 open payments per network (SOLANA: memo payments on one wallet),
## and the latency at the confirming block (about 13 min; PAYWATCH_RPC_BENCH_WINDOW=1m for a quick run)
bench-rpc: test-deps
	$(GO) test -run '^$$' -bench '^BenchmarkRPCCost$$' -benchtime 1x -timeout 30m ./activities

## bench-scale: `paywatch dev` grown to 250,000 open payments, measured at 10,000, 50,000, 100,000 and 250,000:
## creation rate and p99 against a bare StartWorkflow in the same run, RSS, Go heap, temporal.db and PostgreSQL
## bytes and Temporal history per open payment, scanner cost per block, and the issue's targets (about 90 min
## on 2 cores, up to 3 h on a busy machine; not part of bench). A quick run (a few minutes):
## PAYWATCH_SCALE_CHECKPOINTS=2000 make bench-scale. To 1,000,000: PAYWATCH_SCALE_CHECKPOINTS=250000,1000000
## PAYWATCH_SCALE_TIMEOUT=12h make bench-scale, about 6-10 h, with ~26 GB free where Go's temp dir is (TMPDIR;
## temporal.db grows ~24.5 KB per payment) and ~1.5 GB on the PostgreSQL server. See docs/scale-and-performance.md
bench-scale:
	PAYWATCH_SCALE_CHECKPOINTS=$${PAYWATCH_SCALE_CHECKPOINTS:-10000,50000,100000,250000} \
		$(GO) test -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout $${PAYWATCH_SCALE_TIMEOUT:-180m} ./cmd/paywatch

## build: bin/paywatch (with the embedded Temporal server) and bin/paywatch-slim (without)
build: bin/paywatch bin/paywatch-slim
	@ls -lh bin/

bin/paywatch: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./cmd/paywatch

bin/paywatch-slim: FORCE
	$(GO) build -tags noembed -trimpath -ldflags "-s -w $(LDFLAGS)" -o $@ ./cmd/paywatch

## lint: formatting and vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags noembed ./cmd/paywatch

## migrate: apply database migrations (DATABASE_URL, or the local dev database)
migrate:
	$(GO) run ./cmd/paywatch migrate

## apiref-update: vendor swagger-ui-dist (npm) into api/web/apiref/swagger-ui, the renderer of {base_url}/docs;
## SWAGGER_UI_VERSION=x.y.z picks the release (npm view swagger-ui-dist version: the latest). Files are copied
## unchanged; then run the API reference tests (see api/apiref.go)
SWAGGER_UI_VERSION ?= 5.35.0
APIREF_DIR := api/web/apiref/swagger-ui
apiref-update:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	npm pack --silent --pack-destination "$$tmp" swagger-ui-dist@$(SWAGGER_UI_VERSION) >/dev/null && \
	tar -xzf "$$tmp"/swagger-ui-dist-*.tgz -C "$$tmp" && \
	mkdir -p $(APIREF_DIR) && \
	for f in swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css LICENSE NOTICE; do \
		cp "$$tmp/package/$$f" $(APIREF_DIR)/$$f || exit 1; \
	done && \
	node -p 'require(process.argv[1]).version' "$$tmp/package/package.json" > $(APIREF_DIR)/VERSION && \
	echo "swagger-ui-dist $$(cat $(APIREF_DIR)/VERSION) in $(APIREF_DIR):" && ls -l $(APIREF_DIR)

clean:
	rm -rf bin

FORCE:
