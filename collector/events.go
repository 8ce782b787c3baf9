package collector

import (
	"cmp"
	"hash/maphash"
	"slices"
	"time"

	"github.com/contend-dev/contend/recording"
)

// maxEvents bounds the event log kept in memory: the most recent 120,000
// events of 48 bytes (6 MB, and twice that once converted for a
// recording), over two seconds at the kernel's full event rate
// (eventRate), ten seconds of a 64-thread convoy's events, and the whole
// of most recordings. Older events are dropped as new ones
// arrive, a chunk at a time (counted in sampled_event_log_evicted: a bound
// by design, like the rate limit; the aggregates still hold those events),
// so a long recording keeps its most recent part.
const maxEvents = 120000

// eventChunk is how many events the log allocates, and drops, at a time.
const eventChunk = 4096

// eventLog is the bounded log of raw events, in arrival order: chunks of
// eventChunk events, the oldest dropped once the log holds bound events.
type eventLog struct {
	// max is the bound asked for (Options.MaxEvents; see bound).
	max     int
	chunks  [][]rawEvent
	n       int
	evicted uint64
	// objs holds the objects of the sleeps and failed lock attempts in
	// the log (kindSleep, kindTryFail), which a rawEvent has no room for;
	// an entry goes with its event.
	objs map[objKey]sleepInfo
}

// sleepInfo is what a kindSleep or kindTryFail event holds beyond a
// rawEvent: the call's object (nil when none) and the waker's process.
type sleepInfo struct {
	obj      *recording.Object
	wakerPID int
	// sched are the frames below the scheduler at an uninterruptible
	// sleep's switch-out (schedFrames).
	sched []recording.Frame
}

// objKey identifies an event of the log: its thread and start.
type objKey struct {
	tid uint32
	ts  uint64
}

// addObj logs e with the object of its call.
func (l *eventLog) addObj(e rawEvent, si sleepInfo) {
	if si.obj != nil || si.wakerPID != 0 || si.sched != nil {
		if l.objs == nil {
			l.objs = map[objKey]sleepInfo{}
		}
		l.objs[objKey{e.TID, e.TS}] = si
	}
	l.add(e)
}

func (l *eventLog) add(e rawEvent) {
	last := len(l.chunks) - 1
	if last < 0 || len(l.chunks[last]) == eventChunk {
		var next []rawEvent
		if l.n+eventChunk > l.bound() && len(l.chunks) > 0 {
			// The oldest chunk goes, and its memory takes the new
			// events: nothing outlives the log's lock with a reference
			// into it (readers copy), and a full log then allocates
			// nothing.
			next = l.chunks[0][:0]
			if len(l.objs) > 0 {
				for i := range l.chunks[0] {
					if e := &l.chunks[0][i]; e.Kind == kindSleep || e.Kind == kindTryFail {
						delete(l.objs, objKey{e.TID, e.TS})
					}
				}
			}
			l.evicted += uint64(len(l.chunks[0]))
			l.n -= len(l.chunks[0])
			l.chunks[0] = nil
			l.chunks = l.chunks[1:]
		} else {
			next = make([]rawEvent, 0, eventChunk)
		}
		l.chunks = append(l.chunks, next)
		last = len(l.chunks) - 1
	}
	l.chunks[last] = append(l.chunks[last], e)
	l.n++
}

// bound is how many events the log keeps: max, or maxEvents when max is
// 0 or more than that, and at least a few chunks, so that eviction a chunk
// at a time keeps most of the log.
func (l *eventLog) bound() int {
	if l.max <= 0 || l.max > maxEvents {
		return maxEvents
	}
	return max(l.max, 4*eventChunk)
}

// between returns the events kept that start in [from, to) (monotonic
// ns), oldest first.
func (l *eventLog) between(from, to uint64) []rawEvent {
	var out []rawEvent
	l.each(func(e *rawEvent) {
		if e.TS >= from && e.TS < to {
			out = append(out, *e)
		}
	})
	return out
}

