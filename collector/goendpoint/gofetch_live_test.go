package goendpoint

import (
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/collector/goendpoint/goendpointtest"
	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// liveFetch starts a fetch with short periods, as a session's would be.
func liveFetch(t *testing.T, url string, dur time.Duration) *Fetcher {
	t.Helper()
	g, err := Start(t.Context(), Options{URL: url, Duration: dur, LiveEvery: 100 * time.Millisecond, CPUChunk: time.Second, DumpEvery: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGoFetchLiveWindows(t *testing.T) {
	e, url := goendpointtest.NewGrowing(t)
	g := liveFetch(t, url, 0)
	// Before Live: the base only, nothing to subtract, no dump yet,
	// however long Live is in coming.
	testbin.WaitUntil(t, "the base fetched", func() bool { return e.Count("mutex") >= 1 })
	early := g.Window(g.start, time.Now())
	if early.Profiles[recording.ViewGoMutex] != nil || len(early.Goroutines) != 0 || e.Count("mutex") != 1 {
		t.Errorf("before Live: profiles %v, %d dumps, %d mutex fetches", early.Profiles, len(early.Goroutines), e.Count("mutex"))
	}
	g.Live()
	g.Live() // idempotent
	// Live fetches for 1.5s or more, three dumps and the first CPU part,
	// however late the fetches run on a busy machine.
	var now time.Time
	var whole *Profiles
	testbin.WaitUntil(t, "1.5s of live fetches, three dumps and the first 1s CPU part", func() bool {
		now = time.Now()
		whole = g.Window(g.start, now)
		m, c := whole.Profiles[recording.ViewGoMutex], whole.Profiles[recording.ViewGoCPU]
		return m != nil && m.DurationNanos >= int64(1500*time.Millisecond) && c != nil && c.DurationNanos >= int64(time.Second) && e.Count("goroutine") >= 3
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
	if len(win.Goroutines) != 1 || !strings.Contains(string(win.Goroutines[0].Raw), "main.main") || e.Count("goroutine") < 3 {
		t.Errorf("%d dumps in the window, %d fetched", len(win.Goroutines), e.Count("goroutine"))
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
	fetches := e.Count("mutex")
	time.Sleep(300 * time.Millisecond)
	if n := e.Count("mutex"); n != fetches {
		t.Errorf("%d mutex fetches after Stop returned", n-fetches)
	}
	if after := g.Window(g.start, now); after.Profiles[recording.ViewGoMutex] == nil {
		t.Error("Window after Stop lost the history")
	}
	g.Live() // after Stop: does nothing
}

func TestGoFetchCPUParts(t *testing.T) {
	_, url := goendpointtest.NewGrowing(t)
	plan, err := newGoFetch(t.Context(), Options{URL: url, Duration: 2500 * time.Millisecond})
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
