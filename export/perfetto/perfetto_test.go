package perfetto

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/contend-dev/contend/recording"
)

// The decoder below reads the file back through the protobuf wire format
// with the field numbers of Perfetto's protos written out again, without
// the encoder's model: a mistake in the encoder's numbers or nesting shows
// up as a missing track or slice here.

type decTrack struct {
	uuid, parent uint64
	name         string
	pid, tid     int64
	isProcess    bool
	isThread     bool
	isCounter    bool
}

type decEvent struct {
	ts       int64
	typ      uint64
	track    uint64
	name     string
	cats     []string
	counter  int64
	flows    []uint64
	termFlow []uint64
	args     map[string]string
	frames   []string
}

type decSlice struct {
	start, end int64
	name       string
	args       map[string]string
	frames     []string
	termFlow   []uint64
}

type decoded struct {
	tracks   map[uint64]*decTrack
	slices   map[uint64][]decSlice
	instants map[uint64][]decEvent
	counters map[uint64][]decEvent
	seqFlags []uint64
}

// fields splits one message into its fields; it fails the test on bad
// wire data.
func fields(t *testing.T, b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, sub []byte)) {
	t.Helper()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				t.Fatalf("bad varint in field %d", num)
			}
			f(num, typ, v, nil)
			b = b[n:]
		case protowire.Fixed64Type:
			v, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				t.Fatalf("bad fixed64 in field %d", num)
			}
			f(num, typ, v, nil)
			b = b[n:]
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				t.Fatalf("bad bytes in field %d", num)
			}
			f(num, typ, 0, v)
			b = b[n:]
		default:
			t.Fatalf("unexpected wire type %d in field %d", typ, num)
		}
	}
}

func decode(t *testing.T, data []byte) *decoded {
	t.Helper()
	d := &decoded{tracks: map[uint64]*decTrack{}, slices: map[uint64][]decSlice{}, instants: map[uint64][]decEvent{}, counters: map[uint64][]decEvent{}}
	var events []decEvent
	fields(t, data, func(num protowire.Number, _ protowire.Type, _ uint64, pkt []byte) {
		if num != 1 { // Trace.packet
			t.Fatalf("Trace has field %d", num)
		}
		var ts int64
		var seq uint64
		var ev *decEvent
		fields(t, pkt, func(num protowire.Number, _ protowire.Type, v uint64, sub []byte) {
			switch num {
			case 8:
				ts = int64(v)
			case 10:
				seq = v
			case 13:
				d.seqFlags = append(d.seqFlags, v)
			case 60:
				tr := &decTrack{}
				fields(t, sub, func(num protowire.Number, _ protowire.Type, v uint64, sub []byte) {
					switch num {
					case 1:
						tr.uuid = v
					case 2:
						tr.name = string(sub)
					case 5:
						tr.parent = v
					case 3:
						tr.isProcess = true
						fields(t, sub, func(num protowire.Number, _ protowire.Type, v uint64, sub []byte) {
							switch num {
							case 1:
								tr.pid = int64(v)
							case 6:
								tr.name = string(sub)
							}
						})
					case 4:
						tr.isThread = true
						fields(t, sub, func(num protowire.Number, _ protowire.Type, v uint64, sub []byte) {
							switch num {
							case 1:
								tr.pid = int64(v)
							case 2:
								tr.tid = int64(v)
							case 5:
								tr.name = string(sub)
							}
						})
					case 8:
						tr.isCounter = true
					}
				})
				d.tracks[tr.uuid] = tr
			case 11:
				ev = &decEvent{args: map[string]string{}}
				fields(t, sub, func(num protowire.Number, _ protowire.Type, v uint64, sub []byte) {
					switch num {
					case 9:
						ev.typ = v
					case 11:
						ev.track = v
					case 22:
						ev.cats = append(ev.cats, string(sub))
					case 23:
						ev.name = string(sub)
					case 30:
						ev.counter = int64(v)
					case 47:
						ev.flows = append(ev.flows, v)
					case 48:
						ev.termFlow = append(ev.termFlow, v)
					case 4:
						var k, val string
						fields(t, sub, func(num protowire.Number, _ protowire.Type, v uint64, sub []byte) {
							switch num {
							case 10:
								k = string(sub)
							case 6:
								val = string(sub)
							case 4:
								val = fmt.Sprint(int64(v))
							}
						})
						ev.args[k] = val
					case 55:
						fields(t, sub, func(num protowire.Number, _ protowire.Type, _ uint64, frame []byte) {
							fields(t, frame, func(num protowire.Number, _ protowire.Type, _ uint64, sub []byte) {
								if num == 1 {
									ev.frames = append(ev.frames, string(sub))
								}
							})
						})
					}
				})
			}
		})
		if seq != 1 {
			t.Fatalf("packet on sequence %d, want 1", seq)
		}
		if ev != nil {
			ev.ts = ts
			events = append(events, *ev)
		}
	})
	// Pair begins and ends per track, in file order, as trace_processor
	// does: an end closes the innermost open slice of its track.
	open := map[uint64][]decEvent{}
	for _, e := range events {
		if _, ok := d.tracks[e.track]; !ok {
			t.Fatalf("event %q on undeclared track %d", e.name, e.track)
		}
		switch e.typ {
		case 1:
			open[e.track] = append(open[e.track], e)
		case 2:
			st := open[e.track]
			if len(st) == 0 {
				t.Fatalf("slice end at %d on track %d without a begin", e.ts, e.track)
			}
			b := st[len(st)-1]
			open[e.track] = st[:len(st)-1]
			if e.ts < b.ts {
				t.Fatalf("slice %q ends before it begins", b.name)
			}
			d.slices[e.track] = append(d.slices[e.track], decSlice{start: b.ts, end: e.ts, name: b.name, args: b.args, frames: b.frames, termFlow: e.termFlow})
		case 3:
			d.instants[e.track] = append(d.instants[e.track], e)
		case 4:
			if !d.tracks[e.track].isCounter {
				t.Fatalf("counter value on track %q, which is no counter", d.tracks[e.track].name)
			}
			d.counters[e.track] = append(d.counters[e.track], e)
		default:
			t.Fatalf("event type %d", e.typ)
		}
	}
	for tr, st := range open {
		if len(st) > 0 {
			t.Fatalf("%d slices on track %d never end", len(st), tr)
		}
	}
	return d
}

