package collector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/symbolize"
)

// pollEvery is how often a session reads the kernel's maps: the
// granularity of Snapshot windows and of the progress figures.
const pollEvery = time.Second

// historyLen bounds the cumulative snapshots kept for windows: two minutes
// at one per second. A longer window starts at the oldest one kept (the
// recording's Meta.Start and Duration say what it covers).
const historyLen = 120

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

// Session is one live recording of a process: probes attached, data
// accumulating in the kernel, readable at any time as a recording of the
// whole run or of its last window. All methods are safe for concurrent
// use.
type Session struct {
	opts  Options
	cfg   tracerConfig
	tr    tracer
	res   *resolver
	sym   procSymbols
	clk   clock
	meta  recording.Meta
	procs *ProcSampler
	// gofetch fetches a Go target's runtime profiles (Options.PprofURL).
	gofetch *GoFetch
	// mem reads the target's memory (/proc/PID/mem), to copy the stacks
	// of calls in progress; nil when unreadable.
	mem     memReader
	memFile *os.File // closed by Stop
	// jvm names a Java target's compiled frames and takes its thread
	// dumps (jvm.go); nil for other targets.
	jvm *jvmTarget

	// inner is cancelled by Stop, ending every background goroutine.
	inner      context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	pollEvery  time.Duration
	readerDone chan struct{}

	pollMu  sync.Mutex // serializes drains so history stays ordered
	mu      sync.Mutex
	latest  *snapshot
	history []*snapshot
	log     eventLog
	bad     uint64 // malformed ring buffer records
	// seededOpen counts the waits and I/O calls found in progress when
	// the probes attached (info_open_at_attach).
	seededOpen uint64
	seen       map[int32]bool
	seenK      map[int32]bool
	seenL      map[uint64]bool
	endKind    int
	endAt      time.Duration
	runErr     error

	done     chan struct{}
	endOnce  sync.Once
	finished chan struct{} // closed once probes are detached and drained
	stopOnce sync.Once
	stopRec  *recording.Recording
	stopErr  error
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
	return o
}

// probeSet validates names and returns them as a set.
func probeSet(names []string) (map[string]bool, error) {
	set := map[string]bool{}
	for _, n := range names {
		known := false
		for _, p := range AllProbes {
			known = known || p == n
		}
		if !known {
			return nil, fmt.Errorf("unknown probe family %q (have %s)", n, strings.Join(AllProbes, ", "))
		}
		set[n] = true
	}
	if len(set) == 0 {
		return nil, errors.New("no probe family selected")
	}
	return set, nil
}

