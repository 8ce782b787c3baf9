package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/recording"
)

// series gathers the registry into "name{k=v,…}" → value, labels sorted.
func series(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "contend_") {
			continue
		}
		for _, mt := range mf.GetMetric() {
			var ls []string
			for _, l := range mt.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			v := mt.GetCounter().GetValue() + mt.GetGauge().GetValue()
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return out
}

// matching returns the series of name whose labels include every one of
// want ("k=v").
func matching(s map[string]float64, name string, want ...string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		if !strings.HasPrefix(k, name+"{") {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(k, w)
		}
		if ok {
			out[k] = v
		}
	}
	return out
}

func readLive(t *testing.T, name string) *recording.Recording {
	t.Helper()
	rec, err := recording.Read(filepath.Join("..", "analyzer", "testdata", "live", name))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func analyze(t *testing.T, rec *recording.Recording) *analyzer.Result {
	t.Helper()
	res, err := analyzer.Analyze(rec, analyzer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// startSleeper starts a process the resolver sees as a target; it is
// killed when the test ends.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// asWindow returns rec as a session's window of one process, pid, named
// comm; with left, the process left during the window.
func asWindow(rec *recording.Recording, pid int, comm string, left bool) *recording.Recording {
	out := *rec
	out.Meta.PID, out.Meta.Comm = pid, comm
	p := recording.Process{PID: pid, Comm: comm}
	if left {
		p.Left, p.Exited = rec.Meta.Duration/2, true
	}
	out.Meta.Processes = []recording.Process{p}
	return &out
}

// fakeSessions stands in for the collector: every session it starts
// returns recs as its windows, one per Next (repeating the last), each
// window's end one second past its start. A session ends by itself after
// endAfter windows when that is set (a -p target whose processes all
// exited). The run is cancelled after n windows in all.
type fakeSessions struct {
	mu       sync.Mutex
	recs     []*recording.Recording
	n        int
	endAfter int
	cancel   context.CancelFunc
	// onWindow, when set, runs after each window is handed out (with the
	// window's number from 1, f.mu held).
	onWindow func(w int)

	starts  []collector.Options
	sinces  [][]time.Duration // per session
	windows int
	stops   int
	startFn func(o collector.Options) error
}

type fakeSession struct {
	f       *fakeSessions
	i       int
	done    chan struct{}
	once    sync.Once
	windows int
}

func (f *fakeSessions) start(ctx context.Context, o collector.Options) (session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, o)
	if f.startFn != nil {
		if err := f.startFn(o); err != nil {
			return nil, err
		}
	}
	s := &fakeSession{f: f, i: len(f.sinces), done: make(chan struct{})}
	f.sinces = append(f.sinces, nil)
	go func() {
		select {
		case <-ctx.Done():
			s.end()
		case <-s.done:
		}
	}()
	return s, nil
}

func (s *fakeSession) end() { s.once.Do(func() { close(s.done) }) }

func (s *fakeSession) Next(since time.Duration) (*recording.Recording, time.Duration) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sinces[s.i] = append(f.sinces[s.i], since)
	rec := f.recs[min(f.windows, len(f.recs)-1)]
	f.windows++
	s.windows++
	if f.onWindow != nil {
		f.onWindow(f.windows)
	}
	if f.windows >= f.n {
		f.cancel()
	}
	if f.endAfter > 0 && s.windows >= f.endAfter {
		s.end()
	}
	return rec, since + time.Second
}

func (s *fakeSession) Done() <-chan struct{} { return s.done }

func (s *fakeSession) Stop() (*recording.Recording, error) {
	s.end()
	s.f.mu.Lock()
	s.f.stops++
	s.f.mu.Unlock()
	return nil, nil
}

// testWindow is the windows' length in these tests: the agent refuses
// windows shorter than a second (the session's deltas), the fake session
// has no such limit.
const testWindow = 20 * time.Millisecond

// newFake returns an agent over f with windows of testWindow.
func newFake(t *testing.T, o Options, f *fakeSessions) *Agent {
	t.Helper()
	o.start = f.start
	o.Window = MinWindow
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	a.opts.Window = testWindow
	return a
}

// runFake runs an agent over f until f cancels it (30 s at most).
func runFake(t *testing.T, o Options, f *fakeSessions) *Agent {
	t.Helper()
	a := newFake(t, o, f)
	runAgain(t, a, f)
	return a
}

func runAgain(t *testing.T, a *Agent, f *fakeSessions) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.mu.Lock()
	f.cancel = cancel
	f.mu.Unlock()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("the agent ran 30 s without taking the windows the test expects")
	}
}

