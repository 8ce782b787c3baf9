package java

import (
	"fmt"

	"github.com/contend-dev/contend/analyzer/core"
)

// This file fills lock cases from Java thread dumps alone (`contend
// analyze threads.txt`, or dumps given beside profiles): for each monitor
// or java.util.concurrent lock that threads wait for, the waiters and
// where they wait, the holder and what it is doing — running, in I/O
// (FileChannel.write, force), blocked on another lock (a chain) — and
// the idle threads (pool workers waiting for work). A dump is an instant:
// it counts who waits, not for how long; several dumps give an average.
// A live recording joins the dumps with the probes instead (live/jvm.go).

// Locks judges the locks of a recording made of Java thread
// dumps only; a live recording's dumps are joined with its probes by the
// live lock verdicts.
func Locks(a *core.Output, jd *core.JavaData) {
	if jd == nil || a.Rec.IsLive() {
		return
	}
	if a.Res.Target.Population == 0 {
		a.Res.Target.Population, a.Res.Target.Unit = jd.Threads, "threads"
	}
	for _, jl := range jd.Order {
		if c, ok := lockCase(jd, jl); ok {
			a.Res.Findings = append(a.Res.Findings, core.JudgeLock(c, 0))
		}
		if len(a.Res.Locks) < core.MaxLockRows {
			a.Res.Locks = append(a.Res.Locks, jd.LockRow(jl))
		}
	}
	a.Res.Idle = append(a.Res.Idle, jd.IdleGroups()...)
	deadlocks := 0
	for _, d := range jd.Dumps {
		deadlocks = max(deadlocks, d.Deadlocks)
	}
	if deadlocks > 0 {
		a.Note(fmt.Sprintf("the JVM reported %s: threads that each hold a lock the other waits for never proceed; take the locks in one global order", fmt.Sprintf("%d %s", deadlocks, core.Plural(int64(deadlocks), "Java-level deadlock"))))
	}
	if len(jd.Order) == 0 {
		a.Note(fmt.Sprintf("%d %s: no thread waits for a monitor or a java.util.concurrent lock", len(jd.Dumps), core.Plural(int64(len(jd.Dumps)), "Java thread dump")))
	}
	if !jd.Ownable {
		a.Note("the Java thread dumps do not list ownable synchronizers (take them with jcmd PID Thread.print -l, or jstack -l): the holders of java.util.concurrent locks are not named")
	}
}

// lockCase builds the case of a lock the dumps show, false when it is
// not significant.
func lockCase(jd *core.JavaData, jl *core.JavaLock) (*core.LockCase, bool) {
	if !jd.Significant(jl) {
		return nil, false
	}
	k, _ := jl.MainPoint()
	point, _ := jl.PointAt(k)
	c := &core.LockCase{
		Path:         core.PathJava,
		ID:           core.LockID{Address: jl.Addr, Name: jl.Class},
		Unit:         "threads",
		Population:   jd.Threads,
		Participants: jl.Waiters(),
		Counted:      true,
		Known:        true,
		Mean:         jl.MeanWaiting(),
		DumpOnly:     true,
		Points:       jl.NumPoints(),
		Point:        point,
		Java:         true,
		Sources:      1,
		Missing:      "A live recording (contend record -p PID --jvm-dumps 3) would measure how long the threads wait and how often the lock changes hands.",
	}
	c.What = jl.Name() + " in " + core.PointString(c.Point)
	if len(jd.Dumps) > 1 {
		c.Sources++
	}
	c.Ev = core.JavaDumpEvidence(jl, "java-dumps")
	c.IO = core.DumpIO(jl, k)
	c.Chain = core.DumpChain(jd, jl)
	return c, true
}
