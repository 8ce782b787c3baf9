package core

import (
	"fmt"
	"math"
	"strings"

	"github.com/contend-dev/contend/internal/units"
)

// The one table of suggestions: every verdict, live or from Go profiles,
// names a remedy, and the remedy's entry words the change, why it fits and
// what it gains from the figures the verdict measured. The wording differs
// between threads and goroutines only where the lock types differ.

// Remedy names one change contend can suggest.
type Remedy uint8

const (
	RemedyMoveIOOff    Remedy = iota // snapshot under the lock, write outside it
	RemedyCoalesceIO                 // the waiters' own I/O: write only the newest state
	RemedyTurns                      // a global lock around computation
	RemedyGIL                        // CPython's global interpreter lock
	RemedyGVL                        // Ruby's global VM lock
	RemedyCombine                    // a serialized writer: tryLock + queue drained by the holder
	RemedyBiggerGroups               // a writer that already combines: bigger batches, fewer producers
	RemedyHotKey                     // one hot key in a striped lock
	RemedyStripe                     // a lock shared over disjoint keys
	RemedyShorten                    // plain contention
	RemedyPark                       // a busy-wait: park instead
	RemedyFewerThreads               // CPU saturation
	RemedyRuntimeLock                // a lock internal to the Go runtime
	RemedyFileLock                   // a file lock or a file's inode lock
	RemedyMmapLock                   // the process's mmap lock
	RemedyPipeWriter                 // a pipe or socket slower than its writers
	RemedyBlockingLock               // a lock taken by polling
	RemedyWriterPref                 // writers starved by readers: writer preference or copy-on-write
)

// Sugg holds the figures a suggestion is worded from.
type Sugg struct {
	GoLang bool
	// Java words the remedy with Java's locks.
	Java bool
	// Whom is "thread" or "goroutine".
	Whom              string
	participants      int
	WaitS, CPUSeconds float64
	// Fn is the function the remedy applies to (short name).
	Fn string
	// calls names the I/O system calls; where is the I/O's function.
	calls, where string
	// ownTransfer is set when every waiter does the I/O under the lock
	// itself and that I/O is plain data transfer (IOFacts.Transfer).
	ownTransfer bool
	ioShare     float64
	victimAt    string
	holderSites []string
	// foreignShare: see ioFacts.foreignShare.
	foreignShare float64
	// rate is the hand-off rate; cpus how many CPUs the machine has,
	// share the share of CPU samples (spin).
	rate  float64
	CPUs  int
	Share float64
	// group is how many waiters a combining releaser serves per turn,
	// holds how many holds a typical wait spans.
	group, holds float64
	// why lists what kept a lock from a more specific verdict.
	why []string
	// preempted is set when the holders' waits for a CPU explain much of
	// the waiting.
	preempted bool
	// missing names the inputs that would sharpen the verdict.
	missing string
	// hot describes the hot stripe: its share and the array.
	hotShare float64
	array    string
	// runnable, demand: CPU saturation figures (threads runnable without
	// a CPU on average; CPUs' worth wanted).
	RunqThreads, demand float64
	// Hint is the runtime-lock hint.
	Hint string
	// Yield is set for a busy-wait that yields the CPU between polls.
	Yield bool
	// Object names what a kernel-object or polled lock locks ("flock on
	// /var/log/app.log"); Call the call that waits or fails on it
	// ("flock LOCK_EX", "fcntl F_SETLK"); Tries the failed attempts a
	// second and Asleep the share of the waiters' time asleep between
	// them (polled locks).
	Object, Call  string
	Tries, Asleep float64
	// rw holds a reader-writer lock's sides, when told apart.
	rw *RWFacts
}

