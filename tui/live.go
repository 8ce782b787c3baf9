package tui

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/recording"
)

// errNoData is returned by a live source before its first snapshot holds
// anything.
var errNoData = errors.New("no data recorded yet")

// session is what SessionSource reads of a collector.Session; tests give
// it a fake.
type session interface {
	Snapshot(window time.Duration) *recording.Recording
	SnapshotNoEvents(window time.Duration) *recording.Recording
	EventsSince(seq uint64, limit int) collector.EventBatch
	Done() <-chan struct{}
	Stats() collector.Stats
}

// SessionSource is the Source of `contend top`: a live collector session.
//
// A snapshot is built incrementally: the session's aggregates are summed
// per window by the session (cheap: one entry per stack and lock), while
// the event log, the largest part of a recording, is converted by the
// session only for the events logged since the last snapshot and kept
// here, compact (cachedEvent), with its stacks in one table. Converting
// the whole log at every refresh would be most of what the view costs
// (docs/cost.md, "What contend's own limits rest on").
type SessionSource struct {
	s session

	mu sync.Mutex
	// batches are the converted events, oldest first, each with the range
	// of the log's sequence numbers it came from; the events the log has
	// evicted go, so the cache holds what the log holds.
	batches []eventBatch
	next    uint64
	origin  time.Time
	// stacks is the table every cached event's Stack indexes; index finds
	// a stack's entry by its content.
	stacks []recording.Stack
	index  map[string]int
	// names holds the strings of the cached events, which refer to them
	// by index.
	names eventNames
}

// eventBatch is one EventsSince's events, with their stacks re-indexed
// into the source's table.
type eventBatch struct {
	events []cachedEvent
	// last is the sequence number after the batch's last event.
	last uint64
}

// cachedEvent is a recording.Event as the cache keeps it: its kind and
// syscall name as indexes into the source's eventNames, its ids in 32
// bits (pid_max is at most 2^22). It holds no pointer, so the cache, the
// largest part of a live view's heap (a whole event log), is not scanned
// at each garbage collection, and it takes half the memory (48 bytes, not
// 104): with pointers, under the 64 MiB heap limit the collector would
// run almost without pause, its scans most of contend top's CPU.
type cachedEvent struct {
	T, Dur                  int64
	Addr                    uint64
	PID, TID, PeerPID, Peer int32
	Stack                   int32
	kind                    uint8
	sys                     uint16
}

// eventNames interns the strings of cached events. Both sets are small and
// fixed: the collector's event kinds, and the names of the syscalls its
// I/O probes trace.
type eventNames struct {
	kinds    []recording.EventKind
	syscalls []string
}

// intern returns the index of v in *list, adding it if new.
func intern[T comparable](list *[]T, v T) int {
	if i := slices.Index(*list, v); i >= 0 {
		return i
	}
	*list = append(*list, v)
	return len(*list) - 1
}

// pack returns e as the cache keeps it; stack is its index in the
// source's table.
func (n *eventNames) pack(e recording.Event, stack int) cachedEvent {
	return cachedEvent{
		T: e.T, Dur: e.Dur, Addr: e.Addr,
		PID: int32(e.PID), TID: int32(e.TID), PeerPID: int32(e.PeerPID), Peer: int32(e.Peer),
		Stack: int32(stack),
		kind:  uint8(intern(&n.kinds, e.Kind)),
		sys:   uint16(intern(&n.syscalls, e.Syscall)),
	}
}

// unpack returns c as a recording.Event.
func (n *eventNames) unpack(c cachedEvent) recording.Event {
	return recording.Event{
		Kind: n.kinds[c.kind], T: c.T, Dur: c.Dur,
		PID: int(c.PID), TID: int(c.TID), PeerPID: int(c.PeerPID), Peer: int(c.Peer),
		Addr: c.Addr, Syscall: n.syscalls[c.sys], Stack: int(c.Stack),
	}
}

// maxStacks bounds the source's stack table: a stack stays in it while
// any cached event refers to it, and the table is compacted to those once
// it grows past this many entries. The stripe fixture has about 120
// distinct stacks; a program with thousands of distinct stacks in its
// window compacts every few refreshes at worst, each compaction a pass
// over the cached events (milliseconds).
const maxStacks = 1 << 14

// eventPiece is how many events a live view converts at a time: 8,192
// converted events take 0.85 MB, against 12.5 MB for the collector's
// whole event log (120,000 events) in one piece, the largest allocation
// of contend top's first analysis. maxEventPieces reads a whole log and
// as much again.
const (
	eventPiece     = 8192
	maxEventPieces = 2 * (120000/eventPiece + 1)
)

// NewSessionSource returns a Source over the running session s. The caller
// still owns s and calls Stop once the TUI returns.
func NewSessionSource(s *collector.Session) *SessionSource { return newSessionSource(s) }

func newSessionSource(s session) *SessionSource {
	return &SessionSource{s: s, index: map[string]int{}}
}

