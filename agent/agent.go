// Package agent records target processes continuously in rolling windows,
// analyzes each window, and feeds what it finds to the engines people
// already run: Prometheus metrics (Metrics) and, optionally, each window's
// profiles pushed to Pyroscope.
//
// The agent keeps one collector session for its target set and takes each
// window from it (Session.Next: consecutive windows of the session's
// per-second history, neither overlapping nor leaving a gap), so the
// probes are attached, and the symbol tables read, once, not at every
// window. A session follows the processes that join the target (--comm,
// --cgroup) and ends when every process of it is gone; the agent then
// watches for the target to come back and starts a new session when it
// does. Every session is also replaced after SessionAge, which bounds what
// it accumulates over days.
package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/recording"
)

// DefaultWindow is the length of a recording window: long enough that a
// window holds thousands of lock hand-offs of a contended lock and a few
// hundred on-CPU samples per busy thread (99 Hz), short enough that a
// dashboard follows a change within a scrape or two.
const DefaultWindow = 10 * time.Second

// MinWindow is the shortest window: the session keeps its history in
// one-second deltas, so a window is a whole number of them.
const MinWindow = time.Second

// MaxWindow is the longest window: the session keeps at most
// collector.MaxHistory of per-second history, and holds two windows of it
// so that a window analyzed late (a slow analysis, a loaded machine) loses
// nothing of the next.
const MaxWindow = collector.MaxHistory / 2

// DefaultSessionAge is how long one collector session lasts before the
// agent replaces it. A session keeps some state for its whole life: the
// processes that joined it, its whole-session aggregates, and each
// process's /proc timeline, which halves its resolution every time it
// reaches its bound (200,000 cells: five minutes of 65 threads at 100 ms).
// Ten minutes keep a window's thread states at a resolution of at least
// 200 ms for 65 threads, and the replacement (attaching the probes and
// reading the symbol tables again, about half a second of CPU) costs
// under 0.1% of a core.
const DefaultSessionAge = 10 * time.Minute

// Options configure an agent.
type Options struct {
	// Target selects the processes to watch (-p, --comm, --cgroup).
	Target collector.Target
	// Window is the length of each recording window.
	Window time.Duration
	// SessionAge is how long a collector session lasts before it is
	// replaced; 0 is DefaultSessionAge.
	SessionAge time.Duration
	// Record is the template of the collector options: thresholds,
	// sampling rate, Go pprof URL. Target, Duration and History are set
	// by the agent.
	Record collector.Options
	// TopN bounds the locks and program points per process with their own
	// series.
	TopN int
	// Pyroscope, when its URL is set, receives each window's profiles.
	Pyroscope PyroscopeOptions
	// Log receives the agent's progress lines (attach, target gone,
	// failures); nil discards them.
	Log func(format string, args ...any)
	// Verbose logs a line per window too.
	Verbose bool
	// AfterWindow, when set, runs after each window was analysed and
	// published (the agent's command gives the window's memory back
	// there).
	AfterWindow func()

	// start starts a collector session; nil uses collector.Start. Tests
	// replace it.
	start func(ctx context.Context, o collector.Options) (session, error)
}

// session is what the agent uses of a collector.Session.
type session interface {
	Next(since time.Duration) (*recording.Recording, time.Duration)
	Done() <-chan struct{}
	Stop() (*recording.Recording, error)
}

// Agent is a running always-on recorder.
type Agent struct {
	opts    Options
	metrics *Metrics
	res     *resolver
	push    *pusher
	log     func(string, ...any)
	start   func(ctx context.Context, o collector.Options) (session, error)

	window int
	// known holds the processes of the current session seen so far, by
	// pid, so that each is logged once as it joins and once as it goes.
	known map[int]Process
	more  int
	// waiting is set while no process of the target runs, so that it is
	// logged once; lastErr is the latest error looking for it, logged
	// when it changes.
	waiting bool
	lastErr string
	// attached is set once a session has started: the kernel and the
	// privileges carried the probes, so an error that blames them later
	// comes from something else (most often a lack of descriptors, which
	// cilium/ebpf reports as a kernel without a map feature) and ends no
	// agent.
	attached bool
}

// ErrDescriptors is wrapped by the error that ends an agent which could
// not start its first session while out of file descriptors, whatever
// the error that the lack of them caused says.
var ErrDescriptors = errors.New("out of file descriptors")