// Start attaches the probes to process o.PID and starts recording (with
// o.NoProbes, only /proc and Go profiles). The session ends when
// o.Duration has passed, the target exits or ctx is cancelled (Done is
// closed then, and the probes are detached at once); call Stop to obtain
// the recording and release everything.
func Start(ctx context.Context, o Options) (*Session, error) {
	o = o.withDefaults()
	probes := map[string]bool{}
	if !o.NoProbes {
		var err error
		if probes, err = probeSet(o.Probes); err != nil {
			return nil, err
		}
	}
	if o.OnCPUHz > MaxOnCPUHz {
		return nil, fmt.Errorf("on-CPU sampling at %d Hz: at most %d Hz", o.OnCPUHz, MaxOnCPUHz)
	}
	if o.PprofURL != "" {
		if _, err := pprofBase(o.PprofURL); err != nil {
			return nil, fmt.Errorf("pprof URL: %w", err)
		}
	}
	if err := checkTarget(o.ProcRoot, o.PID); err != nil {
		return nil, err
	}
	if o.PID == os.Getpid() {
		// Reading the ring buffer makes syscalls the probes would record.
		return nil, fmt.Errorf("pid %d is contend itself", o.PID)
	}
	s := newSession(o, tracerConfig{
		pid:            o.PID,
		probes:         probes,
		stackThreshold: o.StackThreshold,
		ioThreshold:    o.IOThreshold,
		onCPUHz:        o.OnCPUHz,
		ncpu:           max(onlineCPUs(), 1),
	})
	var (
		tr   tracer
		ksym kernelSymbols = rawKernel{}
		ps   *ProcSampler
		err  error
	)
	if o.NoProbes {
		// Without probes the timeline is the recording: no timeline, no
		// recording.
		if ps, err = NewProcSampler(o.ProcRoot, o.PID, o.ProcInterval); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return nil, procAccessError(procPath(o.ProcRoot, strconv.Itoa(o.PID), "task"), o.PID)
			}
			return nil, err
		}
		s.meta = s.baseMeta(s.noProbesWarnings())
		for k := range s.meta.Settings {
			// Only the sampling settings apply without probes.
			if k != "proc_interval" && k != "duration" {
				delete(s.meta.Settings, k)
			}
		}
		s.clk = clock{mono: monotonicNow(), wall: time.Now()}
		tr = newNoTracer()
	} else {
		if tr, ksym, err = s.attach(); err != nil {
			return nil, err
		}
	}
	s.meta.Start = s.clk.wall
	s.launch(ctx, tr, ksym)
	if s.jvm != nil {
		s.jvm.startDumps(o.JVMDumps, o.Duration)
	} else if o.JVMDumps > 0 {
		s.addWarning(fmt.Sprintf("no Java thread dumps were taken: pid %d is not a Java process (it maps no libjvm.so)", o.PID))
	}
	if ps == nil {
		if ps, err = NewProcSampler(o.ProcRoot, o.PID, o.ProcInterval); err != nil {
			s.addWarning(fmt.Sprintf("no thread timeline: %v", err))
		}
	}
	if ps != nil {
		s.procs = ps
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			// The sampler ends by itself when the target exits; the
			// exit watcher ends the session.
			ps.Run(s.inner, s.clk.wall)
		}()
	}
	if o.PprofURL != "" {
		g, err := StartGoFetch(s.inner, GoFetchOptions{URL: o.PprofURL, Duration: o.Duration})
		if err != nil {
			s.end(endError, nil)
			s.Stop()
			return nil, fmt.Errorf("--pprof: %w", err)
		}
		s.gofetch = g
	}
	return s, nil
}

// attach checks the privileges and the kernel, opens the symbolizers,
// sets the recording's clock and loads and attaches the probes.
func (s *Session) attach() (tracer, kernelSymbols, error) {
	o := s.opts
	if err := checkPrivileges(); err != nil {
		return nil, nil, err
	}
	raisePriority()
	release, err := KernelRelease()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrKernel, err)
	}
	if err := checkKernel("", release); err != nil {
		return nil, nil, err
	}
	if err := checkTargetAccess(o.ProcRoot, o.PID); err != nil {
		return nil, nil, err
	}
	var warnings []string
	var ksym kernelSymbols = rawKernel{}
	if k, err := symbolize.OpenKernel(o.ProcRoot); err == nil && k != nil {
		ksym = k
	} else if s.cfg.probes[ProbeOnCPU] {
		warnings = append(warnings, fmt.Sprintf("kernel frames are not symbolized: %v", err))
	}
	s.sym = rawSymbols{}
	if p, err := symbolize.Open(o.PID, symbolize.Options{ProcRoot: o.ProcRoot}); err == nil && p != nil {
		s.sym = p
	} else if errors.Is(err, symbolize.ErrNoProcess) {
		return nil, nil, fmt.Errorf("pid %d: %w", o.PID, ErrNoProcess)
	} else {
		warnings = append(warnings, fmt.Sprintf("user frames are not symbolized and stack windows not unwound: %v", err))
	}
	s.meta = s.baseMeta(warnings)
	s.jvm = startJVM(o.ProcRoot, o.PID, s.sym)

	tr, err := newTracer(s.cfg)
	if err != nil {
		s.sym.Close()
		return nil, nil, err
	}
	// The recording starts once every probe is attached: attaching takes
	// a noticeable time on a busy machine, and the on-CPU probes attach
	// last.
	s.clk = clock{mono: monotonicNow(), wall: time.Now()}
	// Calls in progress at attach have no start entry (their sys_enter
	// came before); give them one, timed from the recording's start.
	s.seededOpen = uint64(seedOpen(tr, o.ProcRoot, o.PID, s.clk.mono))
	if f, err := os.Open(procPath(o.ProcRoot, strconv.Itoa(o.PID), "mem")); err == nil {
		s.mem, s.memFile = f, f
	}
	return tr, ksym, nil
}

