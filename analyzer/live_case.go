package analyzer

import (
	"fmt"
	"sort"
	"strings"

	"github.com/contend-dev/contend/recording"
)

// This file fills a lockCase from a live recording: the futex words of a
// lock, the in-kernel statistics, the event log (what the holder did while
// each logged wait lasted) and the on-CPU samples of the waiters.

// lockCase builds the case of a live lock group; locks are every group of
// the recording (for arrays and chains).
func (ld *liveData) lockCase(g *lockGroup, locks []*lockGroup) *lockCase {
	lf := ld.factsOf(g)
	c := &lockCase{
		path:         pathLive,
		id:           g.id(ld),
		unit:         "threads",
		population:   max(ld.population, g.participants()),
		cpus:         ld.cpus(),
		participants: g.participants(),
		counted:      true,
		known:        true,
		mean:         lf.mean,
		waitNS:       g.waitNS,
		contentions:  int64(g.blocked),
		handoffRate:  lf.handoffRate,
		holdBound:    lf.holdBound,
		passOn:       lf.passOn,
		passOnOf:     lf.passOnOf,
		p50:          lf.p50,
		p99:          lf.p99,
		wakeLatency:  lf.wakeLatency,
		cond:         g.role == roleCond,
		mutex:        g.role == roleMutex,
		turns:        g.turns,
		cpuNS:        lf.cpuNS,
		machNS:       lf.machNS,
		csNS:         lf.csNS,
		outsideNS:    lf.outsideNS,
		preemptNS:    lf.preemptNS,
		evWaitNS:     lf.evWaitNS,
		sources:      1,
	}
	if len(lf.waitPoints) > 0 {
		c.point = lf.waitPoints[0].point
		c.points = len(lf.mainWaitPoints())
		c.cpuFn = lf.waitPoints[0].key.fn
	}
	if len(lf.wakePoints) > 0 {
		p := lf.wakePoints[0].point
		c.releaser = &p
	}
	c.what = lockWords(&c.id)
	if g.queue {
		c.what = g.name()
	}
	if c.point.Function != "" {
		c.what += " in " + pointString(c.point)
	}
	if c.turns {
		c.interp = g.interp
	}
	c.io = ld.ioFacts(lf)
	c.array = ld.arrayOf(g, locks)
	c.chain = ld.chainOf(lf, locks)
	if lf.evWaitNS > 0 {
		c.preempt = float64(lf.preemptNS) / float64(lf.evWaitNS)
	}
	for _, have := range []bool{lf.evWaits > 0, lf.cpuNS > 0, lf.preemptNS > 0} {
		if have {
			c.sources++
		}
	}
	c.ev = ld.lockEvidence(lf, c)
	if g.jvm != nil {
		ld.jvmCase(g, locks, c)
	}
	return c
}

