package live

import (
	"fmt"
	"sort"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/internal/units"
)

// The futex lock verdicts: every lock that is not an idle wait and whose
// waiting passes core.Significant becomes a lock case (lockCase), judged
// by core.JudgeLock, heaviest first. Whether the critical sections touch
// disjoint data, which would tell a lock to stripe from a serialized
// writer to combine, is invisible at the futex level; the judge reads it
// from the hand-off rate, the hold bound, how many holds a wait spans and
// what the hand-offs cost (core/thresholds.go), and the suggestion states
// what its remedy assumes so that a reader can check it against the code.

// liveLockVerdicts adds the finding of every significant lock of locks.
func liveLockVerdicts(a *core.Output, ld *Data, locks []*LockGroup) {
	var total int64
	for _, g := range locks {
		if !g.idle && !g.blind() {
			total += g.waitNS
		}
	}
	active := ld.activeThreads(locks)
	sorted := append([]*LockGroup(nil), locks...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].waitNS > sorted[j].waitNS })
	for _, g := range sorted {
		if g.idle || g.waitNS == 0 {
			continue
		}
		if g.blind() {
			a.Missing(fmt.Sprintf("the stacks of the %d %s that waited %s on %s from before the recording to its end", len(g.waiters), units.Plural(len(g.waiters), "thread"), units.Duration(time.Duration(g.waitNS)), g.name()),
				"what they wait for: a lock whose holder never let go, or an idle wait; woken by nobody and with no stack, they are neither a finding nor counted as idle")
			continue
		}
		if !core.Significant(g.waitNS, total, ld.dur, active) {
			continue
		}
		a.Res.Findings = append(a.Res.Findings, core.JudgeLock(ld.lockCase(g, locks), ld.dur))
	}
}

// activeThreads is the working population in thread-equivalents: the
// time threads spent on a CPU, runnable without one, or waiting for a lock
// that is not an idle wait, over the profiled span. Counting threads
// instead would make a lock's share depend on how many helper threads
// happen to run once (a JVM's compiler and GC threads, a few milliseconds
// each, would count as workers and lift the bar). Time counts each thread
// by what it worked, at any thread count.
func (ld *Data) activeThreads(locks []*LockGroup) float64 {
	if ld.dur <= 0 {
		return 0
	}
	var work float64
	for _, t := range ld.threads {
		// A thread works at most the whole span: the cpu-clock and /proc
		// figures can overshoot it by a sample period.
		work += min(core.Seconds(int64(ld.dur)), t.cpu()+core.Seconds(t.runqNS))
	}
	for _, g := range locks {
		if !g.idle && !g.blind() {
			work += core.Seconds(g.waitNS)
		}
	}
	return work / core.Seconds(int64(ld.dur))
}

// factsOf returns the facts of a group, measuring them once.
func (ld *Data) factsOf(g *LockGroup) *lockFacts {
	if g.facts == nil {
		g.facts = ld.facts(g)
	}
	return g.facts
}

// waiterKey returns the heaviest waiter program point of a group.
func (ld *Data) waiterKey(g *LockGroup) core.PointKey {
	if p := pointsOf(g.waitSamples(), 1); len(p) > 0 {
		return p[0].key
	}
	return core.PointKey{}
}

// blind reports whether nothing in the recording says what a group's
// threads wait for: a futex word of no known kind, waited on only by
// calls in progress from before the recording to its end whose stacks
// were not taken, and woken by nobody. A lock whose holder never let go
// looks like that, and so does a pool's idle wait (a loaded JVM's
// compiler threads, once their stacks went untaken); a finding cannot
// rest on it, nor can "not contention".
func (g *LockGroup) blind() bool {
	if g.role != roleUnknown || g.woken > 0 {
		return false
	}
	for _, s := range g.waitSamples() {
		if !s.synthetic() {
			return false
		}
	}
	return true
}
