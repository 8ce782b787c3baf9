package analyzer

import (
	"fmt"
	"strings"

	"github.com/contend-dev/contend/internal/units"
)

// The Go points detector fills the rows that need no verdict: program
// points where goroutines sit (with their states, wait and CPU), idle
// groups (waits that are not contention), the target's population, and
// notes about what the input lacks.

// pointRowShare is the share of all waiting or of all CPU a point without
// dumped goroutines must hold to get a row: the rows are for the TUI to
// show where time goes, and points under 1% of it are noise there.
const pointRowShare = 0.01

func goPoints(a *output, g *goData) {
	t := &a.res.Target
	if g.population > 0 {
		t.Population, t.Unit = g.population, "goroutines"
	}
	if t.Duration == 0 {
		t.Duration = g.duration
	}
	if t.NumCPU == 0 {
		t.NumCPU = g.numCPU
	}
	goNotes(a, g)
	a.res.Points = append(a.res.Points, g.pointRows()...)
	a.res.Idle = append(a.res.Idle, g.idleGroups()...)
}

func goNotes(a *output, g *goData) {
	has := func(sub string) bool {
		for _, n := range a.res.Notes {
			if strings.Contains(n, sub) {
				return true
			}
		}
		return false
	}
	if g.mutexGiven && !g.mutexSamples && !has("mutex profile") {
		a.note("mutex profile has no samples: either the program never called runtime.SetMutexProfileFraction or it saw no contention while profiled; lock release sites are unknown")
	}
	if g.blockGiven && !g.blockSamples && !has("block profile") {
		a.note("block profile has no samples: either the program never called runtime.SetBlockProfileRate or it saw no contention while profiled; waits come from goroutine dumps only")
	}
	if !g.mutexSamples && !g.blockSamples && len(g.groups) > 0 {
		a.note(fmt.Sprintf("no mutex or block samples: lock waits are judged from one %s, a snapshot without durations", g.gorSource))
	}
	lockSites := false
	for _, s := range g.block {
		lockSites = lockSites || s.sc.class == classLock
	}
	if lockSites && !g.mutexGiven {
		a.note("no mutex profile: where contended locks are released is unknown, so locks are named by their Lock sites only")
	}
	if g.duration == 0 && (g.blockSamples || g.mutexSamples) {
		a.note("profiled duration unknown (mutex and block profiles written at exit carry none; a CPU profile or a /debug/pprof delta profile gives one): average waiter counts and wait shares are not computed")
	}
	if len(g.groups) > 0 && g.stateInferred {
		a.note(fmt.Sprintf("goroutine states inferred from stacks: the %s has no wait states; a debug=2 dump gives them", g.gorSource))
	}
	if g.dumps > 1 {
		a.note(fmt.Sprintf("%d goroutine dumps given: only the %s is used (the latest with wait states)", g.dumps, g.gorSource))
	}
	// The block profile's biggest entry by count is often an idle wait
	// (workers in sync.Cond.Wait); say why it is not ranked first.
	var byCount, topLock *site
	for _, s := range g.block {
		if byCount == nil || s.count > byCount.count {
			byCount = s
		}
		if s.sc.class == classLock && (topLock == nil || s.count > topLock.count) {
			topLock = s
		}
	}
	if byCount != nil && byCount.sc.class == classIdle && topLock != nil && byCount.count > topLock.count {
		a.note(fmt.Sprintf("the block profile's largest entry by count (%s waits) is %s at %s: not contention; locks are ranked by time blocked instead",
			units.Count(byCount.count), byCount.sc.reason, byCount.key))
	}
}

// pointRows builds one row per program point where dumped goroutines sit,
// plus points that hold a noticeable share of waiting or CPU.
func (g *goData) pointRows() []PointRow {
	rows := map[pointKey]*PointRow{}
	big := map[pointKey]int{}
	idle := map[pointKey]bool{}
	for _, gr := range g.groups {
		r := rows[gr.key]
		if r == nil {
			r = &PointRow{Point: newPoint(gr.frames, gr.pi), Unit: "goroutines", States: map[string]int{}}
			rows[gr.key] = r
			idle[gr.key] = true
		}
		r.Count += gr.count
		r.States[gr.state] += gr.count
		if gr.count > big[gr.key] {
			big[gr.key] = gr.count
			r.Point = newPoint(gr.frames, gr.pi)
		}
		if gr.sc.class != classIdle && gr.sc.class != classRuntimeWait {
			idle[gr.key] = false
		}
	}
	var waitTotal int64
	for _, s := range g.block {
		waitTotal += s.value
	}
	add := func(s *site, total int64, isCPU bool) {
		r := rows[s.key]
		if r == nil {
			if total == 0 || float64(s.value) < pointRowShare*float64(total) {
				return
			}
			r = &PointRow{Point: s.point, Unit: "goroutines"}
			rows[s.key] = r
			idle[s.key] = s.sc.class == classIdle
		}
		if isCPU {
			r.CPUSeconds += seconds(s.value)
		} else {
			r.WaitSeconds += seconds(s.value)
		}
	}
	for _, s := range g.block {
		add(s, waitTotal, false)
	}
	for _, s := range g.cpu {
		add(s, g.cpuTotal, true)
	}
	out := make([]PointRow, 0, len(rows))
	for k, r := range rows {
		r.Idle = idle[k]
		if len(r.States) == 0 {
			r.States = nil
		}
		out = append(out, *r)
	}
	return out
}

// idleGroups lists goroutines and block-profile waits that are not
// contention, by reason and point.
func (g *goData) idleGroups() []IdleGroup {
	type key struct {
		reason string
		pointKey
	}
	groups := map[key]*IdleGroup{}
	var order []key
	for _, gr := range g.groups {
		if gr.sc.class != classIdle && gr.sc.class != classRuntimeWait && gr.sc.class != classOtherWait {
			continue
		}
		k := key{gr.sc.reason, gr.key}
		ig := groups[k]
		if ig == nil {
			ig = &IdleGroup{Reason: gr.sc.reason, Point: newPoint(gr.frames, gr.pi), Unit: "goroutines"}
			groups[k] = ig
			order = append(order, k)
		}
		ig.Count += gr.count
	}
	for _, s := range g.block {
		if s.sc.class != classIdle && s.sc.class != classOtherWait {
			continue
		}
		k := key{s.sc.reason, s.key}
		ig := groups[k]
		if ig == nil {
			ig = &IdleGroup{Reason: s.sc.reason, Point: s.point, Unit: "goroutines"}
			groups[k] = ig
			order = append(order, k)
		}
		ig.WaitSeconds += seconds(s.value)
	}
	out := make([]IdleGroup, 0, len(order))
	for _, k := range order {
		out = append(out, *groups[k])
	}
	return out
}
