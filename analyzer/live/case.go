package live

import (
	"fmt"
	"sort"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// This file fills a lockCase from a live recording: the futex words of a
// lock, the in-kernel statistics, the event log (what the holder did while
// each logged wait lasted) and the on-CPU samples of the waiters.

// lockCase builds the case of a live lock group; locks are every group of
// the recording (for arrays and chains).
func (ld *Data) lockCase(g *LockGroup, locks []*LockGroup) *core.LockCase {
	lf := ld.factsOf(g)
	c := &core.LockCase{
		Path:         core.PathLive,
		ID:           g.id(ld),
		Unit:         "threads",
		Population:   max(ld.population, g.participants()),
		CPUs:         ld.cpus(),
		Participants: g.participants(),
		Counted:      true,
		Known:        true,
		Mean:         lf.mean,
		WaitNS:       g.waitNS,
		Contentions:  int64(g.blocked),
		HandoffRate:  lf.handoffRate,
		HoldBound:    lf.holdBound,
		PassOn:       lf.passOn,
		PassOnOf:     lf.passOnOf,
		P50:          lf.p50,
		P99:          lf.p99,
		WakeLatency:  lf.wakeLatency,
		Cond:         g.role == roleCond,
		Mutex:        g.role == roleMutex,
		Turns:        g.turns,
		CPUNS:        lf.cpuNS,
		MachNS:       lf.machNS,
		CsNS:         lf.csNS,
		OutsideNS:    lf.outsideNS,
		PreemptNS:    lf.preemptNS,
		EvWaitNS:     lf.evWaitNS,
		Sources:      1,
	}
	if len(lf.waitPoints) > 0 {
		c.Point = lf.waitPoints[0].point
		c.Points = len(lf.mainWaitPoints())
		c.CPUFn = lf.waitPoints[0].key.Fn
	}
	if len(lf.wakePoints) > 0 {
		p := lf.wakePoints[0].point
		c.Releaser = &p
	}
	c.What = lockWords(&c.ID)
	if g.queue {
		c.What = g.name()
	}
	if c.Point.Function != "" {
		c.What += " in " + core.PointString(c.Point)
	}
	if c.Turns {
		c.Interp = g.interp
	}
	ld.rwCase(g, c)
	c.IO = ld.ioFacts(lf)
	c.Array = ld.arrayOf(g, locks)
	c.Chain = ld.chainOf(lf, locks)
	if lf.evWaitNS > 0 {
		c.Preempt = float64(lf.preemptNS) / float64(lf.evWaitNS)
	}
	for _, have := range []bool{lf.evWaits > 0, lf.cpuNS > 0, lf.preemptNS > 0} {
		if have {
			c.Sources++
		}
	}
	c.Ev = ld.lockEvidence(lf, c)
	if g.jvm != nil {
		ld.jvmCase(g, locks, c)
	}
	return c
}

// lockEvidence states the facts every live lock verdict shares.
func (ld *Data) lockEvidence(lf *lockFacts, c *core.LockCase) []core.Evidence {
	g := lf.g
	ev := []core.Evidence{core.Fact("futex", core.EvFutexWaits,
		"waits", g.waits, "blocked", g.blocked, "threads", len(g.waiters), "words", len(g.words),
		"wait_s", core.Seconds(g.waitNS), "dur_s", ld.dur, "mean", lf.mean, "truncated", g.truncated,
		"queue", g.queue, "lock", core.LockName(&c.ID))}
	if pts := lf.mainWaitPoints(); len(pts) > 1 {
		items := make([]core.Item, 0, 4)
		for _, p := range pts[:min(len(pts), 4)] {
			items = append(items, core.Item{Name: p.key.String(), Value: core.Seconds(p.weight)})
		}
		ev = append(ev, core.Fact("futex", core.EvWaitPoints, "points", len(pts), "items", items))
	}
	if g.woken > 0 && ld.dur > 0 {
		rel := ""
		if c.Releaser != nil {
			rel = core.PointString(*c.Releaser)
		}
		ev = append(ev, core.Fact("futex", core.EvHandoffs, "woken", g.woken, "rate", lf.handoffRate,
			"hold_bound_s", lf.holdBound, "dur_s", ld.dur, "releaser", rel))
	}
	if hf := lf.handoff; hf != nil && len(hf.holds) > 0 {
		ev = append(ev, hf.evidence())
	}
	if lf.p99 > 0 {
		src := "events"
		if lf.quantFrom == "histogram" {
			src = "futex"
		}
		ev = append(ev, core.Fact(src, core.EvWaitQuantiles, "p50_s", lf.p50, "p99_s", lf.p99,
			"logged", lf.evWaits, "max_s", core.Seconds(int64(g.maxNS)), "from", lf.quantFrom))
	}
	if lf.evWaits > 0 && lf.contended > 0 {
		ev = append(ev, core.Fact("events", core.EvContendedSpan, "share", lf.contended))
	}
	if o, n := g.topOwner(); o > 0 {
		seen := g.ownerSeen()
		if n*2 < seen {
			o, n = 0, 0
		}
		ev = append(ev, core.Fact("futex", core.EvOwnerField, "owners", len(g.owners), "owner", o, "waits", n, "seen", seen))
	}
	if lf.evWaitNS > 0 && float64(lf.preemptNS) >= core.PointRowShare*float64(lf.evWaitNS) {
		ev = append(ev, core.Fact("sched", core.EvHolderPreempted, "waits", lf.preemptWaits,
			"runq_s", core.Seconds(lf.preemptNS), "share", float64(lf.preemptNS)/float64(lf.evWaitNS)))
	}
	if g.turns {
		ev = append(ev, ld.turnEvidence(g)...)
	}
	return ev
}

// turnEvidence states how the waiters of a turn-taking lock hand it to
// each other and keep it busy.
func (ld *Data) turnEvidence(g *LockGroup) []core.Evidence {
	t := g.use
	ev := []core.Evidence{
		core.Fact("futex", core.EvTurnsHandoff, "waiters", t.waiters, "self_share", t.selfShare),
		core.Fact("proc", core.EvTurnsDemand, "cpus", t.demand, "cpu_cpus", t.cpu, "runq_cpus", t.runq,
			"waiters", t.waiters, "num_cpu", ld.cpus(), "mean", t.mean),
	}
	if g.timeouts > 0 {
		ev = append(ev, core.Fact("futex", core.EvTurnsTimeouts, "timeouts", g.timeouts))
	}
	return ev
}

// ioFacts measures what the lock's holders did in I/O while others
// waited: from the event log, the holder's I/O system calls and
// uninterruptible sleep overlapping each logged wait.
func (ld *Data) ioFacts(lf *lockFacts) core.IOFacts {
	io := core.IOFacts{Share: -1}
	if lf.evWaitNS <= 0 {
		return io
	}
	io.Share = float64(lf.ioNS) / float64(lf.evWaitNS)
	if io.Share < core.IOMinExplained {
		return io
	}
	io.Explains = true
	io.WaitersDoIO = lf.waitersDoIO()
	io.Holders = len(lf.ioHolders)
	for t := range lf.g.waiters {
		if !lf.ioHolders[t] {
			io.Victims++
		}
	}
	for _, k := range core.ByCount(lf.ioBySys) {
		io.Calls = append(io.Calls, core.Item{Name: k, Value: core.Seconds(lf.ioBySys[k])})
	}
	if len(io.Calls) > 0 {
		io.Call = io.Calls[0].Name
	}
	var transfer, all int64
	for k, ns := range lf.ioBySys {
		all += ns
		if core.TransferIO[k] {
			transfer += ns
		}
	}
	io.Transfer = all > 0 && float64(transfer) >= core.TransferMinShare*float64(all)
	if site, ok := ld.ioSite(lf); ok {
		io.Site = &site
		io.HolderSites = []string{core.ShortFuncName(site.Function)}
	}
	io.Ev = []core.Evidence{core.Fact("events", core.EvHolderIO, "io_s", core.Seconds(lf.ioNS), "share", io.Share,
		"logged_s", core.Seconds(lf.evWaitNS), "items", io.Calls)}
	site := ""
	if io.Site != nil {
		site = core.PointString(*io.Site)
	}
	switch {
	case io.WaitersDoIO && !io.Transfer:
		names := make([]string, len(io.Calls))
		for i, c := range io.Calls {
			names[i] = c.Name
		}
		io.Ev = append(io.Ev, core.Fact("events", core.EvWaitersDoIO, "share", io.Share, "waiters", len(lf.g.waiters),
			"calls", strings.Join(names, ", "), "site", site))
	case site != "":
		io.Ev = append(io.Ev, core.Fact("io", core.EvIOSite, "holders", io.Holders, "victims", io.Victims,
			"waiters", len(lf.g.waiters), "site", site))
	}
	return io
}

// ioSite returns the program point of the I/O that explains the most
// waiting.
func (ld *Data) ioSite(lf *lockFacts) (core.ProgramPoint, bool) {
	best, bestNS := -1, int64(0)
	for st, ns := range lf.ioStacks {
		if st >= 0 && ns > bestNS {
			best, bestNS = st, ns
		}
	}
	if best < 0 || best >= len(ld.rec.Stacks) {
		return core.ProgramPoint{}, false
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
		return core.ProgramPoint{}, false
	}
	return core.NewPoint(user, pi), true
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
		if float64(p.weight) >= core.PointRowShare*float64(total) {
			out = append(out, p)
		}
	}
	return out
}

