package analyzer

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// The futex lock detectors: for every lock that is not an idle wait and
// whose waiting matters, decide what kind of contention it is — I/O under
// the lock, a serialized writer, a convoy of many threads sharing one lock
// (stripe it), threads taking turns on a global lock — or plain
// contention, and say what to change.
//
// Telling a shared lock over disjoint keys (stripe it) from a serialized
// hot writer (combine) is the hard part, because what would settle it —
// whether the critical sections touch disjoint data — is invisible at the
// futex level. What is visible, and how it is read:
//
//   - Hand-off rate: wakes that woke a sleeping waiter, per second. Both
//     cases hand the lock over, but a writer does it for every collision
//     between producers, thousands of times a second.
//   - Hold length: the hand-offs' holds do not overlap, so their mean is at
//     most the duration over the hand-offs (holdBound). Both cases hold
//     briefly; a long hold is work under the lock (plain contention) and
//     I/O under the lock is told by the holder's system calls.
//   - How long a wait lasts compared with a hold (p50 / holdBound): a
//     producer that collides with the holder waits for about one hold and
//     its own wake-up; a thread at the back of a crowd that shares one lock
//     waits for many holds. This is the main discriminator (writerMaxQueue).
//   - What the hand-offs cost: a share of the waiters' CPU in the futex
//     calls and context switches of hand-offs (writerMinHandoffCPU), or
//     the threads the hand-offs alone keep waiting (writerMinHandoffWaiting).
//     One of the two must show a cost for a writer verdict; neither tells
//     the cases apart, since a crowd on a hot lock pays for hand-offs too.
//   - Saturation (threads waiting on average, Little's law): a crowd keeps
//     a standing queue (convoyMeanWaiting); a writer's cost is per
//     hand-off and needs none.
//   - Distinct waiters: both need several (minConvoyParticipants).
//
// How robust it is: on the fixtures the two cases sit an order of
// magnitude apart on the wait/hold ratio (stripe: a median wait of about
// 25 holds; writer: about one), measured on a busy and on a quiet
// machine, while the hand-off CPU share overlaps (5–24% against 12–30%).
// A real program can sit between them: one that shares a lock over
// disjoint keys at a modest load, with short queues and a high hand-off
// rate, will be called a serialized writer. The suggestion says what each
// remedy assumes (disjoint keys for striping, one serial resource for
// combining), so a reader can tell which one fits the code, and
// the evidence gives the figures the verdict rests on.

// Thresholds of the lock verdicts on live data.
const (
	// ioMinExplained is the share of a lock's logged waiting during which
	// its holder was in an I/O system call or in uninterruptible sleep
	// for the lock to be "I/O under lock". Moving the I/O off the lock
	// wins back at least that share; at a quarter that is worth a change
	// of design on its own, while a holder that now and then logs a line
	// or faults a page in explains a few percent at most.
	ioMinExplained = 0.25

	// writerMinHandoffRate is the hand-off rate (wakes of a sleeping waiter
	// per second) from which one lock is handed over "at a very high
	// rate". Each hand-off costs a futex wake, two context switches and
	// the woken thread's wait for a CPU — some 5–20 µs of CPU and latency
	// on current hardware — so a thousand a second cost the producers a
	// measurable share of a CPU and put a wake-up latency into every
	// write; ordinary locks that guard occasional updates hand over tens or
	// hundreds of times a second.
	writerMinHandoffRate = 1000

	// writerMaxQueue is how many holds a typical (median) wait may span
	// for the waiting to come from the hand-offs themselves rather than
	// from a crowd queued on the lock. A producer that collides with the
	// holder waits for that one hold and its own wake-up; a waiter at the
	// back of a queue of N sharers waits for N holds. Four allows for a
	// collision with a holder that just took over, while a crowd of a
	// dozen or more sharers queues far longer.
	writerMaxQueue = 4

	// writerMinHandoffCPU is the share of the waiters' sampled CPU that
	// must go to handing the lock over — the futex calls and the context
	// switches they cause — for the hand-offs to be the lock's cost. A
	// tenth is more than most critical sections take; a lock whose
	// hand-offs are incidental to the work around it stays at a few
	// percent.
	writerMinHandoffCPU = 0.10

	// writerMinHandoffWaiting is the average number of threads the
	// hand-offs alone keep waiting (hand-off rate × median wait, Little's
	// law over waits that each last about one hand-off) from which the
	// hand-offs are the lock's cost even when their CPU share is small:
	// half a thread is five times the least waiting worth a finding
	// (minMeanWaiting). Either this or writerMinHandoffCPU will do: the
	// two measure the same cost from two sources (the futex waits and the
	// cpu-clock samples), and the samples are few at 99 Hz.
	writerMinHandoffWaiting = 0.5
)

