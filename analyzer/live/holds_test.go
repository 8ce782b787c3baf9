package live

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// semWaitStack is a waiter in glibc's sem_wait: a word of no known lock
// kind, with no owner field.
var semWaitStack = nativeStack("libc.so.6", "futex_abstimed_wait_common", "__new_sem_wait_slow64.constprop.0", "sem_wait", "log_record", "worker")

// semSim is the truth of a simulated semaphore lock: what the holds were
// and how much of them the holders spent in write.
type semSim struct {
	events       []recording.Event
	holds        []int64
	heldNS, ioNS int64
	releases     int
	// barges is how many holds began without a wait; lat the wake
	// latency.
	barges int
	lat    int64
}

// simSemLock simulates n threads taking a semaphore lock in turn, every
// thread queued, each release waking the next thread (round robin), with
// barges: every 7th release its thread takes the lock again at once,
// and the thread it woke finds it taken and sleeps again.
//
// bad: every 5th hold writes to a slow pipe for a millisecond under the
// lock, the others take 5 µs. Fixed: every hold takes 5 µs, and the
// releaser then writes outside the lock, just after its release.
//
// The wake latency (a woken waiter's time runnable before it runs) grows
// with the threads per CPU: 10 µs per thread per CPU of a 2-CPU machine,
// 20 µs at 2 per CPU, 640 µs at 64, the order of a run queue that long
// at a few µs of CPU per thread.
func simSemLock(addr uint64, perCPU int, bad bool) semSim {
	const (
		us      = int64(time.Microsecond)
		short   = 5 * us    // a hold that formats a record
		pipe    = 1000 * us // a write that waits for the pipe's reader
		holdsN  = 2000      // hand-offs simulated
		longN   = 5         // every longN-th hold waits for the pipe
		bargeN  = 7         // every bargeN-th release is followed by a barge
		firstID = 1000      // first thread id
		workOut = 3 * us    // a thread's work between its release and its next wait
		cpus    = 2         // the machine's CPUs
		latPer  = 10 * us   // wake latency per thread per CPU
		writeIn = 2 * us    // from taking the lock to entering write
		outMax  = 1000 * us // the fixed variant's write outside the lock, at most
		outLead = 1 * us    // from a release to that write
		bargeIn = 1 * us    // from a release to the same thread's barge
		rewait  = 1 * us    // from a barged-out waiter's running to its next sleep
	)
	threads := perCPU * cpus
	lat := latPer * int64(perCPU)
	s := semSim{lat: lat}
	tid := func(i int) int { return firstID + i%threads }
	waitFrom := map[int]int64{}
	for i := 0; i < threads; i++ {
		waitFrom[tid(i)] = 0
	}
	ev := func(e recording.Event) {
		e.Stack = -1
		s.events = append(s.events, e)
	}
	// hold records a hold of t over [from, to) with its write when it has
	// one, and the release that ends it, waking next.
	hold := func(t int, from, to int64, long bool, next int) {
		s.holds = append(s.holds, to-from)
		s.heldNS += to - from
		if long && bad {
			ev(recording.Event{Kind: recording.EventIO, T: from + writeIn, Dur: to - from - 2*writeIn, TID: t, Syscall: "write"})
			s.ioNS += to - from - 2*writeIn
		}
		ev(recording.Event{Kind: recording.EventWake, T: to, TID: t, Peer: 1, Addr: addr})
		ev(recording.Event{Kind: recording.EventWakeup, T: to, TID: t, Peer: next})
		s.releases++
	}
	// outside gives t its work after a release at r and returns when it
	// sleeps on the lock again: in the fixed variant it writes first.
	outside := func(t int, r int64) int64 {
		if bad {
			return r + workOut
		}
		// The write must end before t's turn comes round again, so that
		// t is queued like every other thread.
		d := min(outMax, int64(threads-1)*(lat+short)/2)
		ev(recording.Event{Kind: recording.EventIO, T: r + outLead, Dur: d, TID: t, Syscall: "write"})
		return r + outLead + d + workOut
	}
	dur := func(i int) int64 {
		if bad && i%longN == 0 {
			return pipe
		}
		return short
	}
	// The first thread's wait ends a latency in, so that every hold,
	// the first too, begins inside the log.
	at := lat
	for i := 0; len(s.holds) < holdsN; i++ {
		t, next := tid(i), tid(i+1)
		ev(recording.Event{Kind: recording.EventWait, T: waitFrom[t], Dur: at - waitFrom[t], TID: t, Addr: addr})
		r := at + dur(i)
		hold(t, at, r, i%longN == 0, next)
		if i%bargeN == bargeN-1 {
			// t takes the lock back before next runs; next wakes, finds
			// it taken and sleeps again until t's second release.
			b := r + bargeIn
			r2 := b + lat + pipe
			woke := r + lat
			ev(recording.Event{Kind: recording.EventWait, T: waitFrom[next], Dur: woke - waitFrom[next], TID: next, Addr: addr})
			waitFrom[next] = woke + rewait
			hold(t, b, r2, true, next)
			s.barges++
			r = r2
		}
		waitFrom[t] = outside(t, r)
		at = r + lat
	}
	// The waits still under way when the simulation stops end with it.
	for i := 0; i < threads; i++ {
		if w := waitFrom[tid(i)]; w < at {
			ev(recording.Event{Kind: recording.EventWait, T: w, Dur: at - w, TID: tid(i), Addr: addr})
		}
	}
	slices.SortStableFunc(s.events, byStart)
	return s
}

