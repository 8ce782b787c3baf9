package goprofile

import (
	"fmt"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/internal/units"
)

func goPoints(a *core.Output, g *Data) {
	t := &a.Res.Target
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
	a.Res.Points = append(a.Res.Points, g.pointRows()...)
	a.Res.Idle = append(a.Res.Idle, g.idleGroups()...)
}

func goNotes(a *core.Output, g *Data) {
	has := func(sub string) bool {
		for _, n := range a.Res.Notes {
			if strings.Contains(n, sub) {
				return true
			}
		}
		return false
	}
	if g.mutexGiven && !g.mutexSamples && !has("mutex profile") {
		a.Note("mutex profile has no samples: either the program never called runtime.SetMutexProfileFraction or it saw no contention while profiled; lock release sites are unknown")
	}
	if g.blockGiven && !g.blockSamples && !has("block profile") {
		a.Note("block profile has no samples: either the program never called runtime.SetBlockProfileRate or it saw no contention while profiled; waits come from goroutine dumps only")
	}
	if !g.mutexSamples && !g.blockSamples && len(g.groups) > 0 {
		a.Note(fmt.Sprintf("no mutex or block samples: lock waits are judged from one %s, a snapshot without durations", g.gorSource))
	}
	lockSites := false
	for _, s := range g.block {
		lockSites = lockSites || s.sc.Class == core.ClassLock
	}
	if lockSites && !g.mutexGiven {
		a.Note("no mutex profile: where contended locks are released is unknown, so locks are named by their Lock sites only")
	}
	if g.duration == 0 && (g.blockSamples || g.mutexSamples) {
		a.Note("profiled duration unknown (mutex and block profiles written at exit carry none; a CPU profile or a /debug/pprof delta profile gives one): average waiter counts and wait shares are not computed")
	}
	if len(g.groups) > 0 && g.stateInferred {
		a.Note(fmt.Sprintf("goroutine states inferred from stacks: the %s has no wait states; a debug=2 dump gives them", g.gorSource))
	}
	if g.dumps > 1 {
		a.Note(fmt.Sprintf("%d goroutine dumps given: only the %s is used (the latest with wait states)", g.dumps, g.gorSource))
	}
	// The block profile's biggest entry by count is often an idle wait
	// (workers in sync.Cond.Wait); say why it is not ranked first.
	var byCount, topLock *site
	for _, s := range g.block {
		if byCount == nil || s.count > byCount.count {
			byCount = s
		}
		if s.sc.Class == core.ClassLock && (topLock == nil || s.count > topLock.count) {
			topLock = s
		}
	}
	if byCount != nil && byCount.sc.Class == core.ClassIdle && topLock != nil && byCount.count > topLock.count {
		a.Note(fmt.Sprintf("the block profile's largest entry by count (%s waits) is %s at %s: not contention; locks are ranked by time blocked instead",
			units.Count(byCount.count), byCount.sc.Reason, byCount.key))
	}
}

// pointRows builds one row per program point where dumped goroutines sit,
// plus points that hold a noticeable share of waiting or CPU.
func (g *Data) pointRows() []core.PointRow {
	rows := map[core.PointKey]*core.PointRow{}
	big := map[core.PointKey]int{}
	idle := map[core.PointKey]bool{}
	for _, gr := range g.groups {
		r := rows[gr.key]
		if r == nil {
			r = &core.PointRow{Point: core.NewPoint(gr.frames, gr.pi), Unit: "goroutines", States: map[string]int{}}
			rows[gr.key] = r
			idle[gr.key] = true
		}
		r.Count += gr.count
		r.States[gr.state] += gr.count
		if gr.count > big[gr.key] {
			big[gr.key] = gr.count
			r.Point = core.NewPoint(gr.frames, gr.pi)
		}
		if gr.sc.Class != core.ClassIdle && gr.sc.Class != core.ClassRuntimeWait {
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
			if total == 0 || float64(s.value) < core.PointRowShare*float64(total) {
				return
			}
			r = &core.PointRow{Point: s.point, Unit: "goroutines"}
			rows[s.key] = r
			idle[s.key] = s.sc.Class == core.ClassIdle
		}
		if isCPU {
			r.CPUSeconds += core.Seconds(s.value)
		} else {
			r.WaitSeconds += core.Seconds(s.value)
		}
	}
	for _, s := range g.block {
		add(s, waitTotal, false)
	}
	for _, s := range g.cpu {
		add(s, g.cpuTotal, true)
	}
	out := make([]core.PointRow, 0, len(rows))
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
func (g *Data) idleGroups() []core.IdleGroup {
	type key struct {
		reason string
		core.PointKey
	}
	groups := map[key]*core.IdleGroup{}
	var order []key
	for _, gr := range g.groups {
		if gr.sc.Class != core.ClassIdle && gr.sc.Class != core.ClassRuntimeWait && gr.sc.Class != core.ClassOtherWait {
			continue
		}
		k := key{gr.sc.Reason, gr.key}
		ig := groups[k]
		if ig == nil {
			ig = &core.IdleGroup{Reason: gr.sc.Reason, Point: core.NewPoint(gr.frames, gr.pi), Unit: "goroutines"}
			groups[k] = ig
			order = append(order, k)
		}
		ig.Count += gr.count
	}
	for _, s := range g.block {
		if s.sc.Class != core.ClassIdle && s.sc.Class != core.ClassOtherWait {
			continue
		}
		k := key{s.sc.Reason, s.key}
		ig := groups[k]
		if ig == nil {
			ig = &core.IdleGroup{Reason: s.sc.Reason, Point: s.point, Unit: "goroutines"}
			groups[k] = ig
			order = append(order, k)
		}
		ig.WaitSeconds += core.Seconds(s.value)
	}
	out := make([]core.IdleGroup, 0, len(order))
	for _, k := range order {
		out = append(out, *groups[k])
	}
	return out
}
