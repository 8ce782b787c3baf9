package analyzer

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/analyzer/live"
	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
	"github.com/google/pprof/profile"
)

// Tests of the analysis's bounds against recordings whose fields lie
// (issue 33, rows 5 and 7).

// readLive reads a committed live recording.
func readLive(t testing.TB, name string) *recording.Recording {
	t.Helper()
	rec, err := recording.Read(filepath.Join("testdata", "live", name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return rec
}

// Row 5: compare on a recording whose meta.json says duration_ns is
// MaxInt64 or 1e18 panicked in LockSeries (makeslice) or allocated 8 GB.
// Analyze refuses such a duration with the figure, and the exported
// series functions, called on the recording directly, return nothing
// instead of allocating.
func TestLyingDurationIsRefused(t *testing.T) {
	rec := readLive(t, "c-stripe-bad")
	good, err := Analyze(rec, Options{})
	if err != nil {
		t.Fatalf("Analyze of the recording as made: %v", err)
	}
	real := rec.Meta.Duration
	for _, d := range []time.Duration{math.MaxInt64, 1e18, core.MaxRecordingDuration + 1, -1, math.MinInt64} {
		t.Run(strconv.FormatInt(int64(d), 10), func(t *testing.T) {
			rec.Meta.Duration = d
			defer func() { rec.Meta.Duration = real }()
			res, err := Analyze(rec, Options{})
			if err == nil || res != nil {
				t.Fatalf("Analyze with duration_ns %d: result %v, error %v; want it refused", int64(d), res != nil, err)
			}
			if !errors.Is(err, recording.ErrInvalid) || !strings.Contains(err.Error(), strconv.FormatInt(int64(d), 10)) {
				t.Errorf("error %q: want recording.ErrInvalid and the figure", err)
			}
			var s live.Series
			if a := testbin.Allocated(func() { s = live.SeriesOf(rec, good, time.Second) }); a > 64<<20 {
				t.Errorf("SeriesOf allocated %d MiB", a>>20)
			}
			// Past a month but within maxSeriesWindows seconds the
			// series is bounded; beyond, it is refused with a note.
			if len(s.LockWaiting) > core.MaxSeriesWindows {
				t.Errorf("SeriesOf: %d lock windows", len(s.LockWaiting))
			}
			if d > core.MaxSeriesWindows*time.Second && (s.LockWaiting != nil || !strings.Contains(s.Note, "windows")) {
				t.Errorf("SeriesOf: %d lock windows, note %q: want the window count refused", len(s.LockWaiting), s.Note)
			}
			if l := live.LockSeries(rec, []uint64{1}, 1, time.Second); len(l) > core.MaxSeriesWindows || (d > core.MaxSeriesWindows*time.Second && l != nil) {
				t.Errorf("LockSeries: %d windows", len(l))
			}
		})
	}
	rec.Meta.Duration = 0
	res, err := Analyze(rec, Options{})
	rec.Meta.Duration = real
	if err != nil || !strings.Contains(strings.Join(res.Notes, "\n"), "duration_ns 0") {
		t.Errorf("duration 0: error %v; want a note saying so", err)
	}
}

// Row 5: a threads.json of 2^22 sample instants (the most
// recording.Read accepts) with a few thousand threads hung compare: the
// thread count per instant and the CPU per window went over every thread
// at every instant. Each is now one pass; the test times out if not.
func TestTimelineOfMostInstants(t *testing.T) {
	rec := readLive(t, "c-stripe-bad")
	tl := *rec.Threads
	tl.Samples = recording.MaxTimelineSamples
	tl.Threads = append([]recording.ThreadSeries(nil), tl.Threads...)
	for i := range 2000 {
		tl.Threads = append(tl.Threads, recording.ThreadSeries{TID: 100000 + i, Comm: "x", First: i * 2000, States: "SS", UTime: []uint64{1, 2}, STime: []uint64{0, 0}})
	}
	rec.Threads = &tl
	var res *core.Result
	var err error
	if a := testbin.Allocated(func() { res, err = Analyze(rec, Options{}) }); a > 1<<30 {
		t.Errorf("Analyze allocated %d MiB", a>>20)
	}
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	var s live.Series
	if a := testbin.Allocated(func() { s = live.SeriesOf(rec, res, time.Second) }); a > 512<<20 {
		t.Errorf("SeriesOf allocated %d MiB", a>>20)
	}
	per := int(time.Second / tl.Interval)
	if want := (tl.Samples - 1 - live.Settled(&tl) + per - 1) / per; len(s.CPUs) != want || len(s.Runnable) != want {
		t.Errorf("%d CPU and %d runnable windows, want %d", len(s.CPUs), len(s.Runnable), want)
	}
	tl.Samples = recording.MaxTimelineSamples + 1
	if _, err := Analyze(rec, Options{}); !errors.Is(err, recording.ErrInvalid) {
		t.Errorf("timeline of %d instants: error %v, want it refused", tl.Samples, err)
	}
}

// The series are computed in one pass now; they must give what the
// timeline's own window functions give, and what spreading every wait
// window by window gives.
func TestSeriesMatchTimeline(t *testing.T) {
	for _, name := range []string{"c-stripe-bad", "go-lockedspin-threads-bad", "c-writer-bad"} {
		rec := readLive(t, name)
		res, err := Analyze(rec, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, window := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second} {
			s := live.SeriesOf(rec, res, window)
			tl := rec.Threads
			per := max(int(window/tl.Interval), 1)
			k := 0
			for from := live.Settled(tl); from+1 < tl.Samples; from += per {
				to := min(from+per, tl.Samples-1)
				if k >= len(s.CPUs) || math.Abs(s.CPUs[k]-tl.CPUPercent(from, to)/100) > 1e-9 {
					t.Fatalf("%s window %v #%d: CPUs %v, timeline says %v", name, window, k, s.CPUs, tl.CPUPercent(from, to)/100)
				}
				k++
			}
			if k != len(s.CPUs) {
				t.Errorf("%s: %d CPU windows, want %d", name, len(s.CPUs), k)
			}
			var addrs []uint64
			var total float64
			for _, l := range res.Locks {
				if !l.Idle {
					addrs = append(addrs, live.LockAddrs(l.Lock)...)
					total += l.WaitSeconds
				}
			}
			got, want := live.LockSeries(rec, addrs, total, window), naiveLockSeries(rec, addrs, total, window)
			if len(got) != len(want) {
				t.Fatalf("%s: %d lock windows, want %d", name, len(got), len(want))
			}
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-9*math.Max(1, math.Abs(want[i])) {
					t.Errorf("%s window %v #%d: %v, want %v", name, window, i, got[i], want[i])
				}
			}
		}
	}
}

// naiveLockSeries spreads each wait window by window, as LockSeries did
// before it used a difference array.
func naiveLockSeries(rec *recording.Recording, addrs []uint64, totalWait float64, window time.Duration) []float64 {
	n := int((rec.Meta.Duration + window - 1) / window)
	want := map[uint64]bool{}
	for _, a := range addrs {
		want[a] = true
	}
	sums := make([]float64, n)
	var logged float64
	w := int64(window)
	for _, e := range rec.Events {
		if e.Kind != recording.EventWait || !want[e.Addr] || e.Dur <= 0 {
			continue
		}
		for t := e.T; t < e.End(); {
			i := int(t / w)
			if i < 0 || i >= n {
				break
			}
			end := min(e.End(), int64(i+1)*w)
			sums[i] += float64(end - t)
			logged += float64(end - t)
			t = end
		}
	}
	if logged == 0 {
		return nil
	}
	for i := range sums {
		sums[i] = sums[i] * totalWait / logged / live.WindowSeconds(rec, i, window)
	}
	if len(sums) >= 4 {
		sums = sums[1 : len(sums)-1]
	}
	return sums
}

// deepBlockProfile builds the block profile of row 7: n samples, each a
// distinct leaf (app.waitI, under sync.Mutex.Lock) above depth-2 frames
// of one recursive function. The samples share one array of locations,
// so the test holds a few MB whatever the depth.
func deepBlockProfile(n, depth int) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "contentions", Unit: "count"},
		Period:     1,
	}
	loc := func(name string, line int64) *profile.Location {
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: "/src/app/app.go"}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Address: uint64(0x1000 + len(p.Location)), Line: []profile.Line{{Function: f, Line: line}}}
		p.Function, p.Location = append(p.Function, f), append(p.Location, l)
		return l
	}
	lock := loc("sync.(*Mutex).Lock", 46)
	recurse := loc("app.recurse", 7)
	// back is [lock, wait(n-1), lock, wait(n-2), …, lock, wait0,
	// recurse…]: sample i starts at its lock frame.
	back := make([]*profile.Location, 0, 2*n+depth)
	for i := n - 1; i >= 0; i-- {
		back = append(back, lock, loc(fmt.Sprintf("app.wait%d", i), int64(i+1)))
	}
	for len(back) < 2*n+depth {
		back = append(back, recurse)
	}
	for i := range n {
		start := 2 * (n - 1 - i)
		// Each sample weighs more than the last, so that every one
		// becomes its site's representative stack (newPoint).
		p.Sample = append(p.Sample, &profile.Sample{Location: back[start : start+depth], Value: []int64{int64(i + 1), int64(i+1) * 1e6}})
	}
	return p
}

