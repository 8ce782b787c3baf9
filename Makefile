# contend — build, test and validation entry points.
#
#   make build      build bin/contend
#   make test       unit, replay and integration tests, then make validate
#   make generate   regenerate BPF objects (needs clang-16, llvm-16, libbpf-dev)
#   make fixtures   build the native fixture programs into bin/fixtures
#   make validate   run every fixture variant under contend and check verdicts
#   make bench      overhead and speed benchmarks (ratios against baselines)
#   make bench-agent  the agent's own CPU and memory over time (AGENT_BENCH=1h: soak)
#   make lint       gofmt, go vet

GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/contend-dev/contend/internal/version.Version=$(VERSION)
CC        ?= gcc
FIXCFLAGS := -O2 -g -pthread -Wall

.PHONY: all build demo deps test unit validate generate check-generate fixtures bench bench-agent lint capture clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/contend ./cmd/contend

# Native fixtures: every fixtures/c/*.c becomes bin/fixtures/<name>; the
# programs used to test stack unwinding are built twice, with and without
# frame pointers.
FIXTURE_SRCS := $(wildcard fixtures/c/*.c)
FIXTURE_BINS := $(patsubst fixtures/c/%.c,$(BIN)/fixtures/%,$(FIXTURE_SRCS))

fixtures: $(FIXTURE_BINS) $(BIN)/fixtures/gofixture $(BIN)/fixtures/java/.built

$(BIN)/fixtures/%: fixtures/c/%.c fixtures/c/common.h
	@mkdir -p $(@D)
	$(CC) $(FIXCFLAGS) -o $@ $<

$(BIN)/fixtures/gofixture: FORCE
	@mkdir -p $(@D)
	$(GO) build -o $@ ./fixtures/cmd/gofixture

FORCE:

# JVM fixtures: fixtures/java/fixtures/*.java compiled by javac (a JDK 17
# or later) into bin/fixtures/java, run by make validate with java.
JAVA_SRCS := $(wildcard fixtures/java/fixtures/*.java)
$(BIN)/fixtures/java/.built: $(JAVA_SRCS)
	@mkdir -p $(@D)
	javac -Xlint:all -Werror -d $(@D) $(JAVA_SRCS)
	@touch $@

# demo: the main job on a built-in example — start a fixture with a spin
# convoy, attach to it live, print what contend finds (needs root).
demo: build fixtures
	$(BIN)/contend demo

# deps installs what the tests use beyond Go, gcc and make: tmux drives the
# TUI end-to-end tests, libc6-dbg lets the unwinding tests check glibc's
# internal names, prometheus scrapes the agent in its end-to-end test,
# openjdk-17-jdk-headless builds and runs the JVM fixtures (javac, java,
# jcmd). Installed with apt when missing and running as root.
TEST_DEBS := tmux libc6-dbg prometheus openjdk-17-jdk-headless
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

# bench: probe overhead against perf and bpftrace on the same workloads
# (needs root), then contend analyze against go tool pprof -top on one
# large profile. Every figure is a ratio or difference against a baseline
# taken in the same run.
bench: build fixtures
	$(GO) run ./fixtures/cmd/bench -contend $(BIN)/contend -fixtures $(BIN)/fixtures
	$(GO) test -run '^$$' -bench AnalyzeVsPprof -benchtime 5x ./cmd/contend
	$(MAKE) bench-agent

# bench-agent: contend agent's own CPU and RSS over time while it watches
# a lock convoy, against the target's CPU in the same run and the budget
# of an always-on recorder (needs root). AGENT_BENCH=1h for a soak.
AGENT_BENCH ?= 90s
bench-agent: build fixtures
	$(GO) run ./fixtures/cmd/agentbench -contend $(BIN)/contend -fixtures $(BIN)/fixtures -duration $(AGENT_BENCH)

# capture re-records the Go fixtures' profiles used by the golden tests.
capture:
	$(GO) run ./fixtures/cmd/capture -out analyzer/testdata/fixtures

lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && false)
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
