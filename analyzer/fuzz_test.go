package analyzer

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/analyzer/live"
	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/recording"
	"github.com/google/pprof/profile"
)

// Fuzz tests of the analysis stage: recordings built in memory whose
// fields lie (durations, counts, times out of order, threads that do not
// exist, stacks pointing at nothing, depths past any unwinder's). Analyze
// must refuse them with recording.ErrInvalid or return a result within
// bounds; it must never panic. The sizes the fuzzer picks are folded into
// small ranges where a large value only costs time (a timeline's
// instants), and left whole where the value itself is the lie (a
// duration, a time).

// lies are the fields a fuzz input sets.
type lies struct {
	duration  int64
	instants  int32
	interval  int64
	threads   uint8
	first     int32
	events    uint8
	t0        int64
	step      int64
	dur       int64
	tid       int32
	stack     int32
	depth     uint16
	locID     uint64
	valueSign int8
}

// liveRecording builds a live recording from l: futex waits and wakes,
// on-CPU samples, a lock table, a thread timeline and an event log, each
// carrying one of the lies.
func liveRecording(l lies) *recording.Recording {
	r := &recording.Recording{Meta: recording.Meta{Source: recording.SourceLive, Duration: time.Duration(l.duration), NumCPU: 2, PID: 10}}
	depth := int(l.depth) % (2 * core.MaxStackFrames)
	mk := func(types ...string) *profile.Profile {
		p := &profile.Profile{}
		for _, t := range types {
			p.SampleType = append(p.SampleType, &profile.ValueType{Type: t, Unit: "count"})
		}
		return p
	}
	wait, wake, oncpu := mk("waits", "delay"), mk("wakes", "woken"), mk("samples", "cpu")
	for _, p := range []*profile.Profile{wait, wake, oncpu} {
		fn := &profile.Function{ID: 1, Name: "worker", Filename: "w.c"}
		leaf := &profile.Function{ID: 2, Name: "__lll_lock_wait", Filename: "l.c"}
		p.Function = []*profile.Function{fn, leaf}
		p.Location = []*profile.Location{
			{ID: 1, Address: 0x10, Line: []profile.Line{{Function: leaf, Line: 1}}},
			{ID: 2, Address: 0x20, Line: []profile.Line{{Function: fn, Line: 2}}},
		}
		stack := []*profile.Location{p.Location[0]}
		for range depth {
			stack = append(stack, p.Location[1])
		}
		if l.locID%3 == 1 {
			// A location the profile's table does not hold.
			stack = append(stack, &profile.Location{ID: l.locID})
		}
		v := int64(l.valueSign) * 1e6
		for tid := range int(l.threads%8) + 1 {
			p.Sample = append(p.Sample, &profile.Sample{
				Location: stack,
				Value:    []int64{v, v * 1000},
				Label:    map[string][]string{recording.LabelLock: {fmt.Sprintf("0x%x", 0x1000+8*(tid%3))}},
				NumLabel: map[string][]int64{recording.LabelTID: {int64(l.tid) + int64(tid)}, recording.LabelPID: {10}},
			})
		}
		if l.locID%3 == 2 {
			// Values that do not match the sample types.
			p.Sample[0].Value = p.Sample[0].Value[:1]
		}
	}
	r.SetProfile(recording.ViewFutexWait, wait)
	r.SetProfile(recording.ViewFutexWake, wake)
	r.SetProfile(recording.ViewOnCPU, oncpu)
	for i := range 3 {
		r.Locks = append(r.Locks, recording.LockStat{Addr: uint64(0x1000 + 8*i), Waits: uint64(l.events), Blocked: uint64(l.events), WaitNS: uint64(l.dur), Waiters: []int{int(l.tid)}, Wakers: []int{int(l.tid) + 1}})
	}
	tl := &recording.Timeline{Interval: time.Duration(l.interval), ClockTicks: 100, Samples: int(l.instants) % (1 << 16)}
	for i := range int(l.threads) {
		n := max(int(l.instants)%64-i, 0)
		s := recording.ThreadSeries{TID: int(l.tid) + i, Comm: "w", First: int(l.first) + i, UTime: make([]uint64, n), STime: make([]uint64, n)}
		for k := range n {
			s.States += string("RSD?"[k%4])
			s.UTime[k] = uint64(k * i)
		}
		tl.Threads = append(tl.Threads, s)
	}
	r.Threads = tl
	r.Stacks = []recording.Stack{{Frames: make([]recording.Frame, depth)}}
	t := l.t0
	for i := range int(l.events) {
		kind := []recording.EventKind{recording.EventWait, recording.EventWake, recording.EventIO, recording.EventRunq, recording.EventDSleep, recording.EventWakeup}[i%6]
		r.Events = append(r.Events, recording.Event{Kind: kind, T: t, Dur: l.dur, TID: int(l.tid) + i%5, Peer: int(l.tid) - i, Addr: uint64(0x1000 + 8*(i%3)), Stack: int(l.stack) % 3})
		t += l.step
	}
	return r
}

