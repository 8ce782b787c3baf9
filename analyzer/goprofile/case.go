package goprofile

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/internal/units"
)

// MinIOSleeps is how many I/O calls the probes must see sleep inside a
// contended critical section for the lock to be held across I/O: as for
// the CPU samples, three mean the I/O runs under the lock again and
// again, not once at start-up. A count of calls, not a time or a share,
// so it holds at any number of goroutines and threads.
const MinIOSleeps = 3

// This file fills a lockCase from Go data: the block and mutex profiles
// (how long goroutines waited, where the lock was released), the
// goroutine dump (who waits now, on which mutex, and who might hold it)
// and the CPU profile (what runs inside the critical sections).

// name describes a Go lock by where it is locked and released.
func (l *goLock) name() string {
	var b strings.Builder
	b.WriteString(l.flavor.String())
	if w := l.topWait(); w != nil {
		fmt.Fprintf(&b, " locked at %s", w.key)
		if len(l.waits) > 1 {
			fmt.Fprintf(&b, " (+%d more %s)", len(l.waits)-1, units.Plural(int64(len(l.waits)-1), "site"))
		}
	}
	if r := l.topRelease(); r != nil {
		if l.topWait() != nil {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " released at %s", r.key)
		if len(l.releases) > 1 {
			fmt.Fprintf(&b, " (+%d more %s)", len(l.releases)-1, units.Plural(int64(len(l.releases)-1), "site"))
		}
	}
	return b.String()
}

func (l *goLock) id() *core.LockID {
	return &core.LockID{Key: l.key(), Name: l.name(), PairingGuess: l.guess()}
}

func detectGoLocks(a *core.Output, g *Data) {
	locks := goLocks(g)
	var total int64
	for _, l := range locks {
		total += l.wait()
	}
	for i, l := range locks {
		if i < core.MaxLockRows {
			a.Res.Locks = append(a.Res.Locks, g.lockRow(l))
		}
		if c, ok := g.lockCase(l, total); ok {
			a.Res.Findings = append(a.Res.Findings, core.JudgeLock(c, g.duration))
		}
	}
	g.runtimeLocks(a, total)
}

// lockRow is the lock's row for the locks table.
func (g *Data) lockRow(l *goLock) core.LockRow {
	row := core.LockRow{Lock: *l.id(), Waits: uint64(l.contentions()), WaitSeconds: core.Seconds(l.wait())}
	row.DistinctWaiters = l.waiters
	if m := int(math.Ceil(g.meanWaiting(l.wait()))); m > row.DistinctWaiters {
		row.DistinctWaiters = m
	}
	if w := l.topWait(); w != nil {
		p := w.point()
		row.Waiter = &p
	}
	if r := l.topRelease(); r != nil {
		p := r.site.point
		row.Waker = &p
	}
	return row
}

// significant reports whether a lock's waiting is worth a verdict.
func (g *Data) significant(l *goLock, totalWait int64) bool {
	wait := l.wait()
	if wait == 0 {
		// No lock profile: a single dump can still show a pile-up.
		return l.waiters >= core.MinConvoyParticipants
	}
	return core.Significant(wait, totalWait, g.duration, float64(g.active()))
}

