package live

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// The latch-wait detector: a lock whose waiters do not sleep on a futex
// of the lock but on something of their own. PostgreSQL's heavyweight
// locks, and servers of one process per connection built like them, queue
// each waiter in shared memory and wake it by setting its latch: the
// waiter sleeps in epoll_wait (or poll, select, a semaphore, a signal) on
// a descriptor nobody else waits on, inside the lock's acquisition path
// (LockAcquireExtended → ProcSleep → WaitLatch → epoll_wait). The kernel
// sees each waiter sleeping alone; two facts make it a lock wait:
//
//   - the stack: the sleep is called from frames that name a lock or a
//     latch (lockWordFrame), a few frames above the call;
//   - who ends it: other threads of the target wake the sleepers (the
//     releaser sets the next waiter's latch), about once per wait. An idle
//     server's sleeps in the same calls are ended by its clients, from
//     outside the target.
//
// The program point is the outermost frame of the acquisition path: the
// program's own lock function (row_lock_acquire, XactLockTableWait),
// which names the lock as the program's authors and its own wait events
// do; its caller is the next frame of the stack shown.

// latchWaitCalls are the calls a latch waiter sleeps in.
var latchWaitCalls = map[string]bool{
	"epoll_wait": true, "epoll_pwait": true, "epoll_pwait2": true,
	"poll": true, "ppoll": true, "select": true, "pselect": true, "pselect6": true,
	"semop": true, "semtimedop": true, "sigtimedwait": true, "sigwaitinfo": true,
	"read": true, // a latch built on a pipe or an eventfd read without epoll
}

// latchPathDepth bounds how far above the sleeping call the lock's
// acquisition path may reach: PostgreSQL's is seven frames (epoll_wait,
// WaitEventSetWaitBlock, WaitEventSetWait, WaitLatch, ProcSleep,
// WaitOnLock, LockAcquireExtended, then XactLockTableWait); ten leaves
// room for a wrapper or two, and stops before the frames of a request's
// whole path, where a lock-named function may well be an unrelated
// caller.
const latchPathDepth = 10

// latchMinPeerWakes is the least number of wake-ups from other threads of
// the target per latch wait for the sleeps to be a lock's queue: a
// releaser wakes the next waiter once per hand-off, so a queue that
// drains is woken about once per wait, by its peers. Half allows for
// waits still in progress at either end and for wake-ups the kernel
// folds; an idle server's sleeps are woken by its clients, not by its
// own threads, and stay far below it.
const latchMinPeerWakes = 0.5

// lockNameWords are the words of a function name that mark a lock's
// acquisition path (split at underscores and case changes:
// "row_lock_acquire", "LockAcquireExtended", "WaitLatch", "LWLockAcquire").
var lockNameWords = map[string]bool{"lock": true, "locks": true, "latch": true, "mutex": true}

// lockWordFrame reports whether a frame's function name holds one of
// lockNameWords as a word of its own ("Block" and "clock" do not count).
func lockWordFrame(f recording.Frame) bool {
	if f.Kernel || unnamed(f) {
		return false
	}
	for _, w := range nameWords(core.ShortFuncName(core.NormNative(f.Func))) {
		if lockNameWords[w] {
			return true
		}
	}
	return false
}

// nameWords splits a function name into lower-case words at every
// character that is not a letter and before every upper-case letter that
// follows a lower-case one ("XactLockTableWait" → xact, lock, table,
// wait; "LWLockAcquire" → lwlock, acquire; "row_lock" → row, lock).
func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return words
}

// latchLock is the waiting at one program point that sleeps on latches.
type latchLock struct {
	key     core.PointKey
	point   core.ProgramPoint // at the acquisition path's outermost frame
	call    string            // the call slept in
	waiters map[int]bool
	waitNS  int64
	waits   int64
	// peerWakes counts the wake-ups of the waiters by other threads of
	// the target; releaser is where most of them came from, and
	// releaserWakes how many.
	peerWakes     int64
	releaser      *core.ProgramPoint
	releaserWakes int64
}

