package analyzer

import (
	"fmt"
)

// This file fills lock cases from Java thread dumps alone (`contend
// analyze threads.txt`, or dumps given beside profiles): for each monitor
// or java.util.concurrent lock that threads wait for, the waiters and
// where they wait, the holder and what it is doing — running, in I/O
// (FileChannel.write, force), blocked on another lock (a chain) — and
// the idle threads (pool workers waiting for work). A dump is an instant:
// it counts who waits, not for how long; several dumps give an average.
// A live recording joins the dumps with the probes instead (live_jvm.go).

// javaLocks judges the locks of a recording made of Java thread
// dumps only; a live recording's dumps are joined with its probes by the
// live lock verdicts.
func javaLocks(a *output, jd *javaData) {
	if jd == nil || a.rec.IsLive() {
		return
	}
	if a.res.Target.Population == 0 {
		a.res.Target.Population, a.res.Target.Unit = jd.threads, "threads"
	}
	for _, jl := range jd.order {
		if c, ok := jd.lockCase(jl); ok {
			a.res.Findings = append(a.res.Findings, judgeLock(c, 0))
		}
		if len(a.res.Locks) < maxLockRows {
			a.res.Locks = append(a.res.Locks, jd.lockRow(jl))
		}
	}
	a.res.Idle = append(a.res.Idle, jd.idleGroups()...)
	deadlocks := 0
	for _, d := range jd.dumps {
		deadlocks = max(deadlocks, d.Deadlocks)
	}
	if deadlocks > 0 {
		a.note(fmt.Sprintf("the JVM reported %s: threads that each hold a lock the other waits for never proceed; take the locks in one global order", fmt.Sprintf("%d %s", deadlocks, plural(int64(deadlocks), "Java-level deadlock"))))
	}
	if len(jd.order) == 0 {
		a.note(fmt.Sprintf("%d %s: no thread waits for a monitor or a java.util.concurrent lock", len(jd.dumps), plural(int64(len(jd.dumps)), "Java thread dump")))
	}
	if !jd.ownable {
		a.note("the Java thread dumps do not list ownable synchronizers (take them with jcmd PID Thread.print -l, or jstack -l): the holders of java.util.concurrent locks are not named")
	}
}

// significant reports whether the dumps show a lock worth a verdict: a
// crowd of distinct waiters, two or more behind a holder that is in I/O
// or blocked itself, or any waiter of a lock in a deadlock.
func (jd *javaData) significant(jl *javaLock) bool {
	if len(jl.waiters) >= minConvoyParticipants {
		return true
	}
	for _, l := range dumpChain(jd, jl) {
		if l.cycle {
			return true // a deadlock, however few wait
		}
	}
	if len(jl.waiters) < 2 {
		return false
	}
	for _, h := range jl.holds {
		if h != nil && (h.io >= 0 || h.blocked != "") {
			return true
		}
	}
	return false
}

// lockCase builds the case of a lock the dumps show, false when it is
// not significant.
func (jd *javaData) lockCase(jl *javaLock) (*lockCase, bool) {
	if !jd.significant(jl) {
		return nil, false
	}
	k, _ := jl.mainPoint()
	point, _ := jl.pointAt(k)
	c := &lockCase{
		path:         pathJava,
		id:           LockID{Address: jl.addr, Name: jl.class},
		unit:         "threads",
		population:   jd.threads,
		participants: len(jl.waiters),
		counted:      true,
		known:        true,
		mean:         jl.meanWaiting(),
		dumpOnly:     true,
		points:       len(jl.points),
		point:        point,
		java:         true,
		sources:      1,
		missing:      "A live recording (contend record -p PID --jvm-dumps 3) would measure how long the threads wait and how often the lock changes hands.",
	}
	c.what = jl.name() + " in " + pointString(c.point)
	if len(jd.dumps) > 1 {
		c.sources++
	}
	c.ev = javaDumpEvidence(jl, "java-dumps")
	c.io = dumpIO(jl, k)
	c.chain = dumpChain(jd, jl)
	return c, true
}

// lockRow is the lock's row for the locks table.
func (jd *javaData) lockRow(jl *javaLock) LockRow {
	row := LockRow{Lock: LockID{Address: jl.addr, Name: jl.class}, DistinctWaiters: len(jl.waiters)}
	k, _ := jl.mainPoint()
	if p, ok := jl.pointAt(k); ok {
		row.Waiter = &p
	}
	return row
}

// idleGroups lists the Java threads of the last dump that wait without
// contention (pool workers waiting for work, sleepers, condition waits),
// by reason and point.
func (jd *javaData) idleGroups() []IdleGroup {
	d := jd.dumps[len(jd.dumps)-1]
	type key struct {
		reason string
		pk     pointKey
	}
	by := map[key]*IdleGroup{}
	var order []key
	for _, t := range d.Threads {
		if !t.Java || len(t.Frames) == 0 {
			continue
		}
		if _, waits := t.Waits(); waits {
			continue
		}
		fr := javaFrames(t)
		pi := pointIndex(fr)
		sc := classifyFrames(fr, pi)
		if sc.class != classIdle {
			continue
		}
		k := key{sc.reason, keyOf(fr, pi)}
		g := by[k]
		if g == nil {
			g = &IdleGroup{Reason: sc.reason, Point: newPoint(fr, max(pi, 0)), Unit: "threads"}
			by[k] = g
			order = append(order, k)
		}
		g.Count++
	}
	out := make([]IdleGroup, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	return out
}
