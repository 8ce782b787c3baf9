package collector

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contend-dev/contend/recording"
)

func TestSliceTimeline(t *testing.T) {
	tl := &recording.Timeline{
		Interval:   100 * time.Millisecond,
		ClockTicks: 100,
		Samples:    10,
		Threads: []recording.ThreadSeries{
			{TID: 1, Comm: "main", First: 0, States: "SSSSSSSSSS", UTime: []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, STime: make([]uint64, 10), Voluntary: make([]uint64, 10), Involuntary: make([]uint64, 10)},
			{TID: 2, Comm: "late", First: 6, States: "RRRR", UTime: []uint64{1, 2, 3, 4}, STime: make([]uint64, 4), Voluntary: make([]uint64, 4), Involuntary: make([]uint64, 4)},
			{TID: 3, Comm: "gone", First: 0, States: "DD", UTime: []uint64{0, 0}, STime: make([]uint64, 2), Voluntary: make([]uint64, 2), Involuntary: make([]uint64, 2)},
		},
	}
	// [350ms, 800ms): instants 4..7.
	got := sliceTimeline(tl, 350*time.Millisecond, 800*time.Millisecond)
	want := &recording.Timeline{
		Interval:   100 * time.Millisecond,
		ClockTicks: 100,
		Samples:    4,
		Threads: []recording.ThreadSeries{
			{TID: 1, Comm: "main", First: 0, States: "SSSS", UTime: []uint64{4, 5, 6, 7}, STime: make([]uint64, 4), Voluntary: make([]uint64, 4), Involuntary: make([]uint64, 4)},
			{TID: 2, Comm: "late", First: 2, States: "RR", UTime: []uint64{1, 2}, STime: make([]uint64, 2), Voluntary: make([]uint64, 2), Involuntary: make([]uint64, 2)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("slice (-want +got):\n%s", diff)
	}
	if full := sliceTimeline(tl, 0, time.Second); full.Samples != 10 || len(full.Threads) != 3 {
		t.Errorf("whole range: %d samples, %d threads", full.Samples, len(full.Threads))
	}
	if empty := sliceTimeline(tl, 2*time.Second, 3*time.Second); empty.Samples != 0 || len(empty.Threads) != 0 {
		t.Errorf("range past the end: %+v", empty)
	}
	if sliceTimeline(nil, 0, time.Second) != nil {
		t.Error("nil timeline")
	}
}

// TestMergeTimelines joins two processes' timelines, one of which halved
// its resolution: the other is coarsened to match.
func TestMergeTimelines(t *testing.T) {
	fine := &recording.Timeline{Interval: 100 * time.Millisecond, ClockTicks: 100, Samples: 6, Threads: []recording.ThreadSeries{
		{PID: 1, TID: 1, First: 1, States: "RSRSR", UTime: []uint64{1, 2, 3, 4, 5}, STime: []uint64{0, 0, 0, 0, 0}, Voluntary: []uint64{0, 0, 0, 0, 0}, Involuntary: []uint64{0, 0, 0, 0, 0}},
	}}
	coarse := &recording.Timeline{Interval: 200 * time.Millisecond, ClockTicks: 100, Samples: 3, DroppedThreads: 2, Threads: []recording.ThreadSeries{
		{PID: 2, TID: 2, First: 0, States: "SSS", UTime: []uint64{7, 7, 7}, STime: []uint64{0, 0, 0}, Voluntary: []uint64{1, 2, 3}, Involuntary: []uint64{0, 0, 0}},
	}}
	m := mergeTimelines([]*recording.Timeline{fine, coarse})
	if m.Interval != 200*time.Millisecond || m.Samples != 3 || m.DroppedThreads != 2 || len(m.Threads) != 2 {
		t.Fatalf("merged %+v", m)
	}
	// The fine series had instants 1..5: 2 and 4 stay, as 1 and 2.
	if s := m.Threads[0]; s.First != 1 || s.States != "SS" || s.UTime[0] != 2 || s.UTime[1] != 4 {
		t.Errorf("coarsened series %+v", s)
	}
	if one := mergeTimelines([]*recording.Timeline{fine}); one != fine {
		t.Error("one timeline is returned as it is")
	}
}