// TestWindowsAddUp takes three windows of the stripe convoy from one
// session: the session is started once, for the target, with no end and
// two windows of history; each window asks for the data since the end of
// the one before; the lock counters are the sum of the windows' analyzed
// waits, the finding names the program point, the thread gauges are the
// timeline's mean.
func TestWindowsAddUp(t *testing.T) {
	sl := startSleeper(t)
	pid := sl.Process.Pid
	rec := asWindow(readLive(t, "c-stripe-bad"), pid, "sleep", false)
	res := analyze(t, rec)
	f := &fakeSessions{recs: []*recording.Recording{rec}, n: 3}
	a := runFake(t, Options{Target: collector.Target{PIDs: []int{pid}}}, f)
	s := series(t, a.Metrics())
	pidl := fmt.Sprint("pid=", pid)

	if len(f.starts) != 1 {
		t.Fatalf("%d sessions started for three windows, want 1", len(f.starts))
	}
	o := f.starts[0]
	if !slices.Equal(o.Target.PIDs, []int{pid}) || o.Duration != 0 || o.History != 2*testWindow {
		t.Errorf("session options: target %v, duration %s, history %s; want pid %d, no end, two windows of history", o.Target, o.Duration, o.History, pid)
	}
	if want := []time.Duration{0, time.Second, 2 * time.Second}; !slices.Equal(f.sinces[0], want) {
		t.Errorf("windows asked from %v, want %v: each from the end of the one before", f.sinces[0], want)
	}
	if f.stops != 1 {
		t.Errorf("session stopped %d times, want once", f.stops)
	}

	var wantSecs, wantWaits float64
	for _, l := range res.Locks {
		if !l.Idle {
			wantSecs += l.WaitSeconds
			wantWaits += float64(l.Waits)
		}
	}
	got := matching(s, MetricLockWaitSeconds, pidl, "lock=stripe:table_lock", "point=stripe!conn_on_message")
	if len(got) != 1 {
		t.Fatalf("table_lock series: %v", got)
	}
	for _, v := range got {
		if diff := v - 3*wantSecs; diff > 1e-6 || diff < -1e-6 {
			t.Errorf("wait seconds %v, want 3 windows × %v", v, wantSecs)
		}
	}
	for _, v := range matching(s, MetricLockWaits, pidl, "lock=stripe:table_lock") {
		if v != 3*wantWaits {
			t.Errorf("waits %v, want %v", v, 3*wantWaits)
		}
	}
	if len(matching(s, MetricFinding, pidl, "kind=lock-convoy", "point=stripe!conn_on_message")) != 1 {
		t.Errorf("no lock-convoy finding at conn_on_message: %v", matching(s, MetricFinding))
	}
	if len(matching(s, MetricFinding, "comm=sleep")) != 1 {
		t.Errorf("finding not labelled with the target's comm: %v", matching(s, MetricFinding))
	}
	var sumR, n float64
	for i := range rec.Threads.Samples {
		c := rec.Threads.StatesAt(i)
		if c.Threads > c.Unsampled {
			sumR += float64(c.Runnable)
			n++
		}
	}
	if v := s[fmt.Sprintf("%s{comm=sleep,%s,state=runnable}", MetricThreads, pidl)]; v != sumR/n || v == 0 {
		t.Errorf("runnable threads %v, want the timeline's mean %v", v, sumR/n)
	}
	lost := rec.Meta.Counters["drop_stack_collision"]
	if v := s[MetricEventsLost+"{reason=stack_collision}"]; lost == 0 || v != 3*float64(lost) {
		t.Errorf("events lost (stack_collision) %v, want 3 × %d", v, lost)
	}
	if v := s[MetricWindows+"{result=ok}"]; v != 3 {
		t.Errorf("ok windows %v, want 3", v)
	}
}