// noProbesWarnings says, for Meta.Warnings, what a recording without
// probes holds and why it has no more.
func (s *Session) noProbesWarnings() []string {
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
	if _, err := os.Readlink(procPath(s.opts.ProcRoot, strconv.Itoa(s.opts.PID), "exe")); err != nil {
		out = append(out, fmt.Sprintf("the target's executable is unknown: %v (CAP_SYS_PTRACE reads it for a process of another user)", err))
	}
	return out
}

// newSession prepares a session; Start fills in the target and launches it.
func newSession(o Options, cfg tracerConfig) *Session {
	return &Session{
		opts:       o,
		cfg:        cfg,
		pollEvery:  pollEvery,
		sym:        rawSymbols{},
		done:       make(chan struct{}),
		finished:   make(chan struct{}),
		readerDone: make(chan struct{}),
		seen:       map[int32]bool{},
		seenK:      map[int32]bool{},
		seenL:      map[uint64]bool{},
	}
}

// launch starts recording through tr: the ring buffer reader, the map
// poller, the exit watcher, the context watcher and the duration timer.
func (s *Session) launch(ctx context.Context, tr tracer, ksym kernelSymbols) {
	s.tr = tr
	s.res = newResolver(s.sym, ksym, tr.stack, tr.markNamed)
	s.latest = newSnapshot()
	inner, cancel := context.WithCancel(context.Background())
	s.inner, s.cancel = inner, cancel
	go func() {
		defer close(s.readerDone)
		if err := tr.run(s.onRecord); err != nil {
			s.end(endError, err)
		}
	}()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.pollLoop(inner)
	}()
	go func() {
		defer s.wg.Done()
		watchExit(inner, s.opts.ProcRoot, s.opts.PID, func() { s.end(endExited, nil) })
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

// baseMeta describes the target and the settings.
func (s *Session) baseMeta(warnings []string) recording.Meta {
	o := s.opts
	t := readTarget(o.ProcRoot, o.PID)
	m := recording.Meta{
		Version:     recording.FormatVersion,
		Source:      recording.SourceLive,
		PID:         o.PID,
		Comm:        t.comm,
		Cmdline:     t.cmdline,
		Exe:         t.exe,
		Kernel:      release(),
		NumCPU:      s.cfg.ncpu,
		GoVersion:   t.goVersion,
		CPUsAllowed: t.cpusAllowed,
		Warnings:    warnings,
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
		},
	}
	for _, p := range AllProbes {
		if s.cfg.probes[p] {
			m.Probes = append(m.Probes, p)
		}
	}
	if sp, ok := s.sym.(*symbolize.Process); ok {
		if exe, id := sp.Exe(); id != "" {
			m.BuildID = id
			if m.Exe == "" {
				m.Exe = exe
			}
		}
	}
	if o.Duration > 0 {
		m.Settings["duration"] = o.Duration.String()
	}
	return m
}

func (s *Session) addWarning(w string) {
	s.mu.Lock()
	s.meta.Warnings = append(s.meta.Warnings, w)
	s.mu.Unlock()
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
		s.res.addWindow(h, data)
		return
	}
	e, err := decodeEvent(b)
	if err != nil {
		s.countBad()
		return
	}
	s.mu.Lock()
	s.log.add(e)
	s.mu.Unlock()
}

func (s *Session) countBad() {
	s.mu.Lock()
	s.bad++
	s.mu.Unlock()
}