// suggestions is the table: one entry per remedy.
var suggestions = map[Remedy]func(s Sugg) Suggestion{
	RemedyMoveIOOff:    moveIOOff,
	RemedyCoalesceIO:   coalesceIO,
	RemedyTurns:        turns,
	RemedyGIL:          gilSuggestion,
	RemedyGVL:          gvlSuggestion,
	RemedyCombine:      combine,
	RemedyBiggerGroups: biggerGroups,
	RemedyHotKey:       hotKey,
	RemedyStripe:       stripe,
	RemedyShorten:      shorten,
	RemedyPark:         park,
	RemedyFewerThreads: fewerThreads,
	RemedyRuntimeLock:  runtimeLockSuggestion,
	RemedyFileLock:     fileLock,
	RemedyMmapLock:     mmapLock,
	RemedyPipeWriter:   pipeWriter,
	RemedyBlockingLock: blockingLock,
	RemedyWriterPref:   writerPref,
}

// kernelGain is what removing a kernel-object lock gains: the time its
// waiters slept on it.
func kernelGain(s Sugg) string {
	if s.WaitS <= 0 {
		return ""
	}
	return fmt.Sprintf("up to %s of sleeping in the kernel removed from the %ss' critical path", units.Seconds(s.WaitS), s.Whom)
}

func fileLock(s Sugg) Suggestion {
	return Suggestion{
		Action:       fmt.Sprintf("Take %s less often and for less time in %s: format and compute outside it and hold it only for the write, batch several records per acquisition, or give the file one writer thread that the others hand records to (a queue), or one file per writer.", s.Object, s.Fn),
		Reasoning:    "The kernel serializes the threads on the file: each sleeps until the holder releases it and wakes it, so the file admits one writer at a time however many threads or CPUs there are. Only less work under it, fewer acquisitions, or one writer shortens the queue.",
		ExpectedGain: kernelGain(s),
	}
}

func mmapLock(s Sugg) Suggestion {
	return Suggestion{
		Action:       fmt.Sprintf("Stop changing mappings in the hot path (%s): map buffers once and pool them instead of mmap/munmap per request, pre-fault them (MAP_POPULATE) instead of faulting pages in under load, and leave protections alone (no mprotect per phase); an allocator that returns memory to the kernel (madvise) on every free can keep it instead.", s.Fn),
		Reasoning:    "Every mmap, munmap, mprotect and brk takes the process's mmap lock for writing, and every page fault takes it for reading: while one thread changes a mapping, every thread that faults sleeps in the kernel behind it, whatever lock the program itself uses. The lock is one per process, so more threads only lengthen the queue.",
		ExpectedGain: kernelGain(s),
	}
}

func pipeWriter(s Sugg) Suggestion {
	return Suggestion{
		Action:       fmt.Sprintf("Do not write %s synchronously from %s: hand the data to a bounded buffer drained by one writer thread, and when the buffer is full drop the record and count the drops rather than wait; or make the reader faster.", s.Object, s.Fn),
		Reasoning:    "The reader drains the pipe or socket slower than the writers fill it: once its buffer is full every write sleeps in the kernel until the reader makes room, so the writers run at the reader's pace, and a lock held across the write makes everyone else wait too.",
		ExpectedGain: kernelGain(s),
	}
}

func blockingLock(s Sugg) Suggestion {
	what := "the blocking form of the call (fcntl F_SETLKW or F_OFD_SETLKW instead of F_SETLK, flock without LOCK_NB, pthread_mutex_lock instead of a trylock loop)"
	gain := ""
	if s.Tries > 0 {
		gain = fmt.Sprintf("%s failed tries a second gone, and each waiter woken when the lock is released instead of at its next retry", units.Rate(s.Tries))
	}
	return Suggestion{
		Action:       fmt.Sprintf("Wait for %s in %s with %s, or queue the work for the holder; keep the work done under it short (I/O such as fsync after the release when the data allows).", s.Object, s.Fn, what),
		Reasoning:    fmt.Sprintf("The %ss fail %s, sleep and try again: they spend %s of their time asleep between tries, so they do not run while they wait, but the lock is free for a whole backoff before anyone notices, the first to retry wins rather than the first to come, and every failed try costs a system call. A blocking wait hands the lock over as it is released, in order.", s.Whom, s.Call, units.Percent(s.Asleep)),
		ExpectedGain: gain,
	}
}

