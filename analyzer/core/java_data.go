package core

import (
	"sort"
	"strings"

	"github.com/contend-dev/contend/javadump"
	"github.com/contend-dev/contend/recording"
)

// This file reads a recording's Java thread dumps into the locks they
// show: for each monitor or java.util.concurrent lock some thread waits
// for, who waits (by native thread id, the tid the probes see), where,
// who holds it and what the holder was doing. Both the live JVM locks
// (live/jvm.go) and the dump-only verdicts (java/case.go) read it.

// JavaData is the Java thread dumps of a recording.
type JavaData struct {
	Dumps []*javadump.Dump
	// Locks holds every lock some thread waited for, by object address;
	// order lists them, most waiters first.
	Locks map[string]*JavaLock
	Order []*JavaLock
	// WaitsFor maps a native thread id to the lock it was seen waiting
	// for most often.
	WaitsFor map[int]string
	// Threads is the largest number of Java threads one dump shows.
	Threads int
	// names maps native thread ids to thread names.
	names map[int]string
	// Ownable is set when every dump lists ownable synchronizers, so that
	// a java.util.concurrent lock without a holder has none.
	Ownable bool
}

// JavaLock is one lock as the dumps show it.
type JavaLock struct {
	Addr, Class string
	Flavor      LockFlavor
	// waiters are the native thread ids seen waiting; perDump how many
	// waited in each dump.
	waiters map[int]bool
	perDump []int
	// points counts the waiters by the frame that waits (the one under
	// which the dump prints "waiting to lock" or "parking to wait for",
	// or the first frame outside lock machinery).
	points map[PointKey]int
	stacks map[PointKey][]recording.Frame
	// holds lists, per dump, the thread that held the lock ("" when no
	// dump named one).
	holds []*javaHold
}

// javaHold is the holder of a lock in one dump.
type javaHold struct {
	nid   int
	name  string
	state string
	// frames is the holder's stack, at is the index of the frame that
	// took the lock (-1 when held as an ownable synchronizer).
	frames []recording.Frame
	at     int
	// io is the index of the outermost I/O frame above the one that took
	// the lock, -1 when none; blocked is the lock the holder itself waits
	// for, "" when none.
	io      int
	blocked string
	// paused is set when the holder is in a VM state no lock explains
	// (the dump shows it runnable in the JVM itself, with no Java frame).
	paused bool
}

// javaFrames turns a dump's stack into recording frames, leaf first.
func javaFrames(t *javadump.Thread) []recording.Frame {
	out := make([]recording.Frame, len(t.Frames))
	for i, f := range t.Frames {
		out[i] = recording.Frame{Func: f.Func, File: f.File, Line: f.Line, Module: recording.ModuleJava}
	}
	return out
}

// BuildJavaData reads the recording's Java thread dumps, nil when it has
// none.
func BuildJavaData(rec *recording.Recording) *JavaData {
	if len(rec.JavaDumps) == 0 {
		return nil
	}
	jd := &JavaData{Dumps: rec.JavaDumps, Locks: map[string]*JavaLock{}, WaitsFor: map[int]string{}, names: map[int]string{}, Ownable: true}
	seen := map[int]map[string]int{}
	for di, d := range rec.JavaDumps {
		jd.Ownable = jd.Ownable && d.Ownable
		java := 0
		for _, t := range d.Threads {
			if t.Java {
				java++
			}
			jd.names[t.NID] = t.Name
			l, ok := t.Waits()
			if !ok || l.Addr == "" {
				continue
			}
			jl := jd.lock(l, len(rec.JavaDumps))
			jl.waiters[t.NID] = true
			jl.perDump[di]++
			fr := javaFrames(t)
			pi := waitFrame(t, l.Addr)
			k := KeyOf(fr, pi)
			jl.points[k]++
			if jl.stacks[k] == nil {
				jl.stacks[k] = fr
			}
			if seen[t.NID] == nil {
				seen[t.NID] = map[string]int{}
			}
			seen[t.NID][l.Addr]++
		}
		jd.Threads = max(jd.Threads, java)
	}
	for nid, m := range seen {
		best, n := "", 0
		for a, c := range m {
			if c > n || c == n && a < best {
				best, n = a, c
			}
		}
		jd.WaitsFor[nid] = best
	}
	for di, d := range rec.JavaDumps {
		for _, t := range d.Threads {
			for _, h := range t.Holds() {
				if jl := jd.Locks[h.Addr]; jl != nil && jl.holds[di] == nil {
					jl.holds[di] = jd.hold(t, h.Addr)
				}
			}
		}
	}
	for _, jl := range jd.Locks {
		jd.Order = append(jd.Order, jl)
	}
	sort.Slice(jd.Order, func(i, j int) bool {
		a, b := jd.Order[i], jd.Order[j]
		if len(a.waiters) != len(b.waiters) {
			return len(a.waiters) > len(b.waiters)
		}
		return a.Addr < b.Addr
	})
	return jd
}

