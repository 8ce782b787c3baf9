package collector

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contend-dev/contend/recording"
)

// fakeTracer stands in for the kernel: every drain adds one wait of 1 µs
// to a cumulative aggregate, and records pushed by the test come out of
// run.
type fakeTracer struct {
	mu       sync.Mutex
	drains   uint64
	failAt   uint64 // drain number that fails, 0 for never
	recs     chan []byte
	flushed  chan struct{}
	once     sync.Once
	detached bool
	closed   bool
	// open is what drain reports in progress; seeded collects seed calls.
	open   []openCall
	seeded []openCall
}

func newFakeTracer() *fakeTracer {
	return &fakeTracer{recs: make(chan []byte, 16), flushed: make(chan struct{})}
}

func (f *fakeTracer) drain(s *snapshot) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.detached && f.closed {
		return errors.New("drain after close")
	}
	f.drains++
	if f.drains == f.failAt {
		return errors.New("map read failed")
	}
	s.waits[waitKey{Addr: 0xabc, TID: 7, StackID: 1, Op: opWait}] = aggVal{Count: f.drains, TotalNS: 1000 * f.drains}
	s.locks[0xabc] = lockVal{Waits: f.drains, TotalNS: 1000 * f.drains}
	s.counters["ev_futex_wait"] = f.drains
	s.counters["drop_stack_user"] = 0
	s.open = append([]openCall(nil), f.open...)
	return nil
}

func (f *fakeTracer) seed(pid int, c openCall) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seeded = append(f.seeded, c)
	return true, nil
}

func (f *fakeTracer) unseed(pid int, c openCall) error { return nil }

// openTS answers from the calls drain reports.
func (f *fakeTracer) openTS(pid int, c openCall) (uint64, bool) {
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

func (f *fakeTracer) stack(id int32) ([]uint64, error) { return []uint64{0x10, 0x20}, nil }
func (f *fakeTracer) markNamed(int32) error            { return nil }
func (f *fakeTracer) flush()                           { f.once.Do(func() { close(f.flushed) }) }
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

// startFake launches a session on the fake tracer, targeting this test
// process (which outlives it).
func startFake(t *testing.T, ctx context.Context, o Options, f *fakeTracer) *Session {
	t.Helper()
	probes := map[string]bool{ProbeFutex: true}
	if o.Probes != nil {
		var err error
		if probes, err = probeSet(o.Probes); err != nil {
			t.Fatal(err)
		}
	}
	o = o.withDefaults()
	s := newSession(o, tracerConfig{pid: os.Getpid(), probes: probes})
	s.opts.PID = os.Getpid()
	s.pollEvery = 10 * time.Millisecond
	s.clk = clock{mono: monotonicNow(), wall: time.Now()}
	s.meta = recording.Meta{Source: recording.SourceLive, PID: os.Getpid()}
	s.launch(ctx, f, rawKernel{})
	return s
}

func encodeEvent(e rawEvent) []byte {
	b := make([]byte, rawEventSize)
	le := binary.LittleEndian
	b[0], b[1] = e.Kind, e.Op
	le.PutUint16(b[2:], e.Sys)
	le.PutUint32(b[4:], e.TID)
	le.PutUint32(b[8:], e.Peer)
	le.PutUint32(b[12:], uint32(e.StackID))
	le.PutUint64(b[16:], e.TS)
	le.PutUint64(b[24:], e.Dur)
	le.PutUint64(b[32:], e.Addr)
	return b
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
	f.recs <- encodeEvent(rawEvent{Kind: kindWait, TID: 7, Peer: 8, StackID: 1, TS: s.clk.mono + uint64(5*time.Millisecond), Dur: 3000, Addr: 0xabc})
	f.recs <- []byte{kindWait, 1, 2} // malformed
	time.Sleep(300 * time.Millisecond)

	whole := s.Snapshot(0)
	win := s.Snapshot(50 * time.Millisecond)
	if whole.Meta.Start != s.clk.wall {
		t.Errorf("whole-run snapshot starts at %s, want the session start", whole.Meta.Start)
	}
	if win.Meta.Duration < 40*time.Millisecond || win.Meta.Duration > 150*time.Millisecond {
		t.Errorf("50ms window covers %s", win.Meta.Duration)
	}
	if !win.Meta.Start.After(whole.Meta.Start) {
		t.Error("window does not start after the session")
	}
	all, last := waitCount(whole), waitCount(win)
	if all < 10 || last < 1 || last >= all/2 {
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
	if !f.detached || !f.closed {
		t.Errorf("detached %v closed %v after Stop", f.detached, f.closed)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done open after Stop")
	}
	if rec.Meta.Partial {
		t.Errorf("open-ended session marked partial: %s", rec.Meta.PartialReason)
	}
	if len(rec.Events) != 1 || rec.Events[0].T != int64(5*time.Millisecond) || rec.Events[0].Peer != 8 {
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
		if d := rec.Meta.Duration; d < 100*time.Millisecond || d > time.Second {
			t.Errorf("duration %s, want about 100ms", d)
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
	o := Options{}.withDefaults()
	if o.StackThreshold != DefaultStackThreshold || o.OnCPUHz != DefaultOnCPUHz || len(o.Probes) != len(AllProbes) {
		t.Errorf("defaults %+v", o)
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
		p, r := partial(tc.kind, tc.endAt, tc.want, tc.err)
		if p != tc.partial || !strings.Contains(r, tc.reasonHas) {
			t.Errorf("partial(%d, %s, %s, %v) = %v, %q", tc.kind, tc.endAt, tc.want, tc.err, p, r)
		}
	}
}
