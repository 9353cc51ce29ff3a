# Thin targets; `make test` is what CI runs.
GO      ?= go
BIN     ?= bin/cmdgate
PKGS    ?= ./...
BENCH   ?= .
FUZZTIME ?= 60s

.PHONY: build run test bench fuzz lint opa-test clean

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/cmdgate

run: build
	$(BIN) serve $(ARGS)

test: lint opa-test
	$(GO) test -count=1 $(PKGS)

# The default policy bundle also passes stock `opa test` (the OPA CLI of the pinned module).
opa-test:
	$(GO) tool opa test policies/bundle

bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem $(PKGS)

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzScript$$' -fuzztime $(FUZZTIME) ./parse

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf bin