// SuggestFor words remedy r from s.
func SuggestFor(r Remedy, s Sugg) Suggestion { return suggestions[r](s) }

func moveIOOff(s Sugg) Suggestion {
	where := "the I/O"
	if s.where != "" {
		where = "the I/O in " + s.where
	}
	why := fmt.Sprintf("The holder keeps the lock through calls that wait for the disk (%s), so every %s that needs the lock meanwhile waits for the disk too, though it does no I/O itself. ", s.calls, s.Whom)
	if s.victimAt != "" && len(s.holderSites) > 0 {
		own := "whose own critical section does no I/O"
		if s.foreignShare > 0 {
			own = fmt.Sprintf("whose own critical sections do I/O of their own but are charged only a part of the delay (the mutex profile charges %s of it to holders never seen waiting for it)", units.Percent(s.foreignShare))
		}
		why = fmt.Sprintf("%ss at %s, %s, wait for the lock while %s %s it across %s: each such wait lasts as long as the I/O, which grows with the data and the disk, not with the work the lock protects. ",
			strings.ToUpper(s.Whom[:1])+s.Whom[1:], s.victimAt, own, strings.Join(s.holderSites, " and "), map[bool]string{true: "holds", false: "hold"}[len(s.holderSites) == 1], s.calls)
	}
	gain := "the hold shrinks to the snapshot's cost, and with it most of the waiting"
	if s.WaitS > 0 {
		gain = fmt.Sprintf("the hold shrinks to the snapshot's cost; most of the %s of waiting goes away", units.Seconds(s.WaitS))
	}
	if s.ioShare > 0 {
		gain = fmt.Sprintf("up to %s less waiting on the lock (%s of it coincides with the holder's I/O)", units.Percent(s.ioShare), units.Percent(s.ioShare))
	}
	if s.ownTransfer {
		return Suggestion{
			Action:       fmt.Sprintf("Move %s off the lock: under the lock, do only what it guards (take the sequence number, format the record into a buffer of the thread's own); release the lock; then write the record in one call. If the records must reach the reader in sequence order, queue them under the lock and let one writer thread drain the queue.", where),
			Reasoning:    fmt.Sprintf("Every %s that takes the lock does %s under it, and the holder keeps the lock while the call waits for the reader or the device, so the others queue behind it. The kernel keeps each such call whole without the lock (a pipe write of up to PIPE_BUF bytes, an O_APPEND write, a datagram); the lock adds only the waiting.", s.Whom, s.calls),
			ExpectedGain: gain,
		}
	}
	return Suggestion{
		Action:       fmt.Sprintf("Move %s off the lock: under the lock, copy the state to write (a snapshot) and stamp it with a sequence number; release the lock; then write outside it, serialized by a separate lock, skipping any snapshot older than the last one written so an older snapshot never overwrites a newer one.", where),
		Reasoning:    why + "The sequence number keeps the commits in order once they run without the lock.",
		ExpectedGain: gain,
	}
}

func coalesceIO(s Sugg) Suggestion {
	return Suggestion{
		Action:    "Coalesce the I/O: let the holder write the newest state for everyone waiting (a sequence number tells whose state is already on disk), or batch the writes, instead of each writer writing in turn; if the writes need no ordering, write outside the lock.",
		Reasoning: fmt.Sprintf("Every %s that waits for this lock does %s under it itself, so the lock orders their I/O rather than stalling others behind it; each waiter's write is usually superseded by the next one's, and writing only the newest state removes most of the writes and the waiting with them.", s.Whom, s.calls),
	}
}

