package collector

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// fakeTracer stands in for the kernel: every drain yields one wait of
// 1 µs, and records pushed by the test come out of run.
type fakeTracer struct {
	mu       sync.Mutex
	drains   uint64
	failAt   uint64 // drain number that fails, 0 for never
	recs     chan []byte
	flushed  chan struct{}
	once     sync.Once
	detached bool
	closed   bool
	silenced bool
	// open is what drain reports in progress; seeded collects seed calls;
	// targets the processes set and unset.
	open    []openCall
	seeded  []openCall
	targets map[int]bool
}

func newFakeTracer() *fakeTracer {
	return &fakeTracer{recs: make(chan []byte, 16), flushed: make(chan struct{}), targets: map[int]bool{}}
}

// fakePID is the process the fake tracer's data belongs to.
const fakePID = 4242

func (f *fakeTracer) drain() (*drained, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.detached && f.closed {
		return nil, errors.New("drain after close")
	}
	f.drains++
	if f.drains == f.failAt {
		return nil, errors.New("map read failed")
	}
	d := &drained{agg: newAggregates(), counters: map[string]uint64{}}
	d.agg.waits[waitKey{Addr: 0xabc, PID: fakePID, TID: 7, Stack: 33, Op: opWait}] = aggVal{Count: 1, TotalNS: 1000}
	d.agg.locks[lockKey{Addr: 0xabc, PID: fakePID}] = lockVal{Waits: 1, TotalNS: 1000}
	d.stacks = []storedStack{{hash: 33, pid: fakePID, pcs: []uint64{0x10, 0x20}}}
	d.counters["ev_futex_wait"] = f.drains
	d.counters["drop_stack_user"] = 0
	d.open = append([]openCall(nil), f.open...)
	return d, nil
}

func (f *fakeTracer) seed(c openCall) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seeded = append(f.seeded, c)
	return true, nil
}

func (f *fakeTracer) unseed(c openCall) error { return nil }

func (f *fakeTracer) detachGo() error { return nil }

func (f *fakeTracer) attachGo(int, string, goAttach) error {
	return errors.New("the fake tracer has no uprobes")
}

// openTS answers from the calls drain reports.
func (f *fakeTracer) openTS(c openCall) (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.open {
		if o.tid == c.tid && o.io == c.io {
			return o.ts, true
		}
	}
	return 0, false
}

// setOpen replaces the calls drain reports in progress.
func (f *fakeTracer) setOpen(calls ...openCall) {
	f.mu.Lock()
	f.open = calls
	f.mu.Unlock()
}

func (f *fakeTracer) setTarget(pid int, on bool) error {
	f.mu.Lock()
	f.targets[pid] = on
	f.mu.Unlock()
	return nil
}

func (f *fakeTracer) silence(pids []int) error {
	f.mu.Lock()
	for _, p := range pids {
		f.targets[p] = false
	}
	f.mu.Unlock()
	return nil
}

func (f *fakeTracer) silenceAll() error {
	f.mu.Lock()
	f.silenced = true
	f.mu.Unlock()
	return nil
}

func (f *fakeTracer) markNamed(uint64) error { return nil }
func (f *fakeTracer) flush()                 { f.once.Do(func() { close(f.flushed) }) }
func (f *fakeTracer) counterNames() []string {
	return []string{"ev_futex_wait", "drop_stack_user", "drop_ringbuf_event"}
}

func (f *fakeTracer) run(fn func([]byte)) error {
	for {
		select {
		case r := <-f.recs:
			fn(r)
		case <-f.flushed:
			for {
				select {
				case r := <-f.recs:
					fn(r)
				default:
					return nil
				}
			}
		}
	}
}

func (f *fakeTracer) detach() error {
	f.mu.Lock()
	f.detached = true
	f.mu.Unlock()
	return nil
}

func (f *fakeTracer) close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

// startFake launches a session on the fake tracer with one fake process,
// fakePID, whose symbols are sym (rawSymbols when nil) and memory mem.
func startFake(t *testing.T, ctx context.Context, o Options, f *fakeTracer) *Session {
	t.Helper()
	return startFakeWith(t, ctx, o, f, nil, nil)
}

