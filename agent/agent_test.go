package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

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

// fakeRecorder plays recordings in place of the collector, one per call,
// repeating the last; it cancels the run after n windows.
type fakeRecorder struct {
	mu     sync.Mutex
	recs   []*recording.Recording
	errs   []error
	calls  int
	n      int
	cancel context.CancelFunc
	pids   []int
}

func (f *fakeRecorder) record(ctx context.Context, o collector.Options) (*recording.Recording, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := min(f.calls, len(f.recs)-1)
	f.calls++
	f.pids = append(f.pids, o.PID)
	if f.calls >= f.n {
		f.cancel()
	}
	var err error
	if i < len(f.errs) {
		err = f.errs[i]
	}
	return f.recs[i], err
}

func runFake(t *testing.T, o Options, f *fakeRecorder) *Agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.cancel = cancel
	o.record = f.record
	if o.Window == 0 {
		o.Window = MinWindow
	}
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestWindowsAddUp records three windows of the stripe convoy: the lock
// counters are the sum of the windows' analyzed waits, the finding names
// the program point, the thread gauges are the timeline's mean.
func TestWindowsAddUp(t *testing.T) {
	sl := startSleeper(t)
	rec := readLive(t, "c-stripe-bad")
	res := analyze(t, rec)
	f := &fakeRecorder{recs: []*recording.Recording{rec}, n: 3}
	a := runFake(t, Options{Targets: Targets{PIDs: []int{sl.Process.Pid}}}, f)
	s := series(t, a.Metrics())
	pid := fmt.Sprint("pid=", sl.Process.Pid)

	var wantSecs, wantWaits float64
	for _, l := range res.Locks {
		if !l.Idle {
			wantSecs += l.WaitSeconds
			wantWaits += float64(l.Waits)
		}
	}
	got := matching(s, MetricLockWaitSeconds, pid, "lock=stripe:table_lock", "point=stripe!conn_on_message")
	if len(got) != 1 {
		t.Fatalf("table_lock series: %v", got)
	}
	for _, v := range got {
		if diff := v - 3*wantSecs; diff > 1e-6 || diff < -1e-6 {
			t.Errorf("wait seconds %v, want 3 windows × %v", v, wantSecs)
		}
	}
	for _, v := range matching(s, MetricLockWaits, pid, "lock=stripe:table_lock") {
		if v != 3*wantWaits {
			t.Errorf("waits %v, want %v", v, 3*wantWaits)
		}
	}
	if len(matching(s, MetricFinding, pid, "kind=lock-convoy", "point=stripe!conn_on_message")) != 1 {
		t.Errorf("no lock-convoy finding at conn_on_message: %v", matching(s, MetricFinding))
	}
	// The process was recorded under its own comm, as /proc names it.
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
	if v := s[fmt.Sprintf("%s{comm=sleep,%s,state=runnable}", MetricThreads, pid)]; v != sumR/n || v == 0 {
		t.Errorf("runnable threads %v, want the timeline's mean %v", v, sumR/n)
	}
	lost := rec.Meta.Counters["drop_stack_collision"]
	if v := s[MetricEventsLost+"{reason=stack_collision}"]; lost == 0 || v != 3*float64(lost) {
		t.Errorf("events lost (stack_collision) %v, want 3 × %d", v, lost)
	}
	if v := s[MetricWindows+"{result=ok}"]; v != 3 {
		t.Errorf("ok windows %v, want 3", v)
	}
	for _, p := range f.pids {
		if p != sl.Process.Pid {
			t.Errorf("recorded pid %d, want %d", p, sl.Process.Pid)
		}
	}
}