// lockCase builds the case of a Go lock, false when its waiting is not
// significant.
func (g *Data) lockCase(l *goLock, totalWait int64) (*core.LockCase, bool) {
	if !g.significant(l, totalWait) {
		return nil, false
	}
	wait := l.wait()
	mean := g.meanWaiting(wait)
	c := &core.LockCase{
		Path:        core.PathGo,
		ID:          *l.id(),
		Unit:        "goroutines",
		Population:  g.population,
		CPUs:        g.numCPU,
		WaitNS:      wait,
		Mean:        mean,
		DumpOnly:    wait == 0,
		Contentions: l.contentions(),
		Guess:       l.guess(),
		Points:      len(l.waits),
		Missing:     g.missingForLocks(),
	}
	top, rel := l.topWait(), l.topRelease()
	if top != nil {
		c.Point = top.point()
	} else {
		c.Point = rel.site.point
	}
	if rel != nil {
		p := rel.site.point
		c.Releaser = &p
	}
	c.What = waitWhat(l, c.Point)
	c.Counted = l.waiters > 0 && float64(l.waiters) >= math.Ceil(mean)
	c.Participants = l.waiters
	if !c.Counted {
		c.Participants = int(math.Ceil(mean))
	}
	// Without a dump and a duration the number of goroutines is unknown:
	// distinct call paths are no count of goroutines.
	c.Known = c.Counted || g.duration > 0
	if g.duration > 0 && c.Contentions > 0 {
		c.HoldBound = g.duration / time.Duration(c.Contentions)
	}
	if wait > 0 {
		c.Sources++
	}
	if l.waiters > 0 {
		c.Sources++
	}
	h := g.holders(l)
	c.MachNS = h.waitCPU
	c.Ev = g.lockEvidence(l, c)
	g.addrFacts(l, c)
	c.Ev = append(c.Ev, g.sectionEvidence(h, c)...)
	if h.csNS > 0 {
		c.Sources++
	}
	c.IO = g.ioFacts(l, h, totalWait)
	c.Chain = h.chain()
	// The dump is one instant: the queue for a CPU it shows must outnumber
	// both the lock's waiters in that dump and the waiting the profiles
	// average over the interval (Little's law), or one unlucky instant
	// would turn a standing convoy into a CPU problem.
	if share, runnable := g.cpuQueue(); share >= core.ChainMinShare && runnable >= l.waiters && float64(runnable) >= c.Mean {
		c.Preempt = share
		c.Chain = append(c.Chain, core.ChainLink{What: fmt.Sprintf("a CPU: %d goroutines were runnable without one", runnable), Share: share})
	}
	if c.IO.Explains && h.ioNS > 0 {
		c.Sources++
	}
	return c, true
}

// lockEvidence states what the profiles and the dump show of the lock's
// waiting and release.
func (g *Data) lockEvidence(l *goLock, c *core.LockCase) []core.Evidence {
	var ev []core.Evidence
	if l.waiters > 0 {
		ev = append(ev, core.Fact("goroutines", core.EvDumpWaiters, "waiters", l.waiters, "population", g.population,
			"source", g.gorSource, "items", countItems(l.states)))
	}
	if l.waitNS > 0 {
		ev = append(ev, core.Fact(string(g.blockSrc), core.EvBlockWaits, "contentions", l.waitCount, "sites", len(l.waits),
			"wait_s", core.Seconds(l.waitNS), "each_s", core.Seconds(l.waitNS/max(l.waitCount, 1)), "dur_s", g.duration, "mean", c.Mean,
			"probed", g.probed))
	}
	if rel := l.topRelease(); rel != nil {
		var reasons []core.Item
		for _, r := range l.guessWhy {
			reasons = append(reasons, core.Item{Name: r})
		}
		ev = append(ev, core.Fact("go-mutex", core.EvMutexRelease, "delay_s", core.Seconds(l.relNS), "contentions", l.relCount,
			"site", rel.key.String(), "paired", l.topWait() != nil, "guess", l.guess(), "items", reasons))
	}
	if top := l.topWait(); top != nil && top.site != nil && top.site.stacks > 1 {
		ev = append(ev, core.Fact(string(g.blockSrc), core.EvCallPaths, "paths", top.site.stacks, "site", top.key.String()))
	}
	if c.HoldBound > 0 {
		src := "go-mutex"
		if l.waitNS > 0 {
			src = string(g.blockSrc) // contentions() counts the waiters then
		}
		ev = append(ev, core.Fact(src, core.EvGoHoldBound, "hold_bound_s", c.HoldBound, "dur_s", g.duration,
			"contentions", c.Contentions, "max_s", core.MaxShortHold))
	}
	return ev
}

// countItems lists a count map, largest first.
func countItems(m map[string]int) []core.Item {
	out := make([]core.Item, 0, len(m))
	for _, k := range core.ByCount(m) {
		out = append(out, core.Item{Name: k, Value: float64(m[k])})
	}
	return out
}

