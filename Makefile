# contend — build, test and validation entry points.
#
#   make build      build bin/contend
#   make install    install contend and its demo fixtures under PREFIX (/usr/local)
#   make test       unit, replay and integration tests (the concurrent packages
#                   under the race detector), then make validate
#   make generate   regenerate BPF objects (needs clang-16, llvm-16, libbpf-dev)
#   make fixtures   build the fixture programs (native, Go, JVM) into bin/fixtures
#   make validate   run every fixture variant under contend and check verdicts
#                   (REPEAT=N runs of each, LOAD=K CPU-bound processes beside)
#   make bench      overhead, loss and memory benchmarks, then bench-agent (SOAK=1h: soak test)
#   make bench-agent  the agent's own CPU and memory over time (AGENT_BENCH=1h: soak)
#   make fuzz       every fuzz target for FUZZTIME each (default 20s)
#   make capture-live  re-record the replay tests' live recordings (needs root)
#   make lint       gofmt, go vet
#   make realworld  contend on real programs (databases, servers, Ruby), verdicts vs ground truth

GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/contend-dev/contend/internal/version.Version=$(VERSION)
CC        ?= gcc
FIXCFLAGS := -O2 -g -pthread -Wall

.PHONY: all build install uninstall demo demo-fixtures deps test unit race fuzz validate generate check-generate fixtures bench bench-agent lint capture capture-live clean realworld realworld-ci realworld-remedies realworld-truth

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/contend ./cmd/contend

# install puts contend in $(PREFIX)/bin and the demo's native fixtures in
# $(PREFIX)/libexec/contend/fixtures, where contend demo looks for them.
# DESTDIR stages the tree for a package.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec/contend
install: build demo-fixtures
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR)/fixtures
	install -m 0755 $(BIN)/contend $(DESTDIR)$(BINDIR)/contend
	install -m 0755 $(FIXTURE_BINS) $(BIN)/fixtures/gofixture $(DESTDIR)$(LIBEXECDIR)/fixtures/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/contend
	rm -rf $(DESTDIR)$(LIBEXECDIR)