// interpreterOf names the interpreter whose global lock a group is, ""
// when it is none: CPython's GIL lies in _PyRuntime (or a _gil state) and
// is waited for from the bytecode loop; Ruby's GVL is waited for inside
// libruby, from its blocking regions and thread scheduler.
func interpreterOf(g *LockGroup) string {
	sym, module := core.SymbolModule(g.name())
	if strings.HasPrefix(sym, "_PyRuntime") || strings.HasPrefix(sym, "_gil") {
		return core.InterpPython
	}
	for _, w := range g.words {
		for _, s := range w.waitS {
			for _, fr := range s.userFrames() {
				switch {
				case strings.HasPrefix(fr.Func, "_PyEval_") || strings.HasPrefix(fr.Func, "PyEval_") || fr.Func == "take_gil":
					if strings.Contains(module+fr.Module, "python") {
						return core.InterpPython
					}
				case strings.HasPrefix(fr.Module, "libruby") || strings.HasPrefix(fr.Func, "rb_thread_") || strings.HasPrefix(fr.Func, "gvl_"):
					return core.InterpRuby
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
func (ld *Data) arrayOf(g *LockGroup, locks []*LockGroup) *core.ArrayFacts {
	base, ok := arrayBase(g)
	if !ok {
		return nil
	}
	a := &core.ArrayFacts{Base: base}
	for _, o := range locks {
		if b, ok := arrayBase(o); ok && b == base && (o.waits > 0 || o.woken > 0) {
			a.Elements++
			if !o.idle {
				a.WaitNS += o.waitNS
			}
		}
	}
	if a.WaitNS > 0 {
		a.HotShare = float64(g.waitNS) / float64(a.WaitNS)
	}
	return a
}

// arrayBase returns "sym (module)" for a lock group of one word named
// "sym+0xoff (module)", the global object the word lies in.
func arrayBase(g *LockGroup) (string, bool) {
	if len(g.words) != 1 || g.role == roleCond || g.role == roleIdle {
		return "", false
	}
	name := g.words[0].name
	sym, mod := core.SymbolModule(name)
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
func (ld *Data) chainOf(lf *lockFacts, locks []*LockGroup) []core.ChainLink {
	if lf.evWaitNS == 0 {
		return nil
	}
	byAddr := map[uint64]*LockGroup{}
	for _, o := range locks {
		for _, w := range o.words {
			byAddr[w.addr] = o
		}
	}
	var links []core.ChainLink
	for o, ns := range lf.holderWaits {
		other := byAddr[o]
		if other == nil || other == lf.g || other.idle {
			continue
		}
		id := other.id(ld)
		links = append(links, core.ChainLink{What: core.LockName(&id), Lock: &id, Ns: ns, Share: float64(ns) / float64(lf.evWaitNS),
			Cycle: ld.factsOf(other).holdersWaitOn(lf.g)})
	}
	if lf.preemptNS > 0 {
		links = append(links, core.ChainLink{What: chainCPU, Ns: lf.preemptNS, Share: float64(lf.preemptNS) / float64(lf.evWaitNS)})
	}
	sort.Slice(links, func(i, j int) bool {
		if links[i].Ns != links[j].Ns {
			return links[i].Ns > links[j].Ns
		}
		return links[i].What < links[j].What
	})
	var out []core.ChainLink
	for _, l := range links {
		if l.Share >= core.ChainMinShare {
			out = append(out, l)
		}
	}
	return out
}

// holdersWaitOn reports whether this lock's holders waited for a word of
// other while they held it.
func (lf *lockFacts) holdersWaitOn(other *LockGroup) bool {
	for _, w := range other.words {
		if lf.holderWaits[w.addr] > 0 {
			return true
		}
	}
	return false
}

// chainCPU names the run queue as a link of a chain.
const chainCPU = "a CPU (the holder sat runnable)"

// lockWords renders the lock for a headline: its name and, when folded,
// how many futex words it spans.
func lockWords(id *core.LockID) string {
	name := core.LockName(id)
	if len(id.Words) > 1 {
		return fmt.Sprintf("%s (%d futex words of one lock structure)", name, len(id.Words))
	}
	return name
}

// cpus returns how many CPUs the target could use: the CPUs it was
// allowed to run on when the recording says, else those of the machine.
func (ld *Data) cpus() int {
	if n := ld.rec.Meta.CPUsAllowed; n > 0 {
		return n
	}
	return ld.numCPU
}

// isRunnable reports whether a sample left its CPU runnable (preempted).
func isRunnable(s *liveSample) bool { return s.state == recording.StateRunnable }
