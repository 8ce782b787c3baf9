package tui

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/recording"
)

// fakeSession is a session whose event log and windows a test sets. The
// log is a list of converted events timed from origin; EventsSince gives
// each call its own stack table, as the collector does.
type fakeSession struct {
	mu     sync.Mutex
	origin time.Time
	// log[i] has sequence number oldest+i.
	log    []recording.Event
	stacks []recording.Stack // the stack of log[i] is stacks[log[i].Stack]
	oldest uint64
	// at is the end of the recording so far, since origin.
	at    time.Duration
	done  chan struct{}
	asked []uint64 // every sequence number EventsSince was asked for
	full  int      // calls of Snapshot (the whole build)
}

func (f *fakeSession) EventsSince(seq uint64, limit int) collector.EventBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, seq)
	b := collector.EventBatch{Oldest: f.oldest, Next: f.oldest + uint64(len(f.log)), Origin: f.origin}
	index := map[int]int{}
	first := int(max(seq, f.oldest) - f.oldest)
	end := len(f.log)
	if limit > 0 && end-first > limit {
		end = first + limit
		b.Next = f.oldest + uint64(end)
	}
	for i := first; i < end; i++ {
		e := f.log[i]
		if e.Stack >= 0 {
			j, ok := index[e.Stack]
			if !ok {
				j = len(b.Stacks)
				index[e.Stack] = j
				b.Stacks = append(b.Stacks, f.stacks[e.Stack])
			}
			e.Stack = j
		}
		b.Events = append(b.Events, e)
	}
	return b
}

func (f *fakeSession) SnapshotNoEvents(window time.Duration) *recording.Recording {
	f.mu.Lock()
	defer f.mu.Unlock()
	from := time.Duration(0)
	if window > 0 && window < f.at {
		from = f.at - window
	}
	return &recording.Recording{Meta: recording.Meta{Start: f.origin.Add(from), Duration: f.at - from}, Stacks: []recording.Stack{}}
}

func (f *fakeSession) Snapshot(window time.Duration) *recording.Recording {
	f.mu.Lock()
	f.full++
	f.mu.Unlock()
	rec := f.SnapshotNoEvents(window)
	rec.Events = []recording.Event{{Kind: recording.EventWait, Stack: -1}}
	return rec
}

func (f *fakeSession) Done() <-chan struct{}  { return f.done }
func (f *fakeSession) Stats() collector.Stats { return collector.Stats{} }

// logEvent appends a wait at t (since origin) with the stack named fn
// ("" for none).
func (f *fakeSession) logEvent(t time.Duration, tid int, fn string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := recording.Event{Kind: recording.EventWait, T: t.Nanoseconds(), TID: tid, Stack: -1}
	if fn != "" {
		e.Stack = len(f.stacks)
		f.stacks = append(f.stacks, recording.Stack{Frames: []recording.Frame{{Func: fn, Module: "app"}}})
	}
	f.log = append(f.log, e)
}

// evict drops the n oldest events of the log.
func (f *fakeSession) evict(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = f.log[n:]
	f.oldest += uint64(n)
}

// snap takes a snapshot of window from src, failing the test on an error.
func snap(t *testing.T, src *SessionSource, window time.Duration) *recording.Recording {
	t.Helper()
	rec, err := src.Snapshot(window)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// wantShown fails the test unless rec's events, as shown gives them, are
// want; what names the snapshot.
func wantShown(t *testing.T, rec *recording.Recording, what string, want ...string) {
	t.Helper()
	if got := shown(t, rec); !reflect.DeepEqual(got, want) {
		t.Errorf("%s %v, want %v", what, got, want)
	}
}

// shown returns each event of rec as "T tid func".
func shown(t *testing.T, rec *recording.Recording) []string {
	t.Helper()
	var out []string
	for _, e := range rec.Events {
		fn := "-"
		if e.Stack >= 0 {
			if e.Stack >= len(rec.Stacks) {
				t.Fatalf("event %+v refers to stack %d of %d", e, e.Stack, len(rec.Stacks))
			}
			fn = rec.Stacks[e.Stack].Frames[0].Func
		}
		out = append(out, time.Duration(e.T).String()+" "+string(rune('0'+e.TID))+" "+fn)
	}
	return out
}

func TestSessionSourceConvertsEachEventOnce(t *testing.T) {
	f := &fakeSession{origin: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), done: make(chan struct{})}
	src := newSessionSource(f)
	f.logEvent(500*time.Millisecond, 1, "lock_a")
	f.logEvent(1500*time.Millisecond, 2, "")
	f.at = 2 * time.Second
	rec := snap(t, src, 0)
	wantShown(t, rec, "first snapshot", "500ms 1 lock_a", "1.5s 2 -")

	// A later wait that started before the last one was logged, the same
	// stack again and a new one; the window is the last second.
	f.logEvent(2500*time.Millisecond, 3, "lock_b")
	f.logEvent(1800*time.Millisecond, 4, "lock_a")
	f.logEvent(2900*time.Millisecond, 5, "lock_a")
	f.at = 3 * time.Second
	rec = snap(t, src, time.Second)
	// [2s, 3s): timed from 2s, in time order.
	wantShown(t, rec, "one-second window", "500ms 3 lock_b", "900ms 5 lock_a")
	rec = snap(t, src, 0)
	wantShown(t, rec, "whole run", "500ms 1 lock_a", "1.5s 2 -", "1.8s 4 lock_a", "2.5s 3 lock_b", "2.9s 5 lock_a")
	// Each event was asked for once: every call starts where the last
	// ended.
	if got, want := f.asked, []uint64{0, 2, 5}; !reflect.DeepEqual(got, want) {
		t.Errorf("EventsSince asked from %v, want %v", got, want)
	}
	// One table entry per distinct stack, however many batches.
	var names []string
	for _, st := range rec.Stacks {
		names = append(names, st.Frames[0].Func)
	}
	if got := strings.Join(names, ","); got != "lock_a,lock_b" {
		t.Errorf("stack table %s, want lock_a,lock_b", got)
	}
	if f.full != 0 {
		t.Errorf("a live snapshot rebuilt the whole recording %d times", f.full)
	}
}