// TestFindingGoesAway: a finding of the first window is not left at 0
// once a later window no longer has it; the series is gone. The later
// window is the fixed stripe variant: the convoy on table_lock is gone,
// what its threads still show (plain contention on the stripes, CPU
// saturation) are other findings.
func TestFindingGoesAway(t *testing.T) {
	sl := startSleeper(t)
	pid := sl.Process.Pid
	bad, fixed := asWindow(readLive(t, "c-stripe-bad"), pid, "sleep", false), asWindow(readLive(t, "c-stripe-fixed"), pid, "sleep", false)
	const convoy = "kind=lock-convoy"
	for _, f := range analyze(t, fixed).Findings {
		if f.Kind == analyzer.KindLockConvoy {
			t.Fatalf("the fixed stripe recording has a lock convoy (%s); the test needs one without", f.Headline)
		}
	}
	var afterBad int
	f := &fakeSessions{recs: []*recording.Recording{bad, fixed}, n: 2}
	a := newFake(t, Options{Target: collector.Target{PIDs: []int{pid}}}, f)
	f.onWindow = func(w int) {
		if w == 2 {
			// The first window is published before the second is taken.
			afterBad = len(matching(series(t, a.Metrics()), MetricFinding, convoy))
		}
	}
	runAgain(t, a, f)
	if afterBad != 1 {
		t.Fatal("no lock convoy after the bad window")
	}
	s := series(t, a.Metrics())
	if got := matching(s, MetricFinding, convoy); len(got) != 0 {
		t.Errorf("finding still exported after a window without it: %v", got)
	}
	if len(matching(s, MetricFinding)) == 0 {
		t.Error("the fixed window's own findings are not exported")
	}
	if len(matching(s, MetricLockWaitSeconds, "table_lock")) != 1 {
		t.Error("the lock counter went away with the finding")
	}
}

// TestLabelsBounded feeds windows of 40 locks each to a top-3 agent: a
// process never has more than 3 named series plus "other", the total is
// kept, and a lock idle for evictAfter windows gives its place to a new
// hot one.
func TestLabelsBounded(t *testing.T) {
	m := NewMetrics(3)
	p := Process{PID: 42, Comm: "svc", Start: 1}
	rec := &recording.Recording{}
	window := func(w int, hot []string) float64 {
		res := &analyzer.Result{}
		total := 0.0
		for i := range 40 {
			name := fmt.Sprintf("cold%02d", i)
			secs := 0.01
			if i < len(hot) {
				name, secs = hot[i], float64(10-i)
			}
			res.Locks = append(res.Locks, analyzer.LockRow{Lock: analyzer.LockID{Name: name}, WaitSeconds: secs, Waits: 1, Waiter: &analyzer.ProgramPoint{Function: "f_" + name}})
			total += secs
		}
		// An idle lock (a pool waiting for work) is no contention.
		res.Locks = append(res.Locks, analyzer.LockRow{Lock: analyzer.LockID{Name: "pool_cond"}, WaitSeconds: 1000, Waits: 1, Idle: true})
		m.observe(w, p, rec, res)
		m.sweep(w, map[Process]bool{p: true})
		return total
	}
	var total float64
	for w := 1; w <= 3; w++ {
		total += window(w, []string{"a", "b", "c"})
	}
	for w := 4; w <= 4+evictAfter; w++ {
		total += window(w, []string{"a", "b", "d"})
	}
	s := series(t, m)
	got := matching(s, MetricLockWaitSeconds, "pid=42")
	names := map[string]bool{}
	sum := 0.0
	for k, v := range got {
		sum += v
		for _, n := range []string{"a", "b", "c", "d", "other"} {
			if strings.Contains(k, "lock="+n+",") {
				names[n] = true
			}
		}
		if strings.Contains(k, "pool_cond") {
			t.Errorf("idle lock exported: %s", k)
		}
	}
	if len(got) > 4 {
		t.Errorf("%d series for one process, want at most 3 + other: %v", len(got), got)
	}
	if !names["a"] || !names["b"] || !names["d"] || !names["other"] || names["c"] {
		t.Errorf("series %v: want a, b, d (c idle for %d windows evicted) and other", got, evictAfter)
	}
	// c's series was deleted, so the sum of what is left is the total
	// less what c had.
	if sum > total || sum < total-30 {
		t.Errorf("sum of series %v, total fed %v", sum, total)
	}
	if v := got["contend_lock_wait_seconds_total{comm=svc,lock=d,pid=42,point=f_d}"]; v == 0 {
		t.Errorf("d has no series of its own: %v", got)
	}
}

