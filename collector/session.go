package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contend-dev/contend/collector/goendpoint"
	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/symbolize"
)

// drainEvery is how often a session drains the kernel's maps. The maps
// hold one drain period of data, so the period bounds what they must hold:
// at 250 ms, a program starting 3,000 threads a second leaves well under
// the maps' 16,384 entries per period.
const drainEvery = 250 * time.Millisecond

// deltaEvery is the granularity of the windows a session keeps for
// Snapshot: one delta per second, summed from its drains.
const deltaEvery = time.Second

// maxHistory bounds Options.History: two minutes of per-second deltas. A
// longer window starts at the oldest delta kept (the recording's
// Meta.Start and Duration say what it covers).
const maxHistory = 2 * time.Minute

// historyBudget bounds the aggregate entries the per-second deltas hold
// together (a few tens of bytes each, under 10 MB): a program that creates
// threads by the thousand has many entries per second, and its window
// history is then shorter than Options.History.
const historyBudget = 100000

// foldAfter and cumBudget decide when the whole-session aggregates fold
// the entries of exited threads (see aggregates.fold): once that many
// threads have exited since the last fold, or once the aggregates hold that
// many entries. A program whose threads live as long as the program keeps
// its per-thread entries; one that starts thousands of threads a second
// has its exited threads folded at every drain, and its aggregates stay
// the size of its locks and stacks.
const (
	foldAfter = 512
	cumBudget = 200000
)

// foldedMemory bounds the exited threads remembered after their fold, so
// that entries of theirs drained later are folded on arrival: a few
// seconds of threads at 3,000 exits a second.
const foldedMemory = 1 << 16

// rescanEvery is how often a --comm or --cgroup session looks for new
// processes itself (the kernel adds forked children and exec'd processes
// at once; the scan catches processes renamed, or moved into the cgroup,
// without an exec), and a session checks that its processes still live.
const rescanEvery = time.Second

// progressEvery is how often Record reports progress.
const progressEvery = 250 * time.Millisecond

// Why a session ended.
const (
	endNone = iota
	endDuration
	endExited
	endInterrupted
	endStopped
	endError
)

// Session is one live recording of a target (one process or several): probes
// attached, data accumulating, readable at any time as a recording of the
// whole run or of its last window. All methods are safe for concurrent
// use.
type Session struct {
	// Set by Start and not changed after: read without a lock.
	opts   Options
	target Target
	cfg    tracerConfig
	tr     tracer
	res    *resolver
	ksym   kernelSymbols
	// objs shares the target processes' mapped objects and their tables
	// (a server's processes map the same files).
	objs *symbolize.ObjectCache
	clk  clock
	// gofetch fetches a Go target's runtime profiles (Options.PprofURL).
	gofetch *goendpoint.Fetcher
	// goSrc says where a Go target's runtime profiles come from.
	goSrc goSource
	// goUp is the state of the Go lock probes (used when goSrc has no
	// endpoint); it has its own lock.
	goUp goProbes

	// inner is cancelled by Stop, ending every background goroutine.
	inner      context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	drainEvery time.Duration
	deltaEvery time.Duration
	readerDone chan struct{}
	// windows carries the stack windows the reader took out of the ring
	// buffer to the goroutine that unwinds them (windowQueue).
	windows chan ringWindow
	done    chan struct{}
	// tasksReady says the ring buffer brought a thread or process
	// record; tasksMu runs handleTasks one call at a time, in the order
	// the records came (its lock order: after drains.mu, before run.mu).
	tasksReady chan struct{}
	tasksMu    sync.Mutex
	endOnce    sync.Once
	finished   chan struct{} // closed once probes are detached and drained
	stopOnce   sync.Once
	// stopErr is set once, inside stopOnce, and read after it.
	stopErr error

	// sleepObjs names the objects of sleeps and failed lock attempts: the
	// ring buffer reader's own (onRecord), no lock.
	sleepObjs objCache

	// Three parts with a lock each, taken in this order when nested:
	// drains, then agg, then run.
	drains drainState
	agg    aggState
	run    runState
}

// drainState serializes drains so the history stays ordered.
type drainState struct {
	mu sync.Mutex
	// openBefore are the calls in progress at the previous drain
	// (unwindOpen).
	openBefore map[evKey]bool
}

// aggState is what the drains add to and recordings are built from: the
// aggregates, counters and calls in progress. Held by a drain and while a
// recording is built from it.
type aggState struct {
	mu sync.Mutex
	// cum holds the aggregates of the whole session, exited threads
	// folded; cur the drains since the last delta; deltas the per-second
	// deltas kept for windows.
	cum    *aggregates
	cur    *delta
	deltas []*delta
	// counters holds the latest cumulative counters and open the calls in
	// progress at the latest drain, at (since the start).
	counters map[string]uint64
	open     []openCall
	at       time.Duration
	// gone holds the threads that exited since the last fold; folded
	// those folded lately (folded in arrival order in foldedFIFO).
	gone       map[threadKey]bool
	folded     map[threadKey]bool
	foldedFIFO []threadKey
	// closed is set by Close: no snapshot is built after it.
	closed bool
	// final is set while Stop builds the whole-session recording, the
	// last use of the event log.
	final bool
}

// runState is the rest of the session's changing state: the event log,
// the processes, the metadata and how the session ended.
type runState struct {
	mu   sync.Mutex
	meta recording.Meta
	log  eventLog
	bad  uint64 // malformed ring buffer records
	// windowsLost counts stack windows turned away by a full windows
	// queue.
	windowsLost uint64
	// seededOpen counts the waits and I/O calls found in progress when
	// the probes attached (info_open_at_attach).
	seededOpen uint64
	// procs holds every process that joined the recording, and tasks the
	// kernel's thread and process records not yet handled.
	procs   map[uint32]*targetProc
	tasks   []rawEvent
	ever    bool // a process joined at some point
	unnamed int  // processes beyond maxProcesses, symbolized raw
	endKind int
	endAt   time.Duration
	// endSilence is how long the recording's end took to take the
	// recorded processes out of the target set, its clock read on both
	// sides: the probes stopped somewhere in it (info_end_silence_ns).
	endSilence time.Duration
	runErr     error
	// stopRec is the whole session's recording, once Stop built it.
	stopRec *recording.Recording
}

// delta is the aggregates of one interval of the session and the
// cumulative counters at its start and end.
type delta struct {
	from, to       time.Duration
	agg            *aggregates
	base, counters map[string]uint64
}

// targetProc is one process of the recording.
type targetProc struct {
	pid   uint32
	info  targetInfo
	proc  recording.Process
	alive bool
	sym   procSymbols
	// mem reads the process's memory (/proc/PID/mem, memFile), to copy
	// the stacks of calls in progress; nil when unreadable.
	mem     memReader
	memFile *os.File
	procs   *ProcSampler
	cancel  context.CancelFunc
	// jvm names a Java process's compiled frames and takes its thread
	// dumps (jvm.go); nil for other processes.
	jvm *jvmTarget
}

// jvms returns the processes that are JVMs, by pid. Caller holds s.run.mu.
func (s *Session) jvms() []*targetProc {
	var out []*targetProc
	for _, p := range s.run.procs {
		if p.jvm != nil {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *targetProc) int { return int(a.pid) - int(b.pid) })
	return out
}

// withDefaults fills unset options with the package defaults.
func (o Options) withDefaults() Options {
	if o.StackThreshold <= 0 {
		o.StackThreshold = DefaultStackThreshold
	}
	if o.IOThreshold <= 0 {
		o.IOThreshold = DefaultIOThreshold
	}
	if o.OnCPUHz <= 0 {
		o.OnCPUHz = DefaultOnCPUHz
	}
	if o.ProcInterval <= 0 {
		o.ProcInterval = DefaultProcInterval
	}
	if o.Probes == nil {
		o.Probes = AllProbes
	}
	if o.PID != 0 && len(o.Target.PIDs) == 0 && o.Target.Comm == "" && o.Target.Cgroup == "" {
		o.Target = Target{PIDs: []int{o.PID}}
	}
	return o
}