// each calls fn for every event kept, oldest first.
func (l *eventLog) each(fn func(*rawEvent)) {
	for _, c := range l.chunks {
		for i := range c {
			fn(&c[i])
		}
	}
}

// consume is each, emptying the log as it goes: a chunk is released once
// read, so that a log converted into a recording's events is not held
// twice.
func (l *eventLog) consume(fn func(*rawEvent)) {
	for i, c := range l.chunks {
		for j := range c {
			fn(&c[j])
		}
		l.chunks[i] = nil
		l.n -= len(c)
	}
	l.chunks = nil
	l.objs = nil
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
// ns), as each passes them, into recording events timed from `from`,
// ordered by time, with their stacks collected into a deduplicated table.
// n is how many events each passes in [from, to) at most: the slice is
// allocated once, not grown by doubling (which would hold the old and new
// arrays at once).
//
// objs holds the objects of sleeps and failed lock attempts (eventLog.objs).
func buildEvents(each func(func(*rawEvent)), n int, from, to uint64, src stackSource, objs map[objKey]sleepInfo) ([]recording.Event, []recording.Stack) {
	t := newStackTable()
	out := make([]recording.Event, 0, n)
	joined := map[joinKey]int{}
	each(func(r *rawEvent) {
		if r.TS < from || r.TS >= to {
			return
		}
		e, ok := newEvent(r, from)
		if !ok {
			return
		}
		switch {
		case r.Kind == kindSleep || r.Kind == kindTryFail:
			si := objs[objKey{r.TID, r.TS}]
			e.Obj, e.PeerPID = si.obj, si.wakerPID
			e.Stack = sleepStack(r, &si, src, t, joined)
		case r.Stack >= stackFirst || r.Kind == kindWait || r.Kind == kindIO || r.Kind == kindWake:
			if st := src.eventStack(r.PID, r.TID, r.TS, r.Stack); len(st.Frames) > 0 {
				e.Stack = t.add(st)
			}
		}
		out = append(out, e)
	})
	// The log is in arrival order, nearly sorted by start: a wait is
	// logged when it ends. The generic sort skips sort.SliceStable's
	// reflection, which costs a fifth of the conversion.
	byStart := func(a, b recording.Event) int { return cmp.Compare(a.T, b.T) }
	if !slices.IsSortedFunc(out, byStart) {
		slices.SortStableFunc(out, byStart)
	}
	return out, t.stacks
}

// newEvent returns the recording event of raw event r, timed from `from`,
// with the fields its kind carries and no stack (-1); false for a kind
// the recording has no event for. A sleep's object, waker process and
// stack are the caller's to fill.
func newEvent(r *rawEvent, from uint64) (recording.Event, bool) {
	e := recording.Event{
		T: int64(r.TS - from),
		// A duration the probe took as end - start of timestamps read
		// on two CPUs can come out tens of ns below zero (seen: -20
		// ns on c/churn), which the unsigned field wraps: none.
		Dur:   max(int64(r.Dur), 0),
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
	case kindSleep, kindTryFail:
		e.Kind, e.Syscall, e.State = recording.EventSleep, sleepSyscallName(r.Sys), stateName(r.Op)
		if r.Kind == kindTryFail {
			e.Kind, e.State = recording.EventTryFail, ""
		}
		e.Peer = int(r.Peer)
	default:
		return e, false
	}
	return e, true
}

// sleepStack returns the index in t of the stack of sleep r: its kernel
// frames (r.Addr) joined with the scheduler frames of si, then its user
// frames; -1 when it has none. joined caches the index per parts, so
// that a sleep whose parts were joined before costs no join and no hash.
func sleepStack(r *rawEvent, si *sleepInfo, src stackSource, t *stackTable, joined map[joinKey]int) int {
	// Kernel frames first (leaf), then the user frames.
	st := recording.Stack{}
	if r.Addr >= stackFirst {
		st = src.kernelStack(r.Addr)
	}
	u := src.eventStack(r.PID, r.TID, r.TS, r.Stack)
	// The parts are the stack sources' shared slices: a sleep
	// whose three parts were joined before takes that entry
	// without joining and hashing the frames again (a PostgreSQL
	// backend's latch waits: tens of thousands a window, a few
	// stacks).
	jk := joinKey{kernel: framesID(st.Frames), sched: framesID(si.sched), user: framesID(u.Frames), truncated: u.Truncated}
	if i, ok := joined[jk]; ok {
		return i
	}
	st.Frames = joinKernel(si.sched, st.Frames)
	if len(u.Frames) > 0 {
		st.Frames = append(st.Frames[:len(st.Frames):len(st.Frames)], u.Frames...)
		st.Truncated = u.Truncated
	}
	i := -1
	if len(st.Frames) > 0 {
		i = t.add(st)
	}
	joined[jk] = i
	return i
}

// stackTable deduplicates stacks referred to by index. It is keyed by a
// hash of the frames' identity (function, module, address, inlined,
// kernel), computed without allocating: a window's event log names a
// stack for each of up to maxEvents events, most of them the same few.
type stackTable struct {
	stacks []recording.Stack
	// index maps a hash to the stacks that have it.
	index map[uint64][]int
	seed  maphash.Seed
	// same maps a stack source's own frames to their entry: the resolver
	// hands out the one cached slice for each stack it has symbolized, so
	// most events find theirs by identity, without hashing their frames.
	same map[sharedFrames]int
}

// sharedFrames identifies a frames slice by its memory.
type sharedFrames struct {
	first     *recording.Frame
	n         int
	truncated bool
}

func newStackTable() *stackTable {
	return &stackTable{index: map[uint64][]int{}, seed: maphash.MakeSeed(), same: map[sharedFrames]int{}}
}

func (t *stackTable) add(st recording.Stack) int {
	var id sharedFrames
	if len(st.Frames) > 0 {
		id = sharedFrames{&st.Frames[0], len(st.Frames), st.Truncated}
		if i, ok := t.same[id]; ok {
			return i
		}
	}
	i := t.addByContent(st)
	if id.first != nil {
		t.same[id] = i
	}
	return i
}

func (t *stackTable) addByContent(st recording.Stack) int {
	var h maphash.Hash
	h.SetSeed(t.seed)
	for _, f := range st.Frames {
		maphash.WriteComparable(&h, stackFrameKey(f))
	}
	maphash.WriteComparable(&h, st.Truncated)
	k := h.Sum64()
	for _, i := range t.index[k] {
		if o := t.stacks[i]; o.Truncated == st.Truncated && slices.EqualFunc(o.Frames, st.Frames, func(a, b recording.Frame) bool { return stackFrameKey(a) == stackFrameKey(b) }) {
			return i
		}
	}
	t.index[k] = append(t.index[k], len(t.stacks))
	// The stack source's frames are shared (see resolver.eventStack):
	// the table keeps its own copy of each stack it adds.
	t.stacks = append(t.stacks, copyStack(st))
	return len(t.stacks) - 1
}

// joinKey identifies a sleep's stack by its parts (kernel, scheduler and
// user frames) as the stack sources handed them out.
type joinKey struct {
	kernel, sched, user sharedFrames
	truncated           bool
}

// framesID is the identity of a frames slice: where it starts and its
// length.
func framesID(f []recording.Frame) sharedFrames {
	if len(f) == 0 {
		return sharedFrames{}
	}
	return sharedFrames{first: &f[0], n: len(f)}
}

// frameKey is what tells two frames of an event stack apart.
type frameKey struct {
	fn, module      string
	addr            uint64
	inlined, kernel bool
}

func stackFrameKey(f recording.Frame) frameKey {
	return frameKey{f.Func, f.Module, f.Addr, f.Inlined, f.Kernel}
}
