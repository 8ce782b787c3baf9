package collector

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contend-dev/contend/recording"
)

func TestClock(t *testing.T) {
	wall := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := clock{mono: 5_000_000_000, wall: wall}
	if got := c.since(5_250_000_000); got != 250*time.Millisecond {
		t.Errorf("since = %s", got)
	}
	if got := c.since(4_000_000_000); got != -time.Second {
		t.Errorf("since before the origin = %s, want -1s", got)
	}
	if got := c.at(2 * time.Second); got != 7_000_000_000 {
		t.Errorf("at = %d", got)
	}
	if got := c.wallAt(1500 * time.Millisecond); !got.Equal(wall.Add(1500 * time.Millisecond)) {
		t.Errorf("wallAt = %s", got)
	}
}

func TestBuildEvents(t *testing.T) {
	src := &fakeStacks{
		user:   map[uint64][]recording.Frame{33: frames("app", "lockit", "main")},
		events: map[evKey][]recording.Frame{{tid: 11, ts: 1500}: frames("app", "lockit", "caller", "main")},
	}
	raw := []rawEvent{
		{Kind: kindWakeup, TID: 0, Peer: 12, Addr: 9, Stack: stackNone, TS: 1700},
		{Kind: kindWait, Op: opWait, PID: 9, TID: 11, Peer: 12, Stack: 33, TS: 1500, Dur: 300, Addr: 0xabc},
		{Kind: kindWait, PID: 9, TID: 13, Peer: 12, Stack: 33, TS: 1600, Dur: 50, Addr: 0xabc},
		{Kind: kindWake, PID: 9, TID: 12, Peer: 2, Stack: stackNone, TS: 1650, Addr: 0xabc},
		{Kind: kindIO, Sys: 74, PID: 9, TID: 12, Stack: stackLost, TS: 1200, Dur: 400},
		{Kind: kindRunq, PID: 9, TID: 14, Stack: 33, TS: 1100, Dur: 900},
		{Kind: kindDSleep, PID: 9, TID: 14, Stack: stackNone, TS: 1000, Dur: 100},
		{Kind: kindWait, TID: 11, TS: 999},  // before the window
		{Kind: kindWait, TID: 11, TS: 2000}, // at its end (excluded)
		{Kind: 99, TID: 11, TS: 1300},       // unknown kind
	}
	each := func(fn func(*rawEvent)) {
		for i := range raw {
			fn(&raw[i])
		}
	}
	evs, stacks := buildEvents(each, len(raw), 1000, 2000, src, nil)
	want := []recording.Event{
		{Kind: recording.EventDSleep, T: 0, Dur: 100, PID: 9, TID: 14, Stack: -1},
		{Kind: recording.EventRunq, T: 100, Dur: 900, PID: 9, TID: 14, Stack: 1},
		{Kind: recording.EventIO, T: 200, Dur: 400, PID: 9, TID: 12, Syscall: "fsync", Stack: -1},
		{Kind: recording.EventWait, T: 500, Dur: 300, PID: 9, TID: 11, Peer: 12, Addr: 0xabc, Stack: 0},
		{Kind: recording.EventWait, T: 600, Dur: 50, PID: 9, TID: 13, Peer: 12, Addr: 0xabc, Stack: 1},
		{Kind: recording.EventWake, T: 650, PID: 9, TID: 12, Peer: 2, Addr: 0xabc, Stack: -1},
		{Kind: recording.EventWakeup, T: 700, TID: 0, Peer: 12, PeerPID: 9, Stack: -1},
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// The first wait has its own window; the others share stack 33.
	if len(stacks) != 2 || stacks[0].Frames[1].Func != "caller" || stacks[1].Frames[1].Func != "main" {
		t.Errorf("stacks = %+v", stacks)
	}
}

// TestEventLogBounded checks that the log keeps the most recent
// maxEvents events, oldest first, and counts the ones it let go.
func TestEventLogBounded(t *testing.T) {
	var l eventLog
	for i := 0; i < maxEvents+3; i++ {
		l.add(rawEvent{TS: uint64(i + 1)})
	}
	// The first chunk went when the log overflowed.
	if l.n > maxEvents || l.n < maxEvents-eventChunk || l.evicted != eventChunk {
		t.Fatalf("log holds %d events, evicted %d; want at most %d, evicted %d", l.n, l.evicted, maxEvents, eventChunk)
	}
	all := l.between(0, ^uint64(0))
	if len(all) != l.n || all[0].TS != eventChunk+1 || all[len(all)-1].TS != maxEvents+3 {
		t.Errorf("events %d, first %d, last %d; want %d from %d to %d", len(all), all[0].TS, all[len(all)-1].TS, l.n, eventChunk+1, maxEvents+3)
	}
	if got := l.between(eventChunk+10, eventChunk+13); len(got) != 3 || got[0].TS != eventChunk+10 {
		t.Errorf("between = %v", got)
	}
	var n int
	l.consume(func(*rawEvent) { n++ })
	if n != len(all) || l.n != 0 || len(l.chunks) != 0 {
		t.Errorf("consume read %d events and left %d in %d chunks", n, l.n, len(l.chunks))
	}
}

// A log asked for fewer events (Options.MaxEvents) holds at most that
// many, the most recent; a bound of 0 or past maxEvents is maxEvents, and
// one below a few chunks is raised to them.
func TestEventLogSmallerBound(t *testing.T) {
	const want = 60000
	l := eventLog{max: want}
	for i := 0; i < 3*want; i++ {
		l.add(rawEvent{TS: uint64(i + 1)})
	}
	if l.n > want || l.n < want-eventChunk {
		t.Fatalf("log bounded at %d holds %d events, want at most %d and more than %d", want, l.n, want, want-eventChunk)
	}
	if all := l.between(0, ^uint64(0)); all[len(all)-1].TS != 3*want || l.evicted != uint64(3*want-l.n) {
		t.Errorf("last event %d, evicted %d; want the last, %d, kept and %d evicted", all[len(all)-1].TS, l.evicted, 3*want, 3*want-l.n)
	}
	for n, b := range map[int]int{0: maxEvents, -1: maxEvents, 2 * maxEvents: maxEvents, 1: 4 * eventChunk, want: want} {
		if got := (&eventLog{max: n}).bound(); got != b {
			t.Errorf("bound of a log asked for %d events = %d, want %d", n, got, b)
		}
	}
}