// TestHandoffHoldsAtScale reconstructs the holds of a semaphore lock at 2
// to 64 threads per CPU and checks them against the simulation's truth:
// every hold measured, the hold time and its share in write within a few
// percent, the tail told from the typical hold, and the verdict I/O under
// the lock for the bad variant only.
func TestHandoffHoldsAtScale(t *testing.T) {
	const lock = 0x7000
	for _, perCPU := range []int{2, 8, 32, 64} {
		for _, bad := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d-per-cpu-bad-%v", perCPU, bad), func(t *testing.T) {
				sim := simSemLock(lock, perCPU, bad)
				last := sim.events[len(sim.events)-1].End()
				d := time.Duration(last)
				f := newLiveFixture(d)
				var waiters []int
				var waitNS int64
				for _, e := range sim.events {
					if e.Kind == recording.EventWait {
						waitNS += e.Dur
						if !slices.Contains(waiters, e.TID) {
							waiters = append(waiters, e.TID)
						}
					}
				}
				f.word(lock, "log_sem (app)", uint64(waitNS), waiters, waiters, uint64(sim.releases))
				for _, w := range waiters {
					f.wait(lock, w, waitNS/int64(len(waiters)), semWaitStack)
				}
				f.ld.ev = indexEvents(sim.events)
				g := groupOf(t, f.ld.lockGroups(), lock)
				if !handoffLock(g) {
					t.Fatalf("role %v, owners %v: the semaphore is not judged by its hand-offs", g.role, g.owners)
				}
				lf := f.ld.factsOf(g)
				hf := lf.handoff
				if hf == nil {
					t.Fatal("no holds reconstructed")
				}
				if hf.releases != sim.releases || len(hf.holds) != sim.releases {
					t.Fatalf("%d holds of %d releases measured, want every one of %d", len(hf.holds), hf.releases, sim.releases)
				}
				// A barged hold is measured from the barged-out waiter's
				// second sleep, a wake latency after it began, or from
				// the write its holder was in then: at most one latency
				// short per barge, and within 3 % when the barges write.
				short := sim.heldNS - hf.holdNS
				if short < 0 || short > int64(sim.barges)*sim.lat || bad && float64(short) > 0.03*float64(sim.heldNS) {
					t.Errorf("held %v, truth %v (%d barges, wake latency %v)", time.Duration(hf.holdNS), time.Duration(sim.heldNS), sim.barges, time.Duration(sim.lat))
				}
				// Held and unsure time partition the span of the hand-offs
				// after the first.
				first, last := hf.holds[0].to, hf.holds[len(hf.holds)-1].to
				if got := hf.holdNS - (hf.holds[0].to - hf.holds[0].from) + hf.unsureNS; got != last-first {
					t.Errorf("held and unsure time %v, want the %v between the first and last hand-off", time.Duration(got), time.Duration(last-first))
				}
				trueShare := float64(sim.ioNS) / float64(sim.heldNS)
				share := float64(hf.ioNS) / float64(hf.holdNS)
				if share < trueShare-0.03 || share > trueShare+0.03 {
					t.Errorf("I/O share of the holds %.3f, truth %.3f", share, trueShare)
				}
				slices.Sort(sim.holds)
				if p50 := time.Duration(quantile(sim.holds, 0.5)); hf.p50 > 2*p50 {
					t.Errorf("hold p50 %v, truth %v", hf.p50, p50)
				}
				io := f.ld.ioFacts(lf)
				if bad {
					if hf.p99 < 900*time.Microsecond {
						t.Errorf("hold p99 %v: the pipe waits are the tail", hf.p99)
					}
					if !io.Explains || !io.Transfer || io.Call != "write" {
						t.Errorf("I/O facts %+v: the writes under the lock explain the waiting", io)
					}
				} else if hf.ioNS != 0 || io.Explains {
					t.Errorf("I/O %v in the holds, explains %v: the writes are outside the lock", time.Duration(hf.ioNS), io.Explains)
				}
				c := f.ld.lockCase(g, []*LockGroup{g})
				kind := core.JudgeLock(c, d).Kind
				if bad != (kind == core.KindIOUnderLock) {
					t.Errorf("verdict %s", kind)
				}
			})
		}
	}
}

