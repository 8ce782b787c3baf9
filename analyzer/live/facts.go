package live

import (
	"sort"
	"strings"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// This file measures what the lock verdicts rest on: where a lock's
// waiters and wakers are, how often it is handed over, how long its waits
// are, what its holders did while others waited, and where its waiters
// spend their CPU.

// pointAgg is a program point with the weight of the samples there.
type pointAgg struct {
	key   core.PointKey
	point core.ProgramPoint
	// weight is delay, wakes or CPU in the view's unit; top the weight of
	// the heaviest stack, whose frames the point keeps.
	weight, top int64
}

// pointsOf groups samples by program point (livePointIndex), weighting each
// by value vi, heaviest first. Placeholder-only samples are left out, and
// so are stacks that end inside lock machinery (a frame-pointer walk
// through glibc stops in __lll_lock_wake) when other samples reach past it:
// those say where the lock code was, not who called it.
func pointsOf(samples []*liveSample, vi int) []*pointAgg {
	by := map[core.PointKey]*pointAgg{}
	var out []*pointAgg
	reaches := false
	for _, s := range samples {
		if !s.synthetic() && livePointIndex(s.userFrames()) >= 0 {
			reaches = true
			break
		}
	}
	for _, s := range samples {
		if s.synthetic() {
			continue
		}
		fr := s.userFrames()
		if len(fr) == 0 {
			continue
		}
		pi := livePointIndex(fr)
		if pi < 0 && reaches {
			continue
		}
		k := core.KeyOf(fr, pi)
		p := by[k]
		if p == nil {
			p = &pointAgg{key: k}
			by[k] = p
			out = append(out, p)
		}
		v := value(s, vi)
		p.weight += v
		if v > p.top || p.point.Stack == nil {
			p.top = v
			p.point = core.NewPoint(fr, pi)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].weight != out[j].weight {
			return out[i].weight > out[j].weight
		}
		return out[i].key.String() < out[j].key.String()
	})
	return out
}

// lockFacts are the measured figures of one lock.
type lockFacts struct {
	g *LockGroup
	// mean is the average number of threads waiting (Little's law).
	mean float64
	// waitPoints and wakePoints are where the lock is waited for and where
	// waiters are woken (its release sites), heaviest first.
	waitPoints, wakePoints []*pointAgg
	// handoffs per second: wakes that woke a waiter.
	handoffRate float64
	// holdBound bounds the mean hold of the holds that ended in a hand-off:
	// those holds do not overlap, so together they fit in the duration.
	holdBound time.Duration

	// From the event log: waits that slept at least the stack threshold.
	evWaits  int
	evWaitNS int64
	p50, p99 time.Duration
	// quantFrom says where p50 and p99 come from.
	quantFrom string
	// contended is the share of the log's span during which at least one
	// thread was blocked on the lock.
	contended float64

	// passOn of passOnOf logged waits that ended with others queued were
	// followed by their thread handing the lock on (ld.passOn).
	passOn, passOnOf int

	// wakeLatency is how long the waiters sat runnable after being woken,
	// on average per sleep: the wait a futex call measures ends when the
	// waiter runs again, so each wait includes one of these.
	wakeLatency time.Duration

	// I/O and uninterruptible sleep of the holders (owner at wait time, or
	// the thread that woke the waiter) during the logged waits.
	ioNS      int64
	ioBySys   map[string]int64
	ioStacks  map[int]int64 // event stack index → overlap
	ioHolders map[int]bool
	// Holder preemption: the owner runnable without a CPU during waits.
	preemptNS    int64
	preemptWaits int
	// holderWaits is, per futex address of another lock, how long the
	// holders waited on it while others waited for this lock.
	holderWaits map[uint64]int64

	// handoff holds the holds reconstructed from the hand-offs of a lock
	// whose word names no holder (handoffLock), nil for any other lock.
	handoff *handoffFacts

	// CPU of the waiters (on-CPU samples): all of it, in lock machinery
	// and the kernel paths of waiting and waking, inside the functions
	// that take the lock (the critical section, upper bound), and outside.
	cpuNS, machNS, csNS, outsideNS int64
}

// facts measures a lock.
func (ld *Data) facts(g *LockGroup) *lockFacts {
	lf := &lockFacts{g: g, ioBySys: map[string]int64{}, ioStacks: map[int]int64{}, ioHolders: map[int]bool{}, holderWaits: map[uint64]int64{}}
	if ld.dur > 0 {
		lf.mean = float64(g.waitNS) / float64(ld.dur)
		lf.handoffRate = float64(g.woken) / ld.dur.Seconds()
		if g.woken > 0 {
			lf.holdBound = ld.dur / time.Duration(g.woken)
		}
	}
	lf.waitPoints = pointsOf(g.waitSamples(), 1)
	var wokeSamples []*liveSample
	for _, s := range g.wakeSamples() {
		if value(s, 1) > 0 {
			wokeSamples = append(wokeSamples, s)
		}
	}
	lf.wakePoints = pointsOf(wokeSamples, 1)
	ld.eventFacts(lf)
	ld.cpuFacts(lf)
	lf.wakeLatency = ld.wakeLatency(g.waiters)
	return lf
}