// addrFacts reads which mutexes the dumped waiters park on: one (the
// lock's address), several with none dominant (the site takes one of many
// locks: the profiles add them up), or several with one taking most of the
// waiters (a hot element of a set of locks). It also marks a lock the dump
// shows nobody waiting for although the profiles average a queue.
func (g *Data) addrFacts(l *goLock, c *core.LockCase) {
	if len(l.addrs) == 0 && len(l.addrNS) > 0 {
		g.measuredAddrFacts(l, c)
		return
	}
	distinct, most, named, mostAddr := l.addrSpread()
	// unseen: a dump with wait states was taken over the interval and
	// shows nobody waiting for this lock, while the profiles' average says
	// some goroutines always were. The waiting came in bursts (a holder
	// preempted on a busy machine, a periodic pile-up), not as the standing
	// queue a convoy is.
	// Goroutines the dump caught in the lock's Unlock were seen in its
	// queue: in starvation mode each hands the lock on and waits runnable.
	c.Unseen = l.waiters == 0 && l.releasing == 0 && len(g.groups) > 0 && !g.stateInferred && c.Mean >= core.ConvoyMeanWaiting
	c.Spread = distinct >= 2 && 2*most < named
	switch {
	case l.waiters == 0 && l.releasing > 0:
		c.Ev = append(c.Ev, core.Fact("goroutines", core.EvDumpReleasing, "releasing", l.releasing, "population", g.population, "mean", c.Mean))
	case c.Unseen:
		c.Ev = append(c.Ev, core.Fact("goroutines", core.EvDumpUnseen, "mean", c.Mean))
	case c.Spread:
		c.Ev = append(c.Ev, core.Fact("goroutines", core.EvDumpSpread, "named", named, "distinct", distinct, "most", most))
	case distinct == 1 && named >= 2:
		c.Ev = append(c.Ev, core.Fact("goroutines", core.EvDumpSameMutex, "named", named, "addr", mostAddr))
		if c.ID.Address == "" {
			c.ID.Address = mostAddr
		}
	}
	if distinct >= core.MinArrayElements && named > 0 {
		c.Array = &core.ArrayFacts{Base: fmt.Sprintf("the %d mutexes taken at %s", distinct, c.Point.Function), Elements: distinct,
			HotShare: float64(most) / float64(named)}
		if c.ID.Address == "" && c.HotStripe() {
			c.ID.Address = mostAddr
		}
	}
}

// measuredAddrFacts reads which mutexes the measured waits (the uprobes'
// go-lockwaits view, every wait with its lock) fell on, as addrFacts reads
// the dump's waiters, by share of the delay instead of a count of
// goroutines: one lock; several with none taking half the waiting (the
// site takes one of many locks, which the call path alone adds up); or
// several with one taking most (a hot element of a set of locks).
func (g *Data) measuredAddrFacts(l *goLock, c *core.LockCase) {
	var total, most int64
	mostAddr := ""
	for a, ns := range l.addrNS {
		total += ns
		if ns > most || ns == most && a < mostAddr {
			most, mostAddr = ns, a
		}
	}
	distinct := len(l.addrNS)
	if total <= 0 {
		return
	}
	share := float64(most) / float64(total)
	c.Spread = distinct >= 2 && 2*most < total
	if c.Spread {
		c.Ev = append(c.Ev, core.Fact(string(g.blockSrc), core.EvWaitSpread, "distinct", distinct, "share", share))
	}
	if distinct == 1 && c.ID.Address == "" {
		c.ID.Address = mostAddr
	}
	if distinct >= core.MinArrayElements {
		c.Array = &core.ArrayFacts{Base: fmt.Sprintf("the %d mutexes taken at %s", distinct, c.Point.Function), Elements: distinct,
			HotShare: share, WaitNS: total}
		if c.ID.Address == "" && c.HotStripe() {
			c.ID.Address = mostAddr
		}
	}
}

// sectionEvidence states what the CPU profile shows inside the critical
// sections and at the Lock sites.
func (g *Data) sectionEvidence(h holderFacts, c *core.LockCase) []core.Evidence {
	var ev []core.Evidence
	if h.csNS > 0 {
		ev = append(ev, core.Fact("go-cpu", core.EvSectionCPU, "cpu_s", core.Seconds(h.csNS), "io", h.ioNS > 0))
	}
	if h.waitCPU > 0 {
		ev = append(ev, core.Fact("go-cpu", core.EvSpinBeforePark, "cpu_s", core.Seconds(h.waitCPU)))
	}
	return ev
}

