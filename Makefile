# Keno Mystères — the two commands a new user needs are `make run` and `make test`.
GO      ?= go
ADDR    ?= 127.0.0.1:8080
BIN     := bin/keno-server
export ADDR

.PHONY: run build test deps vet bench par simulate fuzz loadtest clean

## run: build and start the server (embedded Redis unless REDIS_URL is set)
run: build
	./$(BIN) serve

# The version stamped into keno-server (keno-server version, keno_build_info).
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)

build:
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X keno/server/buildinfo.version=$(VERSION) -X keno/server/buildinfo.revision=$(REVISION)" -o $(BIN) ./server
	CGO_ENABLED=0 $(GO) build -o bin/keno-loadtest ./loadtest

## test: vet, then every test with the race detector, against real Redis and Chromium
test: deps vet
	$(GO) test -race -count=1 -timeout 12m ./...

deps:
	@bash .ci/deps

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

## bench: engine and wallet benchmarks
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./engine/ ./protocol/ ./server/...
	bash .ci/redis-bench

## par: exact RTP report (PAR sheet); `make par ARGS=-json` for JSON
par:
	$(GO) run ./server par $(ARGS)

## simulate: play N games per pick count and strategy against the exact RTP
simulate:
	$(GO) run ./server simulate -n $${N:-1000000}

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzSettle -fuzztime 30s ./engine

## loadtest: start a fast-profile server and run the default scenario against it
loadtest: build
	./bin/keno-loadtest -spawn-server ./$(BIN) $(ARGS)

clean:
	rm -rf bin
