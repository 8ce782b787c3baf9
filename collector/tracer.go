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
	// ProbeGoSync: uprobes on a Go target's sync.Mutex and sync.RWMutex
	// slow paths, attached to a Go process only when no pprof endpoint
	// gives its runtime profiles.
	ProbeGoSync = "gosync"
)

// AllProbes lists every probe family in attach order.
var AllProbes = []string{ProbeFutex, ProbeSched, ProbeOnCPU, ProbeIO, ProbeGoSync}

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

// ringBufferSize is the size of the shared ring buffer: at the full event
// and window rates (eventRate, windowRate: about 6 MB/s) 2 MiB holds a
// third of a second, six times the reader's poll period. The buffer is
// mapped into contend twice (the kernel maps its pages twice so that
// records can wrap around), so it costs twice its size in resident memory.
const ringBufferSize = 2 << 20

// readerPoll is how often the ring buffer reader wakes up. The probes
// never wake it (BPF_RB_NO_WAKEUP), so the target does not pay for a
// wakeup per event; 50 ms keeps the buffer far from full.
const readerPoll = 50 * time.Millisecond

// drainSettle is how long a drain waits between flipping the generation of
// the aggregate maps and reading the old one when the kernel cannot wait
// for the programs itself (see settlePrograms). It is no bound: a
// program that read the old generation can be stopped mid-run for longer,
// on a VM whenever the host takes its vCPU away, and an update the drain
// cuts in two loses its second half. The fallback only makes that rare.
const drainSettle = 10 * time.Millisecond

// tracerConfig is what the probes are loaded with.
type tracerConfig struct {
	probes         map[string]bool
	stackThreshold time.Duration
	ioThreshold    time.Duration
	onCPUHz        int
	ncpu           int
	// mode is the target selection (targetMode*); comm the name matched
	// in targetModeComm; cgroupFD an open descriptor of the cgroup
	// directory in targetModeCgroup.
	mode     int
	comm     string
	cgroupFD int
}

// storedStack is one stack the probes stored: its hash, its process (0 for
// a kernel stack) and its frames, innermost first.
type storedStack struct {
	hash uint64
	pid  uint32
	pcs  []uint64
}

// drained is what one drain of the kernel gives.
type drained struct {
	// agg holds the aggregates written since the previous drain.
	agg *aggregates
	// stacks lists the stacks stored since the previous drain (a stack
	// that recurs is stored again once per drain).
	stacks []storedStack
	// counters holds the kernel counters, cumulative since the start.
	counters map[string]uint64
	// open lists the calls in progress at the drain.
	open []openCall
}

// tracer is the kernel side of a session: loaded and attached probes, their
// maps and their ring buffer. The BPF implementation exists for linux/amd64
// only; the session logic above it is portable and tested with a fake.
type tracer interface {
	// drain reads and empties the aggregates and stacks the probes wrote
	// since the previous drain, and reads the counters and the calls in
	// progress.
	drain() (*drained, error)
	// markNamed stops windows for a stack.
	markNamed(hash uint64) error
	// setTarget adds process pid to the target set, or removes it.
	setTarget(pid int, on bool) error
	// silence takes processes pids out of the target set: every probe
	// stops recording them at once, before the probes are detached
	// (closing a syscall tracepoint's event waits for the kernel's
	// grace periods, so detaching takes a while).
	silence(pids []int) error
	// silenceAll empties the target set, processes the probes added
	// themselves included.
	silenceAll() error
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
	// seed stores a start entry for a call already in progress when the
	// probes attached, unless the thread has one; it reports whether it
	// stored it.
	seed(c openCall) (bool, error)
	// unseed removes a seeded entry if it still holds c's start.
	unseed(c openCall) error
	// openTS returns the start of the call c's thread has in progress
	// now (0 when none), false when the thread has no entry.
	openTS(c openCall) (uint64, bool)
	// attachGo attaches the Go lock probes a describes to the Go
	// executable exe of process pid; they are detached with the others.
	attachGo(pid int, exe string, a goAttach) error
	// detachGo takes every Go lock probe off, leaving the other probes.
	detachGo() error
}

// noTracer is the tracer of a session without probes (Options.NoProbes):
// the kernel records nothing, while the session still samples /proc and
// fetches Go profiles.
type noTracer struct {
	once sync.Once
	done chan struct{}
}

func newNoTracer() *noTracer { return &noTracer{done: make(chan struct{})} }

func (*noTracer) drain() (*drained, error) {
	return &drained{agg: newAggregates(), counters: map[string]uint64{}}, nil
}
func (*noTracer) markNamed(uint64) error    { return nil }
func (*noTracer) setTarget(int, bool) error { return nil }
func (*noTracer) silence([]int) error       { return nil }
func (*noTracer) silenceAll() error         { return nil }

// run waits for flush: there is no ring buffer to read.
func (t *noTracer) run(func([]byte)) error {
	<-t.done
	return nil
}
func (t *noTracer) flush()                       { t.once.Do(func() { close(t.done) }) }
func (*noTracer) detach() error                  { return nil }
func (t *noTracer) close() error                 { t.flush(); return nil }
func (*noTracer) counterNames() []string         { return nil }
func (*noTracer) seed(openCall) (bool, error)    { return false, nil }
func (*noTracer) unseed(openCall) error          { return nil }
func (*noTracer) openTS(openCall) (uint64, bool) { return 0, false }
func (*noTracer) detachGo() error                { return nil }

func (*noTracer) attachGo(int, string, goAttach) error {
	return errors.New("no probes are attached")
}
