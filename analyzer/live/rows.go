package live

import (
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// The live rows: program points where the target's threads run and wait,
// per-lock statistics, per-thread figures, and the idle groups (waits that
// are not contention), for the renderers and the TUI.

// liveTarget fills what the recording says about the target's threads.
func liveTarget(a *core.Output, ld *Data) {
	t := &a.Res.Target
	if t.Population == 0 && ld.population > 0 {
		t.Population, t.Unit = ld.population, "threads"
	}
	if t.NumCPU == 0 {
		t.NumCPU = ld.numCPU
	}
	if ld.rec.Threads == nil {
		a.Note("no /proc timeline in the recording: thread states, CPU times and context switches are unknown, and the spin detector cannot tell runnable threads from running ones")
	}
	if len(ld.oncpu) == 0 && ld.rec.Profile(recording.ViewOnCPU) != nil {
		a.Note("no on-CPU samples: busy-waits cannot be seen")
	}
}

// liveRows fills the rows; polled holds the program points of sleeps a
// polled-lock finding accounts for, which are not idle.
func liveRows(a *core.Output, ld *Data, locks []*LockGroup, polled map[core.PointKey]bool) {
	idlePoints := map[core.PointKey]bool{}
	for _, g := range locks {
		if g.waits == 0 && g.woken == 0 {
			continue
		}
		lf := ld.factsOf(g)
		row := core.LockRow{
			Lock:            g.id(ld),
			Waits:           g.waits,
			DistinctWaiters: g.participants(),
			WaitSeconds:     core.Seconds(g.waitNS),
			P50:             lf.p50,
			P99:             lf.p99,
			Max:             time.Duration(g.maxNS),
			Hist:            trimHist(g.hist),
			Idle:            g.idle,
		}
		if len(lf.waitPoints) > 0 {
			p := lf.waitPoints[0].point
			row.Waiter = &p
		}
		if len(lf.wakePoints) > 0 {
			p := lf.wakePoints[0].point
			row.Waker = &p
		}
		a.Res.Locks = append(a.Res.Locks, row)
		if g.idle && len(lf.waitPoints) > 0 {
			p := lf.waitPoints[0]
			idlePoints[p.key] = true
			a.Res.Idle = append(a.Res.Idle, core.IdleGroup{
				Reason:      g.idleReason,
				Point:       p.point,
				Count:       g.participants(),
				Unit:        "threads",
				WaitSeconds: core.Seconds(g.waitNS),
				TIDs:        sortedTIDs(g.waiters),
			})
		}
	}
	done := maps.Clone(idlePoints)
	maps.Copy(done, polled)
	a.Res.Idle = append(a.Res.Idle, ld.idleSleeps(done)...)
	a.Res.Points = append(a.Res.Points, ld.pointRows(idlePoints)...)
	a.Res.Threads = append(a.Res.Threads, ld.threadRows()...)
}

// trimHist drops the empty top of a histogram.
func trimHist(h []uint64) []uint64 {
	n := len(h)
	for n > 0 && h[n-1] == 0 {
		n--
	}
	if n == 0 {
		return nil
	}
	return append([]uint64(nil), h[:n]...)
}

// futexFrames reports whether a stack waits in a futex (the lock rows
// account for those sleeps).
func futexFrames(frames []recording.Frame) bool {
	for _, f := range frames {
		if !f.Kernel && strings.Contains(strings.ToLower(f.Func), "futex") {
			return true
		}
	}
	r, _ := roleOf(frames)
	return r != roleUnknown
}

// idleSleeps groups the off-CPU sleeps that are not contention and are
// not futex waits (epoll, poll, nanosleep, accept…) by reason and point.
func (ld *Data) idleSleeps(done map[core.PointKey]bool) []core.IdleGroup {
	type key struct {
		reason string
		pk     core.PointKey
	}
	groups := map[key]*core.IdleGroup{}
	tids := map[key]map[int]bool{}
	var order []key
	for _, s := range ld.offcpu {
		if s.state != recording.StateSleeping || s.synthetic() {
			continue
		}
		fr := s.userFrames()
		if len(fr) == 0 || futexFrames(fr) {
			continue
		}
		sc := core.ClassifyFrames(fr, -1)
		if sc.Class != core.ClassIdle {
			continue
		}
		pi := livePointIndex(fr)
		if pi < 0 {
			continue // a stack cut short inside the C library: no place to name
		}
		k := key{sc.Reason, core.KeyOf(fr, pi)}
		if done[k.pk] {
			continue
		}
		g := groups[k]
		if g == nil {
			g = &core.IdleGroup{Reason: sc.Reason, Point: core.NewPoint(fr, pi), Unit: "threads"}
			groups[k] = g
			tids[k] = map[int]bool{}
			order = append(order, k)
		}
		g.WaitSeconds += core.Seconds(value(s, 1))
		tids[k][s.tid] = true
	}
	out := make([]core.IdleGroup, 0, len(order))
	for _, k := range order {
		g := groups[k]
		g.Count = len(tids[k])
		g.TIDs = sortedTIDs(tids[k])
		out = append(out, *g)
	}
	return out
}

// pointRows builds one row per program point that holds at least
// pointRowShare of the sampled CPU or of the off-CPU time.
func (ld *Data) pointRows(idle map[core.PointKey]bool) []core.PointRow {
	type acc struct {
		row    core.PointRow
		tids   map[int]bool
		states map[string]map[int]bool
		top    int64
	}
	rows := map[core.PointKey]*acc{}
	var order []core.PointKey
	add := func(s *liveSample, state string, ns int64, cpu bool) {
		fr := s.userFrames()
		if len(fr) == 0 || s.synthetic() {
			return
		}
		pi := livePointIndex(fr)
		k := core.KeyOf(fr, pi)
		r := rows[k]
		if r == nil {
			r = &acc{row: core.PointRow{Unit: "threads"}, tids: map[int]bool{}, states: map[string]map[int]bool{}}
			rows[k] = r
			order = append(order, k)
		}
		if ns > r.top || r.row.Point.Stack == nil {
			r.top = ns
			r.row.Point = core.NewPoint(fr, pi)
		}
		r.tids[s.tid] = true
		if r.states[state] == nil {
			r.states[state] = map[int]bool{}
		}
		r.states[state][s.tid] = true
		if cpu {
			r.row.CPUSeconds += core.Seconds(ns)
		} else {
			r.row.WaitSeconds += core.Seconds(ns)
		}
		if !idle[k] && core.ClassifyFrames(fr, -1).Class == core.ClassIdle && !futexFrames(fr) {
			idle[k] = true
		}
	}
	var offTotal int64
	for _, s := range ld.offcpu {
		offTotal += value(s, 1)
		add(s, s.state, value(s, 1), false)
	}
	for _, s := range ld.oncpu {
		add(s, recording.StateRunning, value(s, 1), true)
	}
	var out []core.PointRow
	for _, k := range order {
		r := rows[k]
		cpuOK := ld.cpuTotalNS > 0 && r.row.CPUSeconds >= core.PointRowShare*core.Seconds(ld.cpuTotalNS)
		offOK := offTotal > 0 && r.row.WaitSeconds >= core.PointRowShare*core.Seconds(offTotal)
		if !cpuOK && !offOK {
			continue
		}
		r.row.Count = len(r.tids)
		r.row.States = map[string]int{}
		for st, ts := range r.states {
			r.row.States[st] = len(ts)
		}
		r.row.Idle = idle[k]
		out = append(out, r.row)
	}
	return out
}

// threadRows builds one row per thread, busiest first.
func (ld *Data) threadRows() []core.ThreadRow {
	out := make([]core.ThreadRow, 0, len(ld.threads))
	for _, t := range ld.threads {
		out = append(out, core.ThreadRow{
			TID:         t.tid,
			Comm:        t.comm,
			States:      t.states,
			CPUSeconds:  t.cpu(),
			UserSeconds: t.user,
			SysSeconds:  t.sys,
			Voluntary:   t.vol,
			Involuntary: t.invol,
			WaitSeconds: core.Seconds(t.futexNS),
		})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].CPUSeconds+out[i].WaitSeconds, out[j].CPUSeconds+out[j].WaitSeconds
		if a != b {
			return a > b
		}
		return out[i].TID < out[j].TID
	})
	return out
}

// PointInFunction reports whether program point p is in function fn (a
// substring of the name): its own function, or a function it is inlined
// into. A busy-wait inlined into its caller sits in both.
func PointInFunction(p core.ProgramPoint, fn string) bool {
	if strings.Contains(p.Function, fn) {
		return true
	}
	for i := p.PointIndex; i >= 0 && i < len(p.Stack); i++ {
		if strings.Contains(p.Stack[i].Func, fn) {
			return true
		}
		if !p.Stack[i].Inlined {
			break
		}
	}
	return false
}

// PhysicalFunction returns the function program point p's code is
// compiled into: its own, or the one it is inlined in.
func PhysicalFunction(p core.ProgramPoint) string {
	if p.PointIndex < 0 || p.PointIndex >= len(p.Stack) {
		return p.Function
	}
	return p.Stack[physical(p.Stack, p.PointIndex)].Func
}