// probeSet validates names and returns them as a set.
func probeSet(names []string) (map[string]bool, error) {
	set := map[string]bool{}
	for _, n := range names {
		if !slices.Contains(AllProbes, n) {
			return nil, fmt.Errorf("unknown probe family %q (have %s)", n, strings.Join(AllProbes, ", "))
		}
		set[n] = true
	}
	if len(set) == 0 {
		return nil, errors.New("no probe family selected")
	}
	return set, nil
}

// Start attaches the probes to the target of o and starts recording (with
// o.NoProbes, only /proc and Go profiles). The session ends when
// o.Duration has passed, every process of a -p target has exited or ctx
// is cancelled (Done is closed then, and the probes are detached at once);
// call Stop to obtain the recording and release everything. A process of
// o.Target.PIDs that does not exist gives an error naming it (wrapping
// ErrNoProcess), with nothing attached.
func Start(ctx context.Context, o Options) (*Session, error) {
	o = o.withDefaults()
	probes, err := o.check()
	if err != nil {
		return nil, err
	}
	if o.Jcmd, err = FindJcmd(o.Jcmd); err != nil {
		return nil, err
	}
	pids, err := o.Target.Resolve(o.ProcRoot)
	if err != nil {
		return nil, err
	}
	for _, p := range pids {
		if p == os.Getpid() && !o.Target.Follows() {
			// Reading the ring buffer makes syscalls the probes would record.
			return nil, fmt.Errorf("pid %d is contend itself", p)
		}
	}
	s := newSession(o, tracerConfig{
		probes:         probes,
		stackThreshold: o.StackThreshold,
		ioThreshold:    o.IOThreshold,
		onCPUHz:        o.OnCPUHz,
		ncpu:           max(onlineCPUs(), 1),
		mode:           o.Target.mode(),
		comm:           o.Target.Comm,
	})
	var tr tracer
	if o.NoProbes {
		tr, err = s.startWithoutProbes(pids)
	} else {
		tr, err = s.attach(pids)
	}
	if err != nil {
		return nil, err
	}
	s.run.meta.Start = s.clk.wall
	s.launch(ctx, tr, s.ksym)
	for _, p := range pids {
		if err := s.join(uint32(p), 0); err != nil && !o.Target.Follows() {
			s.end(endError, nil)
			s.Stop()
			return nil, err
		}
	}
	s.goSrc = s.findGoSource(ctx, pids)
	s.startGoProbes()
	if err := s.startGoFetch(); err != nil {
		s.end(endError, nil)
		s.Stop()
		return nil, err
	}
	return s, nil
}

// check validates o (filled with its defaults) and returns its probe
// families as a set (none with NoProbes).
func (o Options) check() (map[string]bool, error) {
	if err := o.Target.Validate(); err != nil {
		return nil, err
	}
	if o.OnCPUHz > MaxOnCPUHz {
		return nil, fmt.Errorf("on-CPU sampling at %d Hz: at most %d Hz", o.OnCPUHz, MaxOnCPUHz)
	}
	if o.PprofURL != "" {
		if _, err := goendpoint.BaseURL(o.PprofURL); err != nil {
			return nil, fmt.Errorf("pprof URL: %w", err)
		}
	}
	if o.NoProbes {
		return map[string]bool{}, nil
	}
	return probeSet(o.Probes)
}

// startWithoutProbes prepares a session of /proc and Go profiles only
// (Options.NoProbes): the processes' task directories must be readable.
func (s *Session) startWithoutProbes(pids []int) (tracer, error) {
	for _, p := range pids {
		if _, err := os.ReadDir(procPath(s.opts.ProcRoot, strconv.Itoa(p), "task")); errors.Is(err, fs.ErrPermission) {
			return nil, procAccessError(procPath(s.opts.ProcRoot, strconv.Itoa(p), "task"), p)
		}
	}
	s.run.meta = s.baseMeta(pids, s.noProbesWarnings(pids))
	for k := range s.run.meta.Settings {
		// Only the sampling settings apply without probes.
		if k != "proc_interval" && k != "duration" {
			delete(s.run.meta.Settings, k)
		}
	}
	s.clk = clock{mono: monotonicNow(), wall: time.Now()}
	s.ksym = rawKernel{}
	return newNoTracer(), nil
}

// startGoFetch starts fetching the Go target's runtime profiles from its
// endpoint, if it has one, over what is left of the recording.
func (s *Session) startGoFetch() error {
	if s.goSrc.endpoint == "" {
		return nil
	}
	dur := s.opts.Duration
	if dur > 0 && s.goSrc.discovered {
		// Probing took part of the recording: fetch over what is
		// left of it, at least the endpoint's one-second unit.
		dur = max(dur-s.elapsed(), time.Second)
	}
	g, err := goendpoint.Start(s.inner, goendpoint.Options{URL: s.goSrc.endpoint, Duration: dur, Command: s.opts.GoFetchCommand})
	if err != nil {
		return fmt.Errorf("--pprof: %w", err)
	}
	s.gofetch = g
	return nil
}

// goSource says where a Go target's runtime profiles come from.
type goSource struct {
	// endpoint is the pprof URL fetched from, "" for none.
	endpoint string
	// discovered is set when endpoint was found among the target's
	// listening sockets.
	discovered bool
	// why says in a few words why there is no endpoint.
	why string
}

// findGoSource returns the pprof endpoint to fetch from: --pprof, else,
// for a Go target with Options.DiscoverPprof, one its first process
// serves; what it found is noted in the warnings and through OnNote.
func (s *Session) findGoSource(ctx context.Context, pids []int) goSource {
	o := s.opts
	switch {
	case o.PprofURL != "":
		return goSource{endpoint: o.PprofURL}
	case s.run.meta.GoVersion == "" || len(pids) == 0:
		return goSource{}
	case !o.DiscoverPprof:
		return goSource{why: "no --pprof was given"}
	}
	d := goendpoint.Discover(ctx, o.ProcRoot, pids[0], goendpoint.IndexProbe(o.GoFetchCommand))
	s.addWarning(d.Note())
	if o.OnNote != nil {
		o.OnNote(d.Note())
	}
	return goSource{endpoint: d.URL, discovered: d.URL != "", why: d.Short}
}

// goData says, for a Go target, where rec's Go runtime data came from and
// which kinds it holds, with why each absent one is; nil for other
// targets.
func (s *Session) goData(rec *recording.Recording) *recording.GoData {
	if rec.Meta.GoVersion == "" {
		return nil
	}
	var failed map[string]string
	if s.gofetch != nil {
		failed = s.gofetch.Failures()
	}
	gd := goDataOf(rec, s.goSrc, failed)
	gd.Uprobes = s.goUp.uprobes()
	return gd
}

// goDataOf says which kinds of Go runtime data rec holds, from source src;
// failed says why fetches of a kind failed.
func goDataOf(rec *recording.Recording, src goSource, failed map[string]string) *recording.GoData {
	views := map[string]recording.View{
		recording.GoKindMutex: recording.ViewGoMutex,
		recording.GoKindBlock: recording.ViewGoBlock,
		recording.GoKindCPU:   recording.ViewGoCPU,
	}
	gd := &recording.GoData{Discovered: src.discovered}
	if src.endpoint != "" {
		if base, err := goendpoint.BaseURL(src.endpoint); err == nil {
			gd.Endpoint = base
		}
	}
	for _, k := range recording.GoKinds {
		have := len(rec.Goroutines) > 0
		if v, ok := views[k]; ok {
			have = rec.Profile(v) != nil
		}
		e := recording.GoDataKind{Kind: k, Have: have}
		switch {
		case have:
		case src.endpoint == "":
			e.Why = "no pprof endpoint: " + src.why
		case failed[k] != "":
			e.Why = "the fetch from " + gd.Endpoint + " failed: " + failed[k]
		default:
			e.Why = "not fetched from " + gd.Endpoint + " before the recording ended"
		}
		gd.Kinds = append(gd.Kinds, e)
	}
	return gd
}