// TestTargetGoneAndBack: a -p session ends when its process exits; its
// last window is still published (counted as target_gone), its gauges go
// at once and its counters after goneAfter windows; the agent keeps
// running and starts no session while the process is gone.
func TestTargetGoneAndBack(t *testing.T) {
	sl := startSleeper(t)
	pid := sl.Process.Pid
	stripe := readLive(t, "c-stripe-bad")
	rec, last := asWindow(stripe, pid, "sleep", false), asWindow(stripe, pid, "sleep", true)
	f := &fakeSessions{recs: []*recording.Recording{rec, last}, n: 2, endAfter: 1}
	var ok, gone float64
	a := newFake(t, Options{Target: collector.Target{PIDs: []int{pid}}}, f)
	f.onWindow = func(w int) {
		if w == 2 {
			// The process exits with the session's end.
			sl.Process.Kill()
			sl.Wait()
			s := series(t, a.Metrics())
			ok = s[MetricWindows+"{result=ok}"]
		}
	}
	runAgain(t, a, f)
	s := series(t, a.Metrics())
	gone = s[MetricWindows+"{result=target_gone}"]
	if ok != 1 || gone != 1 {
		t.Errorf("windows ok %v, target_gone %v; want 1 and 1 (the last window, cut short by the exit)", ok, gone)
	}
	if len(matching(s, MetricFinding)) != 0 || len(matching(s, MetricThreads)) != 0 {
		t.Errorf("gauges of a gone process still exported: %v %v", matching(s, MetricFinding), matching(s, MetricThreads))
	}
	if got := matching(s, MetricLockWaitSeconds); len(got) != 1 {
		t.Errorf("counters of a gone process deleted at once: %v", got)
	}

	// With the process gone, windows pass without a session; its
	// counters go after goneAfter windows.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if len(matching(series(t, a.Metrics()), MetricLockWaitSeconds)) == 0 {
				cancel()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(matching(series(t, a.Metrics()), MetricLockWaitSeconds)) != 0 {
		t.Errorf("counters of a process gone for %d windows still exported", goneAfter)
	}
	if len(f.starts) != 1 {
		t.Errorf("%d sessions started; want none after the process exited", len(f.starts)-1)
	}
	if v := testutil.ToFloat64(a.Metrics().targets); v != 0 {
		t.Errorf("targets %v with the process gone", v)
	}
}

