package live

import (
	"cmp"
	"slices"
	"sort"

	"github.com/contend-dev/contend/recording"
)

// This file indexes the event log of a live recording for correlation in
// time: what a lock's holder did while others waited for it (I/O,
// uninterruptible sleep, sitting runnable without a CPU) and who woke a
// waiter. The log is bounded and rate-limited by the collector, so every
// figure drawn from it is a share of what the log holds, never an absolute
// total.

// intervals is one thread's events of one kind, ordered by start, with the
// longest duration among them (to bound a search by start time).
type intervals struct {
	// ev point into the analysed window's events: the index holds each
	// event once, wherever it is listed (copies in two lists each would
	// be two thirds of a live view's allocation per analysis).
	ev     []*recording.Event
	maxDur int64
}

func (iv *intervals) add(e *recording.Event) {
	iv.ev = append(iv.ev, e)
	iv.maxDur = max(iv.maxDur, e.Dur)
}

// each calls fn with every event overlapping [from, to) and the length of
// the overlap.
func (iv *intervals) each(from, to int64, fn func(e recording.Event, overlap int64)) {
	if iv == nil || len(iv.ev) == 0 || to <= from {
		return
	}
	lo := from - iv.maxDur
	i := sort.Search(len(iv.ev), func(i int) bool { return iv.ev[i].T >= lo })
	for ; i < len(iv.ev) && iv.ev[i].T < to; i++ {
		e := iv.ev[i]
		s, t := max(e.T, from), min(e.End(), to)
		if t > s {
			fn(*e, t-s)
		}
	}
}

// threadEvents are one thread's intervals by kind, and the wakeups it
// received.
type threadEvents struct {
	io, dsleep, runq intervals
	// waits are the thread's own futex waits, every address.
	waits intervals
	// wokenAt holds the sched_waking events whose wakee is this thread.
	wokenAt intervals
}

// eventIndex is the event log indexed by thread and by lock address.
type eventIndex struct {
	byTID map[int]*threadEvents
	waits map[uint64][]*recording.Event
	wakes map[uint64][]*recording.Event
	// first and last bound the times of the log's events.
	first, last int64
}

func indexEvents(evs []recording.Event) *eventIndex {
	x := &eventIndex{
		byTID: map[int]*threadEvents{},
		waits: map[uint64][]*recording.Event{},
		wakes: map[uint64][]*recording.Event{},
	}
	if !slices.IsSortedFunc(evs, byStart) {
		evs = slices.Clone(evs)
		slices.SortStableFunc(evs, byStart)
	}
	// Each list is made at its final size, counted in a first pass:
	// appending a window's events (up to the log's 120,000) one by one
	// spent most of the indexing growing and copying the lists.
	perAddr := map[uint64]*[2]int{}
	perTID := map[int]*[threadLists]int{}
	for _, e := range evs {
		a, tid, k := route(e)
		if a >= 0 {
			if perAddr[e.Addr] == nil {
				perAddr[e.Addr] = new([2]int)
			}
			perAddr[e.Addr][a]++
		}
		if k >= 0 {
			if perTID[tid] == nil {
				perTID[tid] = new([threadLists]int)
			}
			perTID[tid][k]++
		}
	}
	for addr, n := range perAddr {
		for a, m := range []map[uint64][]*recording.Event{x.waits, x.wakes} {
			if n[a] > 0 {
				m[addr] = make([]*recording.Event, 0, n[a])
			}
		}
	}
	for tid, n := range perTID {
		te := &threadEvents{}
		for k := range n {
			te.list(k).ev = make([]*recording.Event, 0, n[k])
		}
		x.byTID[tid] = te
	}
	for i := range evs {
		e := &evs[i]
		if i == 0 || e.T < x.first {
			x.first = e.T
		}
		x.last = max(x.last, e.End())
		a, tid, k := route(*e)
		switch a {
		case 0:
			x.waits[e.Addr] = append(x.waits[e.Addr], e)
		case 1:
			x.wakes[e.Addr] = append(x.wakes[e.Addr], e)
		}
		if k >= 0 {
			x.byTID[tid].list(k).add(e)
		}
	}
	return x
}

// byStart orders events by their start.
func byStart(a, b recording.Event) int { return cmp.Compare(a.T, b.T) }

