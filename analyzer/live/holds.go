package live

import (
	"slices"
	"sort"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// This file reconstructs the holds of a lock whose word names no holder (a
// lock built from a semaphore, a hand-rolled futex lock) from its
// hand-offs: every release that woke a waiter was made by the thread that
// held the lock until then, and that thread's hold began when it took the
// lock. Measured per hand-off, the holds give a distribution (mostly tiny
// holds with a few long ones are told from uniformly short ones, which the
// span divided by the hand-offs cannot do) and join the holder's I/O to
// the lock for the part of the hold it really held it.
//
// A hold that ends at release r by thread X began after the release before
// r (holds of one lock do not overlap) and:
//
//   - when X's own last wait on the lock ended after that release, X took
//     the lock then: the hold is [end of X's wait, r], exact;
//   - otherwise X took it without sleeping (an uncontended take, or a
//     barge right after its own previous release), at an unseen moment.
//     A thread of the lock that starts to sleep on it at t proves that
//     the lock was taken at t, and nobody released it between t and r
//     without a logged wake (a release with a sleeper wakes one), so X
//     held it from t at the latest: [first such t, r] is the part of the
//     hold that is certain. The time before it, back to the previous
//     release, may be X's own work outside the lock (a write after
//     sem_post, then an uncontended sem_wait), and is not counted;
//     When X was inside an I/O call at that moment, it took the lock
//     before the call began (a thread in a system call takes no lock),
//     so the hold reaches back to the call's start;
//   - with neither, the hold is not measured: it is the uncovered part
//     that the evidence states.

// handoffHold is one hold of a lock that ended in a hand-off.
type handoffHold struct {
	tid int
	// from and to bound the part of the hold that is certain; to is the
	// release.
	from, to int64
	// ioNS is the holder's I/O system calls and uninterruptible sleep
	// inside [from, to), overlaps counted once.
	ioNS int64
	// io are those intervals, clipped to the hold, by start.
	io []span
}

// handoffFacts are a lock's holds reconstructed from its hand-offs.
type handoffFacts struct {
	// holds are the measured holds by release time.
	holds []handoffHold
	// releases is how many hand-offs the log holds; logged how many
	// wakes of a waiter the in-kernel counters saw (the log is
	// rate-limited and bounded).
	releases int
	woken    uint64
	// holdNS and ioNS sum the measured holds and their I/O; ioBySys
	// splits the I/O by system call.
	holdNS, ioNS int64
	ioBySys      map[string]int64
	// byWaiters counts the releases made by threads that also waited on
	// the lock.
	byWaiters int
	// unsureNS is the rest of the time between the log's first and last
	// hand-off: the lock free, or held by a holder whose take the log
	// does not show. The unmeasured holds fit in it.
	unsureNS int64
	// p50, p90, p99 and longest of the measured holds.
	p50, p90, p99, longest time.Duration
}

// handoffLock reports whether a group's holds are reconstructed from its
// hand-offs: a lock word of no known kind (a semaphore, a hand-rolled
// futex lock) whose waits never read an owner. A glibc mutex names its
// owner beside the word; a condition variable, an interpreter's queue and
// a JVM monitor have paths of their own.
func handoffLock(g *LockGroup) bool {
	return g.role == roleUnknown && !g.idle && !g.queue && g.jvm == nil && len(g.owners) == 0 && g.woken > 0
}

// handoffHolds reconstructs the holds of g that ended in a hand-off, as the
// file comment describes.
func (ld *Data) handoffHolds(g *LockGroup, own map[uint64]bool) *handoffFacts {
	x := ld.ev
	hf := &handoffFacts{woken: g.woken, ioBySys: map[string]int64{}}
	var waits []*recording.Event
	for _, w := range g.words {
		waits = append(waits, x.waits[w.addr]...)
	}
	slices.SortStableFunc(waits, func(a, b *recording.Event) int { return byStart(*a, *b) })
	var durs []int64
	prev := x.first
	var last *recording.Event
	for _, r := range x.wakesOn(g.addrs()) {
		// One release that wakes several waiters is logged once per
		// thread woken: it ends one hold.
		if last != nil && r.TID == last.TID && r.T == last.T {
			continue
		}
		last = r
		if !ld.isTarget(r.TID) {
			continue
		}
		hf.releases++
		if g.waiters[r.TID] {
			hf.byWaiters++
		}
		from := x.lastWaitEnd(r.TID, own, prev, r.T)
		if from <= prev {
			from = -1
			i := sort.Search(len(waits), func(i int) bool { return waits[i].T > prev })
			for ; i < len(waits) && waits[i].T < r.T; i++ {
				if waits[i].TID != r.TID {
					from = waits[i].T
					break
				}
			}
			if from >= 0 {
				from = x.inIOSince(r.TID, prev, from)
			}
		}
		if hf.releases > 1 {
			// Before the first release the log does not say since when
			// the lock was taken.
			hf.unsureNS += r.T - prev
		}
		if from >= 0 && from < r.T {
			h := handoffHold{tid: r.TID, from: from, to: r.T}
			ld.holdIO(&h, hf.ioBySys)
			hf.holds = append(hf.holds, h)
			hf.holdNS += h.to - h.from
			if hf.releases > 1 {
				hf.unsureNS -= h.to - h.from
			}
			hf.ioNS += h.ioNS
			durs = append(durs, h.to-h.from)
		}
		prev = r.T
	}
	if len(durs) > 0 {
		slices.Sort(durs)
		hf.p50 = time.Duration(quantile(durs, 0.5))
		hf.p90 = time.Duration(quantile(durs, 0.9))
		hf.p99 = time.Duration(quantile(durs, 0.99))
		hf.longest = time.Duration(durs[len(durs)-1])
	}
	return hf
}

// lockLike reports whether the releases look like a lock's: most are made
// by threads that also wait on it, since every releaser took the lock
// first and, with a queue, most takes end a wait. A semaphore that counts
// events (work posted to a queue, a thread's exit) is posted by threads
// that never wait on it: none of its releases ends a hold. Half splits
// the two with room either way, and the shares do not depend on how many
// threads there are.
func (hf *handoffFacts) lockLike() bool {
	return hf.releases > 0 && 2*hf.byWaiters >= hf.releases
}

// holdIO fills h's I/O: its holder's I/O system calls and uninterruptible
// sleep inside the hold.
func (ld *Data) holdIO(h *handoffHold, bySys map[string]int64) {
	te := ld.ev.thread(h.tid)
	if te == nil {
		return
	}
	te.io.each(h.from, h.to, func(io recording.Event, ov int64) {
		h.io = append(h.io, span{max(io.T, h.from), min(io.End(), h.to)})
		bySys[io.Syscall] += ov
	})
	te.dsleep.each(h.from, h.to, func(d recording.Event, _ int64) {
		h.io = append(h.io, span{max(d.T, h.from), min(d.End(), h.to)})
	})
	h.ioNS = unionLength(h.io)
}

// during returns the measured holds that overlap [from, to), clipped to
// it: who held the lock while a thread waited over that interval.
func (hf *handoffFacts) during(from, to int64) []holdPart {
	hs := hf.holds
	// Holds do not overlap and are ordered by release, so they are
	// ordered by start too.
	i := sort.Search(len(hs), func(i int) bool { return hs[i].to > from })
	var out []holdPart
	for ; i < len(hs) && hs[i].from < to; i++ {
		out = append(out, holdPart{hs[i].tid, max(hs[i].from, from), min(hs[i].to, to)})
	}
	return out
}

// coverage is the share of the logged hand-offs whose hold was measured.
func (hf *handoffFacts) coverage() float64 {
	if hf.releases == 0 {
		return 0
	}
	return float64(len(hf.holds)) / float64(hf.releases)
}

// evidence states the hold distribution, the share of the held time the
// holders spent in I/O, and how much of it the log covers.
func (hf *handoffFacts) evidence() core.Evidence {
	var mean time.Duration
	if n := len(hf.holds); n > 0 {
		mean = time.Duration(hf.holdNS / int64(n))
	}
	ioShare := 0.0
	if hf.holdNS > 0 {
		ioShare = float64(hf.ioNS) / float64(hf.holdNS)
	}
	return core.Fact("events", core.EvHandoffHolds, "holds", len(hf.holds), "releases", hf.releases,
		"woken", hf.woken, "coverage", hf.coverage(), "mean_s", mean, "p50_s", hf.p50, "p90_s", hf.p90,
		"p99_s", hf.p99, "max_s", hf.longest, "held_s", core.Seconds(hf.holdNS),
		"io_s", core.Seconds(hf.ioNS), "io_share", ioShare, "unsure_s", core.Seconds(hf.unsureNS))
}

// inIOSince returns when tid's I/O call that was under way at t began, if
// it began after after; else t.
func (x *eventIndex) inIOSince(tid int, after, t int64) int64 {
	te := x.thread(tid)
	if te == nil {
		return t
	}
	from := t
	te.io.each(t, t+1, func(io recording.Event, _ int64) {
		if io.T > after && io.T < from {
			from = io.T
		}
	})
	return from
}
