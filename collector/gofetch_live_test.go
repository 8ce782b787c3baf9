package collector

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/recording"
)

// growingEndpoint is a fake net/http/pprof endpoint whose cumulative
// mutex and block profiles grow by one contention (of 1 µs) per
// millisecond since it started, whose CPU profile answers ?seconds=N
// after N seconds with N seconds of samples, and which serves a goroutine
// dump.
type growingEndpoint struct {
	start time.Time
	mu    sync.Mutex
	hits  map[string]int
}

func newGrowingEndpoint(t *testing.T) (*growingEndpoint, string) {
	e := &growingEndpoint{start: time.Now(), hits: map[string]int{}}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv.URL
}

func (e *growingEndpoint) count(path string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits[path]
}

func (e *growingEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/debug/pprof/")
	e.mu.Lock()
	e.hits[name]++
	e.mu.Unlock()
	switch name {
	case "mutex", "block":
		now := time.Now()
		n := int64(now.Sub(e.start) / time.Millisecond)
		p := testProfile(n, 1000*n)
		p.TimeNanos = now.UnixNano()
		p.Write(w)
	case "profile":
		secs, _ := strconv.Atoi(r.URL.Query().Get("seconds"))
		t0 := time.Now()
		select {
		case <-time.After(time.Duration(secs) * time.Second):
		case <-r.Context().Done():
			return
		}
		p := testProfile(int64(secs)*100, int64(secs)*int64(time.Second))
		p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
		p.TimeNanos, p.DurationNanos = t0.UnixNano(), int64(time.Since(t0))
		p.Write(w)
	case "goroutine":
		fmt.Fprintf(w, "goroutine 1 [running]:\nmain.main()\n\t/src/main.go:%d +0x1d\n", time.Since(e.start).Milliseconds())
	default:
		http.NotFound(w, r)
	}
}

// liveFetch starts a fetch with short periods, as a session's would be.
func liveFetch(t *testing.T, url string, dur time.Duration) *GoFetch {
	t.Helper()
	g, err := newGoFetch(t.Context(), GoFetchOptions{URL: url, Duration: dur})
	if err != nil {
		t.Fatal(err)
	}
	g.liveEvery, g.cpuChunk, g.dumpEvery = 100*time.Millisecond, time.Second, 300*time.Millisecond
	g.run()
	return g
}

func TestGoFetchLiveWindows(t *testing.T) {
	e, url := newGrowingEndpoint(t)
	g := liveFetch(t, url, 0)
	// Before Live: the base only, nothing to subtract, no dump yet,
	// however long Live is in coming.
	waitUntil(t, "the base fetched", func() bool { return e.count("mutex") >= 1 })
	early := g.Window(g.start, time.Now())
	if early.Profiles[recording.ViewGoMutex] != nil || len(early.Goroutines) != 0 || e.count("mutex") != 1 {
		t.Errorf("before Live: profiles %v, %d dumps, %d mutex fetches", early.Profiles, len(early.Goroutines), e.count("mutex"))
	}
	g.Live()
	g.Live() // idempotent
	// Live fetches for 1.5s or more, three dumps and the first CPU part,
	// however late the fetches run on a busy machine.
	var now time.Time
	var whole *GoProfiles
	waitUntil(t, "1.5s of live fetches, three dumps and the first 1s CPU part", func() bool {
		now = time.Now()
		whole = g.Window(g.start, now)
		m, c := whole.Profiles[recording.ViewGoMutex], whole.Profiles[recording.ViewGoCPU]
		return m != nil && m.DurationNanos >= int64(1500*time.Millisecond) && c != nil && c.DurationNanos >= int64(time.Second) && e.count("goroutine") >= 3
	})
	m := whole.Profiles[recording.ViewGoMutex]
	if m == nil || whole.Profiles[recording.ViewGoBlock] == nil {
		t.Fatalf("whole run: profiles %v, warnings %q", whole.Profiles, whole.Warnings)
	}
	if err := m.CheckValid(); err != nil {
		t.Fatal(err)
	}
	// One contention per millisecond of the span the delta covers.
	cover := time.Duration(m.DurationNanos)
	got := totalValue(m, 0)
	if cover < 1500*time.Millisecond || cover > now.Sub(g.start) || got < int64(cover/time.Millisecond)*9/10 || got > int64(cover/time.Millisecond)*11/10 {
		t.Errorf("whole-run delta: %d contentions over %v (run %v)", got, cover, now.Sub(g.start))
	}
	if time.Unix(0, m.TimeNanos).Sub(g.start).Abs() > 10*time.Millisecond {
		t.Errorf("whole-run delta starts %v after the fetch started", time.Unix(0, m.TimeNanos).Sub(g.start))
	}

	win := g.Window(now.Add(-500*time.Millisecond), now)
	wm := win.Profiles[recording.ViewGoMutex]
	if wm == nil {
		t.Fatal("no mutex delta for the last 500ms")
	}
	wc := time.Duration(wm.DurationNanos)
	if wc < 300*time.Millisecond || wc > 700*time.Millisecond {
		t.Errorf("500ms window: delta covers %v, want within a fetch period (100ms) and a fetch of 500ms", wc)
	}
	if n := totalValue(wm, 0); n < int64(wc/time.Millisecond)*8/10 || n > int64(wc/time.Millisecond)*12/10 {
		t.Errorf("500ms window: %d contentions over %v", n, wc)
	}
	// Dumps: one at Live, then every 300ms; the window carries the latest.
	if len(win.Goroutines) != 1 || !strings.Contains(string(win.Goroutines[0].Raw), "main.main") || e.count("goroutine") < 3 {
		t.Errorf("%d dumps in the window, %d fetched", len(win.Goroutines), e.count("goroutine"))
	}
	// The first 1s CPU part completed and overlaps both windows.
	if c := whole.Profiles[recording.ViewGoCPU]; c == nil || c.DurationNanos < int64(time.Second) {
		t.Errorf("whole-run CPU profile %v", c)
	}
	res := g.Stop()
	if res.Profiles[recording.ViewGoMutex] == nil {
		t.Errorf("Stop: no mutex delta; warnings %q", res.Warnings)
	}
	// The live fetches ended with Stop; Window still answers.
	fetches := e.count("mutex")
	time.Sleep(300 * time.Millisecond)
	if n := e.count("mutex"); n != fetches {
		t.Errorf("%d mutex fetches after Stop returned", n-fetches)
	}
	if after := g.Window(g.start, now); after.Profiles[recording.ViewGoMutex] == nil {
		t.Error("Window after Stop lost the history")
	}
	g.Live() // after Stop: does nothing
}

