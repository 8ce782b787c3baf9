package live

import (
	"fmt"
	"sort"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// This file turns the futex words a JVM's threads park on into the Java
// locks they wait for. Every Java thread parks on a condition variable
// of its own (os::PlatformEvent for monitors, Parker for
// java.util.concurrent), so each futex word names a waiter, not a lock:
// 64 threads queued on one synchronized block look like 64 idle condition
// variables with one waiter each. The words are judged by their stacks
// instead — the Java frames above the park say whether the thread waits
// for a monitor, a java.util.concurrent lock, work (an idle pool), a
// timer, or a safepoint — and the words of threads that wait for one lock
// are put back together:
//
//   - with thread dumps (record --jvm-dumps), by the object each thread
//     was seen waiting for (the dump's native thread id is the tid);
//   - otherwise by who hands the lock to whom: a thread that releases a
//     lock wakes the next waiter's own word, so the waiters of one lock
//     and its holders form one group of threads joined by wakes, and the
//     threads of another lock another group.
//
// The groups are then ordinary lock groups of the live path, judged with
// every other lock (live/verdicts.go), with their waiting, hand-offs,
// holders' I/O and run-queue time measured from the words' events.

// jvmLock is what a lock group built from JVM park words knows beyond
// its futex words.
type jvmLock struct {
	flavor core.LockFlavor
	// obj names the lock object when thread dumps show it ("" when the
	// lock was told by hand-offs), class its class.
	obj, class string
	// jl is the dumps' view of the lock, nil without dumps; jd all the
	// dumps.
	jl *core.JavaLock
	jd *core.JavaData
	// threads is how many threads' park words the group holds; byWakes
	// is set when the group was put together from hand-offs alone.
	threads int
	byWakes bool
	// tids are the threads whose waits on the words are waits for the
	// lock (a thread that unparks another can block briefly on the
	// other's event, and waits on its words too).
	tids map[int]bool
	// pause marks the words of threads stopped by the JVM (safepoint,
	// garbage collection): not a lock, but a holder stopped there is.
	pause bool
}

// id names a JVM lock: the object a dump shows, else its kind.
func (j *jvmLock) id() core.LockID {
	if j.obj != "" {
		return core.LockID{Address: j.obj, Name: j.class}
	}
	if j.pause {
		return core.LockID{Name: "JVM safepoint"}
	}
	return core.LockID{Name: "a " + j.flavor.String()}
}

// jvmUnit is a lock group that holds a Java thread's park words, with
// how its waits classify.
type jvmUnit struct {
	g *LockGroup
	// kind is what the heaviest of its waits is; flavor, reason and key
	// say which lock, why idle, or where.
	kind   core.WaitClass
	flavor core.LockFlavor
	reason string
	// tids are the threads whose waits classify as kind.
	tids map[int]bool
}

// isJVMWait reports whether a stack waits inside the JVM.
func isJVMWait(frames []recording.Frame) bool {
	for _, f := range frames {
		if f.Module == core.JVMModule {
			if m, _ := core.JVMMachinery(f); m {
				return true
			}
		}
	}
	return false
}

// jvmUnitOf classifies a lock group by its wait stacks, weighted by
// delay; ok is false for groups that are not JVM waits.
func jvmUnitOf(g *LockGroup) (jvmUnit, bool) {
	type cls struct {
		class  core.WaitClass
		flavor core.LockFlavor
		reason string
	}
	weight := map[cls]int64{}
	tids := map[cls]map[int]bool{}
	jvm := false
	for _, s := range g.waitSamples() {
		if s.synthetic() {
			continue
		}
		fr := s.userFrames()
		if !isJVMWait(fr) {
			continue
		}
		jvm = true
		sc := core.ClassifyFrames(fr, livePointIndex(fr))
		k := cls{class: sc.Class, flavor: sc.Flavor, reason: sc.Reason}
		if sc.Class != core.ClassLock {
			k.flavor = core.FlavorNone
		}
		weight[k] += value(s, 1) + 1
		if tids[k] == nil {
			tids[k] = map[int]bool{}
		}
		tids[k][s.tid] = true
	}
	if !jvm {
		return jvmUnit{}, false
	}
	var best cls
	bw := int64(-1)
	for k, w := range weight {
		if w > bw || w == bw && fmt.Sprint(k) < fmt.Sprint(best) {
			best, bw = k, w
		}
	}
	return jvmUnit{g: g, kind: best.class, flavor: best.flavor, reason: best.reason, tids: tids[best]}, true
}

// jvmLocks rebuilds the lock groups of a JVM recording: groups of Java
// lock waits are merged into the locks they wait for, idle and paused
// ones say why; every other group is kept as it is. jd is the thread
// dumps, nil when there are none.
func (ld *Data) jvmLocks(locks []*LockGroup, jd *core.JavaData) []*LockGroup {
	var out, lockUnits []*LockGroup
	for _, g := range ld.jvmSplit(locks) {
		u, ok := jvmUnitOf(g)
		switch {
		case !ok:
			out = append(out, g)
		case u.kind == core.ClassLock && (u.flavor == core.FlavorMonitor || u.flavor == core.FlavorJavaLock):
			g.jvm = &jvmLock{flavor: u.flavor, tids: u.tids}
			lockUnits = append(lockUnits, g)
		case u.kind == core.ClassIdle:
			g.idle, g.turns, g.idleReason = true, false, u.reason
			out = append(out, g)
		case u.kind == core.ClassRuntimeWait:
			g.idle, g.turns, g.idleReason = true, false, u.reason
			g.jvm = &jvmLock{pause: true}
			out = append(out, g)
		default:
			out = append(out, g)
		}
	}
	return append(out, ld.mergeJVMLocks(lockUnits, jd)...)
}

// jvmSplit undoes the folding of JVM park words: the JVM allocates its
// threads' park events side by side, so the words of two threads' events
// can lie within the folding window and share users (a thread that wakes
// both), and get folded as if one structure held them. Every group with a
// JVM wait is split into its words, each its own group; the words of one
// thread's event come together again by their waiter (mergeJVMLocks).
func (ld *Data) jvmSplit(locks []*LockGroup) []*LockGroup {
	var out []*LockGroup
	for _, g := range locks {
		if _, ok := jvmUnitOf(g); !ok || len(g.words) == 1 {
			out = append(out, g)
			continue
		}
		for _, w := range g.words {
			ng := &LockGroup{words: []*futexWord{w}, waiters: map[int]bool{}, wakers: map[int]bool{}, owners: map[int]uint64{}}
			ld.sumGroup(ng)
			out = append(out, ng)
		}
	}
	return out
}

// mergeJVMLocks puts the park words of threads that wait for one lock
// into one group (see the file comment).
func (ld *Data) mergeJVMLocks(units []*LockGroup, jd *core.JavaData) []*LockGroup {
	if len(units) == 0 {
		return nil
	}
	uf := newUnionFind()
	tidKey := func(t int) string { return fmt.Sprintf("t%d", t) }
	byWord := map[uint64]*LockGroup{}
	dumpOf := func(t int) string {
		if jd == nil {
			return ""
		}
		return jd.WaitsFor[t]
	}
	for _, g := range units {
		for _, w := range g.words {
			byWord[w.addr] = g
		}
		var first string
		for _, t := range sortedTIDs(g.jvm.tids) {
			k := tidKey(t)
			if first == "" {
				first = k
			}
			uf.union(first, k)
			if obj := dumpOf(t); obj != "" {
				uf.union(k, "o"+obj)
			}
		}
	}
	// Hand-offs: a wake that woke a waiter joins the waker to it, unless
	// the dumps already place both on different objects.
	linked := map[*LockGroup]bool{}
	for _, g := range units {
		for _, s := range g.wakeSamples() {
			if value(s, 1) <= 0 {
				continue
			}
			for t := range g.jvm.tids {
				if a, b := dumpOf(s.tid), dumpOf(t); a != "" && b != "" && a != b {
					continue
				}
				uf.union(tidKey(s.tid), tidKey(t))
				linked[g] = true
			}
		}
	}
	ld.joinUnhanded(units, linked, uf, tidKey)
	byRoot := map[string][]*LockGroup{}
	var roots []string
	for _, g := range units {
		var r string
		for _, t := range sortedTIDs(g.jvm.tids) {
			r = uf.find(tidKey(t))
			break
		}
		if r == "" {
			r = fmt.Sprintf("w%x", g.words[0].addr)
		}
		if byRoot[r] == nil {
			roots = append(roots, r)
		}
		byRoot[r] = append(byRoot[r], g)
	}
	sort.Strings(roots)
	var out []*LockGroup
	for _, r := range roots {
		out = append(out, ld.jvmGroup(byRoot[r], jd))
	}
	return out
}

// joinUnhanded joins the threads that waited without ever being handed
// the lock while recorded to the busiest lock waited for at the same
// program point. A monitor's waiters are not all woken in turn: the one
// the JVM makes responsible for noticing a lost wake-up polls with timed
// waits, and one at the back of the queue can wait the whole recording
// through; neither shows a hand-off, yet both wait for the lock their
// neighbours at that point are handed.
func (ld *Data) joinUnhanded(units []*LockGroup, linked map[*LockGroup]bool, uf *unionFind, tidKey func(int) string) {
	root := func(g *LockGroup) string {
		for _, t := range sortedTIDs(g.jvm.tids) {
			return uf.find(tidKey(t))
		}
		return ""
	}
	type comp struct {
		ns  int64
		key core.PointKey
	}
	mainKey := func(g *LockGroup) core.PointKey {
		if p := pointsOf(g.waitSamples(), 1); len(p) > 0 {
			return p[0].key
		}
		return core.PointKey{}
	}
	comps := map[string]*comp{}
	for _, g := range units {
		if !linked[g] {
			continue
		}
		r := root(g)
		c := comps[r]
		if c == nil {
			c = &comp{}
			comps[r] = c
		}
		c.ns += g.waitNS
		if k := mainKey(g); c.key.Fn == "" {
			c.key = k
		}
	}
	for _, g := range units {
		if linked[g] {
			continue
		}
		k := mainKey(g)
		best, bestNS := "", int64(-1)
		for r, c := range comps {
			if c.key == k && (c.ns > bestNS || c.ns == bestNS && r < best) {
				best, bestNS = r, c.ns
			}
		}
		if best != "" {
			uf.union(root(g), best)
		}
	}
}

// jvmGroup merges the units of one Java lock into one group.
func (ld *Data) jvmGroup(units []*LockGroup, jd *core.JavaData) *LockGroup {
	g := &LockGroup{waiters: map[int]bool{}, wakers: map[int]bool{}, owners: map[int]uint64{}}
	flavors := map[core.LockFlavor]int{}
	objs := map[string]int{}
	tids := map[int]bool{}
	for _, u := range units {
		g.words = append(g.words, u.words...)
		flavors[u.jvm.flavor]++
		for t := range u.jvm.tids {
			tids[t] = true
		}
		if jd != nil {
			for t := range u.jvm.tids {
				if o := jd.WaitsFor[t]; o != "" {
					objs[o]++
				}
			}
		}
	}
	sort.Slice(g.words, func(i, j int) bool { return g.words[i].addr < g.words[j].addr })
	ld.sumGroup(g)
	// The words are condition variables of single threads: the group is
	// one lock whose waiters are those threads, never an idle pool or
	// threads taking turns on a condition.
	g.role, g.idle, g.turns, g.idleReason, g.use = roleMutex, false, false, "", nil
	g.waiters = tids
	j := &jvmLock{flavor: core.FlavorMonitor, threads: len(tids), byWakes: len(objs) == 0, tids: tids}
	if flavors[core.FlavorJavaLock] > flavors[core.FlavorMonitor] {
		j.flavor = core.FlavorJavaLock
	}
	best, n := "", 0
	for o, c := range objs {
		if c > n || c == n && o < best {
			best, n = o, c
		}
	}
	if best != "" {
		j.obj, j.jl, j.jd = best, jd.Locks[best], jd
		j.class = j.jl.Class
		j.flavor = j.jl.Flavor
	}
	g.jvm = j
	return g
}

// unionFind joins keys into sets.
type unionFind struct{ parent map[string]string }

func newUnionFind() *unionFind { return &unionFind{parent: map[string]string{}} }

func (u *unionFind) find(k string) string {
	p, ok := u.parent[k]
	if !ok {
		u.parent[k] = k
		return k
	}
	if p == k {
		return k
	}
	r := u.find(p)
	u.parent[k] = r
	return r
}

func (u *unionFind) union(a, b string) {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		return
	}
	if ra < rb {
		u.parent[rb] = ra
	} else {
		u.parent[ra] = rb
	}
}

