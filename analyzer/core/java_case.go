package core

// significant reports whether the dumps show a lock worth a verdict: a
// crowd of distinct waiters, two or more behind a holder that is in I/O
// or blocked itself, or any waiter of a lock in a deadlock.
func (jd *JavaData) significant(jl *JavaLock) bool {
	if len(jl.waiters) >= MinConvoyParticipants {
		return true
	}
	for _, l := range DumpChain(jd, jl) {
		if l.Cycle {
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
func (jd *JavaData) LockCase(jl *JavaLock) (*LockCase, bool) {
	if !jd.significant(jl) {
		return nil, false
	}
	k, _ := jl.MainPoint()
	point, _ := jl.PointAt(k)
	c := &LockCase{
		Path:         pathJava,
		Id:           LockID{Address: jl.addr, Name: jl.Class},
		Unit:         "threads",
		Population:   jd.Threads,
		Participants: len(jl.waiters),
		Counted:      true,
		Known:        true,
		Mean:         jl.meanWaiting(),
		DumpOnly:     true,
		Points:       len(jl.points),
		Point:        point,
		Java:         true,
		Sources:      1,
		Missing:      "A live recording (contend record -p PID --jvm-dumps 3) would measure how long the threads wait and how often the lock changes hands.",
	}
	c.What = jl.Name() + " in " + PointString(c.Point)
	if len(jd.Dumps) > 1 {
		c.Sources++
	}
	c.Ev = JavaDumpEvidence(jl, "java-dumps")
	c.Io = DumpIO(jl, k)
	c.Chain = DumpChain(jd, jl)
	return c, true
}

// lockRow is the lock's row for the locks table.
func (jd *JavaData) LockRow(jl *JavaLock) LockRow {
	row := LockRow{Lock: LockID{Address: jl.addr, Name: jl.Class}, DistinctWaiters: len(jl.waiters)}
	k, _ := jl.MainPoint()
	if p, ok := jl.PointAt(k); ok {
		row.Waiter = &p
	}
	return row
}

// idleGroups lists the Java threads of the last dump that wait without
// contention (pool workers waiting for work, sleepers, condition waits),
// by reason and point.
func (jd *JavaData) IdleGroups() []IdleGroup {
	d := jd.Dumps[len(jd.Dumps)-1]
	type key struct {
		reason string
		pk     PointKey
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
		pi := PointIndex(fr)
		sc := ClassifyFrames(fr, pi)
		if sc.Class != ClassIdle {
			continue
		}
		k := key{sc.Reason, KeyOf(fr, pi)}
		g := by[k]
		if g == nil {
			g = &IdleGroup{Reason: sc.Reason, Point: NewPoint(fr, max(pi, 0)), Unit: "threads"}
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