func startFakeWith(t *testing.T, ctx context.Context, o Options, f *fakeTracer, sym procSymbols, mem memReader) *Session {
	t.Helper()
	probes := map[string]bool{ProbeFutex: true}
	if o.Probes != nil {
		var err error
		if probes, err = probeSet(o.Probes); err != nil {
			t.Fatal(err)
		}
	}
	o.PID = fakePID
	o.History = time.Minute
	o = o.withDefaults()
	s := newSession(o, tracerConfig{probes: probes})
	s.drainEvery = 10 * time.Millisecond
	s.deltaEvery = 20 * time.Millisecond
	s.clk = clock{mono: monotonicNow(), wall: time.Now()}
	s.run.meta = recording.Meta{Source: recording.SourceLive, PID: fakePID}
	s.launch(ctx, f, rawKernel{})
	if sym == nil {
		sym = rawSymbols{}
	}
	s.res.addProcess(fakePID, sym)
	// As join does: the session may already be ending (finish reads
	// the processes to silence them).
	s.run.mu.Lock()
	s.run.procs[fakePID] = &targetProc{pid: fakePID, alive: true, sym: sym, mem: mem, proc: recording.Process{PID: fakePID}}
	s.run.mu.Unlock()
	return s
}

func encodeEvent(e rawEvent) []byte {
	b := make([]byte, rawEventSize)
	le := binary.LittleEndian
	b[0], b[1] = e.Kind, e.Op
	le.PutUint16(b[2:], e.Sys)
	le.PutUint32(b[4:], e.PID)
	le.PutUint32(b[8:], e.TID)
	le.PutUint32(b[12:], e.Peer)
	le.PutUint64(b[16:], e.Stack)
	le.PutUint64(b[24:], e.TS)
	le.PutUint64(b[32:], e.Dur)
	le.PutUint64(b[40:], e.Addr)
	return b
}

// waitUntil waits for cond, checked every few milliseconds, and fails
// the test when it does not hold within a deadline generous enough for a
// machine whose CPUs are busy with other work: the tests wait for what
// they assert to have happened, never for a fixed time.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testbin.WaitUntil(t, what, cond)
}

// drainCount returns how many times the session drained the fake tracer.
func (f *fakeTracer) drainCount() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drains
}

func waitCount(r *recording.Recording) int64 {
	var n int64
	for _, s := range r.Profile(recording.ViewFutexWait).Sample {
		n += s.Value[0]
	}
	return n
}