func turns(s Sugg) Suggestion {
	why := fmt.Sprintf("The %ss pass one lock around and compute while they hold it, so only one runs at a time and the other %d wait for their turn: the lock caps them at one CPU", s.Whom, max(s.participants-1, 0))
	if s.CPUs > 1 {
		why += fmt.Sprintf(" of the %d", s.CPUs)
	} else if s.CPUs == 1 {
		why += " (on this 1-CPU machine they would share it anyway, so the gain comes on a machine with more CPUs)"
	}
	return Suggestion{
		Action:    "Hold the lock only around the shared state, not around the computation; if the work itself must be serialized, give it to one thread (or split it across processes) instead of many threads taking turns.",
		Reasoning: why + ".",
	}
}

func gilSuggestion(s Sugg) Suggestion {
	return Suggestion{
		Action:    "Run the CPU-bound Python work in processes (multiprocessing, concurrent.futures.ProcessPoolExecutor) or in native code that releases the GIL (NumPy, a C extension with Py_BEGIN_ALLOW_THREADS), or on a free-threaded CPython build; keep threads for work that waits on I/O.",
		Reasoning: fmt.Sprintf("Only the thread that holds the global interpreter lock runs Python code; the other %d wait for their turn, so adding threads adds waiting, not throughput.", max(s.participants-1, 0)),
	}
}

func gvlSuggestion(s Sugg) Suggestion {
	return Suggestion{
		Action:    "Run the CPU-bound Ruby work in more processes (a forked worker per CPU, as Puma's cluster mode or Unicorn do) or in Ractors, or move it into native code that releases the GVL (rb_thread_call_without_gvl); keep threads for work that waits on I/O.",
		Reasoning: fmt.Sprintf("Only the thread that holds Ruby's global VM lock runs Ruby code; the other %d wait for their turn each time they come back from I/O or their time slice ends, so adding threads adds waiting, not throughput. The lock cannot be striped.", max(s.participants-1, 0)),
	}
}

func combine(s Sugg) Suggestion {
	return Suggestion{
		Action: "Combine the writes: take the lock with a tryLock fast path; when it is busy, push the item on a lock-free queue for the current holder to drain before it unlocks (re-checking the queue after unlocking so nothing is stranded), or give the resource one writer thread fed by that queue.",
		Reasoning: fmt.Sprintf("%d producers feed one serial resource through one lock and hand it over %s times a second; every hand-off wakes a sleeping producer, costs two context switches and adds the wake-up latency to that producer's write. "+
			"Striping cannot split one resource; combining lets the holder write many items per acquisition, and producers that find the lock busy leave their item and go on instead of sleeping.", s.participants, units.Rate(s.rate)),
		ExpectedGain: fmt.Sprintf("most of the %s of waiting and the %s of CPU spent handing the lock over; tail latency stops growing with the number of producers", units.Seconds(s.WaitS), units.Seconds(s.CPUSeconds)),
	}
}

func biggerGroups(s Sugg) Suggestion {
	return Suggestion{
		Action: fmt.Sprintf("The queue already combines: about %s of the %ss it wakes are woken with their work done by another's turn. Give each turn more to do and fewer %ss to wake: batch items on the producer's side (several items per call that takes the lock), or feed the resource from about one producer per CPU through a queue.", units.Percent(1-1/max(s.group, 1)), s.Whom, s.Whom),
		Reasoning: fmt.Sprintf("%d producers feed one serial resource whose holder already writes for a whole group at a time; each producer waits behind about %s holds, so adding producers lengthens every wait without adding throughput. A producer that hands over several items per call, or fewer producers, wake fewer %ss per item and keep the resource as busy.",
			s.participants, units.Float(s.holds), s.Whom),
		ExpectedGain: fmt.Sprintf("most of the %s of waiting; the serial resource's throughput stays, with fewer wake-ups per item", units.Seconds(s.WaitS)),
	}
}