// attach checks the privileges and the kernel, opens the kernel's symbols,
// sets the recording's clock and loads and attaches the probes, with an
// empty target set: join adds the processes.
func (s *Session) attach(pids []int) (tracer, error) {
	o := s.opts
	if err := checkPrivileges(); err != nil {
		return nil, err
	}
	raisePriority()
	release, err := KernelRelease()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKernel, err)
	}
	if err := checkKernel("", release); err != nil {
		return nil, err
	}
	if err := checkTargetsAccess(o.ProcRoot, pids, s.target.Follows()); err != nil {
		return nil, err
	}
	var warnings []string
	s.ksym = rawKernel{}
	if k, err := symbolize.OpenKernel(o.ProcRoot); err == nil && k != nil {
		s.ksym = k
	} else if s.cfg.probes[ProbeOnCPU] {
		warnings = append(warnings, fmt.Sprintf("kernel frames are not symbolized: %v", err))
	}
	s.run.meta = s.baseMeta(pids, warnings)
	if s.target.mode() == targetModeCgroup {
		fd, err := s.target.openCgroup()
		if err != nil {
			return nil, err
		}
		defer closeFD(fd)
		s.cfg.cgroupFD = fd
	}
	tr, err := newTracer(s.cfg)
	if err != nil {
		return nil, err
	}
	if n, ok := tr.(interface{ kernelNotes() []string }); ok {
		s.run.meta.Warnings = append(s.run.meta.Warnings, n.kernelNotes()...)
	}
	// The processes named are in the target set before the clock starts:
	// join reads their /proc entries and symbols before it adds them,
	// which takes hundreds of milliseconds on a loaded machine, and what
	// they did meanwhile fell inside the recording's window unseen (4-15 %
	// of the switch-ins of TestOffCPURunqMatchesFtrace beside four CPU
	// hogs). join adds them again, and takes out one that has gone.
	for _, p := range pids {
		if err := tr.setTarget(p, true); err != nil {
			tr.detach()
			return nil, err
		}
	}
	// The recording starts once every probe is attached: attaching takes
	// a noticeable time on a busy machine, and the on-CPU probes attach
	// last.
	s.clk = clock{mono: monotonicNow(), wall: time.Now()}
	return tr, nil
}

// noProbesWarnings says, for Meta.Warnings, what a recording without
// probes holds and why it has no more.
func (s *Session) noProbesWarnings(pids []int) []string {
	why := "asked for"
	var pe *PermissionError
	if errors.As(checkPrivileges(), &pe) {
		why = "missing " + strings.Join(pe.Missing, " and ")
	}
	what := "the /proc thread timeline"
	if s.opts.PprofURL != "" {
		what += " and the Go runtime profiles"
	}
	out := []string{fmt.Sprintf("no eBPF probes (%s): recorded %s only, without the futex, scheduler, on-CPU and I/O views", why, what)}
	for _, p := range pids {
		if _, err := os.Readlink(procPath(s.opts.ProcRoot, strconv.Itoa(p), "exe")); err != nil {
			out = append(out, fmt.Sprintf("the executable of pid %d is unknown: %v (CAP_SYS_PTRACE reads it for a process of another user)", p, err))
		}
	}
	return out
}

// newSession prepares a session; Start fills in the target and launches it.
func newSession(o Options, cfg tracerConfig) *Session {
	return &Session{
		opts:       o,
		target:     o.Target,
		cfg:        cfg,
		objs:       symbolize.NewObjectCache(),
		drainEvery: drainEvery,
		deltaEvery: deltaEvery,
		done:       make(chan struct{}),
		finished:   make(chan struct{}),
		readerDone: make(chan struct{}),
		windows:    make(chan ringWindow, windowQueue),
		sleepObjs:  objCache{paths: fdPaths{root: o.ProcRoot}},
		ksym:       rawKernel{},
		agg: aggState{
			cum:      newAggregates(),
			counters: map[string]uint64{},
			gone:     map[threadKey]bool{},
			folded:   map[threadKey]bool{},
		},
		run: runState{
			log:   eventLog{max: o.MaxEvents},
			procs: map[uint32]*targetProc{},
		},
	}
}

// launch starts recording through tr: the ring buffer reader, the map
// poller, the context watcher and the duration timer.
func (s *Session) launch(ctx context.Context, tr tracer, ksym kernelSymbols) {
	s.tr = tr
	s.res = newResolver(s.opts.ProcRoot, ksym, tr.markNamed)
	s.agg.cur = &delta{agg: newAggregates()}
	inner, cancel := context.WithCancel(context.Background())
	s.inner, s.cancel = inner, cancel
	s.tasksReady = make(chan struct{}, 1)
	unwound := make(chan struct{})
	go func() {
		defer close(unwound)
		for w := range s.windows {
			s.res.addWindow(w.h, w.data)
		}
	}()
	go func() {
		defer close(s.readerDone)
		err := tr.run(s.onRecord)
		close(s.windows)
		<-unwound
		if err != nil {
			s.end(endError, err)
		}
	}()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.pollLoop(inner)
	}()
	// Processes join as soon as the kernel says so, not at the next
	// drain (drainEvery): one that lives tens of milliseconds (a command
	// run by a shell loop) has exited by then, and its maps with it.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-inner.Done():
				return
			case <-s.tasksReady:
				s.handleTasks()
			}
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.end(endInterrupted, nil)
		case <-s.done:
		}
	}()
	if s.opts.Duration > 0 {
		// The recording started before the probes were loaded (its
		// clock origin), so its duration counts from there.
		t := time.AfterFunc(s.opts.Duration-s.elapsed(), func() { s.end(endDuration, nil) })
		go func() {
			<-s.done
			t.Stop()
		}()
	}
}

// baseMeta describes the target (its first process) and the settings.
func (s *Session) baseMeta(pids []int, warnings []string) recording.Meta {
	o := s.opts
	m := recording.Meta{
		Version:  recording.FormatVersion,
		Source:   recording.SourceLive,
		Kernel:   release(),
		NumCPU:   s.cfg.ncpu,
		Warnings: warnings,
		Target:   s.target.Recording(),
		Settings: map[string]string{
			"stack_threshold":        o.StackThreshold.String(),
			"io_threshold":           o.IOThreshold.String(),
			"oncpu_hz":               strconv.Itoa(o.OnCPUHz),
			"proc_interval":          o.ProcInterval.String(),
			"runq_event_threshold":   runqEventThreshold.String(),
			"dsleep_event_threshold": dsleepEventThreshold.String(),
			"event_rate":             strconv.Itoa(eventRate),
			"window_rate":            strconv.Itoa(windowRate),
			"window_bytes":           strconv.Itoa(windowMax),
			"drain_every":            drainEvery.String(),
		},
	}
	if len(pids) > 0 {
		t := readTarget(o.ProcRoot, pids[0])
		m.PID, m.Comm, m.Cmdline, m.Exe, m.GoVersion = pids[0], t.comm, t.cmdline, t.exe, t.goVersion
		m.CPUsAllowed = t.cpusAllowed
	}
	for _, p := range AllProbes {
		if s.cfg.probes[p] {
			m.Probes = append(m.Probes, p)
		}
	}
	if o.Duration > 0 {
		m.Settings["duration"] = o.Duration.String()
	}
	return m
}

func (s *Session) addWarning(w string) {
	s.run.mu.Lock()
	s.run.meta.Warnings = append(s.run.meta.Warnings, w)
	s.run.mu.Unlock()
}

