package core

import "time"

// Every threshold the verdicts of more than one path rest on, each with
// why it is what it is. A threshold only one path uses stands beside that
// path's detector. None is fitted to the fixtures.

// Significance and convoy thresholds, shared by every path.
const (
	// MinConvoyParticipants is how many distinct waiters a lock needs to be
	// a convoy. One waiter behind one holder is an ordinary handoff; two or
	// three fit a pipeline of stages; from four on the queue, not the
	// holder's work, sets the wait, and it is more waiters than most
	// machines have cores to run them.
	MinConvoyParticipants = 4

	// ConvoyMeanWaiting is the average number of goroutines or threads
	// waiting on a lock (Little's law: total wait / wall time) from which
	// it is a convoy: at least one is queued at any moment, so the queue
	// never drains.
	ConvoyMeanWaiting = 1.0

	// minMeanWaiting is the average number of waiters from which a lock is
	// worth a finding at all: a tenth of one goroutine's or thread's time
	// (100 ms of waiting per second of wall time). Below that no fix can
	// win back more than a tenth of one worker.
	minMeanWaiting = 0.1

	// minWaitUnknownDuration replaces minMeanWaiting when the profiled
	// duration is unknown (mutex and block profiles written at exit carry
	// none): 10 ms of total waiting is more than the stray contention of a
	// program's start-up, yet small enough that no real convoy of a
	// profile lasting seconds falls below it.
	minWaitUnknownDuration = 10 * time.Millisecond

	// MinShareOfAllWaiting is the share of all lock waiting in the input a
	// lock must hold to be a finding: fixing a lock that holds less than 1%
	// cannot gain more than 1%.
	MinShareOfAllWaiting = 0.01

	// MinShareOfActive is the share of the working (not idle) goroutines'
	// or threads' time a lock must cost, when both the duration and the
	// population are known: a lock that costs a process's workers less than
	// 1% of their time cannot win back more than 1% of their throughput.
	MinShareOfActive = 0.01

	// MaxShortHold bounds the mean time a lock is held for its critical
	// section to count as short. 10 ms is a scheduler time slice and the
	// latency of a disk flush: a lock held that long per acquisition
	// suffers from the work under it, and splitting the lock between more
	// sharers would not remove that work. The Go profiles only give an
	// upper bound (wall time / contended acquisitions); a bound above this
	// is "not shown short", not "long".
	MaxShortHold = 10 * time.Millisecond

	// stripeCount is the number of stripes suggested for a striped lock: a
	// power of two so the index is a mask of the key's hash, 32 mutexes
	// cost a few hundred bytes, and with as many contenders running at once
	// as a 16-core machine has cores each shares its stripe with fewer than
	// one other on average (15/32).
	stripeCount = 32
)

// Thresholds of the lock verdicts, shared by both paths.
const (
	// IOMinExplained is the share of a lock's logged waiting during which
	// its holder was in an I/O system call or in uninterruptible sleep
	// for the lock to be "I/O under lock". Moving the I/O off the lock
	// wins back at least that share; at a quarter that is worth a change
	// of design on its own, while a holder that now and then logs a line
	// or faults a page in explains a few percent at most. A share is
	// independent of how many threads wait.
	IOMinExplained = 0.25

	// TransferMinShare is the share of the holders' I/O time that plain
	// data transfer (TransferIO) must take for the I/O to be moved off
	// the lock rather than coalesced when the waiters do it themselves
	// (IOFacts.Transfer). Above half, moving the transfers off the lock
	// wins back more waiting than a group commit of the rest could; a
	// journal commit (write, fsync, rename) spends nearly all of its time
	// in fsync and rename and stays far below. A share, so independent of
	// how many threads wait.
	TransferMinShare = 0.5

	// hotStripeShare is the share of an array's waiting one element must
	// take for the array to have a hot stripe. With keys spread by a hash,
	// each of n stripes takes about 1/n of the waiting; one stripe with
	// half of it means one key (or a few that hash together) draws as much
	// contention as all the others together, and adding stripes leaves
	// that key where it is. Half holds for any number of stripes from two
	// up (for two, it needs the hot one to take more than the other).
	hotStripeShare = 0.5

	// MinArrayElements is how many locks of one array must be seen for it
	// to be an array at all: with one, nothing says the lock has siblings.
	MinArrayElements = 2
)