// latchPoint returns, for a sleeping stack, the index of its program
// point (the acquisition path's outermost frame) and the call; ok is
// false when the sleep is not a latch wait: no lock-named frame within
// latchPathDepth, or one with no caller but the thread's entry (a
// program's main loop named for a lock names no lock).
func latchPoint(fr []recording.Frame) (pi int, call string, ok bool) {
	if len(fr) < 3 || !latchWaitCalls[core.NormNative(fr[0].Func)] {
		return 0, "", false
	}
	outer := -1
	for i := 1; i < len(fr) && i <= latchPathDepth; i++ {
		if lockWordFrame(fr[i]) {
			outer = i
		}
	}
	if outer < 0 || outer+1 >= len(fr) || threadEntryFuncs[core.NormNative(fr[outer+1].Func)] {
		return 0, "", false
	}
	return outer, core.NormNative(fr[0].Func), true
}

// latchLocks groups the target's latch sleeps by program point and counts
// the wake-ups their threads got from other threads of the target.
func (ld *Data) latchLocks() []*latchLock {
	by := map[core.PointKey]*latchLock{}
	var out []*latchLock
	for _, s := range ld.offcpu {
		if s.state != recording.StateSleeping || s.synthetic() {
			continue
		}
		fr := s.userFrames()
		pi, call, ok := latchPoint(fr)
		if !ok {
			continue
		}
		k := core.KeyOf(fr, pi)
		k.Line = 0 // one lock path may be called from a few lines
		l := by[k]
		if l == nil {
			l = &latchLock{key: k, point: core.NewPoint(fr, pi), call: call, waiters: map[int]bool{}}
			by[k] = l
			out = append(out, l)
		}
		l.waiters[s.tid] = true
		l.waits += value(s, 0)
		l.waitNS += value(s, 1)
	}
	if len(out) == 0 {
		return nil
	}
	if p := ld.rec.Profile(recording.ViewWakes); p != nil {
		samples := readLiveView(p, core.NewProfStacks())
		wakers := map[*latchLock]map[core.PointKey]int64{}
		for i, s := range p.Sample {
			wakee, waker := firstNum(s.NumLabel[recording.LabelWakee]), firstNum(s.NumLabel[recording.LabelTID])
			if wakee == 0 || waker == 0 || wakee == waker || !ld.isTarget(int(waker)) || len(s.Value) == 0 {
				continue
			}
			fr := samples[i].userFrames()
			wpi := livePointIndex(fr)
			for wpi >= 0 && wpi+1 < len(fr) && libcFrame(fr[wpi]) {
				wpi++ // the system call's wrapper (kill, write) is not where the program releases
			}
			for _, l := range out {
				if !l.waiters[int(wakee)] {
					continue
				}
				l.peerWakes += s.Value[0]
				if wpi < 0 {
					continue
				}
				if wakers[l] == nil {
					wakers[l] = map[core.PointKey]int64{}
				}
				k := core.KeyOf(fr, wpi)
				k.Line = 0
				wakers[l][k] += s.Value[0]
				if n := wakers[l][k]; n > l.releaserWakes {
					p := core.NewPoint(fr, wpi)
					l.releaser, l.releaserWakes = &p, n
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].waitNS > out[j].waitNS })
	return out
}

// firstNum returns a numeric label's first value, 0 when absent.
func firstNum(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	return v[0]
}

// liveLatch reports the latch waits that are a lock's queue.
func liveLatch(a *core.Output, ld *Data) {
	if ld.dur <= 0 {
		return
	}
	for _, l := range ld.latchLocks() {
		n := len(l.waiters)
		if n < core.MinConvoyParticipants || l.waits == 0 || !core.SignificantWait(l.waitNS, ld.dur) {
			continue
		}
		if float64(l.peerWakes) < latchMinPeerWakes*float64(l.waits) {
			continue
		}
		a.Res.Findings = append(a.Res.Findings, core.JudgeLock(ld.latchCase(l), ld.dur))
	}
}

// latchCase builds the lock case of a latch lock: the waits are counted
// off-CPU sleeps, the hand-offs the peers' wake-ups.
func (ld *Data) latchCase(l *latchLock) *core.LockCase {
	n := len(l.waiters)
	fn := core.ShortFuncName(core.NormNative(l.point.Function))
	c := &core.LockCase{
		Path:         core.PathLive,
		ID:           core.LockID{Key: "latch lock waited at " + core.FrameKey(l.point.Stack[l.point.PointIndex]), Name: fmt.Sprintf("the lock %s waits for (its waiters sleep in %s)", fn, l.call)},
		Unit:         "threads",
		Population:   max(ld.population, n),
		CPUs:         ld.cpus(),
		What:         fmt.Sprintf("the lock waited for in %s, each waiter asleep in %s", core.PointString(l.point), l.call),
		Point:        l.point,
		Points:       1,
		Participants: n,
		Counted:      true,
		Known:        true,
		Mean:         float64(l.waitNS) / float64(ld.dur),
		WaitNS:       l.waitNS,
		Contentions:  l.waits,
		HandoffRate:  float64(l.peerWakes) / ld.dur.Seconds(),
		HoldBound:    ld.dur / time.Duration(max(l.peerWakes, 1)),
		Releaser:     l.releaser,
		Sources:      2,
	}
	c.Ev = []core.Evidence{core.Fact("sched", core.EvLatchWaits, "threads", float64(n), "waits", float64(l.waits),
		"wait_s", core.Seconds(l.waitNS), "mean", c.Mean, "peer_wakes", float64(l.peerWakes),
		"call", l.call, "acquire", fn, "point", core.PointString(l.point))}
	c.IO = ld.latchIO(l)
	if l.releaser != nil {
		c.Ev = append(c.Ev, core.Fact("sched", core.EvLatchReleaser, "wakes", float64(l.releaserWakes),
			"share", float64(l.releaserWakes)/float64(max(l.peerWakes, 1)), "releaser", core.PointString(*l.releaser)))
	}
	return c
}

// latchIO measures the holders' I/O under a latch lock from the event
// log. A waiter that is woken by a peer releasing the lock holds it from
// that wake-up until it releases it in turn (the releaser sets the next
// latch once the lock is handed over), so each thread's holds run from a
// release wake-up it got to its own next release wake-up of a peer; its
// I/O system calls and uninterruptible sleep inside them are I/O under
// the lock. Only wake-ups from a release path count (releaseWake): the
// same processes wake each other for other reasons too (PostgreSQL's
// LWLock semaphores), which would cut the holds short.
func (ld *Data) latchIO(l *latchLock) core.IOFacts {
	io := core.IOFacts{Share: -1}
	x := ld.ev
	if x == nil {
		return io
	}
	wakeups := ld.latchReleaseWakeups(l)
	cut := latchHoldCut(wakeups, x.last-x.first)
	holds, cutOff := latchHolds(wakeups, cut)
	m := x.latchHoldIO(holds)
	if m.holdNS <= 0 {
		return io
	}
	// The log keeps a rate-limited sample of the I/O calls, and the I/O
	// view counts them all: scale the logged I/O by the share of the
	// waiters' I/O time the log kept, as if the calls it dropped fell in
	// the holds as often as those it kept.
	// Uninterruptible sleep counts where it is not inside an I/O call
	// (page faults, I/O through a mapping): the sleeps inside the logged
	// calls are theirs, and as many again per call dropped, in
	// proportion, are inside the calls the scaling adds back.
	ioNS := m.sysNS
	kept := ld.loggedIOShare(l.waiters)
	inCalls := m.dInCalls
	if kept > 0 {
		ioNS = int64(float64(m.sysNS) / kept)
		inCalls = int64(float64(m.dInCalls) / kept)
	}
	ioNS += max(m.dNS-inCalls, 0)
	io.Share = min(float64(ioNS)/float64(m.holdNS), 1)
	if io.Share < core.IOMinExplained {
		return io
	}
	io.Explains = true
	io.Holders = len(m.ioHolds)
	// Every participant that held the lock did I/O in its holds: the lock
	// orders their I/O. Threads never seen holding are not counted
	// against it: the log is rate-limited. Nor are threads seen holding
	// without I/O, as long as all the holders' I/O rates are alike
	// (sameIORate): the log keeps a sample of the I/O, and a thread seen
	// in a few holds may by chance show none.
	io.WaitersDoIO = sameIORate(holds, m.ioHolds)
	for _, k := range core.ByCount(m.bySys) {
		io.Calls = append(io.Calls, core.Item{Name: k, Value: core.Seconds(m.bySys[k])})
	}
	if len(io.Calls) > 0 {
		io.Call = io.Calls[0].Name
	}
	all := 0.0
	if io.WaitersDoIO {
		all = 1
	}
	io.Ev = []core.Evidence{core.Fact("events", core.EvLatchHolderIO, "io_s", core.Seconds(m.sysNS+m.dNS), "hold_s", core.Seconds(m.holdNS),
		"share", io.Share, "kept", kept, "holders", float64(len(holds)), "in_io", float64(len(m.ioHolds)), "all", all,
		"cut", float64(cutOff), "cut_s", core.Seconds(cut), "calls", io.Calls)}
	return io
}

// latchReleaseWakeups returns the logged wake-ups of one of the latch's
// waiters by another from a release path (releaseWake), in time order.
func (ld *Data) latchReleaseWakeups(l *latchLock) []recording.Event {
	x := ld.ev
	var wakeups []recording.Event
	for tid := range l.waiters {
		te := x.thread(tid)
		if te == nil {
			continue
		}
		for _, e := range te.wokenAt.ev {
			if l.waiters[e.TID] && e.TID != tid && ld.releaseWake(*e) {
				wakeups = append(wakeups, *e)
			}
		}
	}
	sort.Slice(wakeups, func(i, j int) bool { return wakeups[i].T < wakeups[j].T })
	return wakeups
}

// latchHolds rebuilds each thread's holds from the time-ordered release
// wake-ups: from a wake-up it got to its next wake-up of a peer. A hold
// longer than cut is dropped and counted in cutOff.
func latchHolds(wakeups []recording.Event, cut int64) (holds map[int][]hold, cutOff int) {
	start := map[int]int64{}
	holds = map[int][]hold{}
	for _, e := range wakeups {
		if from, ok := start[e.TID]; ok {
			if e.T-from <= cut {
				holds[e.TID] = append(holds[e.TID], hold{from, e.T})
			} else {
				cutOff++
			}
			delete(start, e.TID)
		}
		start[e.Peer] = e.T
	}
	return holds, cutOff
}

// latchIOSums is the logged I/O inside a latch's holds.
type latchIOSums struct {
	holdNS   int64            // the holds' total length
	sysNS    int64            // logged I/O calls inside them
	dNS      int64            // logged uninterruptible sleep inside them
	dInCalls int64            // the part of dNS inside a logged I/O call
	bySys    map[string]int64 // sysNS and dNS by call, sleep as "uninterruptible sleep"
	ioHolds  map[int]int      // per thread seen doing I/O, its holds with logged I/O
}

// latchHoldIO sums the logged I/O calls and uninterruptible sleep of
// each thread inside its holds.
func (x *eventIndex) latchHoldIO(holds map[int][]hold) latchIOSums {
	m := latchIOSums{bySys: map[string]int64{}, ioHolds: map[int]int{}}
	for tid, hs := range holds {
		te := x.thread(tid)
		for _, h := range hs {
			m.holdNS += h.to - h.from
			if te == nil {
				continue
			}
			inIO := false
			te.io.each(h.from, h.to, func(e recording.Event, ov int64) {
				m.sysNS += ov
				m.bySys[e.Syscall] += ov
				inIO = true
			})
			te.dsleep.each(h.from, h.to, func(e recording.Event, ov int64) {
				m.dNS += ov
				m.bySys["uninterruptible sleep"] += ov
				inIO = true
				// The part inside a logged I/O call is that call's time.
				from, to := max(e.T, h.from), min(e.End(), h.to)
				te.io.each(from, to, func(_ recording.Event, in int64) { m.dInCalls += in })
			})
			if inIO {
				m.ioHolds[tid]++
			}
		}
	}
	return m
}

// latchDispersionZ is how far above its mean, in standard deviations, the
// spread of the threads' I/O rates may go for all of them to do I/O at
// one rate. If every holder does I/O in its holds with the same chance q,
// the counts of holds with logged I/O are binomial, and sum (w-qh)^2 /
// (q(1-q)h) over the k threads is about chi-square with k-1 degrees of
// freedom (mean k-1, deviation sqrt(2(k-1))); three deviations above the
// mean is passed by chance about two times in a hundred at 1 to 3 degrees
// of freedom (2.2 % at 1, 1.6 % at 3) and less with more, so the bar holds
// from 2 threads to 128. A
// few threads that do the I/O their waiters are spared spread the rates
// far wider once each thread is seen in some tens of holds.
const latchDispersionZ = 3

// latchRateExpected is how many holds with I/O a thread's share of holds
// must lead to expect before its own rate is read on its own: at 10
// expected, a thread that does the I/O like the others shows fewer than a
// quarter of them (2 or less) about 0.3 % of the time, whatever the pooled
// rate, so one below a quarter is a thread the I/O spares.
const latchRateExpected = 10

// sameIORate reports whether the threads seen holding do I/O in their
// holds at one rate, as far as the log's sample can tell: the binomial
// dispersion test of latchDispersionZ, or, where that test finds the
// rates apart, a difference too small to matter. With over a thousand
// holds per thread (PostgreSQL's 4 backends on one row: 77-86 % of each
// one's holds flush the WAL) the test tells apart rates that differ by
// a few points, from scheduling, while every backend does the flush; a
// thread the I/O spares does it in none or few of its holds. So the rates
// are one when every thread seen in enough holds (latchRateExpected) has
// at least a quarter of the pooled rate.
func sameIORate(holds map[int][]hold, ioHolds map[int]int) bool {
	if dispersedIORate(holds, ioHolds) {
		return true
	}
	all, wet := 0, 0
	for t, hs := range holds {
		all += len(hs)
		wet += ioHolds[t]
	}
	if all == 0 || wet == 0 {
		return false
	}
	q := float64(wet) / float64(all)
	read := 0
	for t, hs := range holds {
		if q*float64(len(hs)) < latchRateExpected {
			continue
		}
		read++
		if float64(ioHolds[t]) < q*float64(len(hs))/4 {
			return false
		}
	}
	return read >= 2
}

// dispersedIORate reports whether the holders' I/O rates spread no wider
// than one rate's sampling would (the binomial dispersion test of
// latchDispersionZ).
func dispersedIORate(holds map[int][]hold, ioHolds map[int]int) bool {
	all, wet := 0, 0
	for t, hs := range holds {
		all += len(hs)
		wet += ioHolds[t]
	}
	k := len(holds)
	if all == 0 || wet == 0 {
		return false
	}
	q := float64(wet) / float64(all)
	if q >= 1 || k < 2 {
		return true // every hold seen did I/O
	}
	d := 0.0
	for t, hs := range holds {
		h := float64(len(hs))
		dev := float64(ioHolds[t]) - q*h
		d += dev * dev / (q * (1 - q) * h)
	}
	df := float64(k - 1)
	return d <= max(df+latchDispersionZ*math.Sqrt(2*df), latchOverdispersion*df)
}

// latchOverdispersion is how many times the binomial's spread the rates of
// many threads may show and still be one rate. One thread's holds are not
// independent draws: a backend whose commit finds the WAL already flushed
// by another skips the flush, and the event log keeps its sample in
// bursts (a token bucket), so the holds seen with I/O come in runs.
// PostgreSQL's 128 backends on one row, all flushing, 7 to 10 holds seen
// each, gave 1.3 to 2.6 times it over six recordings (the log keeping
// 12-64 % of the holds' I/O); 16 backends, 200 holds each, 1.1 times.
// Threads the I/O spares spread the rates by about h(q_d-q)^2/(q(1-q))
// per thread over h holds (q_d the doers' rate, q the pooled one): a
// quarter of 128 threads doing I/O in a fifth of 40 holds gives 6 times
// the binomial, half doing it in 8 of 10 holds 6.7 times, and more holds
// only more; one thread of 16 to 128 doing it in a fifth of 40 holds
// gives 8 on average, and passes a bar of 3 in about one sample in fifty
// (one in two hundred at 2; 4,000 simulated samples each). 3 sits
// between the two at every thread count; the bar matters only from
// about 20 threads up, below it the z bar is larger.
const latchOverdispersion = 3

// hold is one hold of a latch lock rebuilt from the event log.
type hold struct{ from, to int64 }

// latchMaxHoldRatio is how many mean holds a hold rebuilt from the event
// log may last. The log is a rate-limited sample: when the wake-up that
// ends a thread's hold was not kept, the hold rebuilt runs on to the
// thread's next kept release, over the waits between, and at 64 backends
// per CPU (4 in 10 wake-ups kept) those holds outweigh the real ones
// three to one (18 s of holds in a 6 s run). The lock has one holder at a
// time, so its holds add up to at most the span and the mean hold is at
// most the span over the releases; a hold rebuilt across a thread's own
// wait lasts a whole round of the queue, which with N waiters is about N
// holds. Real holds vary with their I/O (an fsync's latency tail), rarely
// beyond a few times their mean; cutting at four keeps those and drops
// rounds of queue from five waiters on. A real hold cut for being long is
// mostly I/O, so the cut can only lower the I/O share it measures.
const latchMaxHoldRatio = 4

// latchHoldCut returns the longest hold latchIO accepts: latchMaxHoldRatio
// mean holds, the span over the releases. A release is a run of logged
// release wake-ups by one thread (one release may grant the lock to
// several waiters at once: PostgreSQL wakes every waiter for a finished
// transaction together). A release whose wake-ups were all dropped is not
// counted, so the mean is overestimated and the cut errs long.
func latchHoldCut(wakeups []recording.Event, span int64) int64 {
	releases := 0
	for i, e := range wakeups {
		if i == 0 || wakeups[i-1].TID != e.TID {
			releases++
		}
	}
	if releases == 0 || span <= 0 {
		return math.MaxInt64
	}
	return latchMaxHoldRatio * span / int64(releases)
}

// releaseWake reports whether a logged wake-up came from a latch lock's
// release path: its waker's stack holds a lock-named frame within
// latchPathDepth of the wake (kill ← ProcLockWakeup ← LockReleaseAll,
// write ← latch_set ← row_lock_release), and the wake is not a futex
// wake (sem_post, pthread_cond_signal): those wake a futex sleeper, the
// waiter of another lock (PostgreSQL's LWLocks, on per-process
// semaphores), which the futex locks count.
func (ld *Data) releaseWake(e recording.Event) bool {
	if e.Stack < 0 || e.Stack >= len(ld.rec.Stacks) {
		return false
	}
	fr := ld.rec.Stacks[e.Stack].Frames
	n := 0
	for _, f := range fr {
		if f.Kernel {
			continue
		}
		if n == 0 && futexWakeFrame(f) {
			return false
		}
		if n++; n > latchPathDepth {
			break
		}
		if lockWordFrame(f) {
			return true
		}
	}
	return false
}

// futexWakeFrame reports whether a wake's leaf frame wakes a futex
// waiter.
func futexWakeFrame(f recording.Frame) bool {
	n := core.NormNative(f.Func)
	return strings.Contains(n, "futex") || strings.HasPrefix(n, "sem_post") || strings.HasPrefix(n, "pthread_") || strings.HasPrefix(n, "lll_")
}

// loggedIOShare returns the share of the I/O time of threads that the
// event log kept (its I/O events against the I/O view's totals), 0 when
// either is missing.
func (ld *Data) loggedIOShare(tids map[int]bool) float64 {
	p := ld.rec.Profile(recording.ViewIO)
	if p == nil || ld.ev == nil {
		return 0
	}
	var all, logged int64
	for _, s := range p.Sample {
		if tids[int(firstNum(s.NumLabel[recording.LabelTID]))] && len(s.Value) > 1 {
			all += s.Value[1]
		}
	}
	for tid := range tids {
		if te := ld.ev.thread(tid); te != nil {
			for _, e := range te.io.ev {
				logged += e.Dur
			}
		}
	}
	if all <= 0 || logged <= 0 {
		return 0
	}
	return min(float64(logged)/float64(all), 1)
}

// libcFrame reports whether f is in the C library.
func libcFrame(f recording.Frame) bool {
	return strings.HasPrefix(f.Module, "libc.so") || strings.HasPrefix(f.Module, "libc-") || strings.HasPrefix(f.Module, "libpthread")
}