// wakeLatency returns the mean time threads sat runnable after a sleep
// ended (their sleeping off-CPU samples' run-queue time per switch).
func (ld *Data) wakeLatency(tids map[int]bool) time.Duration {
	var runq, n int64
	for _, s := range ld.offcpu {
		if tids[s.tid] && s.state == recording.StateSleeping {
			runq += runqOf(s)
			n += value(s, 0)
		}
	}
	if n == 0 {
		return 0
	}
	return time.Duration(runq / n)
}

// eventFacts correlates the lock's logged waits with its holders' I/O,
// uninterruptible sleep and preemption.
func (ld *Data) eventFacts(lf *lockFacts) {
	g := lf.g
	x := ld.ev
	var durs []int64
	var spans []span
	lw := lockAddrs{own: map[uint64]bool{}}
	for _, w := range g.words {
		lw.own[w.addr] = true
	}
	// A JVM monitor's waiters park on words of their own, and each exit
	// wakes one successor: its releases are the wakes on any of the
	// group's words.
	lw.addrs = g.addrs()
	if g.jvm != nil && !g.jvm.pause {
		lw.releases = x.wakesOn(lw.addrs)
	}
	if handoffLock(g) {
		// A mutex is a lock by its stacks; a word of no known kind
		// is one when its releasers also wait on it.
		if hf := ld.handoffHolds(g, lw.own); len(hf.holds) > 0 && (g.role == roleMutex || hf.lockLike()) {
			lf.handoff = hf
		}
	}
	for _, w := range g.words {
		for _, e := range x.waits[w.addr] {
			durs = append(durs, e.Dur)
			spans = append(spans, span{e.T, e.End()})
			lf.evWaitNS += e.Dur
			ld.waitStalls(lf, e, w, &lw)
		}
	}
	lf.evWaits = len(durs)
	lf.passOn, lf.passOnOf = ld.passOn(g, lw.own)
	if span := x.last - x.first; span > 0 && len(spans) > 0 {
		lf.contended = float64(unionLength(spans)) / float64(span)
	}
	lf.waitQuantiles(durs)
}

// lockAddrs is what holdsDuring reads of a lock group: its words' addresses,
// as a set (own) and in order (addrs), and its releases when each wakes a
// waiter (a JVM monitor's; nil otherwise).
type lockAddrs struct {
	own      map[uint64]bool
	addrs    []uint64
	releases []*recording.Event
	// parts is holdsDuring's buffer, reused from one wait to the next
	// (a JVM monitor's wait spans many releases).
	parts []holdPart
}

// waitStalls adds to lf what stalled the logged wait e on word w: its
// holders' I/O and uninterruptible sleep (ioNS, as a union over the
// wait), their waits on other locks (holderWaits), and whether a holder
// it queued behind was preempted (preemptWaits).
func (ld *Data) waitStalls(lf *lockFacts, e *recording.Event, w *futexWord, lw *lockAddrs) {
	g := lf.g
	x := ld.ev
	var cover []span
	var parts []holdPart
	fromOwner := false
	if lf.handoff != nil {
		parts = lf.handoff.during(e.T, e.End())
	}
	if len(parts) == 0 && (lf.handoff == nil || len(g.owners) > 0) {
		// A wait no measured hold overlaps, where the log
		// dropped the hand-offs: the owner it read held the
		// lock until its next release.
		parts = ld.holdsDuring(*e, w, lw)
		fromOwner = true
	}
	preempted := false
	for _, h := range parts {
		// Holds measured per hand-off are each a holder the
		// waiter queued behind; otherwise the owner it read.
		if lf.handoff != nil || h.tid == e.Peer {
			preempted = lf.holderPreempted(x, h.from, h.to, h.tid) || preempted
		}
		te := x.thread(h.tid)
		if te == nil {
			continue
		}
		te.waits.each(h.from, h.to, func(hw recording.Event, ov int64) {
			if !lw.own[hw.Addr] {
				lf.holderWaits[hw.Addr] += ov
			}
		})
		cover = lf.holderIO(cover, te, h, true)
	}
	if !fromOwner && len(g.owners) > 0 && e.Peer != e.TID {
		// The owner the wait read held the lock from the wait's
		// start to its release: a hold the per-hand-off rebuild
		// can miss (a holder that took the lock with nobody
		// asleep on it has no certain start). Its I/O in that
		// hold is the holder's I/O as surely, so the two
		// readings add up as a union of spans (c/iolock's commit
		// thread: 39 % of the waiting behind its fsync and rename
		// by the owner, under 25 % by the hand-offs alone).
		for _, h := range ld.holdsDuring(*e, w, lw) {
			if te := x.thread(h.tid); te != nil && h.tid == e.Peer {
				cover = lf.holderIO(cover, te, h, false)
			}
		}
	}
	lf.ioNS += unionLength(cover)
	if preempted {
		lf.preemptWaits++
	}
}