// elapsed returns the time since the start of the recording.
func (s *Session) elapsed() time.Duration {
	return s.clk.since(monotonicNow())
}

func (s *Session) pollLoop(ctx context.Context) {
	t := time.NewTicker(s.pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-t.C:
			if _, err := s.poll(-1); err != nil {
				s.end(endError, err)
				return
			}
		}
	}
}

// poll drains the kernel maps into a new cumulative snapshot taken at
// offset at (negative: now), keeps it in the history and names what is
// new in it while the target is alive.
func (s *Session) poll(at time.Duration) (*snapshot, error) {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	snap := newSnapshot()
	snap.at = at
	if at < 0 {
		snap.at = s.elapsed()
	}
	if err := s.tr.drain(snap); err != nil {
		return nil, err
	}
	for k, v := range s.res.userCounters() {
		snap.counters[k] = v
	}
	s.mu.Lock()
	snap.counters["drop_event_log_full"] = s.log.dropped
	snap.counters["drop_record_malformed"] = s.bad
	snap.counters["info_open_at_attach"] = s.seededOpen
	s.latest = snap
	if n := len(s.history); n == 0 || snap.at-s.history[n-1].at >= s.pollEvery*9/10 {
		s.history = append(s.history, snap)
		if len(s.history) > historyLen {
			s.history = append(s.history[:0:0], s.history[len(s.history)-historyLen:]...)
		}
	}
	s.mu.Unlock()
	s.nameNew(snap)
	s.unwindOpen(snap)
	return snap, nil
}

// maxOpenUnwinds bounds the stacks of calls in progress copied and unwound
// per poll (each costs an 8 KiB read of the target's memory and an
// unwind, tens of microseconds): a process with thousands of threads
// parked in futex waits has them all named within a few polls, at a few
// percent of one CPU, paid by contend.
const maxOpenUnwinds = 1000

// unwindOpen copies and unwinds the stacks of the calls in progress in
// snap that have none yet: stacks are otherwise taken at a call's end. A
// copy is kept only if the thread was still in the same call after it was
// read (its start entry unchanged), so that it shows the call's frames.
func (s *Session) unwindOpen(snap *snapshot) {
	if s.mem == nil {
		return
	}
	open := make(map[evKey]bool, len(snap.open))
	n := 0
	for _, c := range snap.open {
		k := evKey{c.tid, c.ts}
		open[k] = true
		if c.sp == 0 || n >= maxOpenUnwinds || s.res.hasOpen(k) {
			continue
		}
		n++
		win := readStackWindow(s.mem, c.sp)
		if ts, ok := s.tr.openTS(s.opts.PID, c); !ok || ts != c.ts || len(win) == 0 {
			continue
		}
		s.res.addOpen(k, symbolize.Regs{IP: c.ip, SP: c.sp, BP: c.bp}, win)
	}
	s.res.keepOpen(open)
}

// nameNew symbolizes the stacks and lock addresses first seen in snap, so
// that they are named while the target's mappings are still readable.
func (s *Session) nameNew(snap *snapshot) {
	user := func(id int32) {
		if id >= 0 && !s.seen[id] {
			s.seen[id] = true
			s.res.userStack(id)
		}
	}
	for k := range snap.waits {
		user(k.StackID)
	}
	for k := range snap.wakes {
		user(k.StackID)
	}
	for k := range snap.offcpu {
		user(k.StackID)
	}
	for k := range snap.edges {
		user(k.StackID)
	}
	for k := range snap.io {
		user(k.StackID)
	}
	for k := range snap.oncpu {
		user(k.UStack)
		if k.KStack >= 0 && !s.seenK[k.KStack] {
			s.seenK[k.KStack] = true
			s.res.kernelStack(k.KStack)
		}
	}
	for addr := range snap.locks {
		if !s.seenL[addr] {
			s.seenL[addr] = true
			s.res.lockName(addr)
		}
	}
}