// Row 7: a 370 KB block profile of 350 samples of 100,000 frames took 30 s
// and 4.2 GB in the analysis (1.1 GB in newPoint), its parse within the
// budget. The analysis keeps the 512 frames nearest the leaf, says so,
// and allocates a few MB.
func TestDeepBlockProfile(t *testing.T) {
	p := deepBlockProfile(350, 100_000)
	r := rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: p})
	var res *core.Result
	var err error
	a := testbin.Allocated(func() { res, err = Analyze(r, Options{}) })
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	// 350 kept stacks of 512 frames are 350 × 512 × 72 B = 13 MB.
	if a > 64<<20 {
		t.Errorf("Analyze allocated %d MiB for 350 stacks cut at %d frames", a>>20, core.MaxStackFrames)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), fmt.Sprintf("350 stacks were deeper than %d frames", core.MaxStackFrames)) {
		t.Errorf("notes %q: want the cut stacks counted", res.Notes)
	}
	points := 0
	check := func(what string, pt core.ProgramPoint) {
		points++
		if len(pt.Stack) > core.MaxStackFrames {
			t.Errorf("%s: a stack of %d frames kept", what, len(pt.Stack))
		}
		if !strings.HasPrefix(pt.Function, "app.wait") || len(pt.Stack) == 0 || pt.Stack[0].Func != "sync.(*Mutex).Lock" {
			t.Errorf("%s: point %s, stack from %v: want the leaf end kept", what, pt.Function, pt.Stack[:min(2, len(pt.Stack))])
		}
	}
	for _, f := range res.Findings {
		check("finding "+f.Headline, f.Point)
	}
	for _, row := range res.Points {
		check("point row", row.Point)
	}
	for _, l := range res.Locks {
		if l.Waiter != nil {
			check("lock "+l.Lock.Name, *l.Waiter)
		}
	}
	if points == 0 {
		t.Fatal("no program point from 350 lock waits")
	}
}