// TestFindingGoesAway: a finding of the first window is not left at 0
// once a later window no longer has it; the series is gone. The later
// window is the fixed stripe variant: the convoy on table_lock is gone,
// what its threads still show (plain contention on the stripes, CPU
// saturation) are other findings.
func TestFindingGoesAway(t *testing.T) {
	sl := startSleeper(t)
	bad, fixed := readLive(t, "c-stripe-bad"), readLive(t, "c-stripe-fixed")
	const convoy = "kind=lock-convoy"
	for _, f := range analyze(t, fixed).Findings {
		if f.Kind == analyzer.KindLockConvoy {
			t.Fatalf("the fixed stripe recording has a lock convoy (%s); the test needs one without", f.Headline)
		}
	}
	f := &fakeRecorder{recs: []*recording.Recording{bad}, n: 1}
	a := runFake(t, Options{Targets: Targets{PIDs: []int{sl.Process.Pid}}}, f)
	if len(matching(series(t, a.Metrics()), MetricFinding, convoy)) != 1 {
		t.Fatal("no lock convoy after the bad window")
	}
	f2 := &fakeRecorder{recs: []*recording.Recording{fixed}, n: 1}
	ctx, cancel := context.WithCancel(context.Background())
	f2.cancel = cancel
	a.record = f2.record
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
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

// TestTargetGoneAndBack: the agent keeps running when its target goes
// away; the target's gauges go at once, its counters after goneAfter
// windows; a window that finds the process gone counts as target_gone.
func TestTargetGoneAndBack(t *testing.T) {
	sl := startSleeper(t)
	rec := readLive(t, "c-stripe-bad")
	f := &fakeRecorder{recs: []*recording.Recording{rec, nil}, errs: []error{nil, fmt.Errorf("pid %d: %w", sl.Process.Pid, collector.ErrProcessGone)}, n: 2}
	a := runFake(t, Options{Targets: Targets{PIDs: []int{sl.Process.Pid}}}, f)
	s := series(t, a.Metrics())
	if v := s[MetricWindows+"{result=target_gone}"]; v != 1 {
		t.Errorf("target_gone windows %v, want 1", v)
	}
	if len(matching(s, MetricFinding)) != 0 || len(matching(s, MetricThreads)) != 0 {
		t.Errorf("gauges of a gone process still exported: %v %v", matching(s, MetricFinding), matching(s, MetricThreads))
	}
	if len(matching(s, MetricLockWaitSeconds)) != 1 {
		t.Errorf("counters of a gone process deleted at once")
	}
	sl.Process.Kill()
	sl.Wait()
	// With the process gone, windows pass without recording; its
	// counters go after goneAfter windows.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(goneAfter+2)*MinWindow+5*time.Second)
	defer cancel()
	calls := f.calls
	go func() {
		for ctx.Err() == nil {
			if len(matching(series(t, a.Metrics()), MetricLockWaitSeconds)) == 0 {
				cancel()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(matching(series(t, a.Metrics()), MetricLockWaitSeconds)) != 0 {
		t.Errorf("counters of a process gone for %d windows still exported", goneAfter)
	}
	if f.calls != calls {
		t.Errorf("recorded %d windows of a process that is gone", f.calls-calls)
	}
	if v := testutil.ToFloat64(a.Metrics().targets); v != 0 {
		t.Errorf("targets %v with the process gone", v)
	}
}

// TestFatalErrorStops: missing privileges end the agent at once.
func TestFatalErrorStops(t *testing.T) {
	sl := startSleeper(t)
	perm := &collector.PermissionError{Missing: []string{"CAP_BPF"}}
	a, err := New(Options{Targets: Targets{PIDs: []int{sl.Process.Pid}}, Window: MinWindow, record: func(context.Context, collector.Options) (*recording.Recording, error) {
		return nil, perm
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Run(ctx); !errors.Is(err, collector.ErrPermission) {
		t.Errorf("Run: %v, want the permission error", err)
	}
}

func TestTargetsValidate(t *testing.T) {
	for _, tc := range []struct {
		t    Targets
		want string
	}{
		{Targets{}, "give the processes"},
		{Targets{PIDs: []int{-1}}, "bad pid"},
		{Targets{Comm: "a-very-long-command-name"}, "first 15 bytes"},
	} {
		if err := tc.t.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.t, err, tc.want)
		}
	}
	if _, err := New(Options{Targets: Targets{PIDs: []int{1}}, Window: time.Millisecond}); err == nil {
		t.Error("a 1 ms window was accepted")
	}
}

// TestResolveComm finds processes by command name, and a pid given with
// -p that a new process reuses is not taken for the old one.
func TestResolveComm(t *testing.T) {
	a, b := startSleeper(t), startSleeper(t)
	r, err := newResolver(Targets{Comm: "sleep"}, "")
	if err != nil {
		t.Fatal(err)
	}
	procs, _, err := r.resolve()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range procs {
		if p.PID == a.Process.Pid || p.PID == b.Process.Pid {
			found++
		}
		if p.Comm != "sleep" {
			t.Errorf("resolved %v for --comm sleep", p)
		}
	}
	if found != 2 && len(procs) < MaxProcesses {
		t.Errorf("resolved %v, want both sleepers %d and %d", procs, a.Process.Pid, b.Process.Pid)
	}
	r2, _ := newResolver(Targets{PIDs: []int{a.Process.Pid}}, "")
	procs, _, _ = r2.resolve()
	if len(procs) != 1 {
		t.Fatalf("resolved %v for pid %d", procs, a.Process.Pid)
	}
	r2.first[a.Process.Pid]++ // as if the pid now belonged to a later process
	if procs, _, _ = r2.resolve(); len(procs) != 0 {
		t.Errorf("a reused pid resolved as the target: %v", procs)
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
	rec := readLive(t, "c-stripe-bad")
	f := &fakeRecorder{recs: []*recording.Recording{rec}, n: 4}
	slow := func(ctx context.Context, o collector.Options) (*recording.Recording, error) {
		time.Sleep(300 * time.Millisecond) // a window takes time; pushes run meanwhile
		return f.record(ctx, o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.cancel = cancel
	a, err := New(Options{Targets: Targets{PIDs: []int{sl.Process.Pid}}, Window: MinWindow, Pyroscope: PyroscopeOptions{URL: dead}, record: slow})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
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