// join adds process pid to the recording at offset at: the target set,
// its symbols, its calls in progress, its /proc sampler. A process that
// has gone gives an error wrapping ErrNoProcess.
func (s *Session) join(pid uint32, at time.Duration) error {
	s.run.mu.Lock()
	if p := s.run.procs[pid]; p != nil && p.alive {
		s.run.mu.Unlock()
		return nil
	}
	s.run.mu.Unlock()
	o := s.opts
	if err := checkTarget(o.ProcRoot, int(pid)); err != nil {
		s.tr.setTarget(int(pid), false)
		return err
	}
	p := &targetProc{pid: pid, alive: true, info: readTarget(o.ProcRoot, int(pid))}
	p.proc = recording.Process{PID: int(pid), Comm: p.info.comm, Cmdline: p.info.cmdline, Exe: p.info.exe, GoVersion: p.info.goVersion, Joined: at}
	if err := s.tr.setTarget(int(pid), true); err != nil {
		return err
	}
	// The thread timeline starts first (see startTimeline).
	if err := s.startTimeline(p); err != nil {
		return err
	}
	p.sym = rawSymbols{}
	if !o.NoProbes {
		if err := s.attachProcess(p, at); err != nil {
			return err
		}
	}
	s.run.mu.Lock()
	if old := s.run.procs[pid]; old != nil && old.procs != nil {
		// The same pid joined again (it left by exec and came back):
		// keep its earlier timeline.
		old.cancel()
	}
	s.run.procs[pid] = p
	s.run.ever = true
	s.run.mu.Unlock()
	if p.jvm != nil {
		// The session's duration runs from its start, before this
		// process was attached and its perf map taken (jcmd takes a
		// fraction of a second): the dumps are spread over what is left
		// of it, so that none falls due after the end.
		left := o.Duration
		if left > 0 {
			left = max(left-s.elapsed(), time.Millisecond)
		}
		p.jvm.startDumps(o.JVMDumps, left)
	}
	return nil
}

// startTimeline starts sampling p's threads from /proc, first of what a
// joining process gets: the rest (symbols, a JVM's perf map through jcmd)
// takes seconds on a loaded machine, and the threads are sampled
// meanwhile. A process already gone gives ErrNoProcess.
func (s *Session) startTimeline(p *targetProc) error {
	ps, err := NewProcSampler(s.opts.ProcRoot, int(p.pid), s.opts.ProcInterval)
	switch {
	case err == nil:
		ctx, cancel := context.WithCancel(s.inner)
		p.procs, p.cancel = ps, cancel
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			// The sampler ends by itself when the process exits; any
			// other end leaves the process's timeline short, and says so.
			if err := ps.Run(ctx, s.clk.wall); err != nil {
				s.addWarning(fmt.Sprintf("pid %d: thread timeline stopped early: %v", p.pid, err))
			}
		}()
	case errors.Is(err, ErrNoProcess):
		s.tr.setTarget(int(p.pid), false)
		return fmt.Errorf("pid %d: %w", p.pid, ErrNoProcess)
	default:
		s.addWarning(fmt.Sprintf("pid %d: no thread timeline: %v", p.pid, err))
	}
	return nil
}

// attachProcess opens p's symbols, names a JVM or Go runtime in it, and
// gives the calls it has in progress a start entry at offset at. A
// process already gone gives ErrNoProcess.
func (s *Session) attachProcess(p *targetProc, at time.Duration) error {
	sym, err := symbolize.Open(int(p.pid), symbolize.Options{ProcRoot: s.opts.ProcRoot, Objects: s.objs})
	switch {
	case err == nil:
		p.sym = sym
		if sym.Loading() {
			s.awaitLoader(sym)
		}
		if exe, id := sym.Exe(); id != "" {
			p.proc.BuildID = id
			if p.proc.Exe == "" {
				p.proc.Exe = exe
			}
		}
	case errors.Is(err, symbolize.ErrNoProcess):
		s.tr.setTarget(int(p.pid), false)
		if p.cancel != nil {
			p.cancel()
		}
		return fmt.Errorf("pid %d: %w", p.pid, ErrNoProcess)
	default:
		s.addWarning(fmt.Sprintf("pid %d: user frames are not symbolized and stack windows not unwound: %v", p.pid, err))
	}
	if !s.res.addProcess(p.pid, p.sym) {
		p.sym.Close()
		p.sym = rawSymbols{}
		s.run.mu.Lock()
		s.run.unnamed++
		s.run.mu.Unlock()
	}
	p.jvm = startJVM(s.opts.ProcRoot, int(p.pid), p.sym, s.opts.Jcmd)
	if p.info.goVersion != "" {
		// A Go process joining after the start (--comm, --cgroup):
		// measured as the first ones are, when they are.
		s.attachGoProbes(p.pid)
	}
	// Calls in progress at attach have no start entry (they left the CPU
	// before); give them one, timed from now.
	n := seedOpen(s.tr, s.opts.ProcRoot, int(p.pid), s.clk.at(at))
	if f, err := os.Open(procPath(s.opts.ProcRoot, strconv.Itoa(int(p.pid)), "mem")); err == nil {
		p.mem, p.memFile = f, f
	}
	s.run.mu.Lock()
	s.run.seededOpen += uint64(n)
	s.run.mu.Unlock()
	return nil
}

// A process joined at its exec (--comm, --cgroup, a child) has its maps
// read before its dynamic loader maps the libraries, and a short-lived
// one (flock(1) under a shell loop lives tens of milliseconds) may exit
// before anything reads them again: its frames in libc would stay bare
// addresses, its stack windows could not be unwound, and a convoy of
// such processes would have no program point. loaderWait bounds how long
// its maps are re-read every loaderPoll until the loader is done: ld.so
// maps a program's libraries within a millisecond or two of exec, and on
// a loaded machine within tens; a process still loading after that is
// left to the resolver's own re-read on an unknown address.
const (
	loaderWait = 100 * time.Millisecond
	loaderPoll = time.Millisecond
	// loaderSettle is how long after the first library appears the maps
	// are read once more, for the libraries ld.so maps after it.
	loaderSettle = 5 * time.Millisecond
)

// awaitLoader re-reads sym's maps until its dynamic loader has mapped the
// libraries (see loaderWait), the process exits or the session ends.
func (s *Session) awaitLoader(sym *symbolize.Process) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		sleep := func(d time.Duration) bool {
			select {
			case <-s.inner.Done():
				return false
			case <-time.After(d):
				return true
			}
		}
		for deadline := time.Now().Add(loaderWait); time.Now().Before(deadline); {
			if !sleep(loaderPoll) || sym.Refresh() != nil {
				return // the session ended, or the process is gone
			}
			if !sym.Loading() {
				if sleep(loaderSettle) {
					sym.Refresh()
				}
				return
			}
		}
	}()
}

// leave takes process pid out of the recording at offset at: it exited,
// or exec'd out of the target's name or cgroup.
func (s *Session) leave(pid uint32, at time.Duration, exited bool) {
	s.run.mu.Lock()
	p := s.run.procs[pid]
	if p == nil || !p.alive {
		s.run.mu.Unlock()
		return
	}
	p.alive = false
	p.proc.Left, p.proc.Exited = at, exited
	mem := p.memFile
	p.mem, p.memFile = nil, nil
	s.run.mu.Unlock()
	if !exited {
		s.tr.setTarget(int(pid), false)
		if p.cancel != nil {
			p.cancel()
		}
	}
	if mem != nil {
		mem.Close()
	}
	if !s.target.Follows() && s.aliveCount() == 0 {
		s.end(endExited, nil)
	}
}

// aliveCount returns the number of processes recorded now.
func (s *Session) aliveCount() int {
	s.run.mu.Lock()
	defer s.run.mu.Unlock()
	n := 0
	for _, p := range s.run.procs {
		if p.alive {
			n++
		}
	}
	return n
}

// windowQueue bounds the stack windows read out of the ring buffer and not
// yet unwound. The reader hands them on rather than unwinding them itself:
// unwinding waits for the symbolizer, which can be busy for a few hundred
// milliseconds loading a module's tables for a drain (glibc's debug file:
// 150-260 ms measured beside two CPU hogs), and a reader held that long
// lets the ring buffer fill and turn events away. windowRate is 500 a
// second, so 512 is a second of windows at the full rate, and at most
// windowMax (8 KiB) each, 4 MiB.
const windowQueue = 512