// ioFacts turns what the dump and the CPU profile show of I/O inside the
// critical sections into the case's I/O facts. I/O under a lock hurts the
// goroutines whose own critical sections do no I/O (lookups stalled behind
// a journal write); when every waiter does I/O under the lock itself, the
// lock serializes the I/O: a different problem with a different fix.
func (g *Data) ioFacts(l *goLock, h holderFacts, totalWait int64) core.IOFacts {
	io := core.IOFacts{Share: -1}
	io.Explains = h.inIO > 0 || h.ioSleeps >= MinIOSleeps ||
		h.ioNS >= minIOCPUSamples*g.cpuPeriod && g.cpuPeriod > 0 ||
		(h.ioNS > 0 || h.ioSleeps > 0) && l.ioReleaseShare(h) >= core.IOMinExplained
	if !io.Explains {
		return io
	}
	io.Call = h.ioName()
	if h.ioFrame != "" {
		io.Calls = []core.Item{{Name: h.ioFrame}}
	}
	for _, k := range core.ByCount(h.ioFuncs) {
		if k != h.ioFrame {
			io.Calls = append(io.Calls, core.Item{Name: k, Value: core.Seconds(h.ioFuncs[k])})
		}
	}
	io.Holders = h.inIO
	io.State, io.How = h.ioState(), h.how
	victims := l.ioVictims(h)
	var victimNS int64
	for _, n := range victims {
		victimNS += nodeWait(n)
		io.Victims += n.waiters
	}
	hurt := io.Victims > 0
	if victimNS > 0 {
		hurt = core.Significant(victimNS, totalWait, g.duration, 0)
	}
	// Waiters that do I/O of their own under the lock are still stalled
	// by a holder's I/O they do not do, when the mutex profile charges
	// most of their delay to that holder's Unlock: InfluxDB's writers
	// write their WAL entry under the lock, and wait for the syncer's
	// fsync under it.
	if share := l.foreignIOReleaseShare(h); !hurt && len(l.waits) > 0 && share >= foreignIOMinShare {
		hurt, io.ForeignShare = true, share
		victims = byWait(append([]*lockNode(nil), l.waits...))
	}
	io.WaitersDoIO = !hurt
	if hurt {
		p := victims[0].point()
		io.VictimPoint = &p
	}
	io.HolderSites = h.sites(l)
	io.Ev = g.ioEvidence(h)
	return io
}

// chain turns the goroutines that wait for another lock from inside this
// lock's critical section into links, most goroutines first. A dump is one
// instant, so a link's share is of the holders the dump shows, not of time.
func (h holderFacts) chain() []core.ChainLink {
	var links []core.ChainLink
	n := 0
	for _, gr := range h.holdWaits {
		n += gr.count
	}
	for _, gr := range h.holdWaits {
		what := fmt.Sprintf("%s in %s", gr.state, core.PointString(core.NewPoint(gr.frames, gr.pi)))
		links = append(links, core.ChainLink{What: what, Share: float64(gr.count) / float64(n)})
	}
	sort.Slice(links, func(i, j int) bool {
		if links[i].Share != links[j].Share {
			return links[i].Share > links[j].Share
		}
		return links[i].What < links[j].What
	})
	return links
}

// ioReleaseShare is the share of the mutex profile's delay charged to
// Unlock sites inside whose critical sections I/O was seen: the mutex
// profile charges each contention's delay to the Unlock that ended it, so
// a share of it is waiting that lasted until a holder that did I/O let go.
// I/O waits off the CPU, so a CPU profile samples it rarely; one sample of
// it under a lock whose delay falls mostly on that holder's Unlock says the
// waits last as long as that I/O.
func (l *goLock) ioReleaseShare(h holderFacts) float64 {
	return l.releaseShare(func(fn string) bool { return h.ioIn[fn] })
}