func hotKey(s Sugg) Suggestion {
	return Suggestion{
		Action: fmt.Sprintf("Split the hot key's state rather than the lock: give the key that lands on this stripe its own sharded state (per-%s or per-CPU counters summed on read), read it without the lock (an atomic snapshot, read-mostly locking such as RCU or a seqlock), or cache it; for a stream of writes to it, combine them (tryLock plus a queue the holder drains). Do not add stripes.", s.Whom),
		Reasoning: fmt.Sprintf("The lock is already one of an array of stripes (%s) indexed by a hash of the key, yet this one stripe takes %s of the array's waiting: one key, or a few that hash together, draws most of the traffic. More stripes spread the other keys thinner but leave the hot key on one lock, so the waiting stays.",
			s.array, units.Percent(s.hotShare)),
		ExpectedGain: fmt.Sprintf("most of the %s waited on this stripe", units.Seconds(s.WaitS)),
	}
}

func stripe(s Sugg) Suggestion {
	locks := "locks"
	if s.GoLang {
		locks = "mutexes"
	}
	if s.Java {
		locks = "lock objects (monitors or ReentrantLocks)"
	}
	k := s.participants
	why := fmt.Sprintf("%d distinct %ss queue on one lock whose holds are short and involve no I/O: the waiting comes from how many %ss share it, not from the work under it. If they touch disjoint keys, one lock per stripe lets them proceed in parallel. ", k, s.Whom, s.Whom)
	why += fmt.Sprintf("The array must stay fixed: a lock stored in a map entry that another %s deletes and re-creates no longer excludes anyone.", s.Whom)
	return Suggestion{
		Action:       stripeAction(locks, s.Whom),
		Reasoning:    why,
		ExpectedGain: stripeGain(k),
	}
}

func shorten(s Sugg) Suggestion {
	reason := "The lock is contended"
	if len(s.why) > 0 {
		reason += ", but " + strings.Join(s.why, "; ")
	}
	reason += "."
	if s.preempted {
		reason += " Much of the waiting is the holder waiting for a CPU: fewer runnable " + s.Whom + "s than CPUs would shorten it."
	}
	if s.missing != "" {
		reason += " " + s.missing
	}
	return Suggestion{
		Action:    fmt.Sprintf("Shorten the critical section (move work that needs no protection out of it) or take the lock less often; if more %ss are runnable than there are CPUs, bound them so a holder is not preempted; if many %ss share it over disjoint keys, stripe it.", s.Whom, s.Whom),
		Reasoning: reason,
	}
}

func park(s Sugg) Suggestion {
	lock := "a parking lock (pthread_mutex_t, a futex-based lock, std::mutex)"
	if s.GoLang {
		lock = "a parking lock (sync.Mutex)"
	}
	if s.Java {
		lock = "a parking lock (a ReentrantLock, or a synchronized block)"
	}
	cpus := "the CPUs"
	if s.CPUs > 0 {
		cpus = fmt.Sprintf("the %d CPUs", s.CPUs)
	}
	gain := ""
	if s.CPUSeconds > 0 {
		gain = fmt.Sprintf("up to %s of CPU freed", units.Seconds(s.CPUSeconds))
		if s.Share > 0 {
			gain += fmt.Sprintf(" (%s of the process's samples)", units.Percent(s.Share))
		}
		gain += "; if the lock is still contended once it parks, stripe it by key"
	}
	if s.Yield {
		return Suggestion{
			Action: fmt.Sprintf("Replace the yielding busy-wait in %s with %s, or bound how long it yields before it parks: waiters then sleep until the holder releases it.", s.Fn, lock),
			Reasoning: fmt.Sprintf("%ss poll in %s and give up the CPU between polls without parking; with more of them runnable than %s, each yield puts the thread straight back in the run queue, so the one that would end the wait queues behind the yielders. Yielding only pays when the CPUs are otherwise idle.",
				strings.ToUpper(s.Whom[:1])+s.Whom[1:], s.Fn, cpus),
			ExpectedGain: gain,
		}
	}
	return Suggestion{
		Action: fmt.Sprintf("Replace the busy-wait in %s with %s: waiters then sleep until the holder releases it.", s.Fn, lock),
		Reasoning: fmt.Sprintf("%ss burn CPU re-reading one memory word in %s without parking or yielding, and with more of them runnable than %s the one that holds the flag is preempted and its waiters spend whole time slices spinning instead of letting it finish. "+
			"Spinning only pays when the holder cannot be descheduled, which is never true of an ordinary %s.", strings.ToUpper(s.Whom[:1])+s.Whom[1:], s.Fn, cpus, s.Whom),
		ExpectedGain: gain,
	}
}

