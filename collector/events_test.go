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
		user:   map[int32][]recording.Frame{3: frames("app", "lockit", "main")},
		events: map[evKey][]recording.Frame{{tid: 11, ts: 1500}: frames("app", "lockit", "caller", "main")},
	}
	raw := []rawEvent{
		{Kind: kindWakeup, TID: 0, Peer: 12, StackID: stackNone, TS: 1700},
		{Kind: kindWait, Op: opWait, TID: 11, Peer: 12, StackID: 3, TS: 1500, Dur: 300, Addr: 0xabc},
		{Kind: kindWait, TID: 13, Peer: 12, StackID: 3, TS: 1600, Dur: 50, Addr: 0xabc},
		{Kind: kindWake, TID: 12, Peer: 2, StackID: stackNone, TS: 1650, Addr: 0xabc},
		{Kind: kindIO, Sys: 74, TID: 12, StackID: stackLost, TS: 1200, Dur: 400},
		{Kind: kindRunq, TID: 14, StackID: 3, TS: 1100, Dur: 900},
		{Kind: kindDSleep, TID: 14, StackID: stackNone, TS: 1000, Dur: 100},
		{Kind: kindWait, TID: 11, TS: 999},  // before the window
		{Kind: kindWait, TID: 11, TS: 2000}, // at its end (excluded)
		{Kind: 99, TID: 11, TS: 1300},       // unknown kind
	}
	evs, stacks := buildEvents(raw, 1000, 2000, src)
	want := []recording.Event{
		{Kind: recording.EventDSleep, T: 0, Dur: 100, TID: 14, Stack: -1},
		{Kind: recording.EventRunq, T: 100, Dur: 900, TID: 14, Stack: 1},
		{Kind: recording.EventIO, T: 200, Dur: 400, TID: 12, Syscall: "fsync", Stack: -1},
		{Kind: recording.EventWait, T: 500, Dur: 300, TID: 11, Peer: 12, Addr: 0xabc, Stack: 0},
		{Kind: recording.EventWait, T: 600, Dur: 50, TID: 13, Peer: 12, Addr: 0xabc, Stack: 1},
		{Kind: recording.EventWake, T: 650, TID: 12, Peer: 2, Addr: 0xabc, Stack: -1},
		{Kind: recording.EventWakeup, T: 700, TID: 0, Peer: 12, Stack: -1},
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// The first wait has its own window; the others share stack id 3.
	if len(stacks) != 2 || stacks[0].Frames[1].Func != "caller" || stacks[1].Frames[1].Func != "main" {
		t.Errorf("stacks = %+v", stacks)
	}
}

func TestEventLogBounded(t *testing.T) {
	var l eventLog
	l.ev = make([]rawEvent, maxEvents-1)
	l.add(rawEvent{TS: 1})
	l.add(rawEvent{TS: 2})
	l.add(rawEvent{TS: 3})
	if len(l.ev) != maxEvents || l.dropped != 2 {
		t.Errorf("log holds %d events, dropped %d; want %d and 2", len(l.ev), l.dropped, maxEvents)
	}
}