func TestGoFetchCPUParts(t *testing.T) {
	_, url := newGrowingEndpoint(t)
	plan, err := newGoFetch(t.Context(), GoFetchOptions{URL: url, Duration: 2500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		chunk, at time.Duration
		want      int
	}{
		{time.Second, 0, 1},
		{time.Second, 2 * time.Second, 1}, // the last half second, in whole seconds
		{time.Second, 2400 * time.Millisecond, 0},
		{5 * time.Second, 0, 3}, // cut to the end
	} {
		plan.cpuChunk = tc.chunk
		if n := plan.chunkSeconds(tc.at); n != tc.want {
			t.Errorf("%v parts of a 2.5s recording, part at %v: %ds, want %d", tc.chunk, tc.at, n, tc.want)
		}
	}
	// A 2.5s recording in 1s parts.
	g := liveFetch(t, url, 2500*time.Millisecond)
	time.Sleep(2600 * time.Millisecond)
	res := g.Stop()
	cpu := res.Profiles[recording.ViewGoCPU]
	if cpu == nil || cpu.DurationNanos < int64(2*time.Second) {
		t.Errorf("CPU profile of a 2.5s recording in parts: %v; warnings %q", cpu, res.Warnings)
	}
}

// TestSessionSnapshotGoProfiles checks that a session's snapshots carry
// the Go profiles fetched so far, and say when a delta covers more than
// the window.
func TestSessionSnapshotGoProfiles(t *testing.T) {
	_, url := newGrowingEndpoint(t)
	f := newFakeTracer()
	s := startFake(t, context.Background(), Options{}, f)
	s.gofetch = liveFetch(t, url, 0)
	first := s.Snapshot(0)
	if first.Profile(recording.ViewGoMutex) != nil {
		t.Error("a mutex delta before any live fetch")
	}
	var whole *recording.Recording
	waitUntil(t, "a snapshot with a mutex delta and a dump", func() bool {
		whole = s.Snapshot(0)
		p := whole.Profile(recording.ViewGoMutex)
		return p != nil && totalValue(p, 0) > 0 && len(whole.Goroutines) > 0
	})
	if p := whole.Profile(recording.ViewGoMutex); p == nil || totalValue(p, 0) == 0 {
		t.Fatalf("whole-run snapshot: mutex profile %v, warnings %q", p, whole.Meta.Warnings)
	}
	if len(whole.Goroutines) != 1 {
		t.Errorf("whole-run snapshot: %d dumps, want the latest", len(whole.Goroutines))
	}
	// A 50ms window is shorter than the fetch period: the delta covers
	// more, and the snapshot says so.
	win := s.Snapshot(50 * time.Millisecond)
	// The delta spans two fetches, about 100ms apart.
	if p := win.Profile(recording.ViewGoMutex); p == nil || p.DurationNanos <= 0 {
		t.Errorf("50ms window: mutex delta %v", p)
	}
	// The window the snapshot took can be longer than asked (it ends at
	// the latest poll): the note is there exactly when the delta's span
	// is off the window's by more than a quarter.
	if p := win.Profile(recording.ViewGoMutex); p != nil {
		cover, want := time.Duration(p.DurationNanos), win.Meta.Duration
		off := cover < want*3/4 || cover > want*5/4
		if noted := strings.Contains(strings.Join(win.Meta.Warnings, "\n"), "Go mutex and block profiles cover"); noted != off {
			t.Errorf("50ms window of %s, delta over %s: coverage note %v, want %v (warnings %q)", want, cover, noted, off, win.Meta.Warnings)
		}
	}
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Profile(recording.ViewGoMutex) == nil {
		t.Error("Stop's recording lacks the mutex delta")
	}
}