func fewerThreads(s Sugg) Suggestion {
	return Suggestion{
		Action: fmt.Sprintf("Bound the %ss that run at once to the CPUs: a fixed pool of about %d workers fed by a queue instead of a %s per request, or more CPUs for this process; the locks below are not the bottleneck.", s.Whom, max(s.CPUs, 1), s.Whom),
		Reasoning: fmt.Sprintf("On average %s %ss are runnable but wait for one of the %d CPUs the process may use, while waiting for locks takes a small part of their time: the %ss compete for CPUs, not for locks. Every runnable %s beyond the CPUs adds its wait to each request's latency and costs a context switch, without adding throughput.",
			units.Float(s.RunqThreads), s.Whom, s.CPUs, s.Whom, s.Whom),
		ExpectedGain: fmt.Sprintf("the %s spent runnable without a CPU becomes queueing in the pool, where it can be bounded and measured; throughput stays at what the %d CPUs give", units.Seconds(s.WaitS), s.CPUs),
	}
}

func runtimeLockSuggestion(s Sugg) Suggestion {
	return Suggestion{
		Action:    "Nothing to change in your own locks: " + s.Hint,
		Reasoning: "Since Go 1.22 the mutex profile also records contention on the runtime's internal locks (scheduler, channels, allocator, timers, semaphore tables). The waiting is real, but no sync.Mutex of the program is involved; only reducing the runtime work that takes the lock helps.",
	}
}

// stripeAction is the striping suggestion for locks (the lock type's
// plural: "mutexes", "locks") that whom ("goroutine", "thread") contend
// for over disjoint keys.
func stripeAction(locks, whom string) string {
	return fmt.Sprintf("Stripe the lock: guard the state with a fixed array of %d %s indexed by a hash of the key each %s works on (its relay, connection or account), created once and never resized; never put the locks inside map entries that can be removed.", stripeCount, locks, whom)
}

// stripeGain is what striping into stripeCount locks gains k distinct
// contenders: each shares its lock with k-1 others now and with
// (k-1)/stripeCount others on average then, so waiting falls about
// stripeCount times whatever k is.
func stripeGain(k int) string {
	sharers := float64(k-1) / stripeCount
	alone := math.Pow(1-1.0/stripeCount, float64(k-1))
	return fmt.Sprintf("about %d× less waiting: each of the %d contenders shares its stripe with %s others on average instead of %d, and %s of them get a stripe to themselves; conservative, because queueing delay falls faster than linearly as a lock's load drops",
		stripeCount, k, units.Float(sharers), k-1, units.Percent(alone))
}

// sugg returns the figures of a lock case for its suggestion.
func (c *LockCase) sugg() Sugg {
	s := Sugg{
		GoLang:       c.Path == PathGo,
		Java:         c.Java,
		Whom:         strings.TrimSuffix(c.Unit, "s"),
		participants: c.Participants,
		WaitS:        Seconds(c.WaitNS),
		CPUSeconds:   Seconds(c.MachNS),
		rate:         c.HandoffRate,
		ioShare:      math.Max(c.IO.Share, 0),
		holderSites:  c.IO.HolderSites,
		missing:      c.Missing,
		why:          c.whyNotConvoy(),
		preempted:    c.EvWaitNS > 0 && float64(c.PreemptNS) >= IOMinExplained*float64(c.EvWaitNS),
		CPUs:         c.CPUs,
		rw:           c.RW,
		ownTransfer:  c.IO.WaitersDoIO && c.IO.Transfer,
	}
	if c.PassOn > 0 {
		s.group = float64(c.PassOnOf) / float64(c.PassOn)
	}
	if c.HoldBound > 0 {
		s.holds = float64(c.lockWait()) / float64(c.HoldBound)
	}
	if s.Whom == "" {
		s.Whom = "thread"
	}
	var calls []string
	for _, it := range c.IO.Calls[:min(len(c.IO.Calls), 3)] {
		calls = append(calls, ShortFuncName(it.Name))
	}
	s.calls = strings.Join(calls, ", ")
	if s.calls == "" {
		s.calls = "I/O"
	}
	if c.IO.Site != nil {
		s.where = ShortFuncName(c.IO.Site.Function)
	}
	if c.IO.VictimPoint != nil {
		s.victimAt = PointString(*c.IO.VictimPoint)
	}
	s.foreignShare = c.IO.ForeignShare
	if c.Array != nil {
		s.hotShare, s.array = c.Array.HotShare, c.Array.Base
	}
	return s
}

