package collector

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/contend-dev/contend/recording"
)

// maxEvents bounds the event log kept in memory: the most recent 500,000
// events of 48 bytes, 24 MB, ten seconds at the kernel's full event rate
// (eventRate) and the whole of most recordings. Older events are dropped
// as new ones arrive (counted in sampled_event_log_evicted: a bound by
// design, like the rate limit; the aggregates still hold those events), so
// a long recording keeps its most recent part.
const maxEvents = 500000

// eventLog is the bounded log of raw events: a ring of the most recent
// maxEvents, in arrival order.
type eventLog struct {
	ev []rawEvent
	// head is the index of the oldest event once the ring is full.
	head    int
	evicted uint64
}

func (l *eventLog) add(e rawEvent) {
	if len(l.ev) < maxEvents {
		l.ev = append(l.ev, e)
		return
	}
	l.ev[l.head] = e
	l.head = (l.head + 1) % len(l.ev)
	l.evicted++
}

// between returns the events kept that start in [from, to) (monotonic
// ns), oldest first.
func (l *eventLog) between(from, to uint64) []rawEvent {
	var out []rawEvent
	for _, part := range [][]rawEvent{l.ev[l.head:], l.ev[:l.head]} {
		for _, e := range part {
			if e.TS >= from && e.TS < to {
				out = append(out, e)
			}
		}
	}
	return out
}

// clock converts the kernel's bpf_ktime_get_ns (CLOCK_MONOTONIC) to times
// of the recording: mono is the monotonic reading taken at wall.
type clock struct {
	mono uint64
	wall time.Time
}

// since returns the offset of monotonic time ts from the clock's origin.
func (c clock) since(ts uint64) time.Duration {
	return time.Duration(int64(ts - c.mono))
}

// at returns the monotonic time of an offset from the clock's origin.
func (c clock) at(d time.Duration) uint64 {
	return c.mono + uint64(d)
}

// wallAt returns the wall-clock time of an offset from the clock's origin.
func (c clock) wallAt(d time.Duration) time.Time {
	return c.wall.Add(d)
}

// buildEvents converts the raw events that start in [from, to) (monotonic
// ns) into recording events timed from `from`, ordered by time, with their
// stacks collected into a deduplicated table.
func buildEvents(raw []rawEvent, from, to uint64, src stackSource) ([]recording.Event, []recording.Stack) {
	t := &stackTable{index: map[string]int{}}
	out := make([]recording.Event, 0, len(raw))
	for _, r := range raw {
		if r.TS < from || r.TS >= to {
			continue
		}
		e := recording.Event{
			T:     int64(r.TS - from),
			Dur:   int64(r.Dur),
			PID:   int(r.PID),
			TID:   int(r.TID),
			Stack: -1,
		}
		switch r.Kind {
		case kindWait:
			e.Kind, e.Peer, e.Addr = recording.EventWait, int(r.Peer), r.Addr
		case kindWake:
			e.Kind, e.Peer, e.Addr = recording.EventWake, int(r.Peer), r.Addr
		case kindIO:
			e.Kind, e.Syscall = recording.EventIO, syscallName(uint32(r.Sys))
		case kindRunq:
			e.Kind = recording.EventRunq
		case kindDSleep:
			e.Kind = recording.EventDSleep
		case kindWakeup:
			e.Kind, e.Peer, e.PeerPID = recording.EventWakeup, int(r.Peer), int(r.Addr)
		default:
			continue
		}
		if r.Stack >= stackFirst || r.Kind == kindWait || r.Kind == kindIO || r.Kind == kindWake {
			if st := src.eventStack(r.PID, r.TID, r.TS, r.Stack); len(st.Frames) > 0 {
				e.Stack = t.add(st)
			}
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out, t.stacks
}

// stackTable deduplicates stacks referred to by index.
type stackTable struct {
	stacks []recording.Stack
	index  map[string]int
}

func (t *stackTable) add(st recording.Stack) int {
	var b strings.Builder
	for _, f := range st.Frames {
		fmt.Fprintf(&b, "%s|%s|%x|%t|%t;", f.Func, f.Module, f.Addr, f.Inlined, f.Kernel)
	}
	fmt.Fprintf(&b, "%t", st.Truncated)
	k := b.String()
	if i, ok := t.index[k]; ok {
		return i
	}
	t.index[k] = len(t.stacks)
	t.stacks = append(t.stacks, st)
	return len(t.stacks) - 1
}
