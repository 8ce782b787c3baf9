// Package agent records target processes continuously in rolling windows,
// analyzes each window, and feeds what it finds to the engines people
// already run: Prometheus metrics (Metrics) and, optionally, each window's
// profiles pushed to Pyroscope.
//
// Every window is its own collector session: the probes are attached for
// the window and detached after it, so nothing accumulates across windows
// (event logs, thread timelines, symbol caches), a target that restarts
// is attached afresh at the next window, and one that goes away costs
// nothing until it comes back.
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

// MinWindow is the shortest window: attaching and detaching the probes
// takes a few hundred milliseconds on a busy machine, which a shorter
// window would spend mostly on.
const MinWindow = time.Second

// Options configure an agent.
type Options struct {
	Targets Targets
	// Window is the length of each recording window.
	Window time.Duration
	// Record is the template of each window's collector options: its
	// thresholds, sampling rate and Go pprof URL. PID and Duration are
	// set per window.
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

	// record records one window; nil uses the collector. Tests replace
	// it.
	record func(ctx context.Context, o collector.Options) (*recording.Recording, error)
}

// Agent is a running always-on recorder.
type Agent struct {
	opts    Options
	metrics *Metrics
	res     *resolver
	push    *pusher
	log     func(string, ...any)
	record  func(ctx context.Context, o collector.Options) (*recording.Recording, error)

	window int
	known  map[Process]bool
	more   int
}

// New prepares an agent; Run starts it.
func New(o Options) (*Agent, error) {
	if err := o.Targets.Validate(); err != nil {
		return nil, err
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Window < MinWindow {
		return nil, fmt.Errorf("window %s is shorter than %s", o.Window, MinWindow)
	}
	res, err := newResolver(o.Targets, o.Record.ProcRoot)
	if err != nil {
		return nil, err
	}
	a := &Agent{
		opts:    o,
		metrics: NewMetrics(o.TopN),
		res:     res,
		log:     o.Log,
		record:  o.record,
		known:   map[Process]bool{},
	}
	if a.log == nil {
		a.log = func(string, ...any) {}
	}
	if a.record == nil {
		a.record = func(ctx context.Context, co collector.Options) (*recording.Recording, error) {
			return collector.Record(ctx, co, nil)
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

// fatal reports errors that end the agent: no window can succeed after
// them (missing privileges, a kernel without what the probes need).
func fatal(err error) bool {
	return errors.Is(err, collector.ErrPermission) || errors.Is(err, collector.ErrNoBTF) || errors.Is(err, collector.ErrKernel)
}

// Run records window after window until ctx is done, then returns nil
// once every probe is detached; it returns early with an error no later
// window could overcome (missing privileges, kernel support).
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

// outcome is one process's window.
type outcome struct {
	p   Process
	rec *recording.Recording
	err error
}

// step records one window of every target process, or waits a window
// when there is none.
func (a *Agent) step(ctx context.Context) error {
	procs, more, err := a.res.resolve()
	if err != nil {
		a.log("%v", err)
	}
	if more != a.more {
		if more > 0 {
			a.log("%d more processes match; recording the first %d by pid", more, MaxProcesses)
		}
		a.more = more
	}
	live := map[Process]bool{}
	for _, p := range procs {
		live[p] = true
		if !a.known[p] {
			a.log("attaching to %s", p)
		}
	}
	for p := range a.known {
		if !live[p] {
			a.log("%s is gone; watching for it", p)
		}
	}
	a.known = live
	a.window++
	if len(procs) == 0 {
		a.metrics.sweep(a.window, live)
		wait(ctx, a.opts.Window)
		return nil
	}
	out := make([]outcome, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			co := a.opts.Record
			co.PID, co.Duration = p.PID, a.opts.Window
			rec, err := a.record(ctx, co)
			out[i] = outcome{p, rec, err}
		}()
	}
	wg.Wait()
	failed := 0
	for _, o := range out {
		switch {
		case o.err != nil && fatal(o.err):
			return o.err
		case errors.Is(o.err, collector.ErrNoProcess) || errors.Is(o.err, collector.ErrProcessGone):
			delete(live, o.p)
			a.metrics.window(windowGone)
			continue
		case o.err != nil || o.rec == nil:
			failed++
			delete(live, o.p)
			a.metrics.window(windowFailed)
			a.log("%s: window failed: %v", o.p, o.err)
			continue
		}
		if ctx.Err() != nil && o.rec.Meta.Partial {
			// Cut short by the agent's own shutdown: nothing to publish
			// that a scrape could still read.
			continue
		}
		a.observe(ctx, o.p, o.rec)
	}
	a.metrics.sweep(a.window, live)
	if failed == len(procs) {
		// Every window failed at once (e.g. attaching failed): wait
		// rather than retry in a tight loop.
		wait(ctx, a.opts.Window)
	}
	return nil
}

// observe analyzes one window and publishes it.
func (a *Agent) observe(ctx context.Context, p Process, rec *recording.Recording) {
	res, err := analyzer.Analyze(rec, analyzer.Options{})
	if err != nil {
		a.metrics.window(windowFailed)
		a.log("%s: analyze window: %v", p, err)
		return
	}
	a.metrics.window(windowOK)
	a.metrics.observe(a.window, p, rec, res)
	if a.opts.Verbose {
		events, drops := rec.Meta.CounterTotals()
		a.log("%s: window %d: %s, %d findings, %d locks, %d events, %d lost", p, a.window, rec.Meta.Duration.Round(time.Millisecond), len(res.Findings), len(res.Locks), events, drops)
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