// end ends the session once: it records why, closes Done, detaches the
// probes, reads what the ring buffer still holds and drains the maps a
// last time.
func (s *Session) end(kind int, err error) {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.endKind = kind
		s.endAt = s.elapsed()
		s.runErr = err
		s.mu.Unlock()
		close(s.done)
		go s.finish()
	})
}

func (s *Session) finish() {
	defer close(s.finished)
	if err := s.tr.detach(); err != nil {
		s.setErr(err)
	}
	// Nothing is recorded after this: the final snapshot ends here.
	detached := s.elapsed()
	s.tr.flush()
	<-s.readerDone
	if _, err := s.poll(detached); err != nil {
		s.setErr(err)
	}
}

func (s *Session) setErr(err error) {
	s.mu.Lock()
	if s.runErr == nil {
		s.runErr = err
	}
	s.mu.Unlock()
}

// Done is closed when the recording ends by itself: the duration has
// passed, the target exited, the context was cancelled or an error
// stopped it. Stop still has to be called.
func (s *Session) Done() <-chan struct{} { return s.done }

// Stats returns the progress of the recording. Event and drop counts are
// as of the last poll (at most a second old).
func (s *Session) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Elapsed: s.elapsed(), TargetExited: s.endKind == endExited}
	if s.endKind != endNone {
		st.Elapsed = s.endAt
	}
	st.Events, st.Drops = recording.Meta{Counters: s.latest.counters}.CounterTotals()
	return st
}

// Snapshot returns a recording of the last window of the session (0: the
// whole session so far). Windows start at one of the snapshots taken every
// second, so a window is rounded to whole seconds; windows longer than the
// history kept (two minutes) start at its oldest snapshot. Meta.Start and
// Meta.Duration say what the recording covers.
func (s *Session) Snapshot(window time.Duration) *recording.Recording {
	var cur *snapshot
	select {
	case <-s.finished:
	default:
		if snap, err := s.poll(-1); err == nil {
			cur = snap
		}
	}
	s.mu.Lock()
	if cur == nil {
		cur = s.latest
	}
	var base *snapshot
	if window > 0 && window < cur.at {
		want := cur.at - window
		for _, h := range s.history {
			if h.at > want || h == cur {
				break
			}
			base = h
		}
		if base == nil && len(s.history) > 0 && s.history[0] != cur {
			base = s.history[0]
		}
	}
	s.mu.Unlock()
	var from time.Duration
	if base != nil {
		from = base.at
	}
	rec := s.build(cur.minus(base), from, cur.at)
	if s.gofetch != nil {
		s.gofetch.Live()
		applyGoWindow(rec, s.gofetch.Window(rec.Meta.Start, rec.Meta.Start.Add(rec.Meta.Duration)))
	}
	return rec
}

// applyGoWindow stores a window's Go profiles into rec, with a warning
// when the mutex and block deltas cover a span that differs from the
// window by more than a quarter (they are resolved to the live fetch
// period): the analyzer reads rates over the window's duration.
func applyGoWindow(rec *recording.Recording, gp *GoProfiles) {
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
		rec.Meta.Warnings = append(rec.Meta.Warnings, fmt.Sprintf("the Go mutex and block profiles cover %s, not the window's %s: they are fetched every %s", cover.Round(100*time.Millisecond), want.Round(100*time.Millisecond), goLiveEvery))
		return
	}
}

// Stop ends the recording if it is still running, detaches the probes
// and returns the recording of the whole session. It is idempotent: later
// calls return the same recording. The error reports a failure that cut
// the recording short (the recording is still returned, marked partial).
func (s *Session) Stop() (*recording.Recording, error) {
	s.stopOnce.Do(func() {
		s.end(endStopped, nil)
		<-s.finished
		if s.jvm != nil {
			s.jvm.finish(s.res)
		}
		var gp *GoProfiles
		if s.gofetch != nil {
			gp = s.gofetch.Stop()
		}
		s.cancel()
		s.wg.Wait()
		s.mu.Lock()
		latest := s.latest
		runErr := s.runErr
		s.mu.Unlock()
		s.stopRec = s.build(latest, 0, latest.at)
		if s.jvm != nil {
			s.jvm.apply(s.stopRec)
			if s.memFile != nil {
				s.jvm.copyCode(s.stopRec, s.sym, s.memFile)
			}
		}
		if gp != nil {
			gp.Apply(s.stopRec)
		}
		s.stopErr = runErr
		if s.procs != nil {
			s.procs.Close()
		}
		if s.memFile != nil {
			s.memFile.Close()
		}
		s.tr.close()
		s.res.mu.Lock()
		s.sym.Close()
		s.res.sym = rawSymbols{}
		s.res.mu.Unlock()
	})
	return s.stopRec, s.stopErr
}

