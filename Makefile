# contend — build, test and validation entry points.
#
#   make build      build bin/contend
#   make test       unit, replay and integration tests (the concurrent packages
#                   under the race detector), then make validate
#   make generate   regenerate BPF objects (needs clang-16, llvm-16, libbpf-dev)
#   make fixtures   build the native fixture programs into bin/fixtures
#   make validate   run every fixture variant under contend and check verdicts
#   make bench      overhead and speed benchmarks (ratios against baselines)
#   make capture-live  re-record the replay tests' live recordings (needs root)
#   make lint       gofmt, go vet

GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/contend-dev/contend/internal/version.Version=$(VERSION)
CC        ?= gcc
FIXCFLAGS := -O2 -g -pthread -Wall

.PHONY: all build demo deps test unit race validate generate check-generate fixtures bench lint capture capture-live clean

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

# RACE_PKGS are the packages whose code runs concurrently — the collector's
# ring-buffer readers and snapshots, the symbolizer's shared caches, the
# TUI's live updates, the CLI's signal handling: make race tests them under
# the race detector, make unit tests every other package. The race run
# compiles in parallel, then runs one package at a time: their integration
# tests time real recordings, and the race detector's slowdown on two
# shared CPUs is enough without a second package competing.
MODULE    := github.com/contend-dev/contend
RACE_PKGS := collector collector/probes symbolize tui cmd/contend

unit:
	$(GO) test $$($(GO) list ./... | grep -vxF $(foreach p,$(RACE_PKGS),-e $(MODULE)/$(p)))

race:
	$(GO) test -race -run '^$$' $(addprefix ./,$(RACE_PKGS))
	$(GO) test -race -p 1 $(addprefix ./,$(RACE_PKGS))

test: deps build fixtures unit race validate

validate: build fixtures
	$(GO) run ./fixtures/cmd/validate -contend $(BIN)/contend -fixtures $(BIN)/fixtures

generate:
	$(GO) generate ./collector/probes/...

check-generate: generate
	git diff --exit-code -- bpf collector/probes

# bench: probe overhead against perf and bpftrace on the same workloads
# (needs root), then contend analyze against go tool pprof -top on one
# large profile. Every figure is a ratio or difference against a baseline
# taken in the same run.
bench: build fixtures
	$(GO) run ./fixtures/cmd/bench -contend $(BIN)/contend -fixtures $(BIN)/fixtures
	$(GO) test -run '^$$' -bench AnalyzeVsPprof -benchtime 5x ./cmd/contend

# capture re-records the Go fixtures' profiles used by the golden tests.
capture:
	$(GO) run ./fixtures/cmd/capture -out analyzer/testdata/fixtures

# capture-live re-records the live recordings of the replay tests (needs
# root): every fixture variant under contend record as make validate runs
# it, and CPython's GIL (PYTHON, with symbols). CAPTURE=name,... re-records
# only those.
PYTHON ?= python3
capture-live: build fixtures
	$(GO) run ./fixtures/cmd/capturelive -contend $(BIN)/contend -fixtures $(BIN)/fixtures -out analyzer/testdata/live -python $(PYTHON) $(if $(CAPTURE),-only $(CAPTURE))

lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && false)
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