func TestSessionSourceFollowsEvictionAndEnd(t *testing.T) {
	f := &fakeSession{origin: time.Unix(1000, 0), done: make(chan struct{})}
	src := newSessionSource(f)
	f.logEvent(100*time.Millisecond, 1, "a")
	f.logEvent(200*time.Millisecond, 2, "b")
	f.at = time.Second
	snap(t, src, 0)
	f.logEvent(1100*time.Millisecond, 3, "c")
	f.at = 2 * time.Second
	snap(t, src, 0)
	// The log lets go of its first two events (the whole first batch)
	// and keeps the third.
	f.evict(2)
	f.logEvent(2100*time.Millisecond, 4, "d")
	f.at = 3 * time.Second
	rec := snap(t, src, 0)
	wantShown(t, rec, "after eviction", "1.1s 3 c", "2.1s 4 d")
	// An eviction within a batch: e and f arrive in one, the log lets go
	// of c, d and e, and the cache of them too.
	f.logEvent(3100*time.Millisecond, 5, "e")
	f.logEvent(3200*time.Millisecond, 6, "f")
	f.at = 4 * time.Second
	snap(t, src, 0)
	f.evict(3)
	f.at = 5 * time.Second
	rec = snap(t, src, 0)
	wantShown(t, rec, "after evicting part of a batch", "3.2s 6 f")
	// Once the session has ended its own recording is returned.
	close(f.done)
	rec = snap(t, src, 0)
	if f.full != 1 || len(rec.Events) != 1 {
		t.Errorf("after the end: %d whole builds, %d events; want the session's own recording", f.full, len(rec.Events))
	}
}

func TestSessionSourceCompactsStacks(t *testing.T) {
	f := &fakeSession{origin: time.Unix(1000, 0), done: make(chan struct{})}
	src := newSessionSource(f)
	// maxStacks distinct stacks, then the log evicts all but the last
	// and a new one arrives: the table is rebuilt from what is kept.
	for i := range maxStacks {
		f.logEvent(time.Duration(i)*time.Microsecond, 1, "f"+time.Duration(i).String())
	}
	f.at = time.Second
	snap(t, src, 0)
	f.logEvent(time.Second, 2, "kept")
	f.at = 2 * time.Second
	snap(t, src, 0)
	f.evict(maxStacks)
	f.logEvent(1500*time.Millisecond, 3, "new")
	f.at = 3 * time.Second
	rec := snap(t, src, 0)
	wantShown(t, rec, "after compaction", "1s 2 kept", "1.5s 3 new")
	if len(rec.Stacks) != 2 {
		t.Errorf("stack table holds %d stacks after compaction, want 2", len(rec.Stacks))
	}
}

// TestSessionSourceKeepsEveryField: an event comes out of the cache as it
// went in, whatever its kind, with its time moved to the window's start.
func TestSessionSourceKeepsEveryField(t *testing.T) {
	f := &fakeSession{origin: time.Unix(1000, 0), done: make(chan struct{})}
	src := newSessionSource(f)
	in := []recording.Event{
		{Kind: recording.EventWait, T: 1e8, Dur: 5e6, PID: 40, TID: 41, Peer: 42, Addr: 0x7f00deadbeef, Stack: -1},
		{Kind: recording.EventIO, T: 2e8, Dur: 3e6, PID: 40, TID: 43, Syscall: "pwrite64", Stack: -1},
		{Kind: recording.EventWakeup, T: 3e8, PID: 40, TID: 44, PeerPID: 4194303, Peer: 4194300, Stack: -1},
		{Kind: recording.EventIO, T: 4e8, Dur: 1e6, PID: 40, TID: 43, Syscall: "fsync", Stack: -1},
	}
	f.log = append(f.log, in...)
	f.at = time.Second
	got := snap(t, src, 0).Events
	if !reflect.DeepEqual(got, in) {
		t.Errorf("events through the cache:\n got %+v\nwant %+v", got, in)
	}
}

// TestSessionSourceReadsALongLogInPieces: a log longer than a piece is
// converted eventPiece events at a time, every event once, in order.
func TestSessionSourceReadsALongLogInPieces(t *testing.T) {
	f := &fakeSession{origin: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), done: make(chan struct{})}
	src := newSessionSource(f)
	n := 2*eventPiece + 10
	for i := range n {
		f.logEvent(time.Duration(i)*time.Microsecond, 1, "lock_a")
	}
	f.at = time.Second
	rec := snap(t, src, 0)
	if len(rec.Events) != n {
		t.Fatalf("%d events, want %d", len(rec.Events), n)
	}
	for i, e := range rec.Events {
		if e.T != int64(time.Duration(i)*time.Microsecond) {
			t.Fatalf("event %d at %d, want %d", i, e.T, time.Duration(i)*time.Microsecond)
		}
	}
	if got, want := f.asked, []uint64{0, eventPiece, 2 * eventPiece}; !reflect.DeepEqual(got, want) {
		t.Errorf("EventsSince asked from %v, want %v", got, want)
	}
}
