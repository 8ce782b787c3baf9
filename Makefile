# contend — build, test and validation entry points.
#
#   make build      build bin/contend
#   make test       unit, replay and integration tests, then make validate
#   make generate   regenerate BPF objects (needs clang-16, llvm-16, libbpf-dev)
#   make fixtures   build the native fixture programs into bin/fixtures
#   make validate   run every fixture variant under contend and check verdicts
#   make bench      overhead, loss and memory benchmarks (SOAK=1h: soak test)
#   make lint       gofmt, go vet

GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/contend-dev/contend/internal/version.Version=$(VERSION)
CC        ?= gcc
FIXCFLAGS := -O2 -g -pthread -Wall

.PHONY: all build demo deps test unit validate generate check-generate fixtures bench lint capture clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/contend ./cmd/contend

# Native fixtures: every fixtures/c/*.c becomes bin/fixtures/<name>; the
# programs used to test stack unwinding are built twice, with and without
# frame pointers.
FIXTURE_SRCS := $(wildcard fixtures/c/*.c)
FIXTURE_BINS := $(patsubst fixtures/c/%.c,$(BIN)/fixtures/%,$(FIXTURE_SRCS))

fixtures: $(FIXTURE_BINS) $(BIN)/fixtures/gofixture

$(BIN)/fixtures/%: fixtures/c/%.c fixtures/c/common.h
	@mkdir -p $(@D)
	$(CC) $(FIXCFLAGS) -o $@ $<

$(BIN)/fixtures/gofixture: FORCE
	@mkdir -p $(@D)
	$(GO) build -o $@ ./fixtures/cmd/gofixture

FORCE:

# demo: the main job on a built-in example — start a fixture with a spin
# convoy, attach to it live, print what contend finds (needs root).
demo: build fixtures
	$(BIN)/contend demo

# deps installs what the tests use beyond Go, gcc and make: tmux drives the
# TUI end-to-end tests, libc6-dbg lets the unwinding tests check glibc's
# internal names. Installed with apt when missing and running as root.
TEST_DEBS := tmux libc6-dbg
deps:
	@missing=""; for p in $(TEST_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing$$missing"; \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null || \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; }; \
		else echo "missing test packages:$$missing (install them, or run make test as root)"; fi; \
	fi

unit:
	$(GO) test ./...

test: deps build fixtures unit validate

validate: build fixtures
	$(GO) run ./fixtures/cmd/validate -contend $(BIN)/contend -fixtures $(BIN)/fixtures

generate:
	$(GO) generate ./collector/probes/...

check-generate: generate
	git diff --exit-code -- bpf collector/probes

# bench: what the probes cost the target and the rest of the machine,
# against perf, bpftrace and offcputime on the same workloads, what
# contend loses and how much memory it holds, as one table (needs root);
# then contend analyze against go tool pprof -top on one large profile.
# Every cost is a ratio or difference against a baseline taken in the same
# run. SOAK=1h runs only the soak test: RSS and losses over an hour.
bench: build fixtures
ifeq ($(SOAK),)
	$(GO) run ./fixtures/cmd/bench -contend $(BIN)/contend -fixtures $(BIN)/fixtures
	$(GO) test -run '^$$' -bench AnalyzeVsPprof -benchtime 5x ./cmd/contend
else
	$(GO) run ./fixtures/cmd/bench -contend $(BIN)/contend -fixtures $(BIN)/fixtures -soak $(SOAK)
endif

# capture re-records the Go fixtures' profiles used by the golden tests.
capture:
	$(GO) run ./fixtures/cmd/capture -out analyzer/testdata/fixtures

lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && false)
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