func TestSessionSnapshotWindows(t *testing.T) {
	f := newFakeTracer()
	s := startFake(t, context.Background(), Options{}, f)
	f.recs <- encodeEvent(rawEvent{Kind: kindWait, PID: fakePID, TID: 7, Peer: 8, Stack: 33, TS: s.clk.mono + uint64(5*time.Millisecond), Dur: 3000, Addr: 0xabc})
	f.recs <- []byte{kindWait, 1, 2} // malformed
	// A run of 600ms or more, then one more drain, so that the latest
	// window holds a wait (the fake tracer adds one at every drain)
	// however late the drains run on a busy machine.
	waitUntil(t, "a 600ms run", func() bool { return time.Since(s.clk.wall) >= 600*time.Millisecond })
	n := f.drainCount()
	waitUntil(t, "a drain after 600ms", func() bool { return f.drainCount() > n+1 })

	whole := s.Snapshot(0)
	win := s.Snapshot(50 * time.Millisecond)
	if whole.Meta.Start != s.clk.wall {
		t.Errorf("whole-run snapshot starts at %s, want the session start", whole.Meta.Start)
	}
	// Windows are made of 20ms deltas, drained every 10ms: a 50ms window
	// covers at least 50ms less one delta, and on a busy machine (late
	// drains) somewhat more than 50ms, but far from the whole run.
	if win.Meta.Duration < 30*time.Millisecond || win.Meta.Duration > whole.Meta.Duration/2 {
		t.Errorf("50ms window covers %s of a %s run", win.Meta.Duration, whole.Meta.Duration)
	}
	if !win.Meta.Start.After(whole.Meta.Start) {
		t.Error("window does not start after the session")
	}
	all, last := waitCount(whole), waitCount(win)
	if all < 5 || last < 1 || last >= all {
		t.Errorf("waits: %d in the whole run, %d in the last 50ms", all, last)
	}
	if len(win.Locks) != 1 || win.Locks[0].Waits != uint64(last) {
		t.Errorf("window locks %+v, want %d waits", win.Locks, last)
	}
	if len(win.Events) != 0 {
		t.Errorf("window holds %d events from before it", len(win.Events))
	}

	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Stop(); again != rec {
		t.Error("second Stop built another recording")
	}
	if !f.detached || !f.closed || !f.silenced {
		t.Errorf("silenced %v detached %v closed %v after Stop", f.silenced, f.detached, f.closed)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done open after Stop")
	}
	if rec.Meta.Partial {
		t.Errorf("open-ended session marked partial: %s", rec.Meta.PartialReason)
	}
	if len(rec.Events) != 1 || rec.Events[0].T != int64(5*time.Millisecond) || rec.Events[0].Peer != 8 || rec.Events[0].PID != fakePID {
		t.Errorf("events %+v, want one wait at 5ms", rec.Events)
	}
	for _, c := range []string{"ev_futex_wait", "drop_stack_user", "drop_ringbuf_event", "drop_record_malformed", "drop_event_log_full", "info_window_received"} {
		if _, ok := rec.Meta.Counters[c]; !ok {
			t.Errorf("counter %s missing", c)
		}
	}
	if rec.Meta.Counters["drop_record_malformed"] != 1 {
		t.Errorf("malformed records %d, want 1", rec.Meta.Counters["drop_record_malformed"])
	}
	st := s.Stats()
	if st.Events != rec.Meta.Counters["ev_futex_wait"] || st.TargetExited || st.Elapsed < 300*time.Millisecond {
		t.Errorf("stats %+v", st)
	}
	// After Stop, snapshots come from the last drain.
	if after := s.Snapshot(0); waitCount(after) != waitCount(rec) {
		t.Errorf("snapshot after Stop: %d waits, Stop's recording %d", waitCount(after), waitCount(rec))
	}
}