// holderIO returns cover with the holder's I/O calls and uninterruptible
// sleep inside hold h added, and marks h's thread an I/O holder; tally
// also counts the I/O by call and stack for the evidence.
func (lf *lockFacts) holderIO(cover []span, te *threadEvents, h holdPart, tally bool) []span {
	te.io.each(h.from, h.to, func(io recording.Event, ov int64) {
		cover = append(cover, span{max(io.T, h.from), min(io.End(), h.to)})
		if tally {
			lf.ioBySys[io.Syscall] += ov
			lf.ioStacks[io.Stack] += ov
		}
		lf.ioHolders[h.tid] = true
	})
	te.dsleep.each(h.from, h.to, func(d recording.Event, _ int64) {
		cover = append(cover, span{max(d.T, h.from), min(d.End(), h.to)})
		lf.ioHolders[h.tid] = true
	})
	return cover
}

// waitQuantiles sets the lock's median and 99th percentile wait from the
// logged waits durs (sorting them) when there are core.MinLoggedWaits of
// them, else from the lock's histogram.
func (lf *lockFacts) waitQuantiles(durs []int64) {
	if len(durs) >= core.MinLoggedWaits {
		sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
		lf.p50 = time.Duration(quantile(durs, 0.5))
		lf.p99 = time.Duration(quantile(durs, 0.99))
		lf.quantFrom = "event log"
		return
	}
	lf.p50 = time.Duration(histQuantile(lf.g.hist, 0.5))
	lf.p99 = time.Duration(histQuantile(lf.g.hist, 0.99))
	lf.quantFrom = "histogram"
}

// holdPart is a thread's hold of a lock over part of a wait for it.
type holdPart struct {
	tid      int
	from, to int64
}

// holdsDuring returns who held the lock while e waited for it, and over
// which part of the wait: the holder's I/O in that part is what stalled
// the waiter.
//
// With releases (a JVM monitor), every release during the wait ends a
// hold, and the thread that released held the lock since the release
// before it, or since its own wait for the lock ended when that is later
// (a thread waiting for the lock does not hold it). A waiter queued
// behind several holders is then stalled by each in turn: a holder that
// writes to disk under the monitor stalls every thread that waited
// meanwhile, not only the one its exit woke.
//
// Otherwise one thread holds over the whole wait: the owner read beside
// the lock word when the wait began (glibc mutexes), else the thread that
// woke the waiter. It holds until it releases the lock, which wakes a
// waiter: its next wake on the lock ends the hold.
//
// The parts are in lw's buffer: valid until the next call for lw.
func (ld *Data) holdsDuring(e recording.Event, w *futexWord, lw *lockAddrs) []holdPart {
	x := ld.ev
	releases, own := lw.releases, lw.own
	out := lw.parts[:0]
	defer func() { lw.parts = out[:0] }()
	if len(releases) > 0 {
		prev := e.T
		i := sort.Search(len(releases), func(i int) bool { return releases[i].T > e.T })
		for ; i < len(releases) && releases[i].T <= e.End(); i++ {
			r := releases[i]
			if r.TID == e.TID || !ld.isTarget(r.TID) {
				continue
			}
			from := max(prev, x.lastWaitEnd(r.TID, own, prev, r.T))
			if r.T > from {
				out = append(out, holdPart{r.TID, from, r.T})
			}
			prev = r.T
		}
		if len(out) > 0 {
			return out
		}
	}
	holder := 0
	if w.role != roleCond && ld.isTarget(e.Peer) && e.Peer != e.TID {
		holder = e.Peer
	} else if wk := x.waker(e.TID, e.T, e.End()); wk > 0 && wk != e.TID {
		holder = wk
	}
	if holder == 0 {
		return nil
	}
	out = append(out, holdPart{holder, e.T, x.releasedAt(lw.addrs, holder, e.T, e.End())})
	return out
}