// lockEvidence states the facts every live lock verdict shares.
func (ld *liveData) lockEvidence(lf *lockFacts, c *lockCase) []Evidence {
	g := lf.g
	ev := []Evidence{fact("futex", EvFutexWaits,
		"waits", g.waits, "blocked", g.blocked, "threads", len(g.waiters), "words", len(g.words),
		"wait_s", seconds(g.waitNS), "dur_s", ld.dur, "mean", lf.mean, "truncated", g.truncated,
		"queue", g.queue, "lock", lockName(&c.id))}
	if pts := lf.mainWaitPoints(); len(pts) > 1 {
		items := make([]Item, 0, 4)
		for _, p := range pts[:min(len(pts), 4)] {
			items = append(items, Item{Name: p.key.String(), Value: seconds(p.weight)})
		}
		ev = append(ev, fact("futex", EvWaitPoints, "points", len(pts), "items", items))
	}
	if g.woken > 0 && ld.dur > 0 {
		rel := ""
		if c.releaser != nil {
			rel = pointString(*c.releaser)
		}
		ev = append(ev, fact("futex", EvHandoffs, "woken", g.woken, "rate", lf.handoffRate,
			"hold_bound_s", lf.holdBound, "dur_s", ld.dur, "releaser", rel))
	}
	if lf.p99 > 0 {
		src := "events"
		if lf.quantFrom == "histogram" {
			src = "futex"
		}
		ev = append(ev, fact(src, EvWaitQuantiles, "p50_s", lf.p50, "p99_s", lf.p99,
			"logged", lf.evWaits, "max_s", seconds(int64(g.maxNS)), "from", lf.quantFrom))
	}
	if lf.evWaits > 0 && lf.contended > 0 {
		ev = append(ev, fact("events", EvContendedSpan, "share", lf.contended))
	}
	if o, n := g.topOwner(); o > 0 {
		seen := g.ownerSeen()
		if n*2 < seen {
			o, n = 0, 0
		}
		ev = append(ev, fact("futex", EvOwnerField, "owners", len(g.owners), "owner", o, "waits", n, "seen", seen))
	}
	if lf.evWaitNS > 0 && float64(lf.preemptNS) >= pointRowShare*float64(lf.evWaitNS) {
		ev = append(ev, fact("sched", EvHolderPreempted, "waits", lf.preemptWaits,
			"runq_s", seconds(lf.preemptNS), "share", float64(lf.preemptNS)/float64(lf.evWaitNS)))
	}
	if g.turns {
		ev = append(ev, ld.turnEvidence(g)...)
	}
	return ev
}

// turnEvidence states how the waiters of a turn-taking lock hand it to
// each other and keep it busy.
func (ld *liveData) turnEvidence(g *lockGroup) []Evidence {
	t := g.use
	ev := []Evidence{
		fact("futex", EvTurnsHandoff, "waiters", t.waiters, "self_share", t.selfShare),
		fact("proc", EvTurnsDemand, "cpus", t.demand, "cpu_cpus", t.cpu, "runq_cpus", t.runq,
			"waiters", t.waiters, "num_cpu", ld.cpus(), "mean", t.mean),
	}
	if g.timeouts > 0 {
		ev = append(ev, fact("futex", EvTurnsTimeouts, "timeouts", g.timeouts))
	}
	return ev
}

// ioFacts measures what the lock's holders did in I/O while others
// waited: from the event log, the holder's I/O system calls and
// uninterruptible sleep overlapping each logged wait.
func (ld *liveData) ioFacts(lf *lockFacts) ioFacts {
	io := ioFacts{share: -1}
	if lf.evWaitNS <= 0 {
		return io
	}
	io.share = float64(lf.ioNS) / float64(lf.evWaitNS)
	if io.share < ioMinExplained {
		return io
	}
	io.explains = true
	io.waitersDoIO = lf.waitersDoIO()
	io.holders = len(lf.ioHolders)
	for t := range lf.g.waiters {
		if !lf.ioHolders[t] {
			io.victims++
		}
	}
	for _, k := range byCount(lf.ioBySys) {
		io.calls = append(io.calls, Item{Name: k, Value: seconds(lf.ioBySys[k])})
	}
	if len(io.calls) > 0 {
		io.call = io.calls[0].Name
	}
	if site, ok := ld.ioSite(lf); ok {
		io.site = &site
		io.holderSites = []string{shortFunc(site.Function)}
	}
	io.ev = []Evidence{fact("events", EvHolderIO, "io_s", seconds(lf.ioNS), "share", io.share,
		"logged_s", seconds(lf.evWaitNS), "items", io.calls)}
	site := ""
	if io.site != nil {
		site = pointString(*io.site)
	}
	switch {
	case io.waitersDoIO:
		names := make([]string, len(io.calls))
		for i, c := range io.calls {
			names[i] = c.Name
		}
		io.ev = append(io.ev, fact("events", EvWaitersDoIO, "share", io.share, "waiters", len(lf.g.waiters),
			"calls", strings.Join(names, ", "), "site", site))
	case site != "":
		io.ev = append(io.ev, fact("io", EvIOSite, "holders", io.holders, "victims", io.victims,
			"waiters", len(lf.g.waiters), "site", site))
	}
	return io
}

