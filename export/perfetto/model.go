// Package perfetto turns a recording into a Perfetto trace: a protobuf
// Trace of TracePackets (track descriptors and track events) that opens in
// ui.perfetto.dev and trace_processor.
//
// The trace has, for the target process, one track per thread with its
// state over time (running, runnable, sleeping, D) from the /proc timeline
// refined by the scheduler and futex events of the event log; a child
// track per thread with its lock waits (named by lock and program point)
// and I/O calls; flows from the waker to the wakee of each hand-off; and
// counters of the runnable threads and of the threads waiting on a lock.
//
// Build computes the trace as plain values; Encode writes them in the
// protobuf wire format.
package perfetto

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// ErrNothingToExport is returned by Build for a recording with neither a
// thread timeline nor an event log (Go profiles read from files): there is
// no timeline to draw.
var ErrNothingToExport = errors.New("nothing to draw on a timeline: the recording has neither a /proc thread timeline nor an event log (Go profiles alone have no times)")

// Thread states drawn on a thread's track.
const (
	StateRunning = "running"
	// StateRunningOrRunnable is what /proc's 'R' says when no scheduler
	// events tell the two apart.
	StateRunningOrRunnable = "running or runnable"
	StateRunnable          = "runnable"
	StateSleeping          = "sleeping"
	StateD                 = "D"
	StateOther             = "other"
)

// TrackKind says what a track describes.
type TrackKind int

// Kinds of tracks.
const (
	TrackProcess TrackKind = iota
	TrackThread
	// TrackChild is a track of slices under another track (a thread's
	// lock waits).
	TrackChild
	// TrackCounter holds counter values.
	TrackCounter
)

// Track is one row of the timeline.
type Track struct {
	UUID   uint64
	Parent uint64 // 0: none
	Kind   TrackKind
	Name   string
	PID    int
	TID    int
}

// Arg is one debug annotation of a slice or instant.
type Arg struct {
	Name string
	// Str is used when Int is not set (IsInt false).
	Str   string
	Int   int64
	IsInt bool
}

// Slice is an interval on a track. Times are nanoseconds since the Unix
// epoch.
type Slice struct {
	Track      uint64
	Start, End int64
	Name       string
	Args       []Arg
	// Stack is the stack the slice was taken with (leaf first), when the
	// event log holds one.
	Stack []recording.Frame
	// FlowsIn lists the flows that end at this slice's end (a hand-off
	// that ended this wait).
	FlowsIn []uint64
}

// Instant is a point event on a track.
type Instant struct {
	Track uint64
	T     int64
	Name  string
	Args  []Arg
	// FlowsOut lists the flows that start here.
	FlowsOut []uint64
}

// CounterValue is one value of a counter track from time T on.
type CounterValue struct {
	Track uint64
	T     int64
	Value int64
}

// Trace is everything the exported file holds.
type Trace struct {
	Tracks   []Track
	Slices   []Slice
	Instants []Instant
	Counters []CounterValue
	// Notes say what the trace lacks and why (no event log, a sampled
	// event log); they are also written into the trace as an instant on
	// the process track.
	Notes []string
}

// Track UUIDs: fixed for the process and its counters, derived from the
// thread id for threads, so that a trace's UUIDs are stable and never
// clash. Perfetto treats 0 as the implicit global track.
const (
	uuidProcess  = 1
	uuidRunnable = 2
	uuidWaiters  = 3
	uuidThread   = 1 << 32 // + tid
	uuidWaits    = 2 << 32 // + tid
)

// builder holds the state of one Build.
type builder struct {
	rec     *recording.Recording
	origin  int64 // Meta.Start in Unix ns
	end     int64 // end of the recording in Unix ns
	tr      *Trace
	threads map[int]bool
	waits   map[int]bool
	locks   map[uint64]lockLabel
	// waitIdx holds, per thread, the indices into tr.Slices of its wait
	// slices ordered by start, for hand-off matching.
	waitIdx map[int][]int
	flow    uint64
}

// lockLabel is how a wait on one futex address is named.
type lockLabel struct {
	lock  string
	point *analyzer.ProgramPoint
}