// The lists of threadEvents, by their index in route and list.
const (
	listWaits = iota
	listIO
	listDSleep
	listRunq
	listWokenAt
	threadLists
)

// route names the lists an event goes in: its word's waits (0) or wakes
// (1), or no word's (-1); and the thread whose list it joins, with the
// list (listWaits …), or -1 for none.
func route(e recording.Event) (addrList, tid, list int) {
	switch e.Kind {
	case recording.EventWait:
		return 0, e.TID, listWaits
	case recording.EventWake:
		return 1, 0, -1
	case recording.EventIO:
		return -1, e.TID, listIO
	case recording.EventDSleep:
		return -1, e.TID, listDSleep
	case recording.EventRunq:
		return -1, e.TID, listRunq
	case recording.EventWakeup:
		if e.Peer > 0 {
			return -1, e.Peer, listWokenAt
		}
	}
	return -1, 0, -1
}

// list returns the thread's list k (listWaits …).
func (t *threadEvents) list(k int) *intervals {
	switch k {
	case listWaits:
		return &t.waits
	case listIO:
		return &t.io
	case listDSleep:
		return &t.dsleep
	case listRunq:
		return &t.runq
	}
	return &t.wokenAt
}

func (x *eventIndex) of(tid int) *threadEvents {
	t := x.byTID[tid]
	if t == nil {
		t = &threadEvents{}
		x.byTID[tid] = t
	}
	return t
}

// thread returns the events of tid, or nil.
func (x *eventIndex) thread(tid int) *threadEvents { return x.byTID[tid] }

// waker returns the thread that woke tid last within [from, to], 0 when
// the log holds no such wakeup (woken by an interrupt, a timeout, or the
// event was sampled out).
func (x *eventIndex) waker(tid int, from, to int64) int {
	te := x.byTID[tid]
	if te == nil {
		return 0
	}
	w := te.wokenAt.ev
	i := sort.Search(len(w), func(i int) bool { return w[i].T > to })
	for i--; i >= 0 && w[i].T >= from; i-- {
		if w[i].TID > 0 {
			return w[i].TID
		}
	}
	return 0
}

// releasedAt returns when holder released a lock (its first wake on one of
// the lock's words in [from, to]), or to when the log holds none: the
// release was sampled out, or needed no wake.
func (x *eventIndex) releasedAt(addrs []uint64, holder int, from, to int64) int64 {
	end := to
	for _, a := range addrs {
		wk := x.wakes[a]
		i := sort.Search(len(wk), func(i int) bool { return wk[i].T >= from })
		for ; i < len(wk) && wk[i].T < end; i++ {
			if wk[i].TID == holder {
				end = wk[i].T
				break
			}
		}
	}
	return end
}

// wakesOn returns the wakes on any of addrs, by time.
func (x *eventIndex) wakesOn(addrs []uint64) []*recording.Event {
	var out []*recording.Event
	for _, a := range addrs {
		out = append(out, x.wakes[a]...)
	}
	slices.SortStableFunc(out, func(a, b *recording.Event) int { return byStart(*a, *b) })
	return out
}

// lastWaitEnd returns when tid's last wait on one of the own addresses
// that ended in (after, before] ended, or after when none did. A thread
// waits on one futex at a time, so its waits ordered by start are ordered
// by end too: the walk back from before stops at the first wait that
// ended by after, having looked only at the waits in between.
func (x *eventIndex) lastWaitEnd(tid int, own map[uint64]bool, after, before int64) int64 {
	te := x.byTID[tid]
	if te == nil {
		return after
	}
	w := te.waits.ev
	for i := sort.Search(len(w), func(i int) bool { return w[i].T >= before }) - 1; i >= 0; i-- {
		e := w[i].End()
		if e <= after {
			break
		}
		if e <= before && own[w[i].Addr] {
			return e
		}
	}
	return after
}

// span is a half-open time interval in nanoseconds.
type span struct{ from, to int64 }

// unionLength returns the total length covered by spans (overlaps counted
// once).
func unionLength(spans []span) int64 {
	if len(spans) == 0 {
		return 0
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	var total int64
	cur := spans[0]
	for _, s := range spans[1:] {
		if s.from > cur.to {
			total += cur.to - cur.from
			cur = s
			continue
		}
		cur.to = max(cur.to, s.to)
	}
	return total + cur.to - cur.from
}