// ioSite returns the program point of the I/O that explains the most
// waiting.
func (ld *liveData) ioSite(lf *lockFacts) (ProgramPoint, bool) {
	best, bestNS := -1, int64(0)
	for st, ns := range lf.ioStacks {
		if st >= 0 && ns > bestNS {
			best, bestNS = st, ns
		}
	}
	if best < 0 || best >= len(ld.rec.Stacks) {
		return ProgramPoint{}, false
	}
	fr := cutJunk(ld.rec.Stacks[best].Frames)
	user := fr
	for i, f := range fr {
		if !f.Kernel {
			user = fr[i:]
			break
		}
	}
	pi := livePointIndex(user)
	if pi < 0 {
		return ProgramPoint{}, false
	}
	return newPoint(user, pi), true
}

// waitersDoIO reports whether the lock's waiters are themselves the
// threads doing I/O under it: the lock then serializes their I/O rather
// than stalling bystanders behind it.
func (lf *lockFacts) waitersDoIO() bool {
	if len(lf.ioHolders) == 0 {
		return false
	}
	for t := range lf.g.waiters {
		if !lf.ioHolders[t] {
			return false
		}
	}
	return true
}

// mainWaitPoints returns the waiter points that hold at least
// pointRowShare of the lock's stacked waiting; the rest are stray stacks
// (a rare caller, a stack the unwinder cut short).
func (lf *lockFacts) mainWaitPoints() []*pointAgg {
	var total int64
	for _, p := range lf.waitPoints {
		total += p.weight
	}
	var out []*pointAgg
	for _, p := range lf.waitPoints {
		if float64(p.weight) >= pointRowShare*float64(total) {
			out = append(out, p)
		}
	}
	return out
}

// Interpreters whose global lock contend recognises.
const (
	interpPython = "python"
	interpRuby   = "ruby"
)

// interpreterOf names the interpreter whose global lock a group is, ""
// when it is none: CPython's GIL lies in _PyRuntime (or a _gil state) and
// is waited for from the bytecode loop; Ruby's GVL is waited for inside
// libruby, from its blocking regions and thread scheduler.
func interpreterOf(g *lockGroup) string {
	sym, module := symbolModule(g.name())
	if strings.HasPrefix(sym, "_PyRuntime") || strings.HasPrefix(sym, "_gil") {
		return interpPython
	}
	for _, w := range g.words {
		for _, s := range w.waitS {
			for _, fr := range s.userFrames() {
				switch {
				case strings.HasPrefix(fr.Func, "_PyEval_") || strings.HasPrefix(fr.Func, "PyEval_") || fr.Func == "take_gil":
					if strings.Contains(module+fr.Module, "python") {
						return interpPython
					}
				case strings.HasPrefix(fr.Module, "libruby") || strings.HasPrefix(fr.Func, "rb_thread_") || strings.HasPrefix(fr.Func, "gvl_"):
					return interpRuby
				}
			}
		}
	}
	return ""
}

// arrayOf places a lock group in an array of locks: the groups of single
// lock words named inside one global symbol of one module ("stripes+0x28
// (app)", "stripes+0x50 (app)"). Folded structures (a condition variable
// with its mutex) are one lock, never an array element.
func (ld *liveData) arrayOf(g *lockGroup, locks []*lockGroup) *arrayFacts {
	base, ok := arrayBase(g)
	if !ok {
		return nil
	}
	a := &arrayFacts{base: base}
	for _, o := range locks {
		if b, ok := arrayBase(o); ok && b == base && (o.waits > 0 || o.woken > 0) {
			a.elements++
			if !o.idle {
				a.waitNS += o.waitNS
			}
		}
	}
	if a.waitNS > 0 {
		a.hotShare = float64(g.waitNS) / float64(a.waitNS)
	}
	return a
}