// TestPostedSemaphoreIsNoLock: a semaphore that counts work items, posted
// by a producer that reads each request from a socket and never waits on
// the semaphore, woken consumers that never post. Its posts end no hold,
// so the producer's reads are not joined to it as I/O under a lock.
func TestPostedSemaphoreIsNoLock(t *testing.T) {
	const sem = 0x7100
	const us = int64(time.Microsecond)
	producer, consumers := 2000, []int{2001, 2002, 2003, 2004}
	var evs []recording.Event
	waitFrom := map[int]int64{}
	at := int64(0)
	for i := 0; i < 400; i++ {
		c := consumers[i%len(consumers)]
		// The producer reads a request (90 µs), then posts it, waking c.
		evs = append(evs,
			recording.Event{Kind: recording.EventIO, T: at, Dur: 90 * us, TID: producer, Syscall: "recvfrom", Stack: -1},
			recording.Event{Kind: recording.EventWake, T: at + 95*us, TID: producer, Peer: 1, Addr: sem, Stack: -1},
			recording.Event{Kind: recording.EventWakeup, T: at + 95*us, TID: producer, Peer: c, Stack: -1},
			recording.Event{Kind: recording.EventWait, T: waitFrom[c], Dur: at + 100*us - waitFrom[c], TID: c, Addr: sem, Stack: -1})
		// c handles it and waits again.
		waitFrom[c] = at + 150*us
		at += 100 * us
	}
	slices.SortStableFunc(evs, byStart)
	f := newLiveFixture(time.Duration(at))
	f.word(sem, "work_sem (app)", uint64(at*3), consumers, []int{producer}, 400)
	for _, c := range consumers {
		f.wait(sem, c, at, semWaitStack)
	}
	f.ld.thread(producer)
	f.ld.ev = indexEvents(evs)
	g := groupOf(t, f.ld.lockGroups(), sem)
	if !handoffLock(g) {
		t.Fatalf("role %v idle %v: want a word of no known kind, not idle", g.role, g.idle)
	}
	if hf := f.ld.handoffHolds(g, map[uint64]bool{sem: true}); hf.lockLike() || hf.releases != 400 || hf.byWaiters != 0 {
		t.Errorf("%d releases, %d by waiters, lock-like %v: want 400 posts by a thread that never waits", hf.releases, hf.byWaiters, hf.lockLike())
	}
	if lf := f.ld.factsOf(g); lf.handoff != nil {
		t.Errorf("holds reconstructed for a posted semaphore: %d", len(lf.handoff.holds))
	}
}
