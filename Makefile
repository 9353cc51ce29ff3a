# Thin targets; `make test` is what CI runs.
GO      ?= go
BIN     ?= bin/cmdgate
PKGS    ?= ./...
BENCH   ?= .
BENCHCOUNT ?= 1
FUZZTIME ?= 60s

.PHONY: build run test bench fuzz lint opa-test agentwork clean

# cmdgate, and beside it the linux sandbox's init (small: it starts once per command).
# Both without cgo: a static program starts without the dynamic loader, 1.1 ms less
# for every cmdgate command (measured as processes on a 2-core VM), and runs on any
# Linux whatever its C library.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/cmdgate
	CGO_ENABLED=0 $(GO) build -trimpath -o $(dir $(BIN))cmdgate-sandbox ./cmd/cmdgate-sandbox

run: build
	$(BIN) serve $(ARGS)

# The race detector is on: the gateway and the audit log are concurrent by design.
test: lint opa-test
	$(GO) test -race -count=1 $(PKGS)
	@$(MAKE) --no-print-directory agentwork

# The share of the ordinary-agent-work corpus (policies/testdata/agentwork) the sandboxed
# profile allows, printed (go test hides a passing test's output); fails below 97%.
agentwork:
	@$(GO) test -count=1 -run '^TestAgentwork$$' -v ./policies/ | \
	  awk '/^agentwork corpus/ { print } /^(--- FAIL|FAIL|panic)/ { bad = 1; print } END { exit bad }'

# The default policy bundle also passes stock `opa test` (the OPA CLI of the pinned module);
# its 5 s default budget per test is a timing assertion a loaded 2-core machine can miss.
opa-test:
	$(GO) tool opa test --timeout 2m policies/bundle

# Every benchmark, then each one's ratio to the peer measured in the same run (bubblewrap,
# a plain OPA embedding, a stock OPA server, docker exec, coreutils) and its target.
# BENCHCOUNT rounds of every benchmark, one after the other (go test -count would run
# each benchmark's rounds back to back, its peer's minutes later): a benchmark and its
# peer are measured seconds apart in each round, and the verdict is the median of the
# rounds' ratios, which the machine's drift between rounds does not move.
bench:
	for i in $$(seq $(BENCHCOUNT)); do $(GO) test -run '^$$' -bench '$(BENCH)' -count 1 -benchmem $(PKGS); done 2>&1 | $(GO) run ./internal/benchratio

# Every fuzz target, FUZZTIME each (go test fuzzes one target per run).
FUZZ_TARGETS = ./parse:FuzzScript ./policies:FuzzDecide ./policies:FuzzRoutes ./audit:FuzzCanonicalJSON ./audit:FuzzMask ./executor:FuzzCapture ./executor/readonly:FuzzExecute

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $$t"; $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

# gofmt and go mod tidy must have nothing to change; vet for macOS and Windows too: the
# executor and the gateway are build-tagged per OS.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go mod tidy needed (the diff above)"; exit 1; }
	@$(GO) tool opa fmt --list --fail policies/bundle || { echo "opa fmt -w needed (the files above)"; exit 1; }
	$(GO) vet $(PKGS)
	GOOS=darwin $(GO) vet $(PKGS)
	GOOS=windows $(GO) vet $(PKGS)

clean:
	rm -rf bin
