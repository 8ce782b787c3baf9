package core

import (
	"time"
)

// Interpreters whose global lock contend recognises.
const (
	InterpPython = "python"
	InterpRuby   = "ruby"
)

// LockName names a lock for the evidence: its name, else its address.
func LockName(id *LockID) string {
	if id.Name != "" {
		return id.Name
	}
	return id.Address
}

// This file is the model both paths fill for every contended lock, and
// the one judge that turns it into a verdict. A live recording (futex
// words, the event log, the scheduler, /proc) and Go profiles and dumps
// (block, mutex, CPU, goroutines) measure different things; each path's
// builder (live/case.go, goprofile/case.go) translates what it measured into
// the same questions:
//
//   - who waits, how many, how long (Little's law: mean waiting);
//   - how the waits end: by a hand-off from a holder, and at what rate;
//   - what the holder does while others wait: computes, sits runnable
//     without a CPU, does I/O or sleeps uninterruptibly, waits for another
//     lock (a chain);
//   - what the waiters want between waits: a CPU, or nothing (idle);
//   - whether the lock is one of an array (stripes) and how the waiting
//     spreads over its elements.
//
// The verdicts (judgeLock) are decided only from these answers, with the
// same criteria for both paths; where a path cannot answer a question the
// field stays at its zero value and the criterion that needs it does not
// fire, and the finding says which data would have decided it.

// dataPath says which kind of input a lock case was measured from.
type dataPath uint8

const (
	PathLive dataPath = iota // the eBPF collector: threads and futex words
	PathGo                   // Go runtime profiles and goroutine dumps
	PathJava                 // Java thread dumps alone
)

// LockCase is one lock with every figure the verdicts rest on.
type LockCase struct {
	Path dataPath
	ID   LockID
	// Unit is "threads" or "goroutines"; population how many the process
	// had; cpus how many CPUs it could use (0 when unknown).
	Unit       string
	Population int
	CPUs       int
	// What names the lock and where it is waited for, for headlines:
	// "table_lock (stripe) in conn_on_message (stripe.c:39)",
	// "sync.Mutex.Lock in store.(*S).Get (store.go:42)".
	What string

	// Point is where the waiters wait (the first frame outside lock
	// machinery), releaser where the lock is released or its waiters
	// woken, nil when unknown.
	Point    ProgramPoint
	Releaser *ProgramPoint
	// Points counts the distinct program points the lock is waited for at.
	Points int

	// Participants is the number of distinct waiters: counted (threads
	// seen waiting, goroutines in a dump) or, when counted is false, a
	// lower bound from Little's law. known is false when neither a count
	// nor a duration exists.
	Participants int
	Counted      bool
	Known        bool
	// Mean is the average number waiting (total wait / duration), 0 when
	// the duration is unknown.
	Mean float64
	// WaitNS is the total time waited; contentions the number of waits
	// that found the lock taken.
	WaitNS      int64
	Contentions int64
	// DumpOnly is set when the waiting comes from one goroutine dump and
	// no profile measured it.
	DumpOnly bool

	// Hand-offs (live): wakes that woke a waiter, per second, and the bound
	// they put on a hold (duration / hand-offs). For Go, holdBound is the
	// duration over the contended acquisitions.
	HandoffRate float64
	HoldBound   time.Duration
	// PassOn of passOnOf logged waits that ended with others still queued
	// were followed by their thread handing the lock on (live).
	PassOn, PassOnOf int
	// P50 and p99 of the waits (live), 0 when unknown; wakeLatency the
	// waiters' mean time runnable after a wake-up, part of every wait.
	P50, P99    time.Duration
	WakeLatency time.Duration
	// Cond is set for a lock built from a condition variable.
	Cond bool
	// Mutex is set for a lock whose waiters wait to take a mutex (a
	// glibc pthread mutex word): each returns holding it.
	Mutex bool

	// Turns is set when the waiters are the ones that hand the lock to
	// each other and, taken together, keep it busy (turnFacts says how
	// sure): threads taking turns on a global lock.
	Turns bool
	// Interp names the interpreter whose global lock this is
	// (interpPython, interpRuby), "" for any other lock.
	Interp string
	// Java is set for a lock of Java code (a monitor, a
	// java.util.concurrent lock): the suggestions name Java's locks.
	Java bool

	// IO holds what the holders did in I/O while others waited.
	IO IOFacts

	// RW is set for a reader-writer lock whose waiters are told apart.
	RW *RWFacts

	// Array is set when the lock is one element of an array of locks.
	Array *ArrayFacts

	// Spread is set when one program point takes several locks that a
	// dump tells apart, none with most of the waiters: the figures add up
	// several locks. unseen is set when a dump taken over the interval
	// shows nobody waiting although the profiles average a standing
	// queue: the waiting came in bursts.
	Spread, Unseen bool

	// CPU of the waiters: in lock machinery (spinning in the lock, the
	// futex calls and context switches of hand-offs), in the functions
	// that take the lock (the critical section and more; cpuFn is the
	// main one), elsewhere, and in total. For Go, machNS is the CPU
	// burned spinning before parking.
	CPUNS, MachNS, CsNS, OutsideNS int64
	CPUFn                          string

	// PreemptNS is how long holders sat runnable without a CPU while
	// others waited, evWaitNS the logged waiting it is a share of (live);
	// preempt is that share, or for a goroutine dump the share of the
	// goroutines that want a CPU which wait for one.
	PreemptNS, EvWaitNS int64
	Preempt             float64

	// Chain lists what the holders waited for while holding (another
	// lock, the run queue), heaviest first.
	Chain []ChainLink

	// Ev holds the facts the builder measured, strongest first; the
	// verdict adds its own.
	Ev []Evidence
	// Sources counts the independent data sources behind the case; guess
	// is set when the lock's identity rests on a guess (a Lock/Unlock
	// pairing through a shared caller).
	Sources int
	Guess   bool
	// Missing says which input would sharpen the verdict ("a goroutine
	// dump (debug=2)"), empty when nothing is missing.
	Missing string
}

