package core

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

	// writerMinHandoffWaiting is the average number of threads waiting on
	// the lock (Little's law: total wait / wall time) from which the
	// hand-offs are the lock's cost even when their CPU share is small:
	// once the waits last about one hold (writerMaxQueue), all of that
	// waiting is the hand-offs'. Half a thread is five times the least
	// waiting worth a finding (minMeanWaiting). Either this or
	// writerMinHandoffCPU will do: the two measure the same cost from two
	// sources (the futex waits and the cpu-clock samples), and the samples
	// are few at 99 Hz. The mean, not rate × median: waits of one hold
	// are skewed by the CPU queue after each wake-up, and the median
	// undercounts them (RocksDB's writers: 3.8 waiting on average, 0.39 by
	// rate × median).
	writerMinHandoffWaiting = 0.5

	// writerMaxPassOn is the share of woken waiters, woken while others
	// still queued, that hand the lock on themselves, at or below which
	// the releasers finish the waiters' work for them (combined): a
	// thread woken to take a mutex, a row lock or an interpreter lock
	// holds it and wakes the next when it lets go, and the log shows
	// 0.52–0.66 of them doing so (MariaDB's row locks 0.66, Ruby's GVL
	// 0.52–0.65 at 4 to 64 threads; the rest lost the lock to a barging
	// thread and waited again, or their next wait was too short to log).
	// A group commit's followers are woken as done and never hand
	// anything on, so only one waiter per group does: RocksDB's writers
	// 0.46 at 4 threads, 0.32 at 6, 0.07 at 128 on 2 CPUs. One in four
	// means groups of four or more, half the lowest mutex-like share;
	// where groups are smaller, the producers' waits are short and the
	// queue-length rule (writerMaxQueue) already decides.
	writerMaxPassOn = 0.25
)
