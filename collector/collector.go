// Package collector attaches contend's probes to one process, samples its
// threads in /proc, fetches its live Go profiles, symbolizes what it saw and
// produces a recording.Recording: once (Record) or as a stream of windows
// (Session, for the live TUI).
package collector

import (
	"context"
	"errors"
	"os/exec"
	"time"
)

// Sentinel errors the CLI turns into hints and exit codes.
var (
	// ErrNoProcess: the PID does not exist (or is not visible).
	ErrNoProcess = errors.New("no such process")
	// ErrProcessGone: the target exited during the recording.
	ErrProcessGone = errors.New("target process exited")
	// ErrPermission: a capability needed for the probes is missing; the
	// wrapping error names it (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN).
	ErrPermission = errors.New("missing privileges")
	// ErrNoBTF: the kernel exposes no BTF at /sys/kernel/btf/vmlinux.
	ErrNoBTF = errors.New("kernel BTF not available")
	// ErrKernel: the kernel lacks a feature the probes need (too old,
	// eBPF disabled); the wrapping error says which.
	ErrKernel = errors.New("kernel does not support a needed feature")
)

// Defaults, with the reasoning behind each value.
const (
	// DefaultStackThreshold: a futex wait shorter than this is counted
	// and aggregated without its stack (the stack is walked when the
	// thread goes to sleep, as it must be, and kept only for waits this
	// long): the many short sleeps of spin-then-park hand-offs that
	// dominate hot locks would otherwise fill the aggregates with one
	// entry per (thread, stack) each drain period.
	DefaultStackThreshold = 10 * time.Microsecond
	// DefaultIOThreshold: I/O syscalls at least this long carry a stack.
	DefaultIOThreshold = 10 * time.Microsecond
	// DefaultOnCPUHz: 99 Hz rather than 100 avoids lock-step with timers
	// that fire at round frequencies.
	DefaultOnCPUHz = 99
	// MaxOnCPUHz bounds Options.OnCPUHz: beyond 10 kHz per CPU the
	// sampling itself becomes a load on the machine.
	MaxOnCPUHz = 10000
	// DefaultProcInterval: /proc sampling period; 100 ms resolves the
	// runnable-count timeline. The kernel takes ~13 µs per thread to render
	// stat and status, so 200 threads cost ~3.5 ms a sample, ~3.5% of one
	// CPU at this period — paid by contend, not by the target.
	DefaultProcInterval = 100 * time.Millisecond
)

// Options configure one recording.
type Options struct {
	// Target selects the processes to record.
	Target Target
	// PID is a shorthand for Target{PIDs: []int{PID}} when Target is
	// empty.
	PID int
	// Duration to record; 0 records until the context is cancelled or the
	// target exits.
	Duration time.Duration
	// StackThreshold: minimum futex wait that carries a stack.
	StackThreshold time.Duration
	// IOThreshold: minimum I/O syscall duration that carries a stack.
	IOThreshold time.Duration
	// OnCPUHz: perf cpu-clock sampling frequency per CPU.
	OnCPUHz int
	// ProcInterval: /proc sampling period.
	ProcInterval time.Duration
	// PprofURL, when set, is a Go target's net/http/pprof base URL
	// (http://127.0.0.1:6060); mutex and block deltas, goroutine dumps and
	// a CPU profile are fetched during the recording.
	PprofURL string
	// GoFetchCommand, when set, runs each fetch from PprofURL in a child
	// process (see GoFetchOptions.Command): how a recording made as root
	// fetches and parses the endpoint's answers without root.
	GoFetchCommand func(ctx context.Context, args ...string) *exec.Cmd
	// DiscoverPprof, for a Go target (its first process) without
	// PprofURL, looks for a net/http/pprof endpoint among the process's
	// own listening sockets (loopback and wildcard addresses only),
	// probing through GoFetchCommand when set, and fetches from the first
	// that answers as if PprofURL had named it. Meta.Warnings and
	// Meta.GoData say what it found.
	DiscoverPprof bool
	// OnNote, when set, receives notes for the user as they arise (the
	// pprof endpoint found, or why none was), besides Meta.Warnings.
	OnNote func(string)
	// Probes selects probe families (futex, sched, oncpu, io); nil means
	// all.
	Probes []string
	// ProcRoot is the /proc mount to read; "" means /proc.
	ProcRoot string
	// History is how far back Snapshot windows reach (at most two
	// minutes): the session keeps per-second aggregates that long, on top
	// of those of the whole session. 0 keeps none, which is all a caller
	// that takes only the whole recording (Record) needs.
	History time.Duration
	// MaxEvents bounds the event log kept in memory (0: maxEvents, the
	// most it may be). A live view that holds the log converted beside
	// it, and copies a window of it for each analysis, keeps a shorter
	// one (cmd/contend's topMaxEvents).
	MaxEvents int
	// NoProbes records without eBPF probes: only the /proc thread
	// timeline and, with PprofURL, the Go runtime profiles, which is what
	// a user without CAP_BPF and CAP_PERFMON may read. The recording has
	// no probe views, Meta.Probes is empty and Meta.Warnings says why.
	NoProbes bool
	// JVMDumps is how many Java thread dumps (jcmd Thread.print -l) to
	// take, spread over the recording, when the target is a JVM.
	JVMDumps int
	// Jcmd is the jcmd to run against Java targets; "" looks for one in
	// $JAVA_HOME/bin and on PATH (FindJcmd), never beside the target.
	Jcmd string
}

// Stats is the progress of a recording, for the progress line and the TUI
// header.
type Stats struct {
	Elapsed time.Duration
	// Events is the number of events seen by the probes (waits, wakes,
	// switches, samples, I/O calls).
	Events uint64
	// Drops sums every lost event, full map and failed stack lookup.
	Drops uint64
	// TargetExited is set once the target is gone.
	TargetExited bool
	// Processes is the number of processes recorded now.
	Processes int
}