// Thresholds of the serialized-writer verdict, on live data: the hand-off
// rate, the queue length and the hand-off cost that tell a writer from a
// convoy (LockCase.handoffBound, LockCase.combined). The measurements on
// real programs behind them are in docs/realworld.md.
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
	// undercounts them.
	writerMinHandoffWaiting = 0.5

	// writerMaxPassOn is the share of woken waiters, woken while others
	// still queued, that hand the lock on themselves, at or below which
	// the releasers finish the waiters' work for them (combined): a
	// thread woken to take a mutex, a row lock or an interpreter lock
	// holds it and wakes the next when it lets go, and about half to two
	// thirds of them are seen doing so (the rest lost the lock to a
	// barging thread). A group commit's followers are woken as done and
	// never hand anything on, so only one waiter per group does. One in
	// four means groups of four or more, half the lowest mutex-like share;
	// where groups are smaller, the producers' waits are short and the
	// queue-length rule (writerMaxQueue) already decides.
	writerMaxPassOn = 0.25
)

// Busy-wait thresholds, shared by the live and the Go spin detectors.
const (
	// SpinMinCPUShare is the share of all CPU samples a busy-wait must
	// burn to be a finding. A spinning sample does no work at all, so the
	// threshold is one of waste, not of concentration: a tenth of the
	// process's CPU thrown away, the same tenth as minMeanWaiting.
	SpinMinCPUShare = 0.10

	// SpinMinLoopShare is the share of a function's CPU that must fall on
	// the lines where it executes atomic operations for the function to be
	// a busy-wait: a spin loop is little more than its load or
	// compare-and-swap line, whereas a work loop that also bumps an atomic
	// counter spends most of its time on the other lines.
	SpinMinLoopShare = 0.5

	// MinSpinners is how many goroutines must take part: with two or more,
	// at least one burns CPU waiting for another; one goroutine in a tight
	// atomic loop is merely a hot loop.
	MinSpinners = 2
)

// MaxLockRows bounds the locks table: locks come heaviest first, a table
// longer than a few screens is not read, and in a profile with more locks
// than this the rest each hold a sliver of the waiting.
const MaxLockRows = 200

// PointRowShare is the share of all waiting or of all CPU a point without
// dumped goroutines must hold to get a row: the rows are for the TUI to
// show where time goes, and points under 1% of it are noise there.
const PointRowShare = 0.01

// ChainMinShare is the share of a lock's logged waiting that a holder's
// own wait must explain to be named as a link of the chain: the same
// quarter that makes I/O under a lock worth a change of design
// (ioMinExplained); a holder that now and then waits briefly for another
// lock explains a few percent.
const ChainMinShare = IOMinExplained

// MinLoggedWaits is how many logged waits the quantiles need to come from
// the event log: with fewer, p99 is the maximum of a handful, so the
// in-kernel histogram (every wait, log2 buckets) answers instead.
const MinLoggedWaits = 20

// TransferIO names the system calls that move data without making it
// durable: each is kept whole by the kernel (a pipe write of at most
// PIPE_BUF bytes, an O_APPEND write, a datagram), so a lock around it
// orders nothing the kernel does not.
var TransferIO = map[string]bool{
	"read": true, "readv": true, "pread64": true, "preadv": true, "preadv2": true,
	"write": true, "writev": true, "pwrite64": true, "pwritev": true, "pwritev2": true,
	"send": true, "sendto": true, "sendmsg": true, "sendmmsg": true,
	"recv": true, "recvfrom": true, "recvmsg": true, "recvmmsg": true,
}
