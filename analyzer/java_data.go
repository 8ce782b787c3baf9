package analyzer

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
// (live_jvm.go) and the dump-only verdicts (java_case.go) read it.

// javaData is the Java thread dumps of a recording.
type javaData struct {
	dumps []*javadump.Dump
	// locks holds every lock some thread waited for, by object address;
	// order lists them, most waiters first.
	locks map[string]*javaLock
	order []*javaLock
	// waitsFor maps a native thread id to the lock it was seen waiting
	// for most often.
	waitsFor map[int]string
	// threads is the largest number of Java threads one dump shows.
	threads int
	// names maps native thread ids to thread names.
	names map[int]string
	// ownable is set when every dump lists ownable synchronizers, so that
	// a java.util.concurrent lock without a holder has none.
	ownable bool
}

// javaLock is one lock as the dumps show it.
type javaLock struct {
	addr, class string
	flavor      lockFlavor
	// waiters are the native thread ids seen waiting; perDump how many
	// waited in each dump.
	waiters map[int]bool
	perDump []int
	// points counts the waiters by the frame that waits (the one under
	// which the dump prints "waiting to lock" or "parking to wait for",
	// or the first frame outside lock machinery).
	points map[pointKey]int
	stacks map[pointKey][]recording.Frame
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

// buildJavaData reads the recording's Java thread dumps, nil when it has
// none.
func buildJavaData(rec *recording.Recording) *javaData {
	if len(rec.JavaDumps) == 0 {
		return nil
	}
	jd := &javaData{dumps: rec.JavaDumps, locks: map[string]*javaLock{}, waitsFor: map[int]string{}, names: map[int]string{}, ownable: true}
	seen := map[int]map[string]int{}
	for di, d := range rec.JavaDumps {
		jd.ownable = jd.ownable && d.Ownable
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
			k := keyOf(fr, pi)
			jl.points[k]++
			if jl.stacks[k] == nil {
				jl.stacks[k] = fr
			}
			if seen[t.NID] == nil {
				seen[t.NID] = map[string]int{}
			}
			seen[t.NID][l.Addr]++
		}
		jd.threads = max(jd.threads, java)
	}
	for nid, m := range seen {
		best, n := "", 0
		for a, c := range m {
			if c > n || c == n && a < best {
				best, n = a, c
			}
		}
		jd.waitsFor[nid] = best
	}
	for di, d := range rec.JavaDumps {
		for _, t := range d.Threads {
			for _, h := range t.Holds() {
				if jl := jd.locks[h.Addr]; jl != nil && jl.holds[di] == nil {
					jl.holds[di] = jd.hold(t, h.Addr)
				}
			}
		}
	}
	for _, jl := range jd.locks {
		jd.order = append(jd.order, jl)
	}
	sort.Slice(jd.order, func(i, j int) bool {
		a, b := jd.order[i], jd.order[j]
		if len(a.waiters) != len(b.waiters) {
			return len(a.waiters) > len(b.waiters)
		}
		return a.addr < b.addr
	})
	return jd
}

// lock returns the lock of l, creating it.
func (jd *javaData) lock(l javadump.Lock, ndumps int) *javaLock {
	jl := jd.locks[l.Addr]
	if jl == nil {
		jl = &javaLock{addr: l.Addr, class: l.Class, flavor: flavorMonitor, waiters: map[int]bool{},
			perDump: make([]int, ndumps), points: map[pointKey]int{}, stacks: map[pointKey][]recording.Frame{},
			holds: make([]*javaHold, ndumps)}
		if l.Op == javadump.OpParking {
			jl.flavor = flavorJavaLock
		}
		jd.locks[l.Addr] = jl
	}
	return jl
}

// hold describes thread t as the holder of the lock at addr.
func (jd *javaData) hold(t *javadump.Thread, addr string) *javaHold {
	h := &javaHold{nid: t.NID, name: t.Name, state: t.State, frames: javaFrames(t), at: t.HoldsAt(addr), io: -1}
	end := h.at
	if end < 0 {
		end = len(h.frames)
	}
	h.io = ioIndex(h.frames, end)
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
			if l.Addr == addr && (l.Op == javadump.OpWaitLock || l.Op == javadump.OpRelock) && !isLockMachinery(fr[i]) {
				return i
			}
		}
	}
	return pointIndex(fr)
}

// pointAt returns the program point k of the lock's waiters, with the
// stack of a waiter seen there.
func (jl *javaLock) pointAt(k pointKey) (ProgramPoint, bool) {
	fr := jl.stacks[k]
	for i, f := range fr {
		if f.Func == k.fn && f.Line == k.line {
			return newPoint(fr, i), true
		}
	}
	return ProgramPoint{}, false
}

// mainPoint returns where most of the lock's waiters wait.
func (jl *javaLock) mainPoint() (pointKey, []recording.Frame) {
	var best pointKey
	n := -1
	for k, c := range jl.points {
		if c > n || c == n && k.String() < best.String() {
			best, n = k, c
		}
	}
	return best, jl.stacks[best]
}