// ringWindow is one stack window on its way to be unwound.
type ringWindow struct {
	h    windowHdr
	data []byte
}

// onRecord handles one ring buffer record.
func (s *Session) onRecord(b []byte) {
	if len(b) == 0 {
		s.countBad()
		return
	}
	if b[0] == kindWindow {
		h, data, err := decodeWindow(b)
		if err != nil {
			s.countBad()
			return
		}
		select {
		case s.windows <- ringWindow{h, bytes.Clone(data)}:
		default:
			s.run.mu.Lock()
			s.run.windowsLost++
			s.run.mu.Unlock()
		}
		return
	}
	if b[0] == kindSleep || b[0] == kindTryFail {
		r, err := decodeSleep(b)
		if err != nil {
			s.countBad()
			return
		}
		si := sleepInfo{obj: s.sleepObjs.object(r), wakerPID: int(r.WakerPID), sched: s.sleepObjs.schedFrames(r, s.ksym)}
		s.run.mu.Lock()
		s.run.log.addObj(r.Ev, si)
		s.run.mu.Unlock()
		return
	}
	e, err := decodeEvent(b)
	if err != nil {
		s.countBad()
		return
	}
	s.run.mu.Lock()
	if e.Kind == kindTask {
		s.run.tasks = append(s.run.tasks, e)
	} else {
		s.run.log.add(e)
	}
	s.run.mu.Unlock()
	if e.Kind == kindTask && s.tasksReady != nil {
		select {
		case s.tasksReady <- struct{}{}:
		default: // a call is due already
		}
	}
}

func (s *Session) countBad() {
	s.run.mu.Lock()
	s.run.bad++
	s.run.mu.Unlock()
}

// elapsed returns the time since the start of the recording.
func (s *Session) elapsed() time.Duration {
	return s.clk.since(monotonicNow())
}

func (s *Session) pollLoop(ctx context.Context) {
	t := time.NewTicker(s.drainEvery)
	defer t.Stop()
	lastScan := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-t.C:
			if err := s.pollFor(-1, false); err != nil {
				s.end(endError, err)
				return
			}
			if time.Since(lastScan) >= rescanEvery {
				lastScan = time.Now()
				s.rescan()
				// Symbol tables no address needs any more give their
				// memory back (a recording's addresses are symbolized
				// once, within seconds of attaching; see also build).
				s.objs.TrimDebugInfo()
			}
		}
	}
}

// handleTasks acts on the kernel's thread and process records: exited
// threads are marked for folding, processes that joined or left the
// target set join or leave the recording.
func (s *Session) handleTasks() {
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	s.run.mu.Lock()
	tasks := s.run.tasks
	s.run.tasks = nil
	s.run.mu.Unlock()
	for _, e := range tasks {
		at := s.clk.since(e.TS)
		switch e.Op {
		case taskThreadExit:
			s.agg.mu.Lock()
			s.agg.gone[threadKey{e.PID, e.TID}] = true
			s.agg.mu.Unlock()
		case taskProcExit:
			s.leave(e.PID, at, true)
		case taskProcJoin:
			if err := s.join(e.PID, at); err != nil && !errors.Is(err, ErrNoProcess) {
				s.addWarning(fmt.Sprintf("pid %d joined but cannot be recorded: %v", e.PID, err))
			}
		case taskProcLeave:
			s.leave(e.PID, at, false)
		}
	}
}

// rescan looks for processes that match the target and are not recorded
// yet (--comm, --cgroup), and for recorded processes that have gone
// without the kernel saying so (a record lost to a full ring buffer).
func (s *Session) rescan() {
	s.run.mu.Lock()
	var alive []uint32
	for pid, p := range s.run.procs {
		if p.alive {
			alive = append(alive, pid)
		}
	}
	s.run.mu.Unlock()
	at := s.elapsed()
	for _, pid := range alive {
		if checkTarget(s.opts.ProcRoot, int(pid)) != nil {
			s.leave(pid, at, true)
		}
	}
	if !s.target.Follows() {
		return
	}
	pids, err := s.target.Resolve(s.opts.ProcRoot)
	if err != nil {
		return
	}
	for _, pid := range pids {
		s.run.mu.Lock()
		p := s.run.procs[uint32(pid)]
		s.run.mu.Unlock()
		if p == nil || !p.alive {
			s.join(uint32(pid), at)
		}
	}
}

// poll drains the kernel maps at offset at (negative: now): the drained
// aggregates go into the whole-session aggregates and the current delta;
// stacks, counters and calls in progress are updated, and what is new is
// named while the target is alive.
func (s *Session) poll(at time.Duration) error { return s.pollFor(at, true) }

// pollFor is poll; every says whether the stacks of all calls in progress
// are taken (for a recording about to be built), or only of those that
// were in progress at the previous drain already (see unwindOpen).
func (s *Session) pollFor(at time.Duration, every bool) error {
	s.drains.mu.Lock()
	defer s.drains.mu.Unlock()
	if at < 0 {
		at = s.elapsed()
	}
	d, err := s.tr.drain()
	if err != nil {
		return err
	}
	s.handleTasks()
	s.res.addStacks(d.stacks)
	for k, v := range s.res.userCounters() {
		d.counters[k] = v
	}

	s.run.mu.Lock()
	d.counters["drop_event_log_full"] = 0
	d.counters["sampled_event_log_evicted"] = s.run.log.evicted
	d.counters["drop_record_malformed"] = s.run.bad
	d.counters["drop_window_queue_full"] = s.run.windowsLost
	d.counters["info_open_at_attach"] = s.run.seededOpen
	d.counters["info_processes_unsymbolized"] = uint64(s.run.unnamed)
	s.run.mu.Unlock()

	s.agg.mu.Lock()
	s.agg.addDrain(d, at, s.deltaEvery, s.opts.History)
	s.agg.mu.Unlock()

	s.checkGoProbeCost(d.counters["ev_gosync"], at)
	s.nameNew(d)
	s.unwindOpen(d.open, every)
	return nil
}

// addDrain adds one drain's aggregates, counters and calls in progress,
// taken at offset at: into the whole session, folding exited threads
// past foldAfter or cumBudget, and into the current delta, which is kept
// once it spans deltaEvery (nearly: drains do not fall on the second).
// Caller holds a.mu.
func (a *aggState) addDrain(d *drained, at, deltaEvery, history time.Duration) {
	a.foldLate(d.agg)
	a.cum.add(d.agg)
	if len(a.gone) >= foldAfter || a.cum.entries() > cumBudget {
		a.cum.fold(a.gone)
		for k := range a.gone {
			a.remember(k)
		}
		a.gone = map[threadKey]bool{}
	}
	a.counters = d.counters
	a.open = d.open
	a.at = at
	a.cur.agg.add(d.agg)
	a.cur.to = at
	a.cur.counters = d.counters
	if at-a.cur.from >= deltaEvery*9/10 {
		a.deltas = append(a.deltas, a.cur)
		a.cur = &delta{from: at, agg: newAggregates(), base: d.counters}
		a.trimHistory(int(min(history, maxHistory) / deltaEvery))
	}
}

// foldLate folds into x the entries of threads folded already: their last
// data, drained after their exit. Caller holds a.mu.
func (a *aggState) foldLate(x *aggregates) {
	if len(a.folded) == 0 {
		return
	}
	late := map[threadKey]bool{}
	x.eachThread(func(pid, tid uint32) {
		if k := (threadKey{pid, tid}); a.folded[k] {
			late[k] = true
		}
	})
	x.foldAgain(late)
}

// remember notes a folded thread for foldLate, forgetting the oldest past
// foldedMemory. Caller holds a.mu.
func (a *aggState) remember(k threadKey) {
	if a.folded[k] {
		return
	}
	if len(a.foldedFIFO) >= foldedMemory {
		delete(a.folded, a.foldedFIFO[0])
		a.foldedFIFO = a.foldedFIFO[1:]
	}
	a.folded[k] = true
	a.foldedFIFO = append(a.foldedFIFO, k)
}

