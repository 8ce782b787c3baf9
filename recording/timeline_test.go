package recording

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testTimeline: 5 instants 100 ms apart at 100 ticks/s.
//   - 10 runs throughout, one CPU busy in user mode (10 ticks per instant);
//   - 11 sleeps, then blocks in D, using a little system time;
//   - 12 is born at instant 2 already 3 ticks in (counts from zero);
//   - 13 exits after instant 1;
//   - 14 was not sampled at instant 3 (sampler fell behind).
func testTimeline() *Timeline {
	return &Timeline{
		Interval:   100 * time.Millisecond,
		ClockTicks: 100,
		Samples:    5,
		Threads: []ThreadSeries{
			{TID: 10, Comm: "spin", First: 0, States: "RRRRR", UTime: []uint64{100, 110, 120, 130, 140}, STime: []uint64{0, 0, 0, 0, 0}, Voluntary: []uint64{0, 0, 0, 0, 0}, Involuntary: []uint64{5, 6, 7, 8, 9}},
			{TID: 11, Comm: "io", First: 0, States: "SSDDS", UTime: []uint64{1, 1, 1, 1, 1}, STime: []uint64{4, 4, 5, 6, 6}, Voluntary: []uint64{7, 8, 9, 10, 11}, Involuntary: []uint64{0, 0, 0, 0, 0}},
			{TID: 12, Comm: "late", First: 2, States: "RSS", UTime: []uint64{3, 5, 5}, STime: []uint64{0, 0, 0}, Voluntary: []uint64{1, 2, 3}, Involuntary: []uint64{0, 0, 0}},
			{TID: 13, Comm: "gone", First: 0, States: "SR", UTime: []uint64{50, 52}, STime: []uint64{0, 0}, Voluntary: []uint64{3, 4}, Involuntary: []uint64{1, 1}},
			{TID: 14, Comm: "slow", First: 0, States: "TTT?T", UTime: []uint64{0, 0, 0, 0, 0}, STime: []uint64{0, 0, 0, 0, 0}, Voluntary: []uint64{0, 0, 0, 0, 0}, Involuntary: []uint64{0, 0, 0, 0, 0}},
		},
	}
}

func TestStatesAt(t *testing.T) {
	tl := testTimeline()
	for _, tc := range []struct {
		i    int
		want StateCounts
	}{
		{0, StateCounts{Threads: 4, Runnable: 1, Sleeping: 2, Other: 1}},
		{1, StateCounts{Threads: 4, Runnable: 2, Sleeping: 1, Other: 1}},
		{2, StateCounts{Threads: 4, Runnable: 2, Uninterruptible: 1, Other: 1}},
		{3, StateCounts{Threads: 4, Runnable: 1, Sleeping: 1, Uninterruptible: 1, Unsampled: 1}},
		{4, StateCounts{Threads: 4, Runnable: 1, Sleeping: 2, Other: 1}},
		{5, StateCounts{}},
		{-1, StateCounts{}},
	} {
		if diff := cmp.Diff(tc.want, tl.StatesAt(tc.i)); diff != "" {
			t.Errorf("StatesAt(%d) (-want +got):\n%s", tc.i, diff)
		}
		if got := tl.ThreadCount(tc.i); got != tc.want.Threads {
			t.Errorf("ThreadCount(%d) = %d, want %d", tc.i, got, tc.want.Threads)
		}
	}
	var nilTL *Timeline
	if nilTL.StatesAt(0) != (StateCounts{}) || nilTL.LastInstant() != -1 || nilTL.RunnableSeries() != nil {
		t.Error("nil timeline is not empty")
	}
}

func TestRunnableSeries(t *testing.T) {
	if diff := cmp.Diff([]int{1, 2, 2, 1, 1}, testTimeline().RunnableSeries()); diff != "" {
		t.Errorf("RunnableSeries (-want +got):\n%s", diff)
	}
}

func TestUsage(t *testing.T) {
	tl := testTimeline()
	want := []ThreadUsage{
		{TID: 10, Comm: "spin", UTime: 30, Involuntary: 3},
		{TID: 12, Comm: "late", UTime: 5, Voluntary: 3},
		{TID: 11, Comm: "io", STime: 2, Voluntary: 3},
		{TID: 13, Comm: "gone"}, // alive at 1, gone after: nothing since
		{TID: 14, Comm: "slow"},
	}
	if diff := cmp.Diff(want, tl.Usage(1, 4)); diff != "" {
		t.Errorf("Usage(1, 4) (-want +got):\n%s", diff)
	}
	// 13 ended at instant 1: over [0, 4] it counts up to its last sample.
	for _, u := range tl.Usage(0, 4) {
		if u.TID == 13 && u.UTime != 2 {
			t.Errorf("exited thread usage = %+v, want 2 user ticks", u)
		}
	}
	if tl.Usage(3, 3) != nil || tl.Usage(4, 1) != nil {
		t.Error("empty or inverted window has usage")
	}
}

func TestCPUPercent(t *testing.T) {
	tl := testTimeline()
	// [1, 4]: 30+5+2 ticks = 0.37 s over 0.3 s of wall time.
	if got := tl.CPUPercent(1, 4); math.Abs(got-123.333) > 0.01 {
		t.Errorf("CPUPercent(1, 4) = %.3f, want 123.333", got)
	}
	// A window of only the spinner's instants [0, 1]: 10 + 2 (thread 13)
	// ticks = 0.12 s over 0.1 s.
	if got := tl.CPUPercent(0, 1); math.Abs(got-120) > 0.01 {
		t.Errorf("CPUPercent(0, 1) = %.3f, want 120", got)
	}
	if got := tl.CPUPercent(2, 2); got != 0 {
		t.Errorf("empty window CPU = %v", got)
	}
	tl.ClockTicks = 0 // written without the field: USER_HZ 100
	if got := tl.Seconds(250); got != 2.5 {
		t.Errorf("Seconds(250) = %v, want 2.5", got)
	}
}

func TestWindow(t *testing.T) {
	tl := testTimeline()
	for _, tc := range []struct {
		d        time.Duration
		from, to int
	}{
		{time.Second, 0, 4},
		{200 * time.Millisecond, 2, 4},
		{time.Millisecond, 3, 4},
	} {
		from, to, ok := tl.Window(tc.d)
		if !ok || from != tc.from || to != tc.to {
			t.Errorf("Window(%v) = %d, %d, %v; want %d, %d", tc.d, from, to, ok, tc.from, tc.to)
		}
	}
	if _, _, ok := (&Timeline{Samples: 1, Interval: time.Second}).Window(time.Second); ok {
		t.Error("a single sample makes a window")
	}
}

func TestStateCategory(t *testing.T) {
	for letter, want := range map[byte]string{'R': StateRunnable, 'S': StateSleeping, 'I': StateSleeping, 'D': StateUninterruptible, 'T': StateOther, 'Z': StateOther, NotSampled: ""} {
		if got := StateCategory(letter); got != want {
			t.Errorf("StateCategory(%c) = %q, want %q", letter, got, want)
		}
	}
}