// name names the lock as Java users know it: "java.lang.Object
// <0x000000069ec19a18>".
func (jl *javaLock) name() string {
	cls := jl.class
	if cls == "" {
		cls = "an object"
	}
	return cls + " <" + jl.addr + ">"
}

// meanWaiting is the average number of threads the dumps show waiting.
func (jl *javaLock) meanWaiting() float64 {
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
func (jl *javaLock) heldIn() int {
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

// dumpIO reads what the holders did in I/O from the dumps. Each dump is
// an instant at which some threads wait: the waiters of the dumps whose
// holder is in I/O, over all the dumps' waiters, is the share of the
// waiting the holder's I/O explains, sampled — the share the live verdict
// measures from the event log, held to the same quarter
// (ioMinExplained). With one dump, that one instant decides.
func dumpIO(jl *javaLock, main pointKey) ioFacts {
	io := ioFacts{share: -1}
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
		if call := shortFunc(h.frames[h.io].Func); !seen[call] {
			seen[call] = true
			calls = append(calls, Item{Name: call})
		}
	}
	if waited == 0 || inIO == 0 || float64(inIO) < ioMinExplained*float64(waited) {
		return io
	}
	io.explains = true
	io.share = float64(inIO) / float64(waited)
	io.calls = calls
	io.call = calls[0].Name
	io.holders = 1
	io.state = at.state
	io.how = holderInSection
	if at.at >= 0 {
		site := newPoint(at.frames, at.at)
		io.site = &site
		io.holderSites = []string{shortFunc(site.Function)}
	} else if pi := pointIndex(at.frames); pi >= 0 {
		site := newPoint(at.frames, pi)
		io.site = &site
		io.holderSites = []string{shortFunc(site.Function)}
	}
	// The waiters that do not wait where the holder took the lock are the
	// ones its I/O stalls; when all wait at that very site, the lock
	// orders their own I/O.
	holderFn := ""
	if io.site != nil {
		holderFn = io.site.Function
	}
	best, bestN := pointKey{}, 0
	for k, n := range jl.points {
		if k.fn == holderFn {
			continue
		}
		io.victims += n
		if n > bestN || n == bestN && k.String() < best.String() {
			best, bestN = k, n
		}
	}
	io.waitersDoIO = io.victims == 0
	if bestN > 0 && best != main {
		if p, ok := jl.pointAt(best); ok {
			io.victimPoint = &p
		}
	}
	// The holder's I/O is in the dump evidence the case states already.
	return io
}

// chainOf names the locks the holder itself waited for, in the share of
// the dumps that named a holder; a cycle when that lock's holder waits
// for this one (a deadlock).
func dumpChain(jd *javaData, jl *javaLock) []chainLink {
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
	var out []chainLink
	for addr, n := range count {
		other := jd.locks[addr]
		if other == nil {
			continue
		}
		cycle := false
		for _, h := range other.holds {
			cycle = cycle || h != nil && h.blocked == jl.addr
		}
		id := LockID{Address: addr, Name: other.class}
		out = append(out, chainLink{what: other.name(), lock: &id, share: float64(n) / float64(held), cycle: cycle})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].share != out[j].share {
			return out[i].share > out[j].share
		}
		return out[i].what < out[j].what
	})
	return out
}

// javaDumpEvidence states what the dumps show of a lock's waiters and
// its holder.
func javaDumpEvidence(jl *javaLock, source string) []Evidence {
	k, _ := jl.mainPoint()
	maxN := 0
	for _, n := range jl.perDump {
		maxN = max(maxN, n)
	}
	ev := []Evidence{fact(source, EvJavaDumpWaiters, "waiters", len(jl.waiters), "dumps", len(jl.perDump),
		"mean", jl.meanWaiting(), "max", maxN, "points", len(jl.points),
		"lock", jl.name(), "how", jl.waitVerb(), "point", k.String())}
	if jl.heldIn() > 0 {
		ev = append(ev, javaHolderEvidence(jl, source))
	}
	return ev
}

// javaHolderEvidence states who held the lock in the dumps and what it
// was doing.
func javaHolderEvidence(jl *javaLock, source string) Evidence {
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
				call = shortFunc(h.frames[h.io].Func)
			}
		}
		if h.blocked != "" {
			blocked++
		}
	}
	at := ""
	if first.at >= 0 {
		f := first.frames[first.at]
		at = funcAt(f.Func, f.File, f.Line)
	} else if pi := pointIndex(first.frames); pi >= 0 {
		f := first.frames[pi]
		at = funcAt(f.Func, f.File, f.Line)
	}
	top := byCount(names)
	return fact(source, EvJavaDumpHolder, "held", jl.heldIn(), "dumps", len(jl.holds), "holders", len(names),
		"io", inIO, "blocked", blocked, "holder", top[0], "at", at, "state", strings.ToLower(first.state), "call", call)
}

// waitVerb says how the dumps show threads waiting for the lock.
func (jl *javaLock) waitVerb() string {
	if jl.flavor == flavorJavaLock {
		return "parked waiting for"
	}
	return "waited to enter the monitor of"
}