// passOn counts, of the logged waits that ended while another thread
// still waited on the lock, how many were followed by the woken thread
// waking a waiter of the lock itself before it waited on the lock again
// (passed), out of how many such waits had a next wait in the log (of).
// A thread woken to take a mutex, a row lock or an interpreter lock holds
// it and, with a queue behind it, wakes the next when it lets go: passed
// is nearly all of them. A thread whose work a releaser did for it (a
// group commit's followers, woken as done) goes back without handing
// anything over: passed falls to about one in a group.
func (ld *Data) passOn(g *LockGroup, own map[uint64]bool) (passed, of int) {
	x := ld.ev
	var waits []*recording.Event
	for _, w := range g.words {
		waits = append(waits, x.waits[w.addr]...)
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i].T < waits[j].T })
	// maxEnd[i] is the latest end of waits[:i+1]: a wait that began before
	// e ended and ends after it is a thread still queued when e's thread
	// was woken.
	maxEnd := make([]int64, len(waits))
	for i, w := range waits {
		maxEnd[i] = w.End()
		if i > 0 {
			maxEnd[i] = max(maxEnd[i], maxEnd[i-1])
		}
	}
	addrs := g.addrs()
	for _, e := range waits {
		end := e.End()
		i := sort.Search(len(waits), func(i int) bool { return waits[i].T >= end }) - 1
		if i < 0 || maxEnd[i] <= end {
			continue // nobody queued behind: nothing to hand over
		}
		te := x.thread(e.TID)
		if te == nil {
			continue
		}
		next := int64(-1)
		tw := te.waits.ev
		for j := sort.Search(len(tw), func(j int) bool { return tw[j].T >= end }); j < len(tw); j++ {
			if own[tw[j].Addr] {
				next = tw[j].T
				break
			}
		}
		if next < 0 {
			continue // the log ends before the thread waits again
		}
		of++
		if x.releasedAt(addrs, e.TID, end, next) < next {
			passed++
		}
	}
	return passed, of
}

// holderPreempted adds the time the holder of a wait sat runnable without
// a CPU in [from, to), while it held the lock, and reports whether it did.
func (lf *lockFacts) holderPreempted(x *eventIndex, from, to int64, holder int) bool {
	te := x.thread(holder)
	if te == nil {
		return false
	}
	hit := false
	te.runq.each(from, to, func(_ recording.Event, ov int64) {
		lf.preemptNS += ov
		hit = true
	})
	return hit
}

// quantile returns the q-quantile of sorted values (nearest rank).
func quantile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)-1) + 0.5)
	return sorted[min(i, len(sorted)-1)]
}

// histQuantile returns the q-quantile of a log2 histogram (Hist[i] counts
// values in [2^i, 2^(i+1))), interpolated linearly inside the bucket.
func histQuantile(hist []uint64, q float64) int64 {
	var total uint64
	for _, n := range hist {
		total += n
	}
	if total == 0 {
		return 0
	}
	want := q * float64(total)
	var seen float64
	for i, n := range hist {
		if n == 0 {
			continue
		}
		if seen+float64(n) >= want {
			lo := float64(uint64(1) << i)
			if i == 0 {
				lo = 0
			}
			hi := float64(uint64(1) << (i + 1))
			return int64(lo + (hi-lo)*(want-seen)/float64(n))
		}
		seen += float64(n)
	}
	return int64(uint64(1) << len(hist))
}

// cpuFacts splits the waiters' CPU: lock machinery (spinning in the lock,
// the futex calls and the context switches of hand-offs), the functions
// that take the lock (an upper bound of the critical section: they may do
// other work too), and the rest. Release sites are not used: a function
// that ends in an unlock often tail-calls it, and its caller, the thread's
// main loop, then stands as the release site.
func (ld *Data) cpuFacts(lf *lockFacts) {
	inLock := map[string]bool{}
	for _, p := range lf.waitPoints {
		inLock[p.key.Fn] = true
	}
	for _, s := range ld.oncpu {
		if !lf.g.waiters[s.tid] {
			continue
		}
		ns := value(s, 1)
		lf.cpuNS += ns
		fr := s.userFrames()
		switch {
		case inFutex(s.frames), len(fr) > 0 && core.IsLockMachinery(fr[0]):
			// Spinning in the lock, the futex calls, and the context
			// switches of a thread that sleeps or wakes in one.
			lf.machNS += ns
		case callsAny(fr, inLock):
			lf.csNS += ns
		default:
			lf.outsideNS += ns
		}
	}
}

// kernelFutexPrefixes name the kernel's futex code.
var kernelFutexPrefixes = []string{"futex_", "__futex", "do_futex", "__x64_sys_futex", "__arm64_sys_futex"}

// inFutex reports whether a sample's kernel frames are in a futex call.
func inFutex(frames []recording.Frame) bool {
	for _, f := range frames {
		if !f.Kernel {
			return false
		}
		for _, p := range kernelFutexPrefixes {
			if strings.HasPrefix(f.Func, p) {
				return true
			}
		}
	}
	return false
}

// callsAny reports whether a user stack passes through a function of set.
func callsAny(frames []recording.Frame, set map[string]bool) bool {
	for _, f := range frames {
		if set[f.Func] {
			return true
		}
	}
	return false
}