// IOFacts is what a lock's holders did in I/O while others waited.
type IOFacts struct {
	// Explains is set when the holders' I/O explains the waiting: live,
	// when share reaches ioMinExplained; Go, when a dump shows a holder in
	// I/O inside the critical section or the CPU profile samples I/O
	// there repeatedly.
	Explains bool
	// Share is the part of the logged waiting during which the holder
	// was in I/O or uninterruptible sleep (live), -1 when not measured.
	Share float64
	// WaitersDoIO is set when every waiter does the I/O under the lock
	// itself: the lock then orders their I/O rather than stalling others.
	WaitersDoIO bool
	// Transfer is set when that I/O is mostly plain data transfer
	// (TransferIO: write, read, send, …) rather than commits (fsync,
	// rename): the kernel keeps each such call whole and in order
	// whether or not the lock is held, so what the lock adds is the
	// waiting, and moving the I/O off it is the remedy even when every
	// waiter does it. Commits are what a group commit shares, and their
	// order is often the point of the lock.
	Transfer bool
	// Victims is how many waiters do no I/O under the lock.
	Victims int
	// Site is where the I/O is issued, when known; call names it
	// ("pwrite64", "os.(*File).Sync") and calls lists every I/O call with
	// its time, heaviest first. holders counts the holders seen in I/O.
	Site    *ProgramPoint
	Call    string
	Calls   []Item
	Holders int
	// State is the holder's goroutine state in a dump ("syscall"), how
	// says how the holder was found ("inside the critical section", "not
	// waiting, in the lock's package").
	State, How string
	// Ev holds the facts that show the I/O, for an I/O verdict.
	Ev []Evidence
	// VictimPoint is where the waiters that do no I/O wait (Go: the Lock
	// site whose critical section shows no I/O), when it differs from the
	// lock's main point.
	VictimPoint *ProgramPoint
	// HolderSites names the functions that hold the lock across the I/O.
	HolderSites []string
	// ForeignShare is, when the waiters do I/O of their own under the
	// lock, the share of their delay the mutex profile charges to the
	// Unlocks of holders that do I/O and never wait (0 otherwise).
	ForeignShare float64
}

// ArrayFacts places a lock in an array of locks (stripes).
type ArrayFacts struct {
	// Base names the array ("account_locks (bank)"); elements is how many
	// of its locks were seen contended or used.
	Base     string
	Elements int
	// HotShare is the share of the array's waiting that falls on this
	// lock.
	HotShare float64
	// WaitNS is the array's total waiting.
	WaitNS int64
}

// ChainLink is one thing the holders of a lock waited for while holding
// it: another lock, or a CPU.
type ChainLink struct {
	// What names it: a lock's name, or "a CPU (the run queue)".
	What string
	Lock *LockID
	// Ns is the waiting of this lock's waiters it explains.
	Ns int64
	// Share is ns over the logged waiting.
	Share float64
	// Cycle is set when the other lock's holders in turn wait for this
	// one.
	Cycle bool
}