func readLive(t *testing.T, name string) *recording.Recording {
	t.Helper()
	rec, err := recording.Read(filepath.Join("..", "..", "analyzer", "testdata", "live", name))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func exportDecode(t *testing.T, rec *recording.Recording) (*decoded, []string) {
	t.Helper()
	data, notes, err := Export(rec)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, data), notes
}

// threadTrack returns the thread track of tid.
func (d *decoded) threadTrack(t *testing.T, pid, tid int) *decTrack {
	t.Helper()
	for _, tr := range d.tracks {
		if tr.isThread && tr.tid == int64(tid) {
			if tr.pid != int64(pid) {
				t.Errorf("thread %d track has pid %d, want %d", tid, tr.pid, pid)
			}
			return tr
		}
	}
	t.Fatalf("no track for thread %d", tid)
	return nil
}

// childTrack returns the child track of parent named name, or nil.
func (d *decoded) childTrack(parent uint64, name string) *decTrack {
	for _, tr := range d.tracks {
		if tr.parent == parent && tr.name == name && !tr.isThread {
			return tr
		}
	}
	return nil
}

// stateAt returns the state slice of a track covering time ts.
func stateAt(sl []decSlice, ts int64) (decSlice, bool) {
	i := sort.Search(len(sl), func(i int) bool { return sl[i].end > ts })
	if i < len(sl) && sl[i].start <= ts {
		return sl[i], true
	}
	return decSlice{}, false
}

