package analyzer

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
	ev     []recording.Event
	maxDur int64
}

func (iv *intervals) add(e recording.Event) {
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
			fn(e, t-s)
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
	wokenAt []recording.Event
}

// eventIndex is the event log indexed by thread and by lock address.
type eventIndex struct {
	byTID map[int]*threadEvents
	waits map[uint64][]recording.Event
	wakes map[uint64][]recording.Event
	// first and last bound the times of the log's events.
	first, last int64
}

func indexEvents(evs []recording.Event) *eventIndex {
	x := &eventIndex{
		byTID: map[int]*threadEvents{},
		waits: map[uint64][]recording.Event{},
		wakes: map[uint64][]recording.Event{},
	}
	byStart := func(a, b recording.Event) int { return cmp.Compare(a.T, b.T) }
	if !slices.IsSortedFunc(evs, byStart) {
		evs = slices.Clone(evs)
		slices.SortStableFunc(evs, byStart)
	}
	// Each list is made at its final size: appending a window's events
	// (up to the log's 120,000) one by one spent most of the indexing
	// growing and copying the lists.
	perAddr := map[uint64][2]int{}
	perTID := map[int]*[6]int{}
	count := func(tid, kind int) {
		c := perTID[tid]
		if c == nil {
			c = new([6]int)
			perTID[tid] = c
		}
		c[kind]++
	}
	for _, e := range evs {
		switch e.Kind {
		case recording.EventWait:
			n := perAddr[e.Addr]
			n[0]++
			perAddr[e.Addr] = n
			count(e.TID, 0)
		case recording.EventWake:
			n := perAddr[e.Addr]
			n[1]++
			perAddr[e.Addr] = n
		case recording.EventIO:
			count(e.TID, 1)
		case recording.EventDSleep:
			count(e.TID, 2)
		case recording.EventRunq:
			count(e.TID, 3)
		case recording.EventWakeup:
			if e.Peer > 0 {
				count(e.Peer, 4)
			}
		}
	}
	for a, n := range perAddr {
		if n[0] > 0 {
			x.waits[a] = make([]recording.Event, 0, n[0])
		}
		if n[1] > 0 {
			x.wakes[a] = make([]recording.Event, 0, n[1])
		}
	}
	for tid, c := range perTID {
		x.byTID[tid] = &threadEvents{
			waits:   intervals{ev: make([]recording.Event, 0, c[0])},
			io:      intervals{ev: make([]recording.Event, 0, c[1])},
			dsleep:  intervals{ev: make([]recording.Event, 0, c[2])},
			runq:    intervals{ev: make([]recording.Event, 0, c[3])},
			wokenAt: make([]recording.Event, 0, c[4]),
		}
	}
	for i, e := range evs {
		if i == 0 || e.T < x.first {
			x.first = e.T
		}
		x.last = max(x.last, e.End())
		switch e.Kind {
		case recording.EventWait:
			x.waits[e.Addr] = append(x.waits[e.Addr], e)
			x.of(e.TID).waits.add(e)
		case recording.EventWake:
			x.wakes[e.Addr] = append(x.wakes[e.Addr], e)
		case recording.EventIO:
			x.of(e.TID).io.add(e)
		case recording.EventDSleep:
			x.of(e.TID).dsleep.add(e)
		case recording.EventRunq:
			x.of(e.TID).runq.add(e)
		case recording.EventWakeup:
			if e.Peer > 0 {
				x.of(e.Peer).wokenAt = append(x.of(e.Peer).wokenAt, e)
			}
		}
	}
	return x
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
	w := te.wokenAt
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
func (x *eventIndex) wakesOn(addrs []uint64) []recording.Event {
	var out []recording.Event
	for _, a := range addrs {
		out = append(out, x.wakes[a]...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
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