// lockWait is the typical wait for the lock: the median wait, run-queue
// delay after the wake-up included. The wake-up latency stays in: on an
// oversubscribed machine the waiters' mean latency comes close to the
// median, so the difference would swing between a fraction of a hold and
// dozens; left in, a writer on a machine with far more runnable threads
// than CPUs reads as a queue, which it then is.
func (c *LockCase) lockWait() time.Duration { return c.P50 }

// handoffBound reports whether a lock's cost is its hand-offs: many
// producers, short holds, a very high hand-off rate, waits that last about
// one hand-off (writerMaxQueue) or that a releaser ends with the waiter's
// work done (combined), and a measurable cost of the hand-offs in the
// producers' CPU or in their waiting. Live data only: Go profiles do not
// time single waits.
func (c *LockCase) handoffBound() bool {
	return c.Path == PathLive && c.Participants >= MinConvoyParticipants && !c.Cond &&
		c.HoldBound > 0 && c.HoldBound <= MaxShortHold &&
		c.HandoffRate >= writerMinHandoffRate &&
		c.P50 > 0 && (c.lockWait() <= writerMaxQueue*c.HoldBound || c.Combined()) &&
		(c.CPUNS > 0 && float64(c.MachNS) >= writerMinHandoffCPU*float64(c.CPUNS) ||
			c.Mean >= writerMinHandoffWaiting)
}

// Combined reports whether the lock's releasers finish their waiters' work
// for them, a group at a time (a group commit): of the waits that ended
// with others still queued, at most writerMaxPassOn were followed by the
// woken thread handing the lock on. The queue-length rule (writerMaxQueue)
// cannot see a serialized writer with many producers, since each producer
// then queues behind many groups. This one does not depend on the number
// of producers: the groups only grow with it.
//
// A mutex cannot combine: a thread woken from its wait returns from the
// lock call holding the mutex, so no releaser can have finished its work
// for it, and it wakes the next waiter when it unlocks. One that hands
// nothing on lost the mutex to a thread that barged in while it was
// being woken, and waited again, and the share that pass it on falls as
// threads per CPU grow. Releasers combine on what their waiters wait on
// apart from the lock: condition variables and per-thread wait words.
func (c *LockCase) Combined() bool {
	return !c.Mutex && c.PassOnOf >= MinLoggedWaits && float64(c.PassOn) <= writerMaxPassOn*float64(c.PassOnOf)
}

// groupsOnly reports whether the writer verdict rests on the groups
// alone: the waits span more holds than a hand-off, and the releasers
// already combine.
func (c *LockCase) groupsOnly() bool {
	return c.lockWait() > writerMaxQueue*c.HoldBound && c.Combined()
}

// HotStripe reports whether the lock is the hot element of an array: it
// takes at least hotStripeShare of the array's waiting and at least twice
// its fair share (1/elements), so that of two or three stripes seen, one
// that merely leads by chance is not called hot.
func (c *LockCase) HotStripe() bool {
	a := c.Array
	return a != nil && a.Elements >= MinArrayElements && a.HotShare >= hotStripeShare &&
		a.HotShare >= 2/float64(a.Elements)
}

// convoy reports whether the lock is a convoy of many distinct waiters
// queued behind short holds: the waiting comes from how many share it.
func (c *LockCase) convoy() bool {
	if c.Spread || c.Unseen || !c.Known || c.Participants < MinConvoyParticipants {
		return false
	}
	// Readers of a reader-writer lock do not exclude one another: a crowd
	// of them waits for the writers, and striping would not let it pass.
	if c.RW != nil && c.RW.Writers > 0 {
		return false
	}
	// Holders that sit runnable without a CPU for much of the waiting make
	// the queue: the CPUs are oversubscribed, and striping would not help.
	if c.Preempt >= ChainMinShare {
		return false
	}
	if !c.DumpOnly && c.Mean < ConvoyMeanWaiting {
		return false
	}
	return c.HoldBound == 0 && c.Path != PathLive || c.HoldBound > 0 && c.HoldBound <= MaxShortHold
}

// How a holder in I/O was found, for the evidence.
const (
	HolderInSection  = "inside the critical section"
	HolderByReceiver = "it waits for no lock and runs a method of the very object whose lock the others wait for"
	HolderByType     = "it waits for no lock and runs a method of the type whose methods wait for the lock"
)