// Snapshot returns the last window of the session (0: all of it).
func (l *SessionSource) Snapshot(window time.Duration) (*recording.Recording, error) {
	select {
	case <-l.s.Done():
		// Nothing arrives any more: the session's own recording, built
		// once, is exact.
		return nonEmpty(l.s.Snapshot(window))
	default:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := l.s.SnapshotNoEvents(window)
	if rec == nil {
		return nil, errNoData
	}
	// The events are fetched after the window was cut, so that they reach
	// at least to its end, a piece at a time (the first fetch is the
	// whole log). A batch shorter than the piece is the log's end; the
	// number of pieces is bounded, so that a log that fills faster than
	// it is read cannot hold the view here.
	for range maxEventPieces {
		b := l.s.EventsSince(l.next, eventPiece)
		l.update(b)
		if len(b.Events) < eventPiece {
			break
		}
	}
	if len(rec.Events) > 0 {
		// The session ended between the two calls: its final recording
		// has its events already.
		return rec, nil
	}
	from := rec.Meta.Start.Sub(l.origin).Nanoseconds()
	rec.Events = l.between(from, from+rec.Meta.Duration.Nanoseconds())
	rec.Stacks = l.stacks
	return rec, nil
}

// nonEmpty turns a nil recording into errNoData.
func nonEmpty(rec *recording.Recording) (*recording.Recording, error) {
	if rec == nil {
		return nil, errNoData
	}
	return rec, nil
}

// update adds a batch of new events to the cache and lets go of the
// batches the log has evicted. Caller holds l.mu.
func (l *SessionSource) update(b collector.EventBatch) {
	l.origin = b.Origin
	l.next = b.Next
	drop := 0
	for drop < len(l.batches) && l.batches[drop].last <= b.Oldest {
		drop++
	}
	l.batches = slices.Delete(l.batches, 0, drop)
	if len(l.batches) > 0 {
		// The log evicts event by event: the events of the oldest batch
		// it no longer holds go too, so that a window sees the events
		// the session's own snapshot would.
		first := &l.batches[0]
		if start := first.last - uint64(len(first.events)); start < b.Oldest {
			first.events = first.events[b.Oldest-start:]
		}
	}
	if len(b.Events) == 0 {
		return
	}
	if len(l.stacks)+len(b.Stacks) > maxStacks {
		l.compact()
	}
	remap := make([]int, len(b.Stacks))
	for i, st := range b.Stacks {
		remap[i] = l.stackIndex(st)
	}
	events := make([]cachedEvent, len(b.Events))
	for i, e := range b.Events {
		stack := -1
		if e.Stack >= 0 && e.Stack < len(remap) {
			stack = remap[e.Stack]
		}
		events[i] = l.names.pack(e, stack)
	}
	l.batches = append(l.batches, eventBatch{events: events, last: b.Next})
}

// stackIndex returns the entry of st in the table, adding it if new.
// Caller holds l.mu.
func (l *SessionSource) stackIndex(st recording.Stack) int {
	k := stackKey(st)
	if i, ok := l.index[k]; ok {
		return i
	}
	l.index[k] = len(l.stacks)
	l.stacks = append(l.stacks, st)
	return len(l.stacks) - 1
}

// compact rebuilds the stack table from the stacks the cached events
// refer to. Recordings already handed out keep the old table. Caller
// holds l.mu.
func (l *SessionSource) compact() {
	old := l.stacks
	l.stacks, l.index = nil, map[string]int{}
	remap := map[int]int{}
	for _, b := range l.batches {
		for i := range b.events {
			e := &b.events[i]
			if e.Stack < 0 {
				continue
			}
			j, ok := remap[int(e.Stack)]
			if !ok {
				j = l.stackIndex(old[e.Stack])
				remap[int(e.Stack)] = j
			}
			e.Stack = int32(j)
		}
	}
}

// between returns a copy of the cached events that start in [from, to)
// (ns since the origin), timed from from and in time order. Caller holds
// l.mu.
func (l *SessionSource) between(from, to int64) []recording.Event {
	n := 0
	for _, b := range l.batches {
		for i := range b.events {
			if t := b.events[i].T; t >= from && t < to {
				n++
			}
		}
	}
	out := make([]recording.Event, 0, n)
	for _, b := range l.batches {
		for _, c := range b.events {
			if c.T >= from && c.T < to {
				e := l.names.unpack(c)
				e.T -= from
				out = append(out, e)
			}
		}
	}
	// Each batch is in time order, but a long wait logged in a later batch
	// starts before the end of the earlier one.
	byTime := func(a, b recording.Event) int { return cmp.Compare(a.T, b.T) }
	if !slices.IsSortedFunc(out, byTime) {
		slices.SortStableFunc(out, byTime)
	}
	return out
}

// stackKey is a stack's identity in the table: every field of every
// frame that the session's own deduplication compares.
func stackKey(st recording.Stack) string {
	var b strings.Builder
	for _, f := range st.Frames {
		b.WriteString(f.Func)
		b.WriteByte('|')
		b.WriteString(f.Module)
		b.WriteByte('|')
		b.WriteString(strconv.FormatUint(f.Addr, 16))
		b.WriteByte('|')
		b.WriteString(strconv.FormatBool(f.Inlined))
		b.WriteByte('|')
		b.WriteString(strconv.FormatBool(f.Kernel))
		b.WriteByte(';')
	}
	b.WriteString(strconv.FormatBool(st.Truncated))
	return b.String()
}

// Live is true: the session keeps recording.
func (l *SessionSource) Live() bool { return true }

// Done is closed when the session ends by itself (target exited, duration
// reached, error).
func (l *SessionSource) Done() <-chan struct{} { return l.s.Done() }

// Stats returns the session's progress.
func (l *SessionSource) Stats() Stats {
	st := l.s.Stats()
	return Stats{Elapsed: st.Elapsed, Events: st.Events, Drops: st.Drops, TargetExited: st.TargetExited}
}