// lock returns the lock of l, creating it.
func (jd *JavaData) lock(l javadump.Lock, ndumps int) *JavaLock {
	jl := jd.Locks[l.Addr]
	if jl == nil {
		jl = &JavaLock{Addr: l.Addr, Class: l.Class, Flavor: FlavorMonitor, waiters: map[int]bool{},
			perDump: make([]int, ndumps), points: map[PointKey]int{}, stacks: map[PointKey][]recording.Frame{},
			holds: make([]*javaHold, ndumps)}
		if l.Op == javadump.OpParking {
			jl.Flavor = FlavorJavaLock
		}
		jd.Locks[l.Addr] = jl
	}
	return jl
}

// hold describes thread t as the holder of the lock at addr.
func (jd *JavaData) hold(t *javadump.Thread, addr string) *javaHold {
	h := &javaHold{nid: t.NID, name: t.Name, state: t.State, frames: javaFrames(t), at: t.HoldsAt(addr), io: -1}
	end := h.at
	if end < 0 {
		end = len(h.frames)
	}
	h.io = IOIndex(h.frames, end)
	if l, ok := t.Waits(); ok && l.Addr != addr {
		h.blocked = l.Addr
	}
	return h
}

// waitFrame returns the index of the frame a thread waits at for the
// lock at addr: the frame the dump prints the wait under when it is
// outside lock machinery (a synchronized method or block), else the
// first frame outside it (the caller of ReentrantLock.lock).
func waitFrame(t *javadump.Thread, addr string) int {
	fr := javaFrames(t)
	for i, f := range t.Frames {
		for _, l := range f.Locks {
			if l.Addr == addr && (l.Op == javadump.OpWaitLock || l.Op == javadump.OpRelock) && !IsLockMachinery(fr[i]) {
				return i
			}
		}
	}
	return PointIndex(fr)
}

// PointAt returns the program point k of the lock's waiters, with the
// stack of a waiter seen there.
func (jl *JavaLock) PointAt(k PointKey) (ProgramPoint, bool) {
	fr := jl.stacks[k]
	for i, f := range fr {
		if f.Func == k.Fn && f.Line == k.Line {
			return NewPoint(fr, i), true
		}
	}
	return ProgramPoint{}, false
}

// MainPoint returns where most of the lock's waiters wait.
func (jl *JavaLock) MainPoint() (PointKey, []recording.Frame) {
	var best PointKey
	n := -1
	for k, c := range jl.points {
		if c > n || c == n && k.String() < best.String() {
			best, n = k, c
		}
	}
	return best, jl.stacks[best]
}

// Name names the lock as Java users know it: "java.lang.Object
// <0x000000069ec19a18>".
func (jl *JavaLock) Name() string {
	cls := jl.Class
	if cls == "" {
		cls = "an object"
	}
	return cls + " <" + jl.Addr + ">"
}

// MeanWaiting is the average number of threads the dumps show waiting.
func (jl *JavaLock) MeanWaiting() float64 {
	if len(jl.perDump) == 0 {
		return 0
	}
	n := 0
	for _, c := range jl.perDump {
		n += c
	}
	return float64(n) / float64(len(jl.perDump))
}

// heldIn counts the dumps that named a holder.
func (jl *JavaLock) heldIn() int {
	n := 0
	for _, h := range jl.holds {
		if h != nil {
			n++
		}
	}
	return n
}

// shortClass drops the package of a class name: "java.util.concurrent.
// locks.ReentrantLock$NonfairSync" → "ReentrantLock$NonfairSync".
func shortClass(c string) string {
	return c[strings.LastIndexByte(c, '.')+1:]
}

// DumpIO reads what the holders did in I/O from the dumps. Each dump is
// an instant at which some threads wait: the waiters of the dumps whose
// holder is in I/O, over all the dumps' waiters, is the share of the
// waiting the holder's I/O explains, sampled — the share the live verdict
// measures from the event log, held to the same quarter
// (ioMinExplained). With one dump, that one instant decides.
func DumpIO(jl *JavaLock, main PointKey) IOFacts {
	io := IOFacts{Share: -1}
	waited, inIO := 0, 0
	var calls []Item
	seen := map[string]bool{}
	var at *javaHold
	for di, h := range jl.holds {
		waited += jl.perDump[di]
		if h == nil || h.io < 0 {
			continue
		}
		inIO += jl.perDump[di]
		if at == nil {
			at = h
		}
		if call := ShortFuncName(h.frames[h.io].Func); !seen[call] {
			seen[call] = true
			calls = append(calls, Item{Name: call})
		}
	}
	if waited == 0 || inIO == 0 || float64(inIO) < IOMinExplained*float64(waited) {
		return io
	}
	io.Explains = true
	io.Share = float64(inIO) / float64(waited)
	io.Calls = calls
	io.Call = calls[0].Name
	io.Holders = 1
	io.State = at.state
	io.How = HolderInSection
	if at.at >= 0 {
		site := NewPoint(at.frames, at.at)
		io.Site = &site
		io.HolderSites = []string{ShortFuncName(site.Function)}
	} else if pi := PointIndex(at.frames); pi >= 0 {
		site := NewPoint(at.frames, pi)
		io.Site = &site
		io.HolderSites = []string{ShortFuncName(site.Function)}
	}
	// The waiters that do not wait where the holder took the lock are the
	// ones its I/O stalls; when all wait at that very site, the lock
	// orders their own I/O.
	holderFn := ""
	if io.Site != nil {
		holderFn = io.Site.Function
	}
	best, bestN := PointKey{}, 0
	for k, n := range jl.points {
		if k.Fn == holderFn {
			continue
		}
		io.Victims += n
		if n > bestN || n == bestN && k.String() < best.String() {
			best, bestN = k, n
		}
	}
	io.WaitersDoIO = io.Victims == 0
	if bestN > 0 && best != main {
		if p, ok := jl.PointAt(best); ok {
			io.VictimPoint = &p
		}
	}
	// The holder's I/O is in the dump evidence the case states already.
	return io
}

