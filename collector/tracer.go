package collector

import (
	"errors"
	"sync"
	"time"
)

// Probe families, the values of Options.Probes and Meta.Probes.
const (
	ProbeFutex = "futex"
	ProbeSched = "sched"
	ProbeOnCPU = "oncpu"
	ProbeIO    = "io"
)

// AllProbes lists every probe family in attach order.
var AllProbes = []string{ProbeFutex, ProbeSched, ProbeOnCPU, ProbeIO}

// Thresholds of the scheduler's event log entries, with the reasoning.
const (
	// runqEventThreshold: a thread runnable but not running for 100 µs
	// or more goes to the event log. Below that is ordinary wakeup
	// latency; above it a thread waited behind others for a CPU, which is
	// how a preempted lock holder shows up.
	runqEventThreshold = 100 * time.Microsecond
	// dsleepEventThreshold: uninterruptible sleeps of 10 µs or more (the
	// I/O threshold) go to the event log: a lock holder stuck in D state
	// for that long is worth correlating with the waits it caused.
	dsleepEventThreshold = 10 * time.Microsecond
)

// ringBufferSize is the size of the shared ring buffer: 8 MiB holds about
// a second of windows at their full rate plus events, far more than the
// reader's poll period needs.
const ringBufferSize = 8 << 20

// readerPoll is how often the ring buffer reader wakes up. The probes
// never wake it (BPF_RB_NO_WAKEUP), so the target does not pay for a
// wakeup per event; 50 ms keeps the buffer far from full.
const readerPoll = 50 * time.Millisecond

// tracerConfig is what the probes are loaded with.
type tracerConfig struct {
	pid            int
	probes         map[string]bool
	stackThreshold time.Duration
	ioThreshold    time.Duration
	onCPUHz        int
	ncpu           int
}

// tracer is the kernel side of a session: loaded and attached probes, their
// maps and their ring buffer. The BPF implementation exists for linux/amd64
// only; the session logic above it is portable and tested with a fake.
type tracer interface {
	// drain reads the aggregate maps and the kernel counters into s.
	drain(s *snapshot) error
	// stack returns the return addresses stored for a stack id.
	stack(id int32) ([]uint64, error)
	// markNamed stops windows for a stack id.
	markNamed(id int32) error
	// run reads ring buffer records and passes each to fn until the
	// tracer is closed or flushed; the record is only valid during fn.
	run(fn func(rec []byte)) error
	// flush makes run return once the records already written are read.
	flush()
	// detach removes every probe from the kernel; maps stay readable.
	detach() error
	// close releases everything.
	close() error
	// counterNames lists the kernel counters drain reports.
	counterNames() []string
	// seed stores a start entry for a call of process pid already in
	// progress when the probes attached, unless the thread has one; it
	// reports whether it stored it.
	seed(pid int, c openCall) (bool, error)
	// unseed removes a seeded entry if it still holds c's start.
	unseed(pid int, c openCall) error
	// openTS returns the start of the call c's thread has in progress
	// now (0 when none), false when the thread has no entry.
	openTS(pid int, c openCall) (uint64, bool)
}

// noTracer is the tracer of a session without probes (Options.NoProbes):
// the kernel records nothing, while the session still samples /proc and
// fetches Go profiles.
type noTracer struct {
	once sync.Once
	done chan struct{}
}

func newNoTracer() *noTracer { return &noTracer{done: make(chan struct{})} }

func (*noTracer) drain(*snapshot) error { return nil }
func (*noTracer) stack(int32) ([]uint64, error) {
	return nil, errors.New("no probes: no stacks")
}
func (*noTracer) markNamed(int32) error { return nil }

// run waits for flush: there is no ring buffer to read.
func (t *noTracer) run(func([]byte)) error {
	<-t.done
	return nil
}
func (t *noTracer) flush()                            { t.once.Do(func() { close(t.done) }) }
func (*noTracer) detach() error                       { return nil }
func (t *noTracer) close() error                      { t.flush(); return nil }
func (*noTracer) counterNames() []string              { return nil }
func (*noTracer) seed(int, openCall) (bool, error)    { return false, nil }
func (*noTracer) unseed(int, openCall) error          { return nil }
func (*noTracer) openTS(int, openCall) (uint64, bool) { return 0, false }