func TestSessionEnds(t *testing.T) {
	t.Run("duration", func(t *testing.T) {
		f := newFakeTracer()
		s := startFake(t, context.Background(), Options{Duration: 100 * time.Millisecond}, f)
		select {
		case <-s.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("session outlived its duration")
		}
		rec, err := s.Stop()
		if err != nil || rec.Meta.Partial {
			t.Errorf("Stop = partial %v (%s), %v", rec.Meta.Partial, rec.Meta.PartialReason, err)
		}
		// At least the duration asked for; the end can come late on a
		// busy machine, but well before the bound of the wait for Done.
		if d := rec.Meta.Duration; d < 100*time.Millisecond || d > 5*time.Second {
			t.Errorf("duration %s, want 100ms or a little more", d)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := newFakeTracer()
		s := startFake(t, ctx, Options{Duration: time.Minute}, f)
		time.Sleep(50 * time.Millisecond)
		cancel()
		select {
		case <-s.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("session ignored the cancelled context")
		}
		rec, _ := s.Stop()
		if !rec.Meta.Partial || !strings.Contains(rec.Meta.PartialReason, "stopped after") {
			t.Errorf("cancelled 1m recording: partial %v (%q)", rec.Meta.Partial, rec.Meta.PartialReason)
		}
	})
	t.Run("drain error", func(t *testing.T) {
		f := newFakeTracer()
		f.failAt = 3
		s := startFake(t, context.Background(), Options{}, f)
		select {
		case <-s.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("session went on after a failed drain")
		}
		rec, err := s.Stop()
		if err == nil || rec == nil || !rec.Meta.Partial || !strings.Contains(rec.Meta.PartialReason, "map read failed") {
			t.Errorf("Stop after a failed drain = %v; partial %v (%q)", err, rec != nil && rec.Meta.Partial, rec.Meta.PartialReason)
		}
	})
}

func TestProbeSetAndDefaults(t *testing.T) {
	if _, err := probeSet([]string{"futex", "bogus"}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown family: %v", err)
	}
	if _, err := probeSet([]string{}); err == nil {
		t.Error("empty family list accepted")
	}
	o := Options{PID: 12}.withDefaults()
	if o.StackThreshold != DefaultStackThreshold || o.OnCPUHz != DefaultOnCPUHz || len(o.Probes) != len(AllProbes) {
		t.Errorf("defaults %+v", o)
	}
	if len(o.Target.PIDs) != 1 || o.Target.PIDs[0] != 12 {
		t.Errorf("PID 12 gives target %+v", o.Target)
	}
	if o := (Options{PID: 12, Target: Target{Comm: "x"}}).withDefaults(); len(o.Target.PIDs) != 0 {
		t.Errorf("PID overrode a target: %+v", o.Target)
	}
}

func TestPartialReason(t *testing.T) {
	for _, tc := range []struct {
		kind      int
		endAt     time.Duration
		want      time.Duration
		err       error
		partial   bool
		reasonHas string
	}{
		{endDuration, 10 * time.Second, 10 * time.Second, nil, false, ""},
		{endStopped, 3 * time.Second, 0, nil, false, ""},
		{endInterrupted, 3 * time.Second, 10 * time.Second, nil, true, "stopped after 3s of 10s"},
		{endExited, 2 * time.Second, 10 * time.Second, nil, true, "target exited after 2s of 10s"},
		{endExited, 2 * time.Second, 0, nil, true, "target exited after 2s"},
		{endError, time.Second, 0, errors.New("boom"), true, "boom"},
	} {
		s := newSession(Options{Duration: tc.want, Target: Target{PIDs: []int{1}}}, tracerConfig{})
		p, r := s.partial(tc.kind, tc.endAt, tc.err)
		if p != tc.partial || !strings.Contains(r, tc.reasonHas) {
			t.Errorf("partial(%d, %s, %s, %v) = %v, %q", tc.kind, tc.endAt, tc.want, tc.err, p, r)
		}
	}
}

func TestSessionEventsSince(t *testing.T) {
	f := newFakeTracer()
	s := startFake(t, context.Background(), Options{}, f)
	defer s.Stop()
	wait := func(tid uint32, at time.Duration) []byte {
		return encodeEvent(rawEvent{Kind: kindWait, PID: fakePID, TID: tid, Peer: 8, Stack: 33, TS: s.clk.mono + uint64(at), Dur: 3000, Addr: 0xabc})
	}
	f.recs <- wait(7, 5*time.Millisecond)
	f.recs <- wait(9, 2*time.Millisecond)
	waitUntil(t, "the two waits logged", func() bool { return len(s.EventsSince(0, 0).Events) >= 2 })
	if one := s.EventsSince(0, 1); len(one.Events) != 1 || one.Events[0].TID != 7 || one.Next != 1 {
		t.Errorf("first event alone: %+v, want the first logged, next 1", one)
	}
	b := s.EventsSince(0, 0)
	if len(b.Events) != 2 || b.Events[0].TID != 9 || b.Events[0].T != int64(2*time.Millisecond) || b.Next != 2 || b.Oldest != 0 || !b.Origin.Equal(s.clk.wall) {
		t.Fatalf("first batch %+v, want the two waits in time order from the origin, next 2", b)
	}
	if again := s.EventsSince(b.Next, 0); len(again.Events) != 0 || again.Next != 2 {
		t.Errorf("nothing new: %+v", again)
	}
	f.recs <- wait(11, 50*time.Millisecond)
	waitUntil(t, "the third wait logged", func() bool { return len(s.EventsSince(2, 0).Events) >= 1 })
	if b := s.EventsSince(2, 0); len(b.Events) != 1 || b.Events[0].TID != 11 || b.Next != 3 {
		t.Errorf("second batch %+v, want the one new wait", b)
	}
	// The views are built as by Snapshot (the fake tracer adds waits at
	// every drain); the events are left out.
	if rec := s.SnapshotNoEvents(0); len(rec.Events) != 0 || rec.Stacks == nil || waitCount(rec) == 0 {
		t.Errorf("SnapshotNoEvents: %d events, %d waits; want no event and the views", len(rec.Events), waitCount(rec))
	}
}