// whyNotConvoy says, in words, what kept a lock from being a convoy.
func (c *LockCase) whyNotConvoy() []string {
	var why []string
	switch {
	case !c.Known:
		why = append(why, "how many take part is unknown: there is no goroutine dump, and without the profiled duration the wait cannot be turned into an average number of waiters")
	case c.Participants < MinConvoyParticipants:
		verb := "wait"
		if c.Participants == 1 {
			verb = "waits"
		}
		why = append(why, fmt.Sprintf("only %d %s %s for it, fewer than the %d that make a convoy", c.Participants, units.Plural(int64(c.Participants), strings.TrimSuffix(c.Unit, "s")), verb, MinConvoyParticipants))
	case !c.DumpOnly && c.Mean < ConvoyMeanWaiting:
		why = append(why, fmt.Sprintf("on average only %s wait at once, so no queue persists", units.Float(c.Mean)))
	}
	if c.HoldBound > MaxShortHold {
		why = append(why, fmt.Sprintf("each hand-off takes up to %s on average: the lock is held long, or its holder is often descheduled while holding it, rather than shared by a crowd of short critical sections", units.Duration(c.HoldBound)))
	}
	return why
}

// headline words a lock finding's one-line summary.
func headline(c *LockCase, k Kind, r Remedy) string {
	who := Participants(c.Participants, c.Population, c.Unit, c.Counted, c.Mean)
	switch r {
	case RemedyMoveIOOff:
		call := ""
		if c.IO.Call != "" {
			call = " (" + ShortFuncName(c.IO.Call) + ")"
		}
		return OnePoint(who, "wait", c.What+", held across I/O"+call)
	case RemedyCoalesceIO:
		return fmt.Sprintf("%s lost waiting for ONE lock that serializes I/O: %s", units.Seconds(Seconds(c.WaitNS)), c.What)
	case RemedyTurns, RemedyGIL, RemedyGVL:
		name := c.What
		switch c.Interp {
		case InterpPython:
			name += ", CPython's global interpreter lock"
		case InterpRuby:
			name += ", Ruby's global VM lock"
		}
		return fmt.Sprintf("%s take turns on ONE lock: %s", who, name)
	case RemedyCombine, RemedyBiggerGroups:
		return fmt.Sprintf("%s hand ONE lock over %s times a second at ONE program point: %s", who, units.Rate(c.HandoffRate), c.What)
	case RemedyWriterPref:
		return writerStarvedHeadline(c)
	case RemedyHotKey:
		return fmt.Sprintf("%s wait at ONE stripe of %s, which takes %s of the array's waiting: %s", who, c.Array.Base, units.Percent(c.Array.HotShare), c.What)
	case RemedyStripe:
		if c.Points > 1 {
			return fmt.Sprintf("%s wait for ONE lock at %d program points: %s", who, c.Points, c.What)
		}
		return OnePoint(who, "wait", c.What)
	}
	if c.WaitNS == 0 && c.DumpOnly {
		return fmt.Sprintf("%s wait for ONE lock: %s", who, c.What)
	}
	return fmt.Sprintf("%s lost waiting for ONE lock: %s", units.Seconds(Seconds(c.WaitNS)), c.What)
}