// Build computes the trace of rec. res is the analysis of rec: lock names
// and the program point where each lock's waiters sit come from it; nil
// names waits by the lock table only.
func Build(rec *recording.Recording, res *analyzer.Result) (*Trace, error) {
	if rec == nil {
		return nil, errors.New("export: no recording")
	}
	hasTimeline := rec.Threads != nil && rec.Threads.Samples > 0
	if !hasTimeline && len(rec.Events) == 0 {
		return nil, ErrNothingToExport
	}
	b := &builder{
		rec:     rec,
		origin:  rec.Meta.Start.UnixNano(),
		tr:      &Trace{},
		threads: map[int]bool{},
		waits:   map[int]bool{},
		locks:   lockLabels(rec, res),
		waitIdx: map[int][]int{},
	}
	b.end = b.origin + int64(rec.Meta.Duration)
	b.notes(hasTimeline)
	name := rec.Meta.Comm
	if name == "" {
		name = "target"
	}
	b.tr.Tracks = append(b.tr.Tracks, Track{UUID: uuidProcess, Kind: TrackProcess, Name: name, PID: rec.Meta.PID})
	b.states()
	b.blockingCalls()
	b.handoffs()
	b.counters()
	if len(b.tr.Notes) > 0 {
		args := make([]Arg, len(b.tr.Notes))
		for i, n := range b.tr.Notes {
			args[i] = Arg{Name: fmt.Sprintf("note%d", i+1), Str: n}
		}
		b.tr.Instants = append(b.tr.Instants, Instant{Track: uuidProcess, T: b.origin, Name: "contend notes", Args: args})
	}
	sort.SliceStable(b.tr.Tracks, func(i, j int) bool { return b.tr.Tracks[i].UUID < b.tr.Tracks[j].UUID })
	return b.tr, nil
}

// notes says what the trace cannot show.
func (b *builder) notes(hasTimeline bool) {
	m := b.rec.Meta
	if !hasTimeline {
		b.tr.Notes = append(b.tr.Notes, "no /proc thread timeline in the recording: thread states come from the event log alone and there is no runnable-threads counter")
	}
	if b.rec.Events == nil {
		b.tr.Notes = append(b.tr.Notes, fmt.Sprintf("no event log (%s) in the recording: thread states are the /proc samples alone (every %s), and there are no lock-wait slices, I/O slices or hand-off flows", recording.EventsFile, b.interval()))
		return
	}
	if n := m.SampledOut(); n > 0 {
		b.tr.Notes = append(b.tr.Notes, fmt.Sprintf("the event log is sampled: %d event records were left out by its rate limits (the recording's aggregates still count them), so lock-wait slices and hand-offs show the logged part only", n))
	}
	if th := m.Settings["stack_threshold"]; th != "" {
		b.tr.Notes = append(b.tr.Notes, fmt.Sprintf("only futex waits of at least %s are logged; shorter ones have no slice", th))
	}
}

func (b *builder) interval() string {
	if b.rec.Threads == nil {
		return "interval"
	}
	return b.rec.Threads.Interval.String()
}

// lockLabels names each futex address: by the analyzer's lock rows (every
// word folded into a lock, with the program point its waiters sit at),
// else by the lock table's data symbol, else by the address.
func lockLabels(rec *recording.Recording, res *analyzer.Result) map[uint64]lockLabel {
	out := map[uint64]lockLabel{}
	for _, l := range rec.Locks {
		name := l.Name
		if name == "" {
			name = fmt.Sprintf("0x%x", l.Addr)
		}
		out[l.Addr] = lockLabel{lock: name}
	}
	if res == nil {
		return out
	}
	for i := range res.Locks {
		row := &res.Locks[i]
		name := row.Lock.Name
		if name == "" {
			name = row.Lock.Address
		}
		for _, a := range analyzer.LockAddrs(row.Lock) {
			out[a] = lockLabel{lock: name, point: row.Waiter}
		}
	}
	return out
}