// trimHistory drops the oldest deltas past keep of them or past
// historyBudget entries together. Caller holds a.mu.
func (a *aggState) trimHistory(keep int) {
	total := 0
	for _, d := range a.deltas {
		total += d.agg.entries()
	}
	for len(a.deltas) > 0 && (len(a.deltas) > keep || total > historyBudget) {
		total -= a.deltas[0].agg.entries()
		a.deltas = a.deltas[1:]
	}
}

// maxOpenUnwinds bounds the stacks of calls in progress copied and unwound
// per drain (each costs an 8 KiB read of the target's memory and an
// unwind, tens of microseconds): a process with thousands of threads
// parked in futex waits has them all named within a few drains, at a few
// percent of one CPU, paid by contend.
const maxOpenUnwinds = 1000

// unwindOpen copies and unwinds the stacks of the calls in progress that
// have none yet: stacks are otherwise taken at a call's end. A copy is
// kept only if the thread was still in the same call after it was read
// (its start entry unchanged), so that it shows the call's frames.
//
// Unless every is set, only the calls that were in progress at the
// previous drain too are copied: most sleeps end within a drain (a
// CPython thread waiting for the GIL sleeps 5 ms at a time), and their
// stacks come with their end. Copying every sleep in progress at every
// drain would cost a third of the agent's reads of the target's memory
// and unwinds on 12 CPython threads, for stacks the next drain has
// anyway. A recording being built (a snapshot, the end) takes them all,
// so no call in it lacks its stack for this.
func (s *Session) unwindOpen(calls []openCall, every bool) {
	open := make(map[evKey]bool, len(calls))
	prev := s.drains.openBefore
	defer func() { s.drains.openBefore = open }()
	n := 0
	// One buffer serves every copy: the unwinder reads a window and
	// keeps none of it.
	var buf []byte
	for _, c := range calls {
		k := evKey{c.tid, c.ts}
		open[k] = true
		if c.sp == 0 || n >= maxOpenUnwinds || !every && !prev[k] || s.res.hasOpen(k) {
			continue
		}
		s.run.mu.Lock()
		var mem memReader
		if p := s.run.procs[c.pid]; p != nil && p.mem != nil {
			mem = p.mem
		}
		s.run.mu.Unlock()
		if mem == nil {
			continue
		}
		n++
		if buf == nil {
			buf = make([]byte, windowMax)
		}
		win := readStackWindow(mem, c.sp, buf)
		if ts, ok := s.tr.openTS(c); !ok || ts != c.ts || len(win) == 0 {
			continue
		}
		s.res.addOpen(c.pid, k, symbolize.Regs{IP: c.ip, SP: c.sp, BP: c.bp}, win)
	}
	s.res.keepOpen(open)
}

// nameNew symbolizes the stacks and lock addresses first seen in a drain,
// so that they are named while the target's mappings are still readable.
func (s *Session) nameNew(d *drained) {
	for _, st := range d.stacks {
		if st.pid != 0 {
			s.res.nameUserStack(st.hash)
		} else {
			s.res.kernelStack(st.hash)
		}
	}
	for k := range d.agg.locks {
		s.res.lock(k)
	}
	for k := range d.agg.wakes {
		s.res.lock(lockKey{Addr: k.Addr, PID: k.PID, Shared: k.Shared})
	}
}

// end ends the session once: it records why, closes Done, detaches the
// probes, reads what the ring buffer still holds and drains the maps a
// last time.
func (s *Session) end(kind int, err error) {
	s.endOnce.Do(func() {
		s.run.mu.Lock()
		s.run.endKind = kind
		s.run.endAt = s.elapsed()
		s.run.runErr = err
		s.run.mu.Unlock()
		close(s.done)
		go s.finish()
	})
}

func (s *Session) finish() {
	defer close(s.finished)
	// The processes recorded now first: a few words of the target set,
	// so that the recording ends, as its clock reads just after, where
	// their probes stopped. Emptying the whole set (65,536 words) takes
	// tens of milliseconds on a loaded machine, and a recording that ran
	// on past what its probes saw would undercount against ftrace
	// (TestOffCPURunqMatchesFtrace). The rest of the set (processes the
	// probes added since the last scan, --comm or --cgroup) is emptied
	// after; what they record meanwhile falls past the end.
	silencing := s.elapsed()
	if err := s.tr.silence(s.Targets()); err != nil {
		s.setErr(err)
	}
	// Nothing is recorded after this: the final drain ends here.
	detached := s.elapsed()
	s.run.mu.Lock()
	s.run.endSilence = detached - silencing
	s.run.mu.Unlock()
	if err := s.tr.silenceAll(); err != nil {
		s.setErr(err)
	}
	if err := s.tr.detach(); err != nil {
		s.setErr(err)
	}
	s.tr.flush()
	<-s.readerDone
	if err := s.poll(detached); err != nil {
		s.setErr(err)
	}
}

func (s *Session) setErr(err error) {
	s.run.mu.Lock()
	if s.run.runErr == nil {
		s.run.runErr = err
	}
	s.run.mu.Unlock()
}

// Done is closed when the recording ends by itself: the duration has
// passed, every process of a -p target exited, the context was cancelled
// or an error stopped it. Stop still has to be called.
func (s *Session) Done() <-chan struct{} { return s.done }

// Stats returns the progress of the recording. Event and drop counts are
// as of the last drain (at most drainEvery old).
func (s *Session) Stats() Stats {
	s.run.mu.Lock()
	defer s.run.mu.Unlock()
	st := Stats{Elapsed: s.elapsed(), TargetExited: s.run.endKind == endExited}
	if s.run.endKind != endNone {
		st.Elapsed = s.run.endAt
	}
	for _, p := range s.run.procs {
		if p.alive {
			st.Processes++
		}
	}
	s.agg.mu.Lock()
	st.Events, st.Drops = recording.Meta{Counters: s.agg.counters}.CounterTotals()
	s.agg.mu.Unlock()
	return st
}

// Targets returns the processes recorded now, for a caller that follows
// the target set (the agent, the progress line).
func (s *Session) Targets() []int {
	s.run.mu.Lock()
	defer s.run.mu.Unlock()
	var out []int
	for pid, p := range s.run.procs {
		if p.alive {
			out = append(out, int(pid))
		}
	}
	slices.Sort(out)
	return out
}

// Snapshot returns a recording of the last window of the session (0: the
// whole session so far). Windows are made of per-second deltas, so a
// window is rounded to whole seconds; windows longer than the history
// kept (Options.History) start at its oldest delta, or at the current
// second's start without history. Meta.Start and Meta.Duration say what
// the recording covers. After Close it returns nil.
func (s *Session) Snapshot(window time.Duration) *recording.Recording {
	return s.snapshot(window, true)
}

// SnapshotNoEvents is Snapshot without the event log (Events and Stacks
// empty), for a caller that keeps the events itself, each converted once,
// from EventsSince: converting the whole log at every snapshot is most of
// what a live view costs. Once Stop has run it returns Stop's recording,
// events included.
func (s *Session) SnapshotNoEvents(window time.Duration) *recording.Recording {
	return s.snapshot(window, false)
}

// EventBatch is a part of a session's event log, converted: what
// EventsSince returns.
type EventBatch struct {
	// Events are the events logged from the sequence number asked for up
	// to Next, in time order, timed from Origin; Stack indexes Stacks.
	Events []recording.Event
	// Stacks are the stacks of Events, deduplicated within the batch.
	Stacks []recording.Stack
	// Next is the sequence number after the batch's last event: the one
	// to ask for next (the next event the log will have, unless the batch
	// was cut at max).
	Next uint64
	// Oldest is the sequence number of the oldest event the log keeps:
	// the log is bounded, and the events before it were evicted.
	Oldest uint64
	// Origin is the wall-clock time events are timed from: a recording of
	// the session covers [Meta.Start.Sub(Origin), +Meta.Duration) in
	// their times.
	Origin time.Time
}