func liveLockVerdicts(a *analysis, ld *liveData, locks []*lockGroup) {
	var total int64
	for _, g := range locks {
		if !g.idle {
			total += g.waitNS
		}
	}
	active := ld.activeThreads(locks)
	judged := 0
	sorted := append([]*lockGroup(nil), locks...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].waitNS > sorted[j].waitNS })
	for _, g := range sorted {
		if g.idle || g.waitNS == 0 {
			continue
		}
		if !significantWait(g.waitNS, ld.dur) || float64(g.waitNS) < minShareOfAllWaiting*float64(total) {
			continue
		}
		if ld.dur > 0 && float64(g.waitNS)/float64(ld.dur) < minShareOfActive*float64(active) {
			continue
		}
		if len(g.words) == 1 && len(g.waiters) == 1 && ld.perWaiterWord(g, locks) {
			continue // said once in a note, below
		}
		a.res.Findings = append(a.res.Findings, ld.judgeLock(ld.factsOf(g)))
		judged++
	}
	ld.perWaiterNote(a, locks)
	if judged > 0 {
		a.note("live lock rows: p50 and p99 are over the waits that slept at least the stack threshold, from the event log, when it holds 20 or more of them; otherwise from the in-kernel log2 histogram of every wait, including those that returned at once")
	}
}

// activeThreads counts the threads that work: those that ran on a CPU or
// waited for a lock that is not an idle wait. Idle pool workers and
// parked runtime threads are not among them.
func (ld *liveData) activeThreads(locks []*lockGroup) int {
	active := map[int]bool{}
	for _, t := range ld.threads {
		if t.cpuNS > 0 || t.user+t.sys > 0 {
			active[t.tid] = true
		}
	}
	for _, g := range locks {
		if !g.idle {
			for t := range g.waiters {
				active[t] = true
			}
		}
	}
	return len(active)
}

// factsOf returns the facts of a group, measuring them once.
func (ld *liveData) factsOf(g *lockGroup) *lockFacts {
	if g.facts == nil {
		g.facts = ld.facts(g)
	}
	return g.facts
}

// perWaiterWord reports whether a one-waiter word is one of several that
// each have their own single waiter at the same program point: the
// address then names the waiter (a per-thread semaphore or event), not a
// shared lock.
func (ld *liveData) perWaiterWord(g *lockGroup, locks []*lockGroup) bool {
	return len(ld.perWaiterPoints(locks)[ld.waiterKey(g)]) >= minConvoyParticipants
}

// waiterKey returns the heaviest waiter program point of a group.
func (ld *liveData) waiterKey(g *lockGroup) pointKey {
	if p := pointsOf(g.waitSamples(), 1); len(p) > 0 {
		return p[0].key
	}
	return pointKey{}
}