// commCopy starts a copy of sleep named after the test, so that --comm
// matches only the processes the test starts.
func commCopy(t *testing.T, dir, comm string) *exec.Cmd {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, comm)
	if _, err := os.Stat(path); err != nil {
		data, err := os.ReadFile(sleep)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(path, "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// TestCommSessionEndsAndRestarts: a --comm session follows its target
// until a window finds none of its processes left; the agent then
// detaches (stops the session) and starts a new one, for the same
// target, once a process of that name runs again.
func TestCommSessionEndsAndRestarts(t *testing.T) {
	dir := t.TempDir()
	comm := fmt.Sprintf("agt%d", os.Getpid()%100000)
	first := commCopy(t, dir, comm)
	stripe := readLive(t, "c-stripe-bad")
	f := &fakeSessions{recs: []*recording.Recording{
		asWindow(stripe, first.Process.Pid, comm, false),
		asWindow(stripe, first.Process.Pid, comm, true),
	}, n: 3}
	var second *exec.Cmd
	f.onWindow = func(w int) {
		if w == 2 {
			first.Process.Kill()
			first.Wait()
			// It comes back, under another pid, while no session runs.
			go func() {
				for {
					f.mu.Lock()
					stopped := f.stops
					f.mu.Unlock()
					if stopped == 1 {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(3 * testWindow)
				c := commCopy(t, dir, comm)
				f.mu.Lock()
				second = c
				f.recs = append(f.recs, asWindow(stripe, c.Process.Pid, comm, false))
				f.mu.Unlock()
			}()
		}
	}
	var logs []string
	var logMu sync.Mutex
	a := runFake(t, Options{Target: collector.Target{Comm: comm}, Log: func(format string, args ...any) {
		logMu.Lock()
		logs = append(logs, fmt.Sprintf(format, args...))
		logMu.Unlock()
	}}, f)
	if len(f.starts) != 2 {
		t.Fatalf("%d sessions started, want 2 (the first ended with its last process)", len(f.starts))
	}
	for i, o := range f.starts {
		if o.Target.Comm != comm || len(o.Target.PIDs) != 0 {
			t.Errorf("session %d for %v, want --comm %s", i, o.Target, comm)
		}
	}
	if len(f.sinces[1]) != 1 || f.sinces[1][0] != 0 {
		t.Errorf("the new session's windows asked from %v, want from its start", f.sinces[1])
	}
	s := series(t, a.Metrics())
	if len(matching(s, MetricFinding, fmt.Sprint("pid=", second.Process.Pid))) == 0 {
		t.Errorf("no finding for the restarted process %d: %v", second.Process.Pid, matching(s, MetricFinding))
	}
	if len(matching(s, MetricFinding, fmt.Sprint("pid=", first.Process.Pid))) != 0 {
		t.Errorf("the exited process %d still has findings", first.Process.Pid)
	}
	log := strings.Join(logs, "\n")
	for _, want := range []string{
		fmt.Sprintf("attaching to pid %d (%s)", first.Process.Pid, comm),
		fmt.Sprintf("pid %d (%s) is gone", first.Process.Pid, comm),
		fmt.Sprintf("attaching to pid %d (%s)", second.Process.Pid, comm),
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log has no %q:\n%s", want, log)
		}
	}
}

// TestSessionReplacedAfterAge: a session is replaced after SessionAge,
// each new one asked from its own start, without the processes being
// logged as gone and back.
func TestSessionReplacedAfterAge(t *testing.T) {
	sl := startSleeper(t)
	pid := sl.Process.Pid
	f := &fakeSessions{recs: []*recording.Recording{asWindow(readLive(t, "c-stripe-bad"), pid, "sleep", false)}, n: 4}
	var logs []string
	a := runFake(t, Options{Target: collector.Target{PIDs: []int{pid}}, SessionAge: time.Nanosecond, Log: func(format string, args ...any) {
		logs = append(logs, fmt.Sprintf(format, args...))
	}}, f)
	if len(f.starts) != 4 || f.stops != 4 {
		t.Errorf("%d sessions started, %d stopped for 4 windows of age 1 ns; want 4 and 4", len(f.starts), f.stops)
	}
	for i, s := range f.sinces {
		if len(s) != 1 || s[0] != 0 {
			t.Errorf("session %d asked windows from %v, want one from its start", i, s)
		}
	}
	for _, l := range logs {
		if strings.Contains(l, "gone") {
			t.Errorf("a replaced session logged %q", l)
		}
	}
	if v := series(t, a.Metrics())[MetricWindows+"{result=ok}"]; v != 4 {
		t.Errorf("ok windows %v, want 4", v)
	}
}

// twoProcesses returns the stripe recording as one window of two
// processes, pids a and b, each with the whole recording's data: every
// sample, lock, event and thread series labelled with its process.
func twoProcesses(t *testing.T, a, b int) *recording.Recording {
	t.Helper()
	ra, rb := readLive(t, "c-stripe-bad"), readLive(t, "c-stripe-bad")
	for _, x := range []struct {
		rec *recording.Recording
		pid int
	}{{ra, a}, {rb, b}} {
		for _, p := range x.rec.Profiles {
			for _, s := range p.Sample {
				if s.NumLabel == nil {
					s.NumLabel = map[string][]int64{}
				}
				s.NumLabel[recording.LabelPID] = []int64{int64(x.pid)}
			}
		}
		for i := range x.rec.Locks {
			x.rec.Locks[i].PID = x.pid
		}
		for i := range x.rec.Events {
			x.rec.Events[i].PID = x.pid
			if x.rec.Events[i].Kind == recording.EventWakeup {
				x.rec.Events[i].PeerPID = x.pid
			}
		}
		for i := range x.rec.Threads.Threads {
			x.rec.Threads.Threads[i].PID = x.pid
		}
	}
	out := *ra
	out.Meta.PID = a
	out.Meta.Processes = []recording.Process{{PID: a, Comm: "stripe"}, {PID: b, Comm: "stripe"}}
	out.Profiles = map[recording.View]*profile.Profile{}
	for v, p := range ra.Profiles {
		m, err := profile.Merge([]*profile.Profile{p, rb.Profiles[v]})
		if err != nil {
			t.Fatal(err)
		}
		out.Profiles[v] = m
	}
	out.Locks = append(slices.Clone(ra.Locks), rb.Locks...)
	out.Events = append(slices.Clone(ra.Events), rb.Events...)
	slices.SortStableFunc(out.Events, func(x, y recording.Event) int { return int(x.T - y.T) })
	tl := *ra.Threads
	tl.Threads = append(slices.Clone(ra.Threads.Threads), rb.Threads.Threads...)
	out.Threads = &tl
	return &out
}

// TestProcessesOfOneSession: a window of a session that records two
// processes is exported per process, each under its pid with what that
// process alone shows: the same figures as its own recording, not the
// sum of both.
func TestProcessesOfOneSession(t *testing.T) {
	const pa, pb = 1 << 22, 1<<22 + 1 // above pid_max's default: no live process has them
	single := analyze(t, readLive(t, "c-stripe-bad"))
	var wantSecs float64
	for _, l := range single.Locks {
		if !l.Idle {
			wantSecs += l.WaitSeconds
		}
	}
	rec := twoProcesses(t, pa, pb)
	f := &fakeSessions{recs: []*recording.Recording{rec}, n: 1}
	sl := startSleeper(t)
	a := runFake(t, Options{Target: collector.Target{PIDs: []int{sl.Process.Pid}}}, f)
	s := series(t, a.Metrics())
	for _, pid := range []int{pa, pb} {
		pidl := fmt.Sprint("pid=", pid)
		var secs float64
		for _, v := range matching(s, MetricLockWaitSeconds, pidl) {
			secs += v
		}
		if d := secs - wantSecs; d > 1e-6 || d < -1e-6 {
			t.Errorf("pid %d waited %v s in all, want its own recording's %v", pid, secs, wantSecs)
		}
		if len(matching(s, MetricFinding, pidl, "point=stripe!conn_on_message")) == 0 {
			t.Errorf("pid %d has no finding at conn_on_message: %v", pid, matching(s, MetricFinding))
		}
		if len(matching(s, MetricThreads, pidl, "state=runnable")) != 1 {
			t.Errorf("pid %d has no thread gauge", pid)
		}
	}
	if v := s[MetricWindows+"{result=ok}"]; v != 2 {
		t.Errorf("ok windows %v, want one per process", v)
	}
}

// TestWindowProcessesBounded: a window of more processes than
// MaxProcesses exports those that waited longest.
func TestWindowProcessesBounded(t *testing.T) {
	rec := &recording.Recording{}
	for pid := 1; pid <= MaxProcesses+2; pid++ {
		rec.Meta.Processes = append(rec.Meta.Processes, recording.Process{PID: pid})
		rec.Locks = append(rec.Locks, recording.LockStat{PID: pid, WaitNS: uint64(pid) * 1000})
	}
	procs, more := windowProcesses(rec, MaxProcesses)
	var got []int
	for _, p := range procs {
		got = append(got, p.PID)
	}
	if want := []int{6, 5, 4, 3}; !slices.Equal(got, want) || more != 2 {
		t.Errorf("exported %v and %d more, want %v and 2", got, more, want)
	}
}

// TestFatalErrorStops: missing privileges end the agent at once.
func TestFatalErrorStops(t *testing.T) {
	sl := startSleeper(t)
	perm := &collector.PermissionError{Missing: []string{"CAP_BPF"}}
	f := &fakeSessions{startFn: func(collector.Options) error { return perm }}
	a := newFake(t, Options{Target: collector.Target{PIDs: []int{sl.Process.Pid}}}, f)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Run(ctx); !errors.Is(err, collector.ErrPermission) {
		t.Errorf("Run: %v, want the permission error", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "no target"},
		{Options{Target: collector.Target{PIDs: []int{-1}}}, "positive number"},
		{Options{Target: collector.Target{Comm: "a-very-long-command-name"}}, "at most 15 bytes"},
		{Options{Target: collector.Target{PIDs: []int{1}}, Window: time.Millisecond}, "want between"},
		{Options{Target: collector.Target{PIDs: []int{1}}, Window: 2 * MaxWindow}, "want between"},
	} {
		if _, err := New(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

// TestResolve: a --comm target has a session while a process of that
// name runs; a -p target's session holds the pids that still run, and a
// pid that a new process reuses is not taken for the old one.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	comm := fmt.Sprintf("agr%d", os.Getpid()%100000)
	r, err := newResolver(collector.Target{Comm: comm}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.session(); ok || err != nil {
		t.Errorf("a session for --comm %s with no such process (%v)", comm, err)
	}
	c := commCopy(t, dir, comm)
	if tg, ok, err := r.session(); !ok || err != nil || tg.Comm != comm {
		t.Errorf("--comm %s with process %d running: %v %v %v", comm, c.Process.Pid, tg, ok, err)
	}

	a, b := startSleeper(t), startSleeper(t)
	r2, _ := newResolver(collector.Target{PIDs: []int{a.Process.Pid, b.Process.Pid}}, "")
	if tg, ok, _ := r2.session(); !ok || !slices.Equal(tg.PIDs, []int{a.Process.Pid, b.Process.Pid}) {
		t.Fatalf("session %v for pids %d, %d", tg, a.Process.Pid, b.Process.Pid)
	}
	r2.first[a.Process.Pid]++ // as if the pid now belonged to a later process
	if tg, ok, _ := r2.session(); !ok || !slices.Equal(tg.PIDs, []int{b.Process.Pid}) {
		t.Errorf("session %v after pid %d was reused, want %d alone", tg, a.Process.Pid, b.Process.Pid)
	}
}

// TestRecordsWithPyroscopeDown: an unreachable Pyroscope costs the agent
// nothing but counted failures: every window is recorded and analyzed.
func TestRecordsWithPyroscopeDown(t *testing.T) {
	sl := startSleeper(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	rec := asWindow(readLive(t, "c-stripe-bad"), sl.Process.Pid, "sleep", false)
	f := &fakeSessions{recs: []*recording.Recording{rec}, n: 4}
	f.onWindow = func(int) {
		time.Sleep(100 * time.Millisecond) // a window takes time; pushes run meanwhile
	}
	a := runFake(t, Options{Target: collector.Target{PIDs: []int{sl.Process.Pid}}, Pyroscope: PyroscopeOptions{URL: dead}}, f)
	s := series(t, a.Metrics())
	if v := s[MetricWindows+"{result=ok}"]; v != 4 {
		t.Errorf("ok windows %v, want 4 with Pyroscope down", v)
	}
	if v := s[MetricPushFailures+"{}"]; v < 1 {
		t.Errorf("push failures %v, want at least 1", v)
	}
	if v := s[MetricPushes+"{}"]; v != 0 {
		t.Errorf("pushes %v to a server that is down", v)
	}
}