// build assembles the recording of the interval [from, to) of the session
// from the interval's aggregates d.
func (s *Session) build(d *snapshot, from, to time.Duration) *recording.Recording {
	s.mu.Lock()
	meta := s.meta
	meta.Warnings = append([]string(nil), s.meta.Warnings...)
	raw := s.log.ev[:len(s.log.ev):len(s.log.ev)]
	kind, endAt, runErr := s.endKind, s.endAt, s.runErr
	s.mu.Unlock()

	meta.Start = s.clk.wallAt(from)
	meta.Duration = to - from
	meta.Counters = map[string]uint64{}
	for _, name := range s.tr.counterNames() {
		if name != "" {
			meta.Counters[name] = 0
		}
	}
	for k, v := range d.counters {
		meta.Counters[k] = v
	}
	if from == 0 {
		meta.Partial, meta.PartialReason = partial(kind, endAt, s.opts.Duration, runErr)
	}

	rec := &recording.Recording{Meta: meta}
	open := clipOpen(d.open, s.clk.at(from), s.clk.at(to))
	for v, p := range buildViews(viewInput{
		snap:    d,
		open:    open,
		stacks:  s.res,
		start:   meta.Start,
		dur:     meta.Duration,
		onCPUHz: s.opts.OnCPUHz,
		probes:  s.cfg.probes,
		exe:     filepath.Base(meta.Exe),
		words:   s.res.wordStacks(raw),
	}) {
		rec.SetProfile(v, p)
	}
	if s.cfg.probes[ProbeFutex] {
		rec.Locks = buildLocks(d, open, s.res)
	}
	rec.Events, rec.Stacks = buildEvents(raw, s.clk.at(from), s.clk.at(to), s.res)
	if rec.Stacks == nil {
		rec.Stacks = []recording.Stack{}
	}
	if s.procs != nil {
		rec.Threads = sliceTimeline(s.procs.Timeline(), from, to)
	}
	return rec
}

// partial says whether, and why, a whole-session recording holds less
// than was asked for.
func partial(kind int, endAt, want time.Duration, runErr error) (bool, string) {
	switch {
	case runErr != nil:
		return true, fmt.Sprintf("recording failed after %s: %v", endAt.Round(time.Millisecond), runErr)
	case kind == endExited && want > 0:
		return true, fmt.Sprintf("target exited after %s of %s", endAt.Round(time.Millisecond), want)
	case kind == endExited:
		return true, fmt.Sprintf("target exited after %s", endAt.Round(time.Millisecond))
	case (kind == endInterrupted || kind == endStopped) && want > 0 && endAt < want:
		return true, fmt.Sprintf("stopped after %s of %s", endAt.Round(time.Millisecond), want)
	}
	return false, ""
}

// Record records process o.PID until o.Duration has passed, the target
// exits or ctx is cancelled, calling progress (when not nil) a few times a
// second, and returns the recording. When the target exits the recording
// is returned marked partial; when it exited before any event was seen,
// the error wraps ErrProcessGone.
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
	nothing := st.Events == 0
	if o.NoProbes {
		nothing = rec.Threads == nil || rec.Threads.Samples == 0
	}
	if st.TargetExited && nothing {
		return rec, fmt.Errorf("pid %d exited before anything was recorded: %w", o.PID, ErrProcessGone)
	}
	return rec, nil
}