// thread adds the track of thread tid once.
func (b *builder) thread(tid int, comm string) {
	if b.threads[tid] {
		return
	}
	b.threads[tid] = true
	name := comm
	if name == "" {
		name = "thread"
	}
	b.tr.Tracks = append(b.tr.Tracks, Track{UUID: uuidThread + uint64(tid), Parent: uuidProcess, Kind: TrackThread, Name: name, PID: b.rec.Meta.PID, TID: tid})
}

// waitTrack adds the lock-wait track of thread tid once.
func (b *builder) waitTrack(tid int) uint64 {
	u := uuidWaits + uint64(tid)
	if !b.waits[tid] {
		b.waits[tid] = true
		b.thread(tid, "")
		b.tr.Tracks = append(b.tr.Tracks, Track{UUID: u, Parent: uuidThread + uint64(tid), Kind: TrackChild, Name: "lock waits and I/O", PID: b.rec.Meta.PID, TID: tid})
	}
	return u
}

// span is one state interval of a thread, in Unix ns.
type span struct {
	start, end int64
	state      string
}

// states draws each thread's state slices: the /proc samples, each
// holding from its instant to the next, overlaid by what the event log
// times exactly (runnable from the scheduler's run-queue intervals, D from
// uninterruptible sleeps, sleeping from futex waits).
func (b *builder) states() {
	base := map[int][]span{}
	comm := map[int]string{}
	var tids []int
	if tl := b.rec.Threads; tl != nil && tl.Interval > 0 {
		running := StateRunningOrRunnable
		if b.hasRunqEvents() {
			running = StateRunning
		}
		for _, s := range tl.Threads {
			if _, ok := comm[s.TID]; !ok {
				tids = append(tids, s.TID)
			}
			comm[s.TID] = s.Comm
			for k := 0; k < len(s.States); k++ {
				st := procState(s.States[k], running)
				if st == "" {
					continue
				}
				i := s.First + k
				start := b.origin + int64(i)*int64(tl.Interval)
				end := min(start+int64(tl.Interval), b.end)
				if end <= start {
					continue
				}
				sp := base[s.TID]
				if n := len(sp); n > 0 && sp[n-1].state == st && sp[n-1].end == start {
					sp[n-1].end = end
				} else {
					sp = append(sp, span{start, end, st})
				}
				base[s.TID] = sp
			}
		}
	}
	over := map[int][]span{}
	for _, e := range b.rec.Events {
		var st string
		switch e.Kind {
		case recording.EventRunq:
			st = StateRunnable
		case recording.EventDSleep:
			st = StateD
		case recording.EventWait:
			st = StateSleeping
		default:
			continue
		}
		if e.Dur <= 0 {
			continue
		}
		if _, ok := comm[e.TID]; !ok {
			comm[e.TID] = ""
			tids = append(tids, e.TID)
		}
		over[e.TID] = append(over[e.TID], span{b.origin + e.T, b.origin + e.End(), st})
	}
	sort.Ints(tids)
	for _, tid := range tids {
		b.thread(tid, comm[tid])
		for _, sp := range paint(base[tid], disjoint(over[tid])) {
			b.tr.Slices = append(b.tr.Slices, Slice{Track: uuidThread + uint64(tid), Start: sp.start, End: sp.end, Name: sp.state})
		}
	}
}

// hasRunqEvents reports whether the event log times the run-queue
// intervals, which is what tells a running thread from a runnable one.
func (b *builder) hasRunqEvents() bool {
	for _, e := range b.rec.Events {
		if e.Kind == recording.EventRunq {
			return true
		}
	}
	return false
}

// procState names a /proc state letter; "" for an instant not sampled.
func procState(letter byte, running string) string {
	switch recording.StateCategory(letter) {
	case recording.StateRunnable:
		return running
	case recording.StateSleeping:
		return StateSleeping
	case recording.StateUninterruptible:
		return StateD
	case recording.StateOther:
		return StateOther + " (" + string(letter) + ")"
	}
	return ""
}

// disjoint sorts spans by start and cuts each at the start of the next,
// so that a later interval wins where two overlap.
func disjoint(sp []span) []span {
	sort.SliceStable(sp, func(i, j int) bool { return sp[i].start < sp[j].start })
	out := sp[:0]
	for i, s := range sp {
		if i+1 < len(sp) && sp[i+1].start < s.end {
			s.end = sp[i+1].start
		}
		if s.end > s.start {
			out = append(out, s)
		}
	}
	return out
}