// foreignIOMinShare is the share of a lock's release delay that must be
// charged to Unlocks of functions that do I/O under the lock and never
// wait for it, for their I/O to be what the waiters wait for: a majority,
// so that the holder doing it ends most of the waits. A share, so it holds
// at any number of waiters.
const foreignIOMinShare = 0.5

// foreignIOReleaseShare is ioReleaseShare for the Unlock sites in
// functions none of the lock's Lock sites with waiting is in: a holder
// outside the queue (a syncer, a flusher) whose I/O ends the waits.
func (l *goLock) foreignIOReleaseShare(h holderFacts) float64 {
	waiting := map[string]bool{}
	for _, n := range l.waits {
		waiting[n.fn()] = true
	}
	return l.releaseShare(func(fn string) bool { return h.ioIn[fn] && !waiting[fn] })
}

// releaseShare is the share of the mutex profile's delay charged to the
// Unlock sites whose function keep accepts.
func (l *goLock) releaseShare(keep func(fn string) bool) float64 {
	if l.relNS <= 0 {
		return 0
	}
	var ns int64
	for _, n := range l.releases {
		if keep(n.fn()) {
			ns += n.site.value
		}
	}
	return float64(ns) / float64(l.relNS)
}

// cpuQueue reads from the dump how crowded the CPUs are: the share of the
// goroutines that want a CPU (running or runnable) that wait for one, and
// how many do. It is 0 unless they outnumber the CPUs twice over: a crowd
// that size keeps every P's run queue full, so a goroutine that holds a
// lock is descheduled with it, and its waiters wait for the CPU it waits
// for. The caller weighs it against the lock's own queue: a CPU queue
// shorter than the crowd waiting for the lock does not explain that crowd.
// Goroutines inside an Unlock are left out: one runnable there has handed
// the lock to a waiter and yielded its CPU to it (a Go mutex in starvation
// mode does), so it waits for the CPU the lock's own hand-off took, and a
// convoy caught between hand-offs would otherwise read as a crowded CPU.
func (g *Data) cpuQueue() (float64, int) {
	if len(g.groups) == 0 || g.stateInferred || g.numCPU <= 0 {
		return 0, 0
	}
	running, runnable := 0, 0
	for _, gr := range g.groups {
		if gr.sc.Class == core.ClassLock || gr.sc.Class == core.ClassUnlock || gr.sc.Class == core.ClassIdle {
			continue
		}
		switch gr.state {
		case "running":
			running += gr.count
		case "runnable", "preempted":
			runnable += gr.count
		}
	}
	if runnable < 2*g.numCPU || running+runnable == 0 {
		return 0, 0
	}
	return float64(runnable) / float64(running+runnable), runnable
}

// ioState is the dump state of the goroutine seen in I/O, "" when none.
func (h holderFacts) ioState() string {
	if h.ioGroup != nil {
		return h.ioGroup.state
	}
	return ""
}

// sites names the functions that hold the lock across the I/O: the Lock
// and Unlock sites inside which it was seen, or the holder's function.
func (h holderFacts) sites(l *goLock) []string {
	var out []string
	for _, n := range l.waits {
		if h.ioIn[n.fn()] && !slices.Contains(out, core.ShortFuncName(n.fn())) {
			out = append(out, core.ShortFuncName(n.fn()))
		}
	}
	for _, n := range l.releases {
		if h.ioIn[n.fn()] && !slices.Contains(out, core.ShortFuncName(n.fn())) {
			out = append(out, core.ShortFuncName(n.fn()))
		}
	}
	if len(out) == 0 && h.holderFn != "" {
		out = append(out, core.ShortFuncName(h.holderFn))
	}
	sort.Strings(out)
	return out
}