// EventsSince converts the events logged from sequence number seq on (0:
// every event the log keeps), at most limit of them when limit > 0, so
// that a live view converts each event once instead of the whole log at
// every refresh, and a piece at a time: converted, a whole log (120,000
// events) takes 12.5 MB at once.
func (s *Session) EventsSince(seq uint64, limit int) EventBatch {
	s.run.mu.Lock()
	defer s.run.mu.Unlock()
	b := EventBatch{Oldest: s.run.log.evicted, Next: s.run.log.evicted + uint64(s.run.log.n), Origin: s.clk.wall}
	if seq >= b.Next {
		return b
	}
	skip := int(max(seq, b.Oldest) - b.Oldest)
	n := s.run.log.n - skip
	if limit > 0 && n > limit {
		n = limit
		b.Next = b.Oldest + uint64(skip+n)
	}
	each := func(fn func(*rawEvent)) {
		left, todo := skip, n
		for _, c := range s.run.log.chunks {
			if left >= len(c) {
				left -= len(c)
				continue
			}
			for i := left; i < len(c) && todo > 0; i++ {
				fn(&c[i])
				todo--
			}
			left = 0
		}
	}
	b.Events, b.Stacks = buildEvents(each, n, s.clk.mono, math.MaxUint64, s.res, s.run.log.objs)
	return b
}

func (s *Session) snapshot(window time.Duration, events bool) *recording.Recording {
	select {
	case <-s.finished:
	default:
		s.poll(-1)
	}
	s.run.mu.Lock()
	stopped := s.run.stopRec
	s.run.mu.Unlock()
	if stopped != nil && (window <= 0 || window >= stopped.Meta.Duration) {
		// Stop built the whole session's recording from the aggregates
		// and the event log, and released them.
		return stopped
	}
	s.agg.mu.Lock()
	if s.agg.closed {
		s.agg.mu.Unlock()
		return nil
	}
	snap, from := s.agg.window(window)
	rec := s.build(snap, from, s.agg.at, events)
	s.agg.mu.Unlock()
	s.goWindow(rec)
	return rec
}

// window returns the aggregates of the last window (0 or past the start:
// the whole session) and the offset where they start: the deltas that
// cover it, summed, with counters taken from the window's start. Caller
// holds a.mu.
func (a *aggState) window(window time.Duration) (*snapshot, time.Duration) {
	snap := &snapshot{at: a.at, counters: maps.Clone(a.counters), open: a.open}
	if window <= 0 || window >= a.at {
		snap.aggregates = a.cum
		return snap, 0
	}
	want := a.at - window
	snap.aggregates = newAggregates()
	snap.add(a.cur.agg)
	from, base := a.cur.from, a.cur.base
	for i := len(a.deltas) - 1; i >= 0 && from > want; i-- {
		d := a.deltas[i]
		snap.add(d.agg)
		from, base = d.from, d.base
	}
	for k, v := range snap.counters {
		snap.counters[k] = sat(v, base[k])
	}
	return snap, from
}

// applyGoWindow stores a window's Go profiles into rec, with a warning
// when the mutex and block deltas cover a span that differs from the
// window by more than a quarter (they are resolved to the live fetch
// period): the analyzer reads rates over the window's duration.
func applyGoWindow(rec *recording.Recording, gp *goendpoint.Profiles) {
	gp.Apply(rec)
	for _, v := range []recording.View{recording.ViewGoMutex, recording.ViewGoBlock} {
		p := rec.Profile(v)
		if p == nil {
			continue
		}
		cover, want := time.Duration(p.DurationNanos), rec.Meta.Duration
		if want <= 0 || (cover >= want*3/4 && cover <= want*5/4) {
			return
		}
		rec.Meta.Warnings = append(rec.Meta.Warnings, fmt.Sprintf("the Go mutex and block profiles cover %s, not the window's %s: they are fetched every %s", cover.Round(100*time.Millisecond), want.Round(100*time.Millisecond), goendpoint.LiveEvery))
		return
	}
}

// Stop ends the recording if it is still running, detaches the probes
// and returns the recording of the whole session. It is idempotent: later
// calls return the same recording. The error reports a failure that cut
// the recording short (the recording is still returned, marked partial).
func (s *Session) Stop() (*recording.Recording, error) {
	s.stopOnce.Do(func() { s.stop(true) })
	return s.run.stopRec, s.stopErr
}

// Close ends the recording as Stop does but builds no recording of the
// whole session: for a caller that has shown what it wanted from
// snapshots (contend top), so that leaving costs what detaching the
// probes costs. Building the whole session (every aggregate and the
// event log, symbolized) takes seconds on a busy target, growing with the
// session. The error is Stop's; Stop after
// Close returns no recording, and snapshots after it none.
func (s *Session) Close() error {
	s.stopOnce.Do(func() { s.stop(false) })
	return s.stopErr
}

// stop ends the session and releases what it holds, building the whole
// session's recording into s.stopRec when whole is set.
func (s *Session) stop(whole bool) {
	s.end(endStopped, nil)
	<-s.finished
	s.run.mu.Lock()
	jvms := s.jvms()
	s.run.mu.Unlock()
	if whole {
		for _, p := range jvms {
			if w := p.jvm.finish(s.res); w >= time.Second && s.opts.OnNote != nil {
				s.opts.OnNote(fmt.Sprintf("waited %s after the end for the Java thread dumps still due (pid %d)", w.Round(100*time.Millisecond), p.pid))
			}
		}
	}
	var gp *goendpoint.Profiles
	if s.gofetch != nil {
		gp = s.gofetch.Stop()
	}
	s.cancel()
	s.wg.Wait()
	s.run.mu.Lock()
	runErr := s.run.runErr
	procs := slices.Collect(maps.Values(s.run.procs))
	s.run.mu.Unlock()
	s.stopErr = runErr
	if whole {
		s.agg.mu.Lock()
		snap := &snapshot{at: s.agg.at, aggregates: s.agg.cum, counters: maps.Clone(s.agg.counters), open: s.agg.open}
		s.agg.final = true
		rec := s.build(snap, 0, s.agg.at, true)
		s.agg.mu.Unlock()
		s.run.mu.Lock()
		s.run.stopRec = rec
		s.run.mu.Unlock()
		for _, p := range jvms {
			p.jvm.apply(s.run.stopRec)
			if p.memFile != nil {
				p.jvm.copyCode(s.run.stopRec, p.sym, p.memFile)
			}
		}
		if s.opts.JVMDumps > 0 && len(jvms) == 0 {
			s.run.stopRec.Meta.Warnings = append(s.run.stopRec.Meta.Warnings, fmt.Sprintf("no Java thread dumps were taken: no process of the target (%s) is a Java process (none maps libjvm.so)", s.target))
		}
		if gp != nil {
			gp.Apply(s.run.stopRec)
		}
		s.run.stopRec.Meta.GoData = s.goData(s.run.stopRec)
	} else {
		// A snapshot still being built (a view's load that its exit
		// did not wait for) finishes before what it reads goes, and
		// none starts after.
		s.agg.mu.Lock()
		s.agg.closed = true
		s.agg.mu.Unlock()
	}
	for _, p := range procs {
		if p.procs != nil {
			p.procs.Close()
		}
		if p.memFile != nil {
			p.memFile.Close()
		}
	}
	s.tr.close()
	s.res.close()
}