# Native fixtures: every fixtures/c/*.c becomes bin/fixtures/<name>; the
# programs used to test stack unwinding are built twice, with and without
# frame pointers.
FIXTURE_SRCS := $(wildcard fixtures/c/*.c)
FIXTURE_BINS := $(patsubst fixtures/c/%.c,$(BIN)/fixtures/%,$(FIXTURE_SRCS))

# demo-fixtures are what contend demo runs: the native and Go fixtures,
# nothing beyond Go and gcc. fixtures adds the JVM ones (a JDK).
demo-fixtures: $(FIXTURE_BINS) $(BIN)/fixtures/gofixture
fixtures: demo-fixtures $(BIN)/fixtures/java/.built

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
demo: build demo-fixtures
	$(BIN)/contend demo

# deps installs what the tests use beyond Go, gcc and make: tmux drives the
# TUI end-to-end tests, libc6-dbg lets the unwinding tests check glibc's
# internal names, dwz rewrites a test program's DWARF the way Debian's
# debug packages ship it, prometheus scrapes the agent in its end-to-end
# test, openjdk-17-jdk-headless builds and runs the JVM fixtures (javac, java,
# jcmd). Installed with apt when missing and running as root.
TEST_DEBS := tmux libc6-dbg dwz prometheus openjdk-17-jdk-headless
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
# TUI's live updates, the agent's windows and metrics server, the CLI's
# signal handling. make unit tests every package; make race runs these
# again under the race detector with -short, which leaves out their
# integration tests (testbin.Integration: real probes on fixtures, tmux):
# under the detector those cost minutes on two shared CPUs, and they ran
# in make unit.
RACE_PKGS := collector collector/probes symbolize tui agent cmd/contend

# unit builds every test binary in parallel, then runs one package at a
# time: the integration tests record real fixtures and time them, and two
# packages' fixtures competing for the two CPUs would change what they
# measure (a spin convoy starved by another package's convoy). The TUI's
# live tests run first, on a machine no earlier test has loaded.
unit:
	$(GO) test -run '^$$' ./... >/dev/null
	$(GO) test -p 1 ./tui
	$(GO) test -p 1 $$($(GO) list ./... | grep -v '/tui$$')

race:
	$(GO) test -race -short $(addprefix ./,$(RACE_PKGS))

test: deps build fixtures unit race fuzz validate

# fuzz runs every fuzz target in the repository for FUZZTIME each. Targets
# are found with go test -list, so a new one runs without editing this
# file. A crash fails the run and its input is kept under the package's
# testdata/fuzz. Minimizing a new input is cut to FUZZMINIMIZE so that a
# short run explores instead of shrinking its first finding. make test
# runs it with TEST_FUZZTIME each, a smoke run that keeps CI short.
# Go 1.26's fuzz coordinator can report "context deadline exceeded" when
# -fuzztime ends while a worker is busy (go.dev/issue/75804, fixed in Go
# 1.27): that stop, with no failing input written, is not a failure.
FUZZTIME      ?= 20s
FUZZMINIMIZE  ?= 2s
TEST_FUZZTIME ?= 3s
test: FUZZTIME = $(TEST_FUZZTIME)
fuzz:
	@set -e; for pkg in $$($(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...); do \
		for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$t in $$pkg for $(FUZZTIME)"; \
			if out=$$($(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg 2>&1); then \
				echo "$$out" | tail -n 1; \
			elif echo "$$out" | grep -q '^    context deadline exceeded$$' && ! echo "$$out" | grep -q 'Failing input written'; then \
				echo "$$out" | tail -n 3; \
				echo "fuzz $$t: stopped by the fuzztime deadline race of Go 1.26 (go.dev/issue/75804), no failing input: not a failure"; \
			else \
				echo "$$out"; exit 1; \
			fi; \
		done; \
	done

# validate: REPEAT=N runs every variant N times and LOAD=K keeps K
# CPU-bound processes running beside each run; either adds a table of how
# many runs of each variant agreed with its expectation. The defaults,
# one run on an otherwise idle machine, are what make test runs. Every
# run is recorded once: there is no second try.
REPEAT ?= 1
LOAD   ?= 0
validate: build fixtures
	$(GO) run ./fixtures/cmd/validate -contend $(BIN)/contend -fixtures $(BIN)/fixtures -repeat $(REPEAT) -load $(LOAD)

generate:
	$(GO) generate ./collector/probes/...

check-generate: generate
	git diff --exit-code -- bpf collector/probes

# bench: what the probes cost the target and the rest of the machine,
# against perf, bpftrace and offcputime on the same workloads, what
# contend loses and how much memory it holds, as one table (needs root);
# then contend's own CPU and memory (record, top, agent) per workload:
# paced, stripe, CPython's GIL, a JVM, PostgreSQL, Go (about 10 minutes);
# then contend analyze against go tool pprof -top on one large profile.
# Every cost is a ratio or difference against a baseline taken in the same
# run. SOAK=1h runs only the soak test: RSS and losses over an hour.
bench: build fixtures
ifeq ($(SOAK),)
	$(GO) run ./fixtures/cmd/bench -contend $(BIN)/contend -fixtures $(BIN)/fixtures
	$(GO) run ./fixtures/cmd/bench -contend $(BIN)/contend -fixtures $(BIN)/fixtures -only-workloads
	$(GO) test -run '^$$' -bench AnalyzeVsPprof -benchtime 5x ./cmd/contend
	$(MAKE) bench-agent
else
	$(GO) run ./fixtures/cmd/bench -contend $(BIN)/contend -fixtures $(BIN)/fixtures -soak $(SOAK)
endif

# bench-agent: contend agent's own CPU and RSS over time while it watches
# a lock convoy, against the target's CPU in the same run and the budget
# of an always-on recorder (needs root). AGENT_BENCH=1h for a soak;
# AGENT_BASELINE=path/to/contend runs an earlier build's agent beside it on
# the same target and prints the ratios of the two; AGENT_TARGET=gil watches
# 12 CPython threads on the GIL instead of the stripe fixture.
AGENT_BENCH ?= 90s
AGENT_BASELINE ?=
AGENT_TARGET ?= stripe
bench-agent: build fixtures
	$(GO) run ./fixtures/cmd/agentbench -contend $(BIN)/contend -fixtures $(BIN)/fixtures -duration $(AGENT_BENCH) -target $(AGENT_TARGET) $(if $(filter gil,$(AGENT_TARGET)),-threads 12) $(if $(AGENT_BASELINE),-baseline $(AGENT_BASELINE))

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

# realworld: contend on programs nobody here wrote (realworld/<name>/), each
# under a bounded load on 127.0.0.1, verdicts checked against the ground
# truth in each scenario's README. Installs missing Debian packages (root).
# Takes /tmp/contend-heavy.lock per scenario itself: do not wrap it in flock.
# NAME=ruby-gvl,postgres-hotrow runs some; realworld-truth re-collects the
# ground truth (perf, gdb, schedstat, the programs' own views). REPEAT=N
# runs each scenario N times and LOAD=K keeps K CPU-bound processes beside
# each run; either adds a table of how many runs agreed with the ground
# truth. A run of the whole corpus writes its table into docs/realworld.md.
REALWORLD_OUT ?= realworld-out
REALWORLD_FLAGS := -contend $(BIN)/contend -scenarios realworld -out $(REALWORLD_OUT) $(if $(NAME),-only $(NAME))
realworld: build
	$(GO) run ./fixtures/cmd/realworld $(REALWORLD_FLAGS) -repeat $(REPEAT) -load $(LOAD) $(if $(NAME),,-docs docs/realworld.md)

realworld-ci: build
	$(GO) run ./fixtures/cmd/realworld $(REALWORLD_FLAGS) -ci

# The scenarios that name a remedy, run as they are and with it: each
# first finding's predicted effect against what the remedy measured.
realworld-remedies: build
	$(GO) run ./fixtures/cmd/realworld $(REALWORLD_FLAGS) -remedies $(if $(NAME),-only $(NAME))

realworld-truth:
	$(GO) run ./fixtures/cmd/realworld $(REALWORLD_FLAGS) -truth

lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && false)
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