// arrayBase returns "sym (module)" for a lock group of one word named
// "sym+0xoff (module)", the global object the word lies in.
func arrayBase(g *lockGroup) (string, bool) {
	if len(g.words) != 1 || g.role == roleCond || g.role == roleIdle {
		return "", false
	}
	name := g.words[0].name
	sym, mod := symbolModule(name)
	if sym == "" || mod == "" || strings.Contains(sym, " ") {
		return "", false
	}
	return sym + " (" + mod + ")", true
}

// chainOf follows the holders of a lock: while they held it, did they
// wait for another lock of the recording, or for a CPU? Each logged wait
// on the lock is matched with its holder (the owner at wait time, else
// the thread that woke the waiter) and that holder's own futex waits and
// run-queue intervals until it released the lock.
func (ld *liveData) chainOf(lf *lockFacts, locks []*lockGroup) []chainLink {
	if lf.evWaitNS == 0 {
		return nil
	}
	byAddr := map[uint64]*lockGroup{}
	for _, o := range locks {
		for _, w := range o.words {
			byAddr[w.addr] = o
		}
	}
	var links []chainLink
	for o, ns := range lf.holderWaits {
		other := byAddr[o]
		if other == nil || other == lf.g || other.idle {
			continue
		}
		id := other.id(ld)
		links = append(links, chainLink{what: lockName(&id), lock: &id, ns: ns, share: float64(ns) / float64(lf.evWaitNS),
			cycle: ld.factsOf(other).holdersWaitOn(lf.g)})
	}
	if lf.preemptNS > 0 {
		links = append(links, chainLink{what: chainCPU, ns: lf.preemptNS, share: float64(lf.preemptNS) / float64(lf.evWaitNS)})
	}
	sort.Slice(links, func(i, j int) bool {
		if links[i].ns != links[j].ns {
			return links[i].ns > links[j].ns
		}
		return links[i].what < links[j].what
	})
	var out []chainLink
	for _, l := range links {
		if l.share >= chainMinShare {
			out = append(out, l)
		}
	}
	return out
}

// holdersWaitOn reports whether this lock's holders waited for a word of
// other while they held it.
func (lf *lockFacts) holdersWaitOn(other *lockGroup) bool {
	for _, w := range other.words {
		if lf.holderWaits[w.addr] > 0 {
			return true
		}
	}
	return false
}

// chainCPU names the run queue as a link of a chain.
const chainCPU = "a CPU (the holder sat runnable)"

// chainMinShare is the share of a lock's logged waiting that a holder's
// own wait must explain to be named as a link of the chain: the same
// quarter that makes I/O under a lock worth a change of design
// (ioMinExplained); a holder that now and then waits briefly for another
// lock explains a few percent.
const chainMinShare = ioMinExplained

// lockWords renders the lock for a headline: its name and, when folded,
// how many futex words it spans.
func lockWords(id *LockID) string {
	name := lockName(id)
	if len(id.Words) > 1 {
		return fmt.Sprintf("%s (%d futex words of one lock structure)", name, len(id.Words))
	}
	return name
}

// lockName names a lock for the evidence: its name, else its address.
func lockName(id *LockID) string {
	if id.Name != "" {
		return id.Name
	}
	return id.Address
}

// cpus returns how many CPUs the target could use: the CPUs it was
// allowed to run on when the recording says, else those of the machine.
func (ld *liveData) cpus() int {
	if n := ld.rec.Meta.CPUsAllowed; n > 0 {
		return n
	}
	return ld.numCPU
}

// isRunnable reports whether a sample left its CPU runnable (preempted).
func isRunnable(s *liveSample) bool { return s.state == recording.StateRunnable }