// ioEvidence states what the dump, the CPU profile and the probes show of
// the I/O.
func (g *Data) ioEvidence(h holderFacts) []core.Evidence {
	var ev []core.Evidence
	if h.inIO > 0 {
		gr := h.ioGroup
		at := gr.frames[h.ioAt]
		ev = append(ev, core.Fact("goroutines", core.EvDumpHolderIO, "goroutines", h.inIO, "call", core.ShortFuncName(h.ioFrame),
			"state", gr.state, "at", core.FuncAt(at.Func, at.File, at.Line), "how", h.how))
	}
	if h.ioNS > 0 {
		var items []core.Item
		for _, k := range core.ByCount(h.ioFuncs) {
			items = append(items, core.Item{Name: core.ShortFuncName(k), Value: core.Seconds(h.ioFuncs[k])})
		}
		ev = append(ev, core.Fact("go-cpu", core.EvSectionIOCPU, "io_s", core.Seconds(h.ioNS), "samples", h.ioNS/max(g.cpuPeriod, 1), "items", items))
	}
	if h.ioSleeps > 0 {
		var items []core.Item
		for _, k := range core.ByCount(h.ioSleepFuncs) {
			items = append(items, core.Item{Name: core.ShortFuncName(k), Value: core.Seconds(h.ioSleepFuncs[k])})
		}
		ev = append(ev, core.Fact("io", core.EvSectionIOSleep, "io_s", core.Seconds(h.ioSleepNS), "calls", h.ioSleeps, "items", items))
	}
	return ev
}

// maxEmbedOffset bounds how far into a struct a mutex may lie for a
// method's receiver pointer to be taken as the struct that holds it: a
// mutex is a field of a struct of ordinary size; 4 KiB leaves room for
// large structs while two distinct heap objects of one type are rarely
// that close.
const maxEmbedOffset = 4096

// dumpHolder looks in a goroutine dump for the goroutine that holds the
// lock while doing I/O, when no critical section is known to contain it
// (the mutex profile, which names the Unlock sites, is missing or did not
// sample this lock). A holder is not waiting for a lock, and its stack
// passes through code that takes the lock: a method whose receiver
// contains the mutex the waiters park on (a debug=2 dump prints the
// receiver pointer), else a method of the Lock site's type — the weaker
// inference, said in the evidence. A function of the same package is not
// enough: a package often has several locks, and a goroutine writing a
// file under another of them would be blamed.
func (g *Data) dumpHolder(l *goLock, h *holderFacts) {
	addrs := l.lockAddrs()
	waiterRecv := l.waiterReceivers()
	recvs := map[string]bool{}
	for _, n := range l.waits {
		if rt := core.ReceiverType(n.fn()); rt != "" {
			recvs[rt] = true
		}
	}
	best, bestRank := -1, 0
	var bestGroup *gGroup
	for _, gr := range g.groups {
		if gr.sc.Class == core.ClassLock || !holderState(gr.state) {
			continue
		}
		for k := len(gr.frames) - 1; k >= 0; k-- {
			fn := core.EnclosingFunc(gr.frames[k].Func)
			rank := 0
			switch {
			case recvs[core.ReceiverType(fn)] && (receiverHolds(gr, k, addrs) || waiterRecv[receiverOf(gr, k)]):
				rank = 3
			case recvs[core.ReceiverType(fn)]:
				rank = 2
			}
			if rank == 0 || rank <= bestRank || core.IOIndex(gr.frames, k) < 0 {
				continue
			}
			best, bestRank, bestGroup = k, rank, gr
		}
	}
	if bestGroup == nil {
		g.packageHolderIO(l, h)
		return
	}
	io := core.IOIndex(bestGroup.frames, best)
	h.inIO = bestGroup.count
	h.ioGroup, h.ioFrame, h.ioAt = bestGroup, bestGroup.frames[io].Func, best
	h.holderFn = core.EnclosingFunc(bestGroup.frames[best].Func)
	h.how = []string{"", "", core.HolderByType, core.HolderByReceiver}[bestRank]
	h.ioIn[h.holderFn] = true
}

// holderState reports whether a goroutine in this dump state can be a
// holder doing I/O: in a system call, waiting for network I/O, running.
func holderState(state string) bool {
	switch state {
	case "syscall", "IO wait", "running", "runnable", "":
		return true
	}
	return false
}