// perWaiterPoints groups the non-idle one-word, one-waiter locks by their
// waiter's program point.
func (ld *liveData) perWaiterPoints(locks []*lockGroup) map[pointKey][]*lockGroup {
	if ld.perWaiter != nil {
		return ld.perWaiter
	}
	ld.perWaiter = map[pointKey][]*lockGroup{}
	for _, g := range locks {
		// A pthread mutex or condition variable is a shared lock even when
		// a short recording saw one thread wait on it; only words of no
		// known lock (a semaphore, a hand-rolled futex) can name a waiter.
		if g.idle || g.role != roleUnknown || len(g.words) != 1 || len(g.waiters) != 1 || g.waitNS == 0 {
			continue
		}
		k := ld.waiterKey(g)
		if k.fn == "" {
			continue
		}
		ld.perWaiter[k] = append(ld.perWaiter[k], g)
	}
	return ld.perWaiter
}

// perWaiterNote says where futex addresses identify waiters rather than
// locks.
func (ld *liveData) perWaiterNote(a *analysis, locks []*lockGroup) {
	pts := ld.perWaiterPoints(locks)
	keys := make([]pointKey, 0, len(pts))
	for k, gs := range pts {
		if len(gs) >= minConvoyParticipants {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		var ns int64
		for _, g := range pts[k] {
			ns += g.waitNS
		}
		a.note(fmt.Sprintf("%d futex addresses waited on at %s each have a single waiter (%s in all): each address identifies its waiter (a per-thread semaphore or event, a hand-rolled queue), not a shared lock, so they are not reported as locks; which lock the threads queue for is not visible at the futex level",
			len(pts[k]), k, fmtSeconds(seconds(ns))))
	}
}

// judgeLock turns a significant lock into a finding.
func (ld *liveData) judgeLock(lf *lockFacts) Finding {
	g := lf.g
	id := g.id(ld)
	f := Finding{
		Unit:         "threads",
		Population:   ld.population,
		Participants: len(g.waiters),
		WaitSeconds:  seconds(g.waitNS),
		CPUSeconds:   seconds(lf.machNS),
		Lock:         &id,
	}
	if len(lf.waitPoints) > 0 {
		f.Point = lf.waitPoints[0].point
	}
	if len(lf.wakePoints) > 0 {
		p := lf.wakePoints[0].point
		f.Releaser = &p
	}
	sources := 1 // locks.json and the futex views
	ev := ld.lockEvidence(lf, &f)
	if lf.evWaits > 0 {
		sources++
	}
	ioShare := 0.0
	if lf.evWaitNS > 0 {
		ioShare = float64(lf.ioNS) / float64(lf.evWaitNS)
	}
	switch {
	case ioShare >= ioMinExplained && !lf.waitersDoIO():
		ld.ioUnderLock(&f, lf, ioShare, &ev)
	case ioShare >= ioMinExplained:
		ld.serializedIO(&f, lf, ioShare, &ev)
	case g.turns:
		ld.turnTaking(&f, lf, &ev)
	case lf.handoffBound():
		// A serialized writer needs no standing queue: its cost is paid
		// per hand-off, and a producer waits for one hand-off at a time.
		ld.serializedWriter(&f, lf, &ev)
		if lf.cpuNS > 0 {
			sources++
		}
	case len(g.waiters) >= minConvoyParticipants && lf.mean >= convoyMeanWaiting && lf.holdBound > 0 && lf.holdBound <= maxShortHold:
		ld.stripeConvoy(&f, lf, &ev)
		if lf.cpuNS > 0 {
			sources++
		}
	default:
		ld.plainContention(&f, lf, &ev)
	}
	if lf.preemptNS > 0 {
		sources++
	}
	f.Evidence = ev
	f.Confidence = confidenceOf(sources, false)
	finish(&f, ld.dur, true)
	return f
}

// lockWhat names the lock and where it is waited for: "table_lock
// (stripe) in conn_on_message (stripe.c:39)".
func lockWhat(f *Finding) string {
	name := f.Lock.Name
	if name == "" {
		name = "the lock at " + f.Lock.Address
	}
	if f.Point.Function == "" {
		return name
	}
	return name + " in " + pointString(f.Point)
}

// lockEvidence states the facts every lock verdict shares.
func (ld *liveData) lockEvidence(lf *lockFacts, f *Finding) []Evidence {
	g := lf.g
	var ev []Evidence
	t := fmt.Sprintf("%s futex %s by %d threads on %s waited %s in total", fmtCount(int64(g.waits)), plural(int64(g.waits), "wait"), len(g.waiters), lockWords(f.Lock), fmtSeconds(seconds(g.waitNS)))
	if g.waits > g.blocked {
		t += fmt.Sprintf(" (%s of them slept; the rest returned at once because the lock word had already changed)", fmtCount(int64(g.blocked)))
	}
	if ld.dur > 0 {
		t += fmt.Sprintf("; over %s that is %s threads waiting at any moment (Little's law)", fmtDuration(ld.dur), fmtFloat(lf.mean))
	}
	if g.truncated {
		t += "; the collector stopped listing waiters at its bound, so more threads took part"
	}
	ev = append(ev, Evidence{Source: "futex", Text: t})
	if pts := lf.mainWaitPoints(); len(pts) > 1 {
		var others []string
		for _, p := range pts[1:min(len(pts), 4)] {
			others = append(others, fmt.Sprintf("%s (%s)", p.key, fmtSeconds(seconds(p.weight))))
		}
		ev = append(ev, Evidence{Source: "futex", Text: fmt.Sprintf("waited for at %d program points: %s (%s) and %s", len(pts), pts[0].key, fmtSeconds(seconds(pts[0].weight)), strings.Join(others, ", "))})
	}
	if g.woken > 0 && ld.dur > 0 {
		t := fmt.Sprintf("%s wakes woke a waiter: %s hand-offs a second", fmtCount(int64(g.woken)), fmtRate(lf.handoffRate))
		if f.Releaser != nil {
			t += ", mostly from " + pointString(*f.Releaser)
		}
		t += fmt.Sprintf("; the holds that ended in a hand-off lasted at most %s on average (%s / %s hand-offs)", fmtDuration(lf.holdBound), fmtDuration(ld.dur), fmtCount(int64(g.woken)))
		ev = append(ev, Evidence{Source: "futex", Text: t})
	}
	if lf.p99 > 0 {
		src, t := "events", fmt.Sprintf("waits that slept: p50 %s, p99 %s (%s logged waits of at least the stack threshold)", fmtDuration(lf.p50), fmtDuration(lf.p99), fmtCount(int64(lf.evWaits)))
		if lf.quantFrom == "histogram" {
			src, t = "futex", fmt.Sprintf("every wait, from the in-kernel log2 histogram: p50 %s, p99 %s", fmtDuration(lf.p50), fmtDuration(lf.p99))
		}
		if g.maxNS > 0 {
			t += fmt.Sprintf("; the longest wait lasted %s", fmtDuration(time.Duration(g.maxNS)))
		}
		ev = append(ev, Evidence{Source: src, Text: t})
	}
	if lf.evWaits > 0 && lf.contended > 0 {
		ev = append(ev, Evidence{Source: "events", Text: fmt.Sprintf("at least one thread slept on the lock during %s of the span the event log covers", fmtPercent(lf.contended))})
	}
	if o, n := g.topOwner(); o > 0 {
		seen := g.ownerSeen()
		owners := len(g.owners)
		t := fmt.Sprintf("the glibc owner field beside the lock word named %d different holders at wait time", owners)
		if n*2 >= seen {
			t = fmt.Sprintf("the glibc owner field beside the lock word named thread %d as the holder in %s of %s waits", o, fmtCount(int64(n)), fmtCount(int64(seen)))
		}
		ev = append(ev, Evidence{Source: "futex", Text: t})
	}
	if lf.evWaitNS > 0 && float64(lf.preemptNS) >= pointRowShare*float64(lf.evWaitNS) {
		ev = append(ev, Evidence{Source: "sched", Text: fmt.Sprintf("lock-holder preemption: during %s of the logged waits the holder sat runnable without a CPU for %s, %s of the time waited",
			fmtCount(int64(lf.preemptWaits)), fmtSeconds(seconds(lf.preemptNS)), fmtPercent(float64(lf.preemptNS)/float64(lf.evWaitNS)))})
	}
	return ev
}

// handoffBound reports whether a lock's cost is its hand-offs: many
// producers, short holds, a very high hand-off rate, waits that last about
// one hand-off (writerMaxQueue), and a measurable cost of the hand-offs in
// the producers' CPU or in their waiting.
func (lf *lockFacts) handoffBound() bool {
	return len(lf.g.waiters) >= minConvoyParticipants && lf.g.role != roleCond &&
		lf.holdBound > 0 && lf.holdBound <= maxShortHold &&
		lf.handoffRate >= writerMinHandoffRate &&
		lf.p50 > 0 && lf.p50 <= writerMaxQueue*lf.holdBound &&
		(lf.cpuNS > 0 && float64(lf.machNS) >= writerMinHandoffCPU*float64(lf.cpuNS) ||
			lf.handoffRate*lf.p50.Seconds() >= writerMinHandoffWaiting)
}

// fmtRate renders a rate: whole and grouped from 100 up ("4,384"), with
// three significant digits below ("21.5").
func fmtRate(x float64) string {
	if x >= 100 {
		return fmtCount(int64(x + 0.5))
	}
	return fmtFloat(x)
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

// lockWords renders the lock for the evidence: its name and, when folded,
// how many futex words it spans.
func lockWords(id *LockID) string {
	name := id.Name
	if name == "" {
		name = id.Address
	}
	if len(id.Words) > 1 {
		return fmt.Sprintf("%s (%d futex words of one lock structure)", name, len(id.Words))
	}
	return name
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

// ioSite returns the program point of the I/O that explains the most
// waiting, and the system calls by time.
func (ld *liveData) ioSite(lf *lockFacts) (ProgramPoint, bool, string) {
	best, bestNS := -1, int64(0)
	for st, ns := range lf.ioStacks {
		if st >= 0 && ns > bestNS {
			best, bestNS = st, ns
		}
	}
	var calls []string
	for _, k := range byCount(lf.ioBySys) {
		calls = append(calls, fmt.Sprintf("%s %s", k, fmtSeconds(seconds(lf.ioBySys[k]))))
	}
	if best < 0 || best >= len(ld.rec.Stacks) {
		return ProgramPoint{}, false, strings.Join(calls, ", ")
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
		return ProgramPoint{}, false, strings.Join(calls, ", ")
	}
	return newPoint(user, pi), true, strings.Join(calls, ", ")
}

func (ld *liveData) ioUnderLock(f *Finding, lf *lockFacts, share float64, ev *[]Evidence) {
	f.Kind = KindIOUnderLock
	site, ok, calls := ld.ioSite(lf)
	victims := 0
	for t := range lf.g.waiters {
		if !lf.ioHolders[t] {
			victims++
		}
	}
	what := lockWhat(f)
	if ok {
		what += "; its holder does I/O in " + pointString(site)
	}
	f.Headline = onePoint(participants(f.Participants, f.Population, "threads", true, 0), "wait", what)
	t := fmt.Sprintf("while the lock's holder (the owner at wait time, until it released the lock) was in I/O system calls or uninterruptible sleep, waiters waited %s: %s of the %s logged", fmtSeconds(seconds(lf.ioNS)), fmtPercent(share), fmtSeconds(seconds(lf.evWaitNS)))
	if calls != "" {
		t += "; by system call: " + calls
	}
	*ev = append(*ev, Evidence{Source: "events", Text: t})
	if ok {
		*ev = append(*ev, Evidence{Source: "io", Text: fmt.Sprintf("the I/O is issued at %s, inside the critical section, by %d %s; %d of the %d waiters do no I/O under the lock and only stall behind it",
			pointString(site), len(lf.ioHolders), plural(int64(len(lf.ioHolders)), "thread"), victims, len(lf.g.waiters))})
	}
	where := "the I/O"
	if ok {
		where = "the I/O in " + shortFunc(site.Function)
	}
	f.Suggestion = Suggestion{
		Action: fmt.Sprintf("Move %s off the lock: under the lock, copy the state to write (a snapshot) and stamp it with a sequence number; release the lock; then write outside it, serialized by a separate lock, skipping a snapshot older than the one already written.", where),
		Reasoning: fmt.Sprintf("The holder keeps the lock through system calls that wait for the disk (%s), so every thread that needs the lock meanwhile waits for the disk too, though it does no I/O itself. "+
			"The sequence number keeps the commits in order once they run without the lock: an older snapshot never overwrites a newer one.", calls),
		ExpectedGain: fmt.Sprintf("up to %s less waiting on the lock (%s of it coincides with the holder's I/O)", fmtPercent(share), fmtPercent(share)),
	}
}

func (ld *liveData) serializedIO(f *Finding, lf *lockFacts, share float64, ev *[]Evidence) {
	f.Kind = KindContention
	site, ok, calls := ld.ioSite(lf)
	f.Headline = fmt.Sprintf("%s lost waiting for ONE lock that serializes I/O: %s", fmtSeconds(f.WaitSeconds), lockWhat(f))
	t := fmt.Sprintf("%s of the logged waiting coincides with the holder's I/O (%s)", fmtPercent(share), calls)
	if ok {
		t += " at " + pointString(site)
	}
	t += fmt.Sprintf("; every one of the %d waiters does that I/O under the lock itself, so the lock orders their I/O rather than stalling others behind it", len(lf.g.waiters))
	*ev = append(*ev, Evidence{Source: "events", Text: t})
	f.Suggestion = Suggestion{
		Action:    "Coalesce the I/O: let the thread that holds the lock write the newest state for everyone waiting (a sequence number tells whose state is already on disk), or batch the writes, instead of each thread writing in turn.",
		Reasoning: "The threads queue on the lock to do their own I/O one after another. The lock is doing its job — ordering the writes — but each waiter's write is usually superseded by the next one's; writing only the newest state removes most of the writes and the waiting with them.",
	}
}

// isInterpreterLock reports whether a lock is CPython's global interpreter
// lock: it lies in _PyRuntime, or its waiters run the bytecode loop.
func (ld *liveData) isInterpreterLock(lf *lockFacts) bool {
	sym, module := symbolModule(lf.g.name())
	if strings.HasPrefix(sym, "_PyRuntime") || strings.HasPrefix(sym, "_gil") {
		return true
	}
	if strings.Contains(module, "python") {
		for _, p := range lf.waitPoints {
			for _, fr := range p.point.Stack {
				if strings.HasPrefix(fr.Func, "_PyEval_") || strings.HasPrefix(fr.Func, "PyEval_") || fr.Func == "take_gil" {
					return true
				}
			}
		}
	}
	return false
}

func (ld *liveData) turnTaking(f *Finding, lf *lockFacts, ev *[]Evidence) {
	f.Kind = KindContention
	g := lf.g
	gil := ld.isInterpreterLock(lf)
	name := lockWords(f.Lock)
	if gil {
		name += ", CPython's global interpreter lock"
	}
	who := participants(f.Participants, f.Population, "threads", true, 0)
	f.Headline = fmt.Sprintf("%s take turns on ONE lock: %s", who, name)
	if f.Point.Function != "" {
		f.Headline += ", waited for in " + pointString(f.Point)
	}
	busy := ld.busyShare(g.waiters)
	*ev = append(*ev, Evidence{Source: "futex", Text: fmt.Sprintf("the lock is a condition variable with its mutex; the threads that wait on it are the ones that wake it (%d waiters, %d wakers among them): each hands the lock to the next, taking turns",
		len(g.waiters), countShared(g.waiters, g.wakers))})
	t := fmt.Sprintf("between waits they run: together on CPU %s of their wall time", fmtPercent(busy))
	if ld.numCPU > 0 && ld.dur > 0 {
		t += fmt.Sprintf(", %s CPUs' worth on %d CPUs, although %d of them want to run", fmtFloat(busy*float64(len(g.waiters))), ld.numCPU, len(g.waiters))
	}
	*ev = append(*ev, Evidence{Source: "proc", Text: t})
	if g.timeouts > 0 {
		*ev = append(*ev, Evidence{Source: "futex", Text: fmt.Sprintf("%s of the waits ended by timeout: the waiters wake on an interval to ask the holder to let go (a switch interval)", fmtCount(int64(g.timeouts)))})
	}
	if gil {
		f.Suggestion = Suggestion{
			Action:    "Run the CPU-bound Python work in processes (multiprocessing, concurrent.futures.ProcessPoolExecutor) or in native code that releases the GIL (NumPy, a C extension with Py_BEGIN_ALLOW_THREADS), or on a free-threaded CPython build; keep threads for work that waits on I/O.",
			Reasoning: fmt.Sprintf("Only the thread that holds the global interpreter lock runs Python code; the other %d wait for their turn, so adding threads adds waiting, not throughput.", max(f.Participants-1, 0)),
		}
		return
	}
	f.Suggestion = Suggestion{
		Action:    "Hold the lock only around the shared state, not around the computation; if the work itself must be serialized, give it to one thread (or split it across processes) instead of many threads taking turns.",
		Reasoning: "The threads pass one lock around and compute while they hold it, so only one runs at a time and the others wait for their turn.",
	}
}

func countShared(a, b map[int]bool) int {
	n := 0
	for t := range a {
		if b[t] {
			n++
		}
	}
	return n
}

// cpuEvidence describes where the waiters' CPU goes.
func cpuEvidence(lf *lockFacts) (Evidence, bool) {
	if lf.cpuNS == 0 {
		return Evidence{}, false
	}
	fn := ""
	if len(lf.waitPoints) > 0 {
		fn = shortFunc(lf.waitPoints[0].key.fn)
	}
	return Evidence{Source: "oncpu", Text: fmt.Sprintf("of the waiters' %s of sampled CPU, %s is in lock machinery (the futex calls and context switches of hand-offs, or spinning in the lock), %s in %s, which takes the lock (the critical section and more), and %s elsewhere",
		fmtSeconds(seconds(lf.cpuNS)), fmtPercent(float64(lf.machNS)/float64(lf.cpuNS)), fmtPercent(float64(lf.csNS)/float64(lf.cpuNS)), fn, fmtPercent(float64(lf.outsideNS)/float64(lf.cpuNS)))}, true
}

func (ld *liveData) serializedWriter(f *Finding, lf *lockFacts, ev *[]Evidence) {
	f.Kind = KindSerializedWriter
	who := participants(f.Participants, f.Population, "threads", true, 0)
	f.Headline = fmt.Sprintf("%s hand ONE lock over %s times a second at ONE program point: %s", who, fmtRate(lf.handoffRate), lockWhat(f))
	*ev = append(*ev, Evidence{Source: "events", Text: fmt.Sprintf("a typical wait (p50 %s) spans about %s holds of at most %s: each producer waits for the hand-off itself, not behind a crowd; the tail (p99 %s, %s× the median) is the producers that queued behind several hand-offs in a row",
		fmtDuration(lf.p50), fmtFloat(float64(lf.p50)/float64(lf.holdBound)), fmtDuration(lf.holdBound), fmtDuration(lf.p99), fmtFloat(float64(lf.p99)/math.Max(1, float64(lf.p50))))})
	if e, ok := cpuEvidence(lf); ok {
		*ev = append(*ev, e)
	}
	f.Suggestion = Suggestion{
		Action: "Combine the writes: take the lock with a tryLock fast path; when it is busy, push the item on a lock-free queue for the current holder to drain before it unlocks (re-checking the queue after unlocking so nothing is stranded), or give the resource one writer thread fed by that queue.",
		Reasoning: fmt.Sprintf("%d producers feed one serial resource through one lock and hand it over %s times a second; every hand-off wakes a sleeping producer, costs two context switches and adds the wake-up latency to that producer's write. "+
			"Striping cannot split one resource; combining lets the holder write many items per acquisition, and producers that find the lock busy leave their item and go on instead of sleeping.", f.Participants, fmtRate(lf.handoffRate)),
		ExpectedGain: fmt.Sprintf("most of the %s of waiting and the %s of CPU spent handing the lock over; tail latency stops growing with the number of producers", fmtSeconds(f.WaitSeconds), fmtSeconds(f.CPUSeconds)),
	}
}

func (ld *liveData) stripeConvoy(f *Finding, lf *lockFacts, ev *[]Evidence) {
	f.Kind = KindLockConvoy
	k := f.Participants
	f.Headline = onePoint(participants(k, f.Population, "threads", true, 0), "wait", lockWhat(f))
	why := fmt.Sprintf("short holds (at most %s on average) shared by %d distinct threads", fmtDuration(lf.holdBound), k)
	if lf.holdBound > 0 && lf.p50 > 0 {
		why += fmt.Sprintf("; a typical wait (p50 %s) spans about %s holds: the waiters queue behind each other", fmtDuration(lf.p50), fmtFloat(float64(lf.p50)/float64(lf.holdBound)))
	}
	*ev = append(*ev, Evidence{Source: "futex", Text: why})
	if e, ok := cpuEvidence(lf); ok {
		*ev = append(*ev, e)
	}
	f.Suggestion = Suggestion{
		Action: stripeAction("locks", "thread"),
		Reasoning: fmt.Sprintf("%d distinct threads queue on one lock whose holds are short and involve no I/O: the waiting comes from how many threads share it, not from the work under it. If they touch disjoint keys, one lock per stripe lets them proceed in parallel. "+
			"A lock stored in a removable map entry stops excluding anyone once another thread deletes and re-creates the entry.", k),
		ExpectedGain: stripeGain(k),
	}
}

func (ld *liveData) plainContention(f *Finding, lf *lockFacts, ev *[]Evidence) {
	f.Kind = KindContention
	f.Headline = fmt.Sprintf("%s lost waiting for ONE lock: %s", fmtSeconds(f.WaitSeconds), lockWhat(f))
	var why []string
	switch {
	case f.Participants < minConvoyParticipants:
		why = append(why, fmt.Sprintf("only %d %s wait for it, fewer than the %d that make a convoy", f.Participants, plural(int64(f.Participants), "thread"), minConvoyParticipants))
	case lf.mean < convoyMeanWaiting:
		why = append(why, fmt.Sprintf("on average only %s threads wait at once, so no queue persists", fmtFloat(lf.mean)))
	}
	if lf.holdBound > maxShortHold {
		why = append(why, fmt.Sprintf("holds last up to %s on average, long enough that the work under the lock, or its holder being descheduled, sets the wait", fmtDuration(lf.holdBound)))
	}
	if e, ok := cpuEvidence(lf); ok {
		*ev = append(*ev, e)
	}
	reason := "The lock is contended"
	if len(why) > 0 {
		reason += ", but " + strings.Join(why, "; ")
	}
	reason += "."
	if lf.preemptNS > 0 && lf.evWaitNS > 0 && float64(lf.preemptNS) >= ioMinExplained*float64(lf.evWaitNS) {
		reason += " Much of the waiting is the holder waiting for a CPU: fewer runnable threads than CPUs would shorten it."
	}
	f.Suggestion = Suggestion{
		Action:    "Shorten the critical section (move work that needs no protection out of it) or take the lock less often; if more threads are runnable than there are CPUs, bound them so a holder is not preempted; if many threads share it over disjoint keys, stripe it.",
		Reasoning: reason,
	}
}