// A profile that expands to more frames than MaxAnalysisFrames is refused
// with the figure, before anything is expanded.
func TestTooManyFramesRefused(t *testing.T) {
	n := core.MaxAnalysisFrames/core.MaxStackFrames + 1
	r := rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: deepBlockProfile(n, core.MaxStackFrames)})
	_, err := Analyze(r, Options{})
	if !errors.Is(err, recording.ErrInvalid) || !strings.Contains(err.Error(), strconv.Itoa(n*core.MaxStackFrames)) {
		t.Fatalf("error %v: want the %d frames refused", err, n*core.MaxStackFrames)
	}
}

// A goroutine dump's deep stack is cut at the leaf end too.
func TestDeepGoroutineDump(t *testing.T) {
	d := &goprof.Dump{Kind: goprof.KindGoroutineDump}
	g := &goprof.Group{Count: 40, State: "sync.Mutex.Lock"}
	g.Frames = append(g.Frames, goprof.Frame{Func: "sync.runtime_SemacquireMutex"}, goprof.Frame{Func: "sync.(*Mutex).lockSlow"}, goprof.Frame{Func: "sync.(*Mutex).Lock"}, goprof.Frame{Func: "app.handle", File: "/src/app/h.go", Line: 3})
	for range 50_000 {
		g.Frames = append(g.Frames, goprof.Frame{Func: "app.recurse", File: "/src/app/r.go", Line: 7})
	}
	d.Groups, d.Total = []*goprof.Group{g}, 40
	res := analyze(t, rec(nil, d))
	if !strings.Contains(strings.Join(res.Notes, "\n"), "1 stacks were deeper") {
		t.Errorf("notes %q: want the cut stack counted", res.Notes)
	}
	for _, row := range res.Points {
		if len(row.Point.Stack) > core.MaxStackFrames || row.Point.Function != "app.handle" {
			t.Errorf("point %s with %d frames", row.Point.Function, len(row.Point.Stack))
		}
	}
}

// Event logs whose fields lie are refused, each with its reason.
func TestLyingEventsRefused(t *testing.T) {
	for name, ev := range map[string]recording.Event{
		"negative time":  {Kind: recording.EventWait, T: -5, Dur: 10, Stack: -1},
		"overflowing":    {Kind: recording.EventWait, T: 10, Dur: math.MaxInt64, Stack: -1},
		"missing stack":  {Kind: recording.EventWait, T: 10, Dur: 10, Stack: 7},
		"out of order":   {Kind: recording.EventWait, T: 1, Dur: 10, Stack: -1},
		"beyond a month": {Kind: recording.EventWait, T: int64(core.MaxRecordingDuration) + 1, Stack: -1},
	} {
		r := &recording.Recording{Meta: recording.Meta{Source: recording.SourceLive, Duration: time.Second},
			Events: []recording.Event{{Kind: recording.EventWake, T: 5, Stack: -1}, ev}}
		if _, err := Analyze(r, Options{}); !errors.Is(err, recording.ErrInvalid) || !strings.Contains(err.Error(), "event 1") {
			t.Errorf("%s: error %v, want event 1 refused", name, err)
		}
	}
}

// A wait whose end, read on another CPU's clock, comes out 20 ns before
// its start (c/churn under validate) is analysed as a wait of no time,
// not refused.
func TestSlightlyNegativeDurationIsNone(t *testing.T) {
	r := &recording.Recording{Meta: recording.Meta{Source: recording.SourceLive, Duration: time.Second},
		Events: []recording.Event{{Kind: recording.EventWake, T: 5, Stack: -1}, {Kind: recording.EventWait, T: 10, Dur: -20, Stack: -1}}}
	if _, err := Analyze(r, Options{}); err != nil {
		t.Fatalf("a -20 ns wait refused the recording: %v", err)
	}
	if d := r.Events[1].Dur; d != 0 {
		t.Errorf("the -20 ns wait kept duration %d, want 0", d)
	}
}