// checkResult fails the fuzz run when res is not within bounds.
func checkResult(t *testing.T, rec *recording.Recording, res *core.Result, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, recording.ErrInvalid) {
			t.Fatalf("Analyze: %v, not recording.ErrInvalid", err)
		}
		return
	}
	points := []core.ProgramPoint{}
	for _, f := range res.Findings {
		points = append(points, f.Point)
		if math.IsNaN(f.Score) || math.IsInf(f.Score, 0) {
			t.Errorf("finding %s: score %v", f.Headline, f.Score)
		}
	}
	for _, p := range res.Points {
		points = append(points, p.Point)
	}
	for _, p := range points {
		if len(p.Stack) > core.MaxStackFrames+1 {
			t.Errorf("point %s keeps %d frames", p.Function, len(p.Stack))
		}
	}
	for _, w := range []time.Duration{time.Nanosecond, time.Millisecond, time.Second, math.MaxInt64} {
		s := live.SeriesOf(rec, res, w)
		if len(s.LockWaiting) > core.MaxSeriesWindows || len(s.CPUs) > recording.MaxTimelineSamples || len(s.Runnable) != len(s.CPUs) {
			t.Errorf("window %v: %d lock, %d CPU, %d runnable windows", w, len(s.LockWaiting), len(s.CPUs), len(s.Runnable))
		}
	}
}

func FuzzAnalyzeLiveLies(f *testing.F) {
	f.Add(int64(3e9), int32(31), int64(1e8), uint8(4), int32(0), uint8(20), int64(1e6), int64(1e7), int64(5e5), int32(100), int32(0), uint16(6), uint64(0), int8(1))
	f.Add(int64(math.MaxInt64), int32(1<<22), int64(1), uint8(40), int32(-3), uint8(200), int64(math.MaxInt64-5), int64(-7), int64(math.MaxInt64), int32(-1), int32(-2), uint16(60000), uint64(1), int8(-1))
	f.Add(int64(1e18), int32(2), int64(0), uint8(255), int32(1<<30), uint8(9), int64(-1), int64(0), int64(-1), int32(0), int32(9), uint16(513), uint64(2), int8(0))
	f.Add(int64(0), int32(-5), int64(-1), uint8(1), int32(60), uint8(3), int64(0), int64(math.MaxInt64), int64(0), int32(math.MaxInt32), int32(1), uint16(0), uint64(5), int8(127))
	f.Fuzz(func(t *testing.T, duration int64, instants int32, interval int64, threads uint8, first int32, events uint8, t0, step, dur int64, tid, stack int32, depth uint16, locID uint64, valueSign int8) {
		rec := liveRecording(lies{duration, instants, interval, threads, first, events, t0, step, dur, tid, stack, depth, locID, valueSign})
		res, err := Analyze(rec, Options{})
		checkResult(t, rec, res, err)
	})
}

// FuzzAnalyzeGoLies builds Go runtime profiles and a goroutine dump whose
// counts, values, durations and depths lie.
func FuzzAnalyzeGoLies(f *testing.F) {
	f.Add(int64(10e9), uint16(8), uint16(3), int64(1000), int64(5e6), int32(4), uint64(0))
	f.Add(int64(math.MaxInt64), uint16(60000), uint16(300), int64(math.MinInt64), int64(math.MaxInt64), int32(-1), uint64(7))
	f.Add(int64(-1), uint16(0), uint16(0), int64(0), int64(-5), int32(math.MaxInt32), uint64(1))
	f.Fuzz(func(t *testing.T, durationNanos int64, depth, samples uint16, count, delay int64, goroutines int32, locID uint64) {
		d := int(depth) % (4 * core.MaxStackFrames)
		p := &profile.Profile{
			SampleType:    []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}},
			DurationNanos: durationNanos,
		}
		lock := &profile.Function{ID: 1, Name: "sync.(*Mutex).Lock", Filename: "/go/src/sync/mutex.go"}
		app := &profile.Function{ID: 2, Name: "app.handle", Filename: "/src/app/h.go"}
		p.Function = []*profile.Function{lock, app}
		p.Location = []*profile.Location{
			{ID: 1, Line: []profile.Line{{Function: lock, Line: 46}}},
			{ID: 2, Line: []profile.Line{{Function: app, Line: 9}, {Function: app, Line: 10}}},
		}
		stack := []*profile.Location{p.Location[0]}
		for range d {
			stack = append(stack, p.Location[1])
		}
		if locID%4 == 1 {
			stack = append(stack, &profile.Location{ID: locID})
		}
		for i := range int(samples) % 64 {
			p.Sample = append(p.Sample, &profile.Sample{Location: stack[:max(len(stack)-i, 0)], Value: []int64{count + int64(i), delay}})
		}
		cpu := &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: delay, DurationNanos: durationNanos,
			Function: p.Function, Location: p.Location,
		}
		for i := range int(samples) % 16 {
			cpu.Sample = append(cpu.Sample, &profile.Sample{Location: stack[i%max(len(stack), 1):], Value: []int64{count, delay}})
		}
		dump := &goprof.Dump{Kind: goprof.KindGoroutineDump, Total: int(goroutines)}
		g := &goprof.Group{Count: int(goroutines), State: "sync.Mutex.Lock"}
		g.Frames = append(g.Frames, goprof.Frame{Func: "sync.runtime_SemacquireMutex", Args: "0x1, 0x0"}, goprof.Frame{Func: "sync.(*Mutex).lockSlow"}, goprof.Frame{Func: "sync.(*Mutex).Lock"})
		for range 2 * d {
			g.Frames = append(g.Frames, goprof.Frame{Func: "app.handle", File: "/src/app/h.go", Line: 9})
		}
		dump.Groups = []*goprof.Group{g, {Count: -int(goroutines), State: "select"}}
		r := rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: p, recording.ViewGoMutex: p, recording.ViewGoCPU: cpu}, dump)
		r.Meta.Duration = time.Duration(durationNanos)
		res, err := Analyze(r, Options{})
		checkResult(t, r, res, err)
	})
}