// paint lays the disjoint spans over over the disjoint spans base: where
// an overlay span lies, it replaces the base; elsewhere the base shows.
// Adjacent spans of one state are merged.
func paint(base, over []span) []span {
	var out []span
	add := func(s span) {
		if s.end <= s.start {
			return
		}
		if n := len(out); n > 0 && out[n-1].state == s.state && out[n-1].end == s.start {
			out[n-1].end = s.end
			return
		}
		out = append(out, s)
	}
	i := 0
	for _, o := range over {
		for i < len(base) && base[i].start < o.start {
			s := base[i]
			if s.end > o.start {
				// The base span straddles the overlay's start: keep its
				// part before, and what follows the overlay's end.
				add(span{s.start, o.start, s.state})
				if s.end > o.end {
					base[i].start = o.end
					break
				}
				i++
				continue
			}
			add(s)
			i++
		}
		add(o)
		for i < len(base) && base[i].start < o.end {
			if base[i].end > o.end {
				base[i].start = o.end
				break
			}
			i++
		}
	}
	for ; i < len(base); i++ {
		add(base[i])
	}
	return out
}

// blockingCalls draws each thread's logged futex waits and I/O calls on
// its lock-wait track.
func (b *builder) blockingCalls() {
	byTID := map[int][]int{}
	var tids []int
	for i, e := range b.rec.Events {
		if (e.Kind != recording.EventWait && e.Kind != recording.EventIO) || e.Dur <= 0 {
			continue
		}
		if byTID[e.TID] == nil {
			tids = append(tids, e.TID)
		}
		byTID[e.TID] = append(byTID[e.TID], i)
	}
	sort.Ints(tids)
	for _, tid := range tids {
		track := b.waitTrack(tid)
		idx := byTID[tid]
		sort.SliceStable(idx, func(x, y int) bool { return b.rec.Events[idx[x]].T < b.rec.Events[idx[y]].T })
		for k, i := range idx {
			e := b.rec.Events[i]
			end := e.End()
			if k+1 < len(idx) {
				// One thread makes one call at a time; an overlap can only
				// come from clock skew between probes: cut it.
				end = min(end, b.rec.Events[idx[k+1]].T)
			}
			if end <= e.T {
				continue
			}
			s := Slice{Track: track, Start: b.origin + e.T, End: b.origin + end}
			if e.Kind == recording.EventWait {
				s.Name, s.Args = b.waitName(e)
				b.waitIdx[tid] = append(b.waitIdx[tid], len(b.tr.Slices))
			} else {
				s.Name = "I/O " + e.Syscall
				s.Args = []Arg{{Name: "syscall", Str: e.Syscall}}
			}
			if e.Stack >= 0 && e.Stack < len(b.rec.Stacks) {
				s.Stack = b.rec.Stacks[e.Stack].Frames
			}
			b.tr.Slices = append(b.tr.Slices, s)
		}
	}
}

// waitName names a wait slice "wait <lock> at <point>" and lists what is
// known of it.
func (b *builder) waitName(e recording.Event) (string, []Arg) {
	addr := fmt.Sprintf("0x%x", e.Addr)
	l, ok := b.locks[e.Addr]
	if !ok {
		l = lockLabel{lock: addr}
	}
	name := "wait " + l.lock
	args := []Arg{{Name: "lock", Str: l.lock}, {Name: "futex", Str: addr}}
	if l.point != nil && l.point.Function != "" {
		name += " at " + analyzer.ShortFunc(l.point.Function)
		where := l.point.Function
		if l.point.File != "" {
			where += fmt.Sprintf(" %s:%d", l.point.File, l.point.Line)
		}
		args = append(args, Arg{Name: "program point", Str: where})
	}
	if e.Peer > 0 {
		args = append(args, Arg{Name: "owner tid", Int: int64(e.Peer), IsInt: true})
	}
	return name, args
}