// lockAddrs returns the addresses the dumped waiters park on.
func (l *goLock) lockAddrs() []uint64 {
	var out []uint64
	for a := range l.addrs {
		if v, err := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// receiverOf returns the receiver pointer a debug=2 dump prints as the
// first argument of frame k, 0 when unknown or marked unreliable ("?").
func receiverOf(gr *gGroup, k int) uint64 {
	if k < 0 || k >= len(gr.args) {
		return 0
	}
	arg, _, _ := strings.Cut(gr.args[k], ",")
	arg = strings.TrimSpace(arg)
	if !strings.HasPrefix(arg, "0x") || strings.HasSuffix(arg, "?") {
		return 0
	}
	recv, err := strconv.ParseUint(arg[2:], 16, 64)
	if err != nil {
		return 0
	}
	return recv
}

// waiterReceivers returns the receiver pointers of the methods the dumped
// waiters wait in: the objects whose lock they want. A holder found in a
// method of the same object holds that lock (or is about to).
func (l *goLock) waiterReceivers() map[uint64]bool {
	out := map[uint64]bool{}
	for _, n := range l.waits {
		if n.group != nil && core.ReceiverType(n.fn()) != "" {
			if r := receiverOf(n.group, n.group.pi); r != 0 {
				out[r] = true
			}
		}
	}
	delete(out, 0)
	return out
}

// receiverHolds reports whether frame k of a dumped goroutine is a method
// whose receiver pointer (its first argument) points at a struct that
// contains one of the lock addresses.
func receiverHolds(gr *gGroup, k int, addrs []uint64) bool {
	recv := receiverOf(gr, k)
	if recv == 0 || len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if a >= recv && a-recv < maxEmbedOffset {
			return true
		}
	}
	return false
}

// waitWhat names what the waiters do at the point: "sync.Mutex.Lock in
// stripe.(*Sub).handle (stripe.go:57)".
func waitWhat(l *goLock, p core.ProgramPoint) string {
	if l.topWait() == nil {
		return fmt.Sprintf("%s released at %s", l.flavor, core.PointString(p))
	}
	verb := "sync.Mutex.Lock"
	switch l.topWait().flavor {
	case core.FlavorRWWrite:
		verb = "sync.RWMutex.Lock"
	case core.FlavorRWRead:
		verb = "sync.RWMutex.RLock"
	}
	return fmt.Sprintf("%s in %s", verb, core.PointString(p))
}

// missingForLocks says which inputs would sharpen a lock verdict.
func (g *Data) missingForLocks() string {
	var want []string
	if len(g.groups) == 0 || g.stateInferred {
		want = append(want, "a goroutine dump (debug=2)")
	}
	if !g.cpuGiven {
		want = append(want, "a CPU profile")
	}
	if !g.mutexSamples {
		want = append(want, "a mutex profile")
	}
	if len(want) == 0 {
		return ""
	}
	return "Taken over the same interval, " + strings.Join(want, " and ") + " would show what the holders do."
}

// ioVictims returns the Lock sites whose own critical sections showed no
// I/O, heaviest first.
func (l *goLock) ioVictims(h holderFacts) []*lockNode {
	var out []*lockNode
	for _, n := range l.waits {
		if !h.ioIn[n.fn()] {
			out = append(out, n)
		}
	}
	return byWait(out)
}

// byWait sorts Lock sites by their waiting, then by their dumped waiters,
// most first, in place, and returns them.
func byWait(nodes []*lockNode) []*lockNode {
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodeWait(nodes[i]) != nodeWait(nodes[j]) {
			return nodeWait(nodes[i]) > nodeWait(nodes[j])
		}
		return nodes[i].waiters > nodes[j].waiters
	})
	return nodes
}

// ioName is the I/O call most seen under the lock.
func (h holderFacts) ioName() string {
	if h.ioFrame != "" {
		return core.ShortFuncName(h.ioFrame)
	}
	if len(h.ioFuncs) == 0 {
		return core.ShortFuncName(topKey(h.ioSleepFuncs))
	}
	return core.ShortFuncName(topKey(h.ioFuncs))
}

// topKey is the key with the largest value, "" for an empty map.
func topKey(m map[string]int64) string {
	if keys := core.ByCount(m); len(keys) > 0 {
		return keys[0]
	}
	return ""
}