// New prepares an agent; Run starts it.
func New(o Options) (*Agent, error) {
	if err := o.Target.Validate(); err != nil {
		return nil, err
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Window < MinWindow || o.Window > MaxWindow {
		return nil, fmt.Errorf("window %s: want between %s and %s", o.Window, MinWindow, MaxWindow)
	}
	if o.SessionAge <= 0 {
		o.SessionAge = DefaultSessionAge
	}
	res, err := newResolver(o.Target, o.Record.ProcRoot)
	if err != nil {
		return nil, err
	}
	a := &Agent{
		opts:    o,
		metrics: NewMetrics(o.TopN),
		res:     res,
		log:     o.Log,
		start:   o.start,
		known:   map[int]Process{},
	}
	if a.log == nil {
		a.log = func(string, ...any) {}
	}
	if a.start == nil {
		a.start = func(ctx context.Context, co collector.Options) (session, error) {
			return collector.Start(ctx, co)
		}
	}
	if o.Pyroscope.URL != "" {
		if err := CheckPyroscopeURL(o.Pyroscope.URL); err != nil {
			return nil, err
		}
		if o.Pyroscope.Host == "" {
			o.Pyroscope.Host, _ = os.Hostname()
		}
		a.push = newPusher(o.Pyroscope, a.metrics, a.log)
	}
	return a, nil
}

// Metrics returns the agent's metrics, to serve.
func (a *Agent) Metrics() *Metrics { return a.metrics }

// fatal reports errors that end the agent when its first session meets
// them: no session can succeed after them (missing privileges, a kernel
// without what the probes need).
func fatal(err error) bool {
	return errors.Is(err, collector.ErrPermission) || errors.Is(err, collector.ErrNoBTF) || errors.Is(err, collector.ErrKernel)
}

// Run records window after window until ctx is done, then returns nil
// once every probe is detached; it returns early with an error no later
// session could overcome (missing privileges, kernel support), met by the
// first session. Later, the same errors are logged and the session is
// tried again a window later: a kernel that carried the probes once
// still can.
func (a *Agent) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if a.push != nil {
		pctx, cancel := context.WithCancel(ctx)
		defer func() {
			cancel()
			wg.Wait()
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.push.run(pctx)
		}()
	}
	for ctx.Err() == nil {
		if err := a.step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// step starts a session when a process of the target runs and follows it
// until it ends; with none running it waits a window.
func (a *Agent) step(ctx context.Context) error {
	t, ok, err := a.res.session()
	if msg := fmt.Sprint(err); err != nil && msg != a.lastErr {
		// Once per distinct error: a --cgroup that is gone stays gone
		// for every window until the service starts again.
		a.log("%v", err)
	}
	a.lastErr = fmt.Sprint(err)
	if !ok && err != nil && outOfResources(err) {
		// Could not look, which says nothing of the target.
		a.idle(ctx)
		return nil
	}
	if !ok {
		if !a.waiting {
			a.log("no process of %s runs; watching for one", a.opts.Target)
			a.waiting = true
		}
		a.idle(ctx)
		return nil
	}
	a.waiting = false
	co := a.opts.Record
	co.Target, co.PID, co.Duration = t, 0, 0
	co.History = min(2*a.opts.Window, collector.MaxHistory)
	s, err := a.start(ctx, co)
	var short bool
	var fds string
	if err != nil {
		short, fds = descriptorsExhausted()
		short = short || outOfResources(err)
	}
	switch {
	case err != nil && fatal(err) && !a.attached && short:
		// Not the kernel's or the privileges' fault: say what it is.
		return fmt.Errorf("%w (%s): %v", ErrDescriptors, fds, err)
	case err != nil && fatal(err) && !a.attached:
		return err
	case errors.Is(err, collector.ErrNoProcess) || errors.Is(err, collector.ErrProcessGone):
		// Gone between the look and the attach: look again.
		a.idle(ctx)
		return nil
	case err != nil && short:
		a.metrics.window(windowFailed)
		a.log("%s: cannot record, out of file descriptors (%s): %v", t, fds, err)
		a.idle(ctx)
		return nil
	case err != nil:
		a.metrics.window(windowFailed)
		a.log("%s: cannot record: %v", t, err)
		a.idle(ctx)
		return nil
	}
	a.attached = true
	began := time.Now()
	replaced := a.follow(ctx, s)
	if _, err := s.Stop(); err != nil && ctx.Err() == nil {
		a.log("%s: session ended: %v", t, err)
	}
	if !replaced && ctx.Err() == nil {
		a.forget(map[int]bool{})
		if time.Since(began) < a.opts.Window {
			// Ended at once (a failure, or processes that exit as soon
			// as they start): not another session at once.
			wait(ctx, a.opts.Window)
		}
	}
	return nil
}

// idle passes a window with no process recorded.
func (a *Agent) idle(ctx context.Context) {
	a.window++
	a.forget(map[int]bool{})
	a.metrics.sweep(a.window, map[Process]bool{})
	wait(ctx, a.opts.Window)
}

// follow takes a window from session s at every window's end until the
// session ends (its last window is published too), ctx is done (the
// window cut short is not: nothing could scrape it) or the session has
// lasted SessionAge; it returns true in the last case, where a new
// session takes over the same processes.
func (a *Agent) follow(ctx context.Context, s session) bool {
	started := time.Now()
	tick := time.NewTicker(a.opts.Window)
	defer tick.Stop()
	since := time.Duration(0)
	for {
		ended := false
		select {
		case <-ctx.Done():
			return false
		case <-s.Done():
			ended = true
		case <-tick.C:
		}
		if ctx.Err() != nil {
			// Stopping: the session has ended with ctx (or will at
			// once) and its window is cut short.
			return false
		}
		rec, next := s.Next(since)
		since = next
		a.window++
		alive := a.publish(rec, ended)
		if a.opts.AfterWindow != nil {
			a.opts.AfterWindow()
		}
		if ended || alive == 0 {
			// alive == 0: every process of a --comm or --cgroup target is
			// gone; watch for the next without probes attached.
			return false
		}
		if time.Since(started) >= a.opts.SessionAge {
			return true
		}
	}
}

// publish analyzes and exports one window of the session, and returns
// how many of its processes still run.
func (a *Agent) publish(rec *recording.Recording, ended bool) int {
	live := map[Process]bool{}
	alive := map[int]bool{}
	if rec == nil {
		// No complete second since the last window (a loaded machine):
		// the processes stay as they were.
		for _, p := range a.known {
			live[p] = true
		}
		a.metrics.sweep(a.window, live)
		return len(live)
	}
	procs, more := windowProcesses(rec, MaxProcesses)
	if more != a.more {
		if more > 0 {
			a.log("%d more processes match; exporting the %d that waited longest on locks", more, MaxProcesses)
		}
		a.more = more
	}
	for _, rp := range rec.Meta.Processes {
		if rp.Left == 0 && !ended {
			alive[rp.PID] = true
		}
	}
	a.metrics.addLost(rec)
	if a.opts.Verbose {
		events, drops := rec.Meta.CounterTotals()
		a.log("window %d: %s, %d processes, %d events, %d lost", a.window, rec.Meta.Duration.Round(time.Millisecond), len(rec.Meta.Processes), events, drops)
	}
	for _, rp := range procs {
		p := a.process(rp)
		if alive[rp.PID] {
			live[p] = true
		}
		prec := forProcess(rec, rp)
		if !alive[rp.PID] {
			a.metrics.window(windowGone)
		}
		a.observe(p, prec, alive[rp.PID])
	}
	for _, rp := range rec.Meta.Processes {
		if alive[rp.PID] {
			live[a.process(rp)] = true
		}
	}
	a.forget(alive)
	a.metrics.sweep(a.window, live)
	return len(alive)
}

// process returns the agent's Process for a process of the session,
// logging it the first time it is seen.
func (a *Agent) process(rp recording.Process) Process {
	if p, ok := a.known[rp.PID]; ok {
		return p
	}
	p, ok := a.res.process(rp.PID)
	if !ok || p.Comm != rp.Comm {
		// Gone already, or exec'd since it joined: as the window has it.
		p = Process{PID: rp.PID, Comm: rp.Comm}
	}
	a.known[rp.PID] = p
	a.log("attaching to %s", p)
	return p
}

// forget drops the known processes that no longer run, logging each.
func (a *Agent) forget(alive map[int]bool) {
	for pid, p := range a.known {
		if !alive[pid] {
			a.log("%s is gone; watching for it", p)
			delete(a.known, pid)
		}
	}
}

// observe analyzes one process's window and publishes it; ok is false
// when the process went away during the window (its window is counted
// as target_gone then, its data still published).
func (a *Agent) observe(p Process, rec *recording.Recording, ok bool) {
	res, err := analyzer.Analyze(rec, analyzer.Options{})
	if err != nil {
		a.metrics.window(windowFailed)
		a.log("%s: analyze window: %v", p, err)
		return
	}
	if ok {
		a.metrics.window(windowOK)
	}
	a.metrics.observe(a.window, p, rec, res)
	if a.opts.Verbose {
		a.log("%s: window %d: %s, %d findings, %d locks", p, a.window, rec.Meta.Duration.Round(time.Millisecond), len(res.Findings), len(res.Locks))
	}
	if a.push != nil {
		if err := a.push.enqueue(p, rec); err != nil {
			a.log("%s: %v", p, err)
		}
	}
}

// wait sleeps d or until ctx is done.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