// jvmCase adds to a JVM lock's case what the JVM tells: how the lock was
// told, what the dumps show of its waiters and holder, and a holder
// stopped at a safepoint (the GC) as a link of the chain.
func (ld *Data) jvmCase(g *LockGroup, locks []*LockGroup, c *core.LockCase) {
	j := g.jvm
	c.Java = true
	c.What = j.id().Name
	if j.jl != nil {
		c.What = j.jl.Name()
	}
	if c.Point.Function != "" {
		c.What += " in " + core.PointString(c.Point)
	}
	if j.jl != nil {
		ld.refinePoint(j.jl, c)
	}
	// The futex words are the waiters' own park events, not words of one
	// lock structure: EvJVMParkWords says so instead.
	for i := range c.Ev {
		if c.Ev[i].Kind == core.EvFutexWaits {
			delete(c.Ev[i].Figures, "words")
		}
	}
	c.Ev = append(c.Ev, core.Fact("futex", core.EvJVMParkWords, "threads", j.threads, "by_wakes", j.byWakes,
		"flavor", j.flavor.String(), "lock", core.LockName(&c.ID)))
	if j.jl != nil {
		c.Ev = append(c.Ev, core.JavaDumpEvidence(j.jl, "java-dumps")...)
		c.Sources++
		// The JVM keeps no owner beside the park words, so the live
		// facts take the thread that woke a waiter for the holder: in a
		// queue handed from waiter to waiter, only the first wait after a
		// holder's I/O sees it. The dumps name the holder outright.
		if !c.IO.Explains {
			k, _ := j.jl.MainPoint()
			if io := core.DumpIO(j.jl, k); io.Explains {
				c.IO = io
			}
		}
		c.Chain = append(c.Chain, core.DumpChain(j.jd, j.jl)...)
	}
	lf := ld.factsOf(g)
	if lf.evWaitNS == 0 {
		return
	}
	var pauseNS int64
	for _, o := range locks {
		if o.jvm == nil || !o.jvm.pause {
			continue
		}
		for _, w := range o.words {
			pauseNS += lf.holderWaits[w.addr]
		}
	}
	if share := float64(pauseNS) / float64(lf.evWaitNS); share >= core.ChainMinShare {
		c.Chain = append([]core.ChainLink{{What: chainJVMPause, Ns: pauseNS, Share: share}}, c.Chain...)
	}
}

// chainJVMPause names a holder stopped by the JVM as a link of a chain.
const chainJVMPause = "a JVM safepoint (the holder was stopped for a garbage collection or VM operation)"

// refinePoint places a lock's program point where the dumps show its
// waiters wait: the same method gains its file and line (the perf map
// names methods only), and a method the JIT inlined into the compiled
// frame the probes saw replaces that frame.
func (ld *Data) refinePoint(jl *core.JavaLock, c *core.LockCase) {
	k, fr := jl.MainPoint()
	if len(fr) == 0 {
		return
	}
	if k.Fn == c.Point.Function {
		c.Point.File, c.Point.Line = k.File, k.Line
		if i := c.Point.PointIndex; i >= 0 && i < len(c.Point.Stack) {
			c.Point.Stack[i].File, c.Point.Stack[i].Line = k.File, k.Line
		}
		c.What = jl.Name() + " in " + core.PointString(c.Point)
		return
	}
	for _, f := range fr {
		if f.Func == c.Point.Function {
			if p, ok := jl.PointAt(k); ok {
				c.Point = p
				c.What = jl.Name() + " in " + core.PointString(c.Point)
			}
			return
		}
	}
}