// chainOf names the locks the holder itself waited for, in the share of
// the dumps that named a holder; a cycle when that lock's holder waits
// for this one (a deadlock).
func DumpChain(jd *JavaData, jl *JavaLock) []ChainLink {
	held := jl.heldIn()
	if held == 0 {
		return nil
	}
	count := map[string]int{}
	for _, h := range jl.holds {
		if h != nil && h.blocked != "" {
			count[h.blocked]++
		}
	}
	var out []ChainLink
	for addr, n := range count {
		other := jd.Locks[addr]
		if other == nil {
			continue
		}
		cycle := false
		for _, h := range other.holds {
			cycle = cycle || h != nil && h.blocked == jl.Addr
		}
		id := LockID{Address: addr, Name: other.Class}
		out = append(out, ChainLink{What: other.Name(), Lock: &id, Share: float64(n) / float64(held), Cycle: cycle})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Share != out[j].Share {
			return out[i].Share > out[j].Share
		}
		return out[i].What < out[j].What
	})
	return out
}

// JavaDumpEvidence states what the dumps show of a lock's waiters and
// its holder.
func JavaDumpEvidence(jl *JavaLock, source string) []Evidence {
	k, _ := jl.MainPoint()
	maxN := 0
	for _, n := range jl.perDump {
		maxN = max(maxN, n)
	}
	ev := []Evidence{Fact(source, EvJavaDumpWaiters, "waiters", len(jl.waiters), "dumps", len(jl.perDump),
		"mean", jl.MeanWaiting(), "max", maxN, "points", len(jl.points),
		"lock", jl.Name(), "how", jl.waitVerb(), "point", k.String())}
	if jl.heldIn() > 0 {
		ev = append(ev, javaHolderEvidence(jl, source))
	}
	return ev
}

// javaHolderEvidence states who held the lock in the dumps and what it
// was doing.
func javaHolderEvidence(jl *JavaLock, source string) Evidence {
	names := map[string]int{}
	var first *javaHold
	inIO, blocked := 0, 0
	var call string
	for _, h := range jl.holds {
		if h == nil {
			continue
		}
		if first == nil {
			first = h
		}
		names[h.name]++
		if h.io >= 0 {
			inIO++
			if call == "" {
				call = ShortFuncName(h.frames[h.io].Func)
			}
		}
		if h.blocked != "" {
			blocked++
		}
	}
	at := ""
	if first.at >= 0 {
		f := first.frames[first.at]
		at = FuncAt(f.Func, f.File, f.Line)
	} else if pi := PointIndex(first.frames); pi >= 0 {
		f := first.frames[pi]
		at = FuncAt(f.Func, f.File, f.Line)
	}
	top := ByCount(names)
	return Fact(source, EvJavaDumpHolder, "held", jl.heldIn(), "dumps", len(jl.holds), "holders", len(names),
		"io", inIO, "blocked", blocked, "holder", top[0], "at", at, "state", strings.ToLower(first.state), "call", call)
}

// waitVerb says how the dumps show threads waiting for the lock.
func (jl *JavaLock) waitVerb() string {
	if jl.Flavor == FlavorJavaLock {
		return "parked waiting for"
	}
	return "waited to enter the monitor of"
}

// Waiters is how many distinct threads the dumps show waiting for the
// lock.
func (jl *JavaLock) Waiters() int { return len(jl.waiters) }

// NumPoints is how many distinct program points the lock is waited for
// at.
func (jl *JavaLock) NumPoints() int { return len(jl.points) }

// Significant reports whether the dumps show a lock worth a verdict: a
// crowd of distinct waiters, two or more behind a holder that is in I/O
// or blocked itself, or any waiter of a lock in a deadlock.
func (jd *JavaData) Significant(jl *JavaLock) bool {
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

// LockRow is the lock's row for the locks table.
func (jd *JavaData) LockRow(jl *JavaLock) LockRow {
	row := LockRow{Lock: LockID{Address: jl.Addr, Name: jl.Class}, DistinctWaiters: len(jl.waiters)}
	k, _ := jl.MainPoint()
	if p, ok := jl.PointAt(k); ok {
		row.Waiter = &p
	}
	return row
}

// IdleGroups lists the Java threads of the last dump that wait without
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