// handoffMaxLag bounds how long after a wakeup the woken thread's wait may
// end for the two to be paired as a hand-off: the wakee must get a CPU
// first, which on a loaded machine takes up to a few scheduler periods
// (sched_latency is 6–24 ms); 50 ms covers that without pairing a wakeup
// with a later, unrelated wait.
const handoffMaxLag = 50_000_000

// handoffs draws a flow from the waker to the wakee of each logged wakeup
// that ended one of the wakee's logged futex waits: an instant on the
// waker's lock-wait track at the wakeup, the flow ending where the wait
// ends.
func (b *builder) handoffs() {
	taken := map[int]bool{}
	for _, e := range b.rec.Events {
		if e.Kind != recording.EventWakeup || e.TID <= 0 || e.Peer <= 0 || e.TID == e.Peer {
			continue
		}
		idx := b.waitIdx[e.Peer]
		t := b.origin + e.T
		// The wait the wakeup ended is the first that ends at or after it.
		k := sort.Search(len(idx), func(k int) bool { return b.tr.Slices[idx[k]].End >= t })
		if k == len(idx) {
			continue
		}
		w := &b.tr.Slices[idx[k]]
		if w.Start > t || w.End-t > handoffMaxLag || taken[idx[k]] {
			continue
		}
		taken[idx[k]] = true
		b.flow++
		w.FlowsIn = append(w.FlowsIn, b.flow)
		lock := strings.TrimPrefix(w.Name, "wait ")
		b.tr.Instants = append(b.tr.Instants, Instant{
			Track:    b.waitTrack(e.TID),
			T:        t,
			Name:     "hand-off " + lock,
			Args:     []Arg{{Name: "wakee tid", Int: int64(e.Peer), IsInt: true}},
			FlowsOut: []uint64{b.flow},
		})
	}
}

// counters adds the runnable-threads counter from the /proc samples and
// the lock-waiters counter from the logged waits.
func (b *builder) counters() {
	if tl := b.rec.Threads; tl != nil && tl.Samples > 0 && tl.Interval > 0 {
		b.tr.Tracks = append(b.tr.Tracks, Track{UUID: uuidRunnable, Parent: uuidProcess, Kind: TrackCounter, Name: "runnable threads (/proc R)", PID: b.rec.Meta.PID})
		for i, n := range tl.RunnableSeries() {
			b.tr.Counters = append(b.tr.Counters, CounterValue{Track: uuidRunnable, T: b.origin + int64(i)*int64(tl.Interval), Value: int64(n)})
		}
	}
	type edge struct {
		t int64
		d int64
	}
	var edges []edge
	for _, e := range b.rec.Events {
		if e.Kind == recording.EventWait && e.Dur > 0 {
			edges = append(edges, edge{b.origin + e.T, 1}, edge{b.origin + e.End(), -1})
		}
	}
	if len(edges) == 0 {
		return
	}
	sort.SliceStable(edges, func(i, j int) bool {
		if edges[i].t != edges[j].t {
			return edges[i].t < edges[j].t
		}
		return edges[i].d < edges[j].d
	})
	b.tr.Tracks = append(b.tr.Tracks, Track{UUID: uuidWaiters, Parent: uuidProcess, Kind: TrackCounter, Name: "threads in a logged lock wait", PID: b.rec.Meta.PID})
	if edges[0].t > b.origin {
		b.tr.Counters = append(b.tr.Counters, CounterValue{Track: uuidWaiters, T: b.origin, Value: 0})
	}
	var n int64
	for i, e := range edges {
		n += e.d
		if i+1 < len(edges) && edges[i+1].t == e.t {
			continue // one value per instant
		}
		b.tr.Counters = append(b.tr.Counters, CounterValue{Track: uuidWaiters, T: e.t, Value: n})
	}
}

// Export analyzes rec (for lock names and program points), builds its
// trace and returns it serialized, with the notes on what it lacks.
func Export(rec *recording.Recording) ([]byte, []string, error) {
	res, err := analyzer.Analyze(rec, analyzer.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("export: analyze: %w", err)
	}
	tr, err := Build(rec, res)
	if err != nil {
		return nil, nil, fmt.Errorf("export: %w", err)
	}
	return tr.Encode(), tr.Notes, nil
}
