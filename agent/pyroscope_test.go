package agent

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/contend-dev/contend/recording"
)

// pushServer is a Pyroscope push endpoint built from Pyroscope's own API
// module: the handler decodes requests exactly as the server's does. It
// fails the first failFirst pushes with Unavailable.
type pushServer struct {
	mu        sync.Mutex
	reqs      []*pushv1.PushRequest
	failFirst int
	calls     int
	times     []time.Time
}

func (s *pushServer) Push(_ context.Context, req *connect.Request[pushv1.PushRequest]) (*connect.Response[pushv1.PushResponse], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.times = append(s.times, time.Now())
	if s.calls <= s.failFirst {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("ingester not ready"))
	}
	s.reqs = append(s.reqs, req.Msg)
	return connect.NewResponse(&pushv1.PushResponse{}), nil
}

func (s *pushServer) received() []*pushv1.PushRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*pushv1.PushRequest(nil), s.reqs...)
}

func startPushServer(t *testing.T, s *pushServer) string {
	t.Helper()
	path, h := pushv1connect.NewPusherServiceHandler(s)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sampleTotals sums each sample type of p.
func sampleTotals(p *profile.Profile) []int64 {
	out := make([]int64, len(p.SampleType))
	for _, s := range p.Sample {
		for i, v := range s.Value {
			out[i] += v
		}
	}
	return out
}

// TestPushWindow pushes one window of the stripe recording: one series
// per view, labelled by app, comm, pid and host, marked as a delta; each
// profile parses, keeps the recording's totals and has no per-thread
// labels.
func TestPushWindow(t *testing.T) {
	srv := &pushServer{}
	url := startPushServer(t, srv)
	m := NewMetrics(0)
	p := newPusher(PyroscopeOptions{URL: url, Host: "db1"}, m, t.Logf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.run(ctx)

	rec := readLive(t, "c-stripe-bad")
	proc := Process{PID: 1194, Comm: "stripe"}
	if err := p.enqueue(proc, rec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a push", func() bool { return len(srv.received()) == 1 })
	req := srv.received()[0]
	names := map[string]bool{}
	for _, s := range req.Series {
		labels := map[string]string{}
		for _, l := range s.Labels {
			labels[l.Name] = l.Value
		}
		for k, want := range map[string]string{"service_name": "stripe", "comm": "stripe", "pid": "1194", "host": "db1", "__delta__": "false"} {
			if labels[k] != want {
				t.Errorf("series %s: label %s=%q, want %q", labels["__name__"], k, labels[k], want)
			}
		}
		names[labels["__name__"]] = true
		view := map[string]recording.View{"contend_futex_wait": recording.ViewFutexWait, "contend_offcpu": recording.ViewOffCPU, "contend_oncpu": recording.ViewOnCPU}[labels["__name__"]]
		if view == "" {
			t.Errorf("unexpected profile name %q", labels["__name__"])
			continue
		}
		if len(s.Samples) != 1 {
			t.Fatalf("%s: %d samples", view, len(s.Samples))
		}
		got, err := profile.Parse(bytes.NewReader(s.Samples[0].RawProfile))
		if err != nil {
			t.Fatalf("%s: pushed profile does not parse: %v", view, err)
		}
		want := rec.Profile(view)
		if g, w := sampleTotals(got), sampleTotals(want); len(g) != len(w) || g[0] != w[0] || g[1] != w[1] {
			t.Errorf("%s: totals %v, recording's %v", view, g, w)
		}
		if got.TimeNanos != want.TimeNanos || got.DurationNanos != want.DurationNanos {
			t.Errorf("%s: window %d+%d, recording's %d+%d", view, got.TimeNanos, got.DurationNanos, want.TimeNanos, want.DurationNanos)
		}
		if len(got.Sample) > len(want.Sample) {
			t.Errorf("%s: %d samples, more than the recording's %d", view, len(got.Sample), len(want.Sample))
		}
		for _, smp := range got.Sample {
			for k := range smp.Label {
				if k != recording.LabelState {
					t.Errorf("%s: sample label %q pushed", view, k)
				}
			}
			if len(smp.NumLabel) > 0 {
				t.Errorf("%s: numeric labels %v pushed", view, smp.NumLabel)
			}
		}
	}
	if len(names) != 3 {
		t.Errorf("pushed %v, want futex-wait, off-CPU and on-CPU", names)
	}
	// The pusher counts a push once the server has answered it: after the
	// server saw the request, so wait for the count rather than read it.
	waitFor(t, "the push counted", func() bool { return testutil.ToFloat64(m.pushes) == 1 })
}

// TestPushRetriesWithBackoff: a server that refuses the first pushes gets
// them again, later each time; the failures are counted and the window is
// delivered.
func TestPushRetriesWithBackoff(t *testing.T) {
	srv := &pushServer{failFirst: 3}
	url := startPushServer(t, srv)
	m := NewMetrics(0)
	p := newPusher(PyroscopeOptions{URL: url}, m, t.Logf)
	var waits []time.Duration
	p.sleep = func(ctx context.Context, d time.Duration) {
		waits = append(waits, d)
		time.Sleep(d / 100) // the schedule is checked, not waited out
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.run(ctx)
	if err := p.enqueue(Process{PID: 7, Comm: "svc"}, readLive(t, "c-stripe-bad")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the push after the failures", func() bool { return len(srv.received()) == 1 })
	if v := testutil.ToFloat64(m.pushFailures); v != 3 {
		t.Errorf("push failures %v, want 3", v)
	}
	if len(waits) != 3 || waits[0] != backoffMin || waits[1] != 2*backoffMin || waits[2] != 4*backoffMin {
		t.Errorf("backoff %v, want 1s, 2s, 4s", waits)
	}
}

// TestPushUnreachable: with nothing listening, enqueueing never blocks,
// failures are counted, and the queue keeps only the latest windows.
func TestPushUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	m := NewMetrics(0)
	p := newPusher(PyroscopeOptions{URL: "http://" + addr}, m, t.Logf)
	p.sleep = func(ctx context.Context, d time.Duration) { time.Sleep(time.Millisecond) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.run(ctx)
	rec := readLive(t, "c-stripe-bad")
	// Enqueueing never waits for the server: a full queue drops the
	// window (4 dropped of queueLen+4 below), and a push made in line
	// would drop none. How long the windows take to convert depends on
	// the machine and the race detector, so no clock is read here.
	for range queueLen + 4 {
		if err := p.enqueue(Process{PID: 7, Comm: "svc"}, rec); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "failed pushes", func() bool { return testutil.ToFloat64(m.pushFailures) >= 3 })
	if v := testutil.ToFloat64(m.dropped); v != 4 {
		t.Errorf("dropped windows %v, want 4 (queue of %d)", v, queueLen)
	}
	if v := testutil.ToFloat64(m.pushes); v != 0 {
		t.Errorf("pushes %v with nothing listening", v)
	}
}

func TestCheckPyroscopeURL(t *testing.T) {
	for _, bad := range []string{"pyroscope:4040", "ftp://x", "http://", "://x"} {
		if CheckPyroscopeURL(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := CheckPyroscopeURL("http://pyroscope:4040"); err != nil {
		t.Error(err)
	}
}