func TestExportStripeAgainstRecording(t *testing.T) {
	rec := readLive(t, "c-stripe-bad")
	// Keep the first second of the event log, as a log the collector's
	// rate limit cut short would be: beyond it only the /proc samples say
	// what the threads did, and the export must show their states.
	kept := rec.Events[:0:0]
	for _, e := range rec.Events {
		if e.T < int64(time.Second) {
			kept = append(kept, e)
		}
	}
	rec.Events = kept
	d, notes := exportDecode(t, rec)
	origin := rec.Meta.Start.UnixNano()
	if len(d.seqFlags) != 1 || d.seqFlags[0] != 1 {
		t.Errorf("sequence flags %v: want incremental state cleared once, on the first packet", d.seqFlags)
	}

	var proc *decTrack
	for _, tr := range d.tracks {
		if tr.isProcess {
			if proc != nil {
				t.Fatal("two process tracks")
			}
			proc = tr
		}
	}
	if proc == nil || proc.pid != int64(rec.Meta.PID) || proc.name != rec.Meta.Comm {
		t.Fatalf("process track %+v, want pid %d %s", proc, rec.Meta.PID, rec.Meta.Comm)
	}

	// Every thread of the timeline has a track with its states; where no
	// logged event covers a /proc sample, the state is the sample's.
	tl := rec.Threads
	covered := map[int][][2]int64{}
	for _, e := range rec.Events {
		if e.Kind == recording.EventRunq || e.Kind == recording.EventDSleep || e.Kind == recording.EventWait {
			covered[e.TID] = append(covered[e.TID], [2]int64{origin + e.T, origin + e.End()})
		}
	}
	checked := 0
	for _, s := range tl.Threads {
		tr := d.threadTrack(t, rec.Meta.PID, s.TID)
		if tr.parent != proc.uuid {
			t.Errorf("thread %d track's parent is %d, want the process track", s.TID, tr.parent)
		}
		sl := d.slices[tr.uuid]
		for k := 1; k < len(sl); k++ {
			if sl[k].start < sl[k-1].end {
				t.Fatalf("thread %d: state slices overlap: %+v and %+v", s.TID, sl[k-1], sl[k])
			}
		}
	sample:
		for k := range len(s.States) {
			ts := origin + int64(s.First+k)*int64(tl.Interval)
			for _, c := range covered[s.TID] {
				if ts >= c[0] && ts < c[1]+int64(tl.Interval) {
					continue sample
				}
			}
			want := map[byte]string{'R': StateRunning, 'S': StateSleeping, 'D': StateD}[s.States[k]]
			if want == "" {
				continue
			}
			got, ok := stateAt(sl, ts)
			if !ok || got.name != want {
				t.Errorf("thread %d at sample %d (%c): state slice %+v, want %q", s.TID, s.First+k, s.States[k], got, want)
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Errorf("only %d /proc samples checked against state slices", checked)
	}

	// Every logged run-queue interval is a runnable slice, exactly.
	runq := 0
	for _, e := range rec.Events {
		if e.Kind != recording.EventRunq || e.Dur <= 0 {
			continue
		}
		tr := d.threadTrack(t, rec.Meta.PID, e.TID)
		got, ok := stateAt(d.slices[tr.uuid], origin+e.T)
		if !ok || got.name != StateRunnable || got.start > origin+e.T || got.end < origin+e.End() {
			t.Errorf("runq of %d at %d for %d: slice %+v", e.TID, e.T, e.Dur, got)
		}
		runq++
	}
	if runq == 0 {
		t.Fatal("the recording has no run-queue events")
	}

	// Every logged wait is a slice on its thread's lock-wait track, with
	// the recording's times, named by the lock and the program point.
	waits := 0
	ends := map[string]decSlice{}
	for _, e := range rec.Events {
		if e.Kind != recording.EventWait || e.Dur <= 0 {
			continue
		}
		waits++
		tr := d.threadTrack(t, rec.Meta.PID, e.TID)
		wt := d.childTrack(tr.uuid, "lock waits and I/O")
		if wt == nil {
			t.Fatalf("thread %d has waits but no lock-wait track", e.TID)
		}
		got, ok := stateAt(d.slices[wt.uuid], origin+e.T)
		if !ok || got.start != origin+e.T {
			t.Errorf("wait of %d at %d: no slice starting then (got %+v)", e.TID, e.T, got)
			continue
		}
		if got.end > origin+e.End() {
			t.Errorf("wait of %d at %d lasts %d, slice ends %d later", e.TID, e.T, e.Dur, got.end-origin-e.End())
		}
		if got.args["futex"] != fmt.Sprintf("0x%x", e.Addr) {
			t.Errorf("wait slice futex %q, event's 0x%x", got.args["futex"], e.Addr)
		}
		ends[fmt.Sprint(e.TID, got.end)] = got
	}
	if waits < 1000 {
		t.Fatalf("only %d logged waits", waits)
	}
	var tableWaits int
	for _, sl := range d.slices {
		for _, s := range sl {
			if s.name == "wait table_lock (stripe) at conn_on_message" {
				tableWaits++
				if !strings.HasPrefix(s.args["program point"], "conn_on_message ") || !strings.HasSuffix(s.args["program point"], "stripe.c:39") {
					t.Errorf("program point arg %q", s.args["program point"])
				}
			}
		}
	}
	if tableWaits < waits/2 {
		t.Errorf("%d of %d wait slices are named after table_lock and conn_on_message", tableWaits, waits)
	}

	// Hand-offs: each flow starts at a logged wakeup on the waker's track
	// and ends where a wait of the wakee ends.
	wakeups := map[string]recording.Event{}
	for _, e := range rec.Events {
		if e.Kind == recording.EventWakeup {
			wakeups[fmt.Sprintf("%d %d %d", e.TID, origin+e.T, e.Peer)] = e
		}
	}
	origins := map[uint64]int64{}
	for uuid, ins := range d.instants {
		tr := d.tracks[uuid]
		for _, in := range ins {
			for _, id := range in.flows {
				wakee := in.args["wakee tid"]
				waker := d.tracks[tr.parent].tid
				if _, ok := wakeups[fmt.Sprintf("%d %d %s", waker, in.ts, wakee)]; !ok {
					t.Errorf("flow %d starts at %d on thread %d to %s, which no logged wakeup does", id, in.ts, waker, wakee)
				}
				origins[id] = in.ts
			}
		}
	}
	terms := 0
	for uuid, sl := range d.slices {
		for _, s := range sl {
			for _, id := range s.termFlow {
				terms++
				from, ok := origins[id]
				if !ok {
					t.Errorf("flow %d ends without an origin", id)
					continue
				}
				if from < s.start || from > s.end {
					t.Errorf("flow %d starts at %d, outside the wait it ends (%d–%d)", id, from, s.start, s.end)
				}
				if !strings.HasPrefix(s.name, "wait ") || d.childTrack(d.tracks[uuid].parent, "lock waits and I/O") == nil {
					t.Errorf("flow %d ends on %q", id, s.name)
				}
			}
		}
	}
	if terms < 100 || terms != len(origins) {
		t.Errorf("%d flows end, %d start; want the same, at least 100", terms, len(origins))
	}

	// The runnable counter has the timeline's value at every instant.
	var rc *decTrack
	for _, tr := range d.tracks {
		if tr.isCounter && strings.HasPrefix(tr.name, "runnable threads") {
			rc = tr
		}
	}
	if rc == nil {
		t.Fatal("no runnable-threads counter track")
	}
	series := tl.RunnableSeries()
	cv := d.counters[rc.uuid]
	if len(cv) != len(series) {
		t.Fatalf("runnable counter has %d values, timeline %d instants", len(cv), len(series))
	}
	for i, n := range series {
		if cv[i].ts != origin+int64(i)*int64(tl.Interval) || cv[i].counter != int64(n) {
			t.Errorf("runnable counter %d: %d at %d, want %d at %d", i, cv[i].counter, cv[i].ts, n, origin+int64(i)*int64(tl.Interval))
		}
	}
	if len(notes) == 0 || !strings.Contains(strings.Join(notes, "\n"), "at least 10µs are logged") {
		t.Errorf("notes %q: want the stack threshold said", notes)
	}
}

// TestExportIOLockHasDAndIO checks the uninterruptible sleeps and the I/O
// calls of the iolock recording.
func TestExportIOLockHasDAndIO(t *testing.T) {
	rec := readLive(t, "c-iolock-bad")
	d, _ := exportDecode(t, rec)
	origin := rec.Meta.Start.UnixNano()
	dsleeps, ios := 0, 0
	for _, e := range rec.Events {
		switch e.Kind {
		case recording.EventDSleep:
			if e.Dur <= 0 {
				continue
			}
			tr := d.threadTrack(t, rec.Meta.PID, e.TID)
			got, ok := stateAt(d.slices[tr.uuid], origin+e.T)
			// A later event on the same thread may cut it short.
			if !ok || got.start > origin+e.T {
				t.Errorf("dsleep of %d at %d: %+v", e.TID, e.T, got)
			} else if got.name == StateD {
				dsleeps++
			}
		case recording.EventIO:
			if e.Dur <= 0 {
				continue
			}
			tr := d.threadTrack(t, rec.Meta.PID, e.TID)
			wt := d.childTrack(tr.uuid, "lock waits and I/O")
			got, ok := stateAt(d.slices[wt.uuid], origin+e.T)
			if !ok || got.start != origin+e.T || got.name != "I/O "+e.Syscall {
				t.Errorf("io %s of %d at %d: %+v", e.Syscall, e.TID, e.T, got)
			}
			ios++
		}
	}
	if dsleeps < 100 || ios < 100 {
		t.Errorf("%d D slices, %d I/O slices", dsleeps, ios)
	}
	stacked := 0
	for _, sl := range d.slices {
		for _, s := range sl {
			if len(s.frames) > 0 {
				stacked++
			}
		}
	}
	if stacked == 0 {
		t.Error("no slice carries the call stack the event log holds")
	}
}

// TestExportWithoutEventLog exports a recording that has no event log:
// the /proc states and the runnable counter, no lock-wait slices, and a
// note saying why.
func TestExportWithoutEventLog(t *testing.T) {
	rec := readLive(t, "c-spin-bad")
	// As read from a recording directory without events.jsonl.gz.
	rec.Events = nil
	d, notes := exportDecode(t, rec)
	if !strings.Contains(strings.Join(notes, "\n"), "no event log") {
		t.Errorf("notes %q do not say the event log is missing", notes)
	}
	threads, states := 0, 0
	for _, tr := range d.tracks {
		if tr.isThread {
			threads++
			for _, s := range d.slices[tr.uuid] {
				if s.name == StateRunning {
					t.Errorf("without scheduler events /proc's R cannot be called %q", s.name)
				}
				states++
			}
		}
		if tr.name == "lock waits and I/O" {
			t.Errorf("lock-wait track without an event log")
		}
	}
	if threads != len(rec.Threads.Threads) || states < threads {
		t.Errorf("%d thread tracks (timeline has %d), %d state slices", threads, len(rec.Threads.Threads), states)
	}
	noted := false
	for _, ins := range d.instants {
		for _, in := range ins {
			if in.name == "contend notes" && strings.Contains(in.args["note1"]+in.args["note2"], "no event log") {
				noted = true
			}
		}
	}
	if !noted {
		t.Error("the trace itself does not carry the note")
	}
}

func TestExportGoProfilesAlone(t *testing.T) {
	rec, err := recording.Open(filepath.Join("..", "..", "analyzer", "testdata", "fixtures", "stripe-bad", "mutex.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Export(rec); err == nil || !strings.Contains(err.Error(), "nothing to draw") {
		t.Errorf("Go profiles alone: %v, want nothing to draw", err)
	}
}

func TestPaint(t *testing.T) {
	base := []span{{0, 10, "a"}, {10, 20, "b"}, {20, 30, "a"}}
	over := []span{{5, 12, "x"}, {15, 16, "y"}, {25, 40, "z"}}
	got := paint(base, disjoint(over))
	want := []span{{0, 5, "a"}, {5, 12, "x"}, {12, 15, "b"}, {15, 16, "y"}, {16, 20, "b"}, {20, 25, "a"}, {25, 40, "z"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("paint:\n got %v\nwant %v", got, want)
	}
	// Overlapping overlays: the later one wins from its start.
	if got := disjoint([]span{{0, 10, "p"}, {5, 8, "q"}}); fmt.Sprint(got) != fmt.Sprint([]span{{0, 5, "p"}, {5, 8, "q"}}) {
		t.Errorf("disjoint: %v", got)
	}
}