// build assembles the recording of the interval [from, to) of the session
// from the interval's snapshot d, with the event log's events of the
// interval unless events is false. Caller holds s.agg.mu.
func (s *Session) build(d *snapshot, from, to time.Duration, events bool) *recording.Recording {
	meta, timelines := s.buildMeta(d, from, to)
	rec := &recording.Recording{Meta: meta}
	open := clipOpen(d.open, s.clk.at(from), s.clk.at(to))
	s.run.mu.Lock()
	words := s.res.wordStacks(s.run.log.each)
	s.run.mu.Unlock()
	for v, p := range buildViews(viewInput{
		snap:    d,
		open:    open,
		stacks:  s.res,
		start:   meta.Start,
		dur:     meta.Duration,
		onCPUHz: s.opts.OnCPUHz,
		probes:  s.cfg.probes,
		exe:     filepath.Base(meta.Exe),
		words:   words,
		goSync:  s.goUp.active(),
		goCover: s.goUp.cover(from, to),
	}) {
		rec.SetProfile(v, p)
	}
	rec.NativeCode = s.res.nativeCode(rec.Profile(recording.ViewOnCPU))
	if s.cfg.probes[ProbeFutex] {
		rec.Locks = buildLocks(d, open, s.res)
	}
	if s.agg.final {
		// The whole-session aggregates are in the views and locks now:
		// let them go, and the views' builders with them, before the
		// event log is converted, the largest part of the recording. A
		// collection now keeps the two from adding up: allocating fast,
		// the runtime would otherwise let the heap run past its soft
		// limit (see cmd/contend's memoryLimit) rather than spend the
		// CPU.
		d.aggregates = nil
		s.agg.cum = newAggregates()
		runtime.GC()
	}
	if events {
		rec.Events, rec.Stacks = s.buildEventLog(from, to)
	}
	if rec.Stacks == nil {
		rec.Stacks = []recording.Stack{}
	}
	if len(timelines) > 0 {
		rec.Threads = sliceTimeline(mergeTimelines(timelines), from, to)
	}
	// This build's lookups are done: DWARF read for them goes before
	// the caller analyzes the recording (symbolize's dwarfQuickParses).
	s.objs.DropDebugInfo()
	return rec
}

// buildMeta returns the metadata of the interval [from, to) of the
// session, with snapshot d's counters, and the thread timelines of its
// processes.
func (s *Session) buildMeta(d *snapshot, from, to time.Duration) (recording.Meta, []*recording.Timeline) {
	s.run.mu.Lock()
	meta := s.run.meta
	meta.Warnings = append([]string(nil), s.run.meta.Warnings...)
	kind, endAt, runErr, endSilence := s.run.endKind, s.run.endAt, s.run.runErr, s.run.endSilence
	unnamed := s.run.unnamed
	type procView struct {
		proc recording.Process
		tl   *ProcSampler
	}
	var procs []procView
	for _, pid := range slices.Sorted(maps.Keys(s.run.procs)) {
		p := s.run.procs[pid]
		procs = append(procs, procView{p.proc, p.procs})
	}
	s.run.mu.Unlock()

	meta.Start = s.clk.wallAt(from)
	meta.Duration = to - from
	meta.Warnings = append(meta.Warnings, s.res.symWarnings()...)
	meta.Counters = map[string]uint64{}
	for _, name := range s.tr.counterNames() {
		if name != "" {
			meta.Counters[name] = 0
		}
	}
	for k, v := range d.counters {
		meta.Counters[k] = v
	}
	if endSilence > 0 {
		meta.Counters["info_end_silence_ns"] = uint64(endSilence)
	}
	var timelines []*recording.Timeline
	for _, p := range procs {
		proc := p.proc
		proc.Joined = max(proc.Joined-from, 0)
		if proc.Left > 0 {
			if proc.Left < from {
				continue
			}
			proc.Left -= from
		}
		meta.Processes = append(meta.Processes, proc)
		if p.tl != nil {
			if s.agg.final {
				// The samplers have stopped: their timelines need
				// no copy.
				timelines = append(timelines, p.tl.take())
			} else {
				timelines = append(timelines, p.tl.Timeline())
			}
		}
	}
	if meta.PID == 0 && len(meta.Processes) > 0 {
		// No process ran when the recording started (--comm, --cgroup):
		// the first to join stands for the target.
		p := meta.Processes[0]
		meta.PID, meta.Comm, meta.Cmdline, meta.Exe, meta.BuildID, meta.GoVersion = p.PID, p.Comm, p.Cmdline, p.Exe, p.BuildID, p.GoVersion
	}
	if from == 0 {
		meta.Partial, meta.PartialReason = s.partial(kind, endAt, runErr)
	}
	if unnamed > 0 {
		meta.Warnings = append(meta.Warnings, fmt.Sprintf("%d processes past the first %d are recorded with raw addresses, not symbolized", unnamed, maxProcesses))
	}
	if s.target.Follows() && len(meta.Processes) == 0 {
		meta.Warnings = append(meta.Warnings, fmt.Sprintf("no process of the target (%s) was running", s.target))
	}
	return meta, timelines
}

// buildEventLog converts the event log's events of [from, to), consuming
// the log when the whole session's recording is being built.
func (s *Session) buildEventLog(from, to time.Duration) ([]recording.Event, []recording.Stack) {
	// The log is read in place, under s.run.mu: a copy would double the
	// largest part of a recording's memory. The final recording consumes
	// it.
	s.run.mu.Lock()
	each := s.run.log.each
	if s.agg.final {
		each = s.run.log.consume
	}
	n := 0
	s.run.log.each(func(e *rawEvent) {
		if e.TS >= s.clk.at(from) && e.TS < s.clk.at(to) {
			n++
		}
	})
	evs, stacks := buildEvents(each, n, s.clk.at(from), s.clk.at(to), s.res, s.run.log.objs)
	s.run.mu.Unlock()
	return evs, stacks
}

// partial says whether, and why, a whole-session recording holds less
// than was asked for.
func (s *Session) partial(kind int, endAt time.Duration, runErr error) (bool, string) {
	want := s.opts.Duration
	what := "target exited"
	if len(s.target.PIDs) > 1 {
		what = "every process of the target exited"
	}
	switch {
	case runErr != nil:
		return true, fmt.Sprintf("recording failed after %s: %v", endAt.Round(time.Millisecond), runErr)
	case kind == endExited && want > 0:
		return true, fmt.Sprintf("%s after %s of %s", what, endAt.Round(time.Millisecond), want)
	case kind == endExited:
		return true, fmt.Sprintf("%s after %s", what, endAt.Round(time.Millisecond))
	case (kind == endInterrupted || kind == endStopped) && want > 0 && endAt < want:
		return true, fmt.Sprintf("stopped after %s of %s", endAt.Round(time.Millisecond), want)
	}
	return false, ""
}

// Record records the target of o until o.Duration has passed, every
// process of a -p target has exited or ctx is cancelled, calling progress
// (when not nil) a few times a second, and returns the recording. When the
// target exits the recording is returned marked partial; when it exited
// before any event was seen, the error wraps ErrProcessGone. A --comm or
// --cgroup target that matched no process during the whole recording
// gives an error wrapping ErrNoProcess (with the empty recording).
func Record(ctx context.Context, o Options, progress func(Stats)) (*recording.Recording, error) {
	s, err := Start(ctx, o)
	if err != nil {
		return nil, err
	}
	t := time.NewTicker(progressEvery)
	defer t.Stop()
wait:
	for {
		select {
		case <-s.Done():
			break wait
		case <-t.C:
			if progress != nil {
				progress(s.Stats())
			}
		}
	}
	rec, err := s.Stop()
	st := s.Stats()
	if progress != nil {
		progress(st)
	}
	if err != nil {
		return rec, err
	}
	if s.target.Follows() && !s.run.ever {
		return rec, fmt.Errorf("no process of the target (%s) ran during the %s recorded: %w", s.target, rec.Meta.Duration.Round(time.Millisecond), ErrNoProcess)
	}
	nothing := st.Events == 0
	if o.NoProbes {
		nothing = rec.Threads == nil || rec.Threads.Samples == 0
	}
	if st.TargetExited && nothing {
		return rec, fmt.Errorf("%s exited before anything was recorded: %w", s.target, ErrProcessGone)
	}
	return rec, nil
}
