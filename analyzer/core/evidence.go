package core

import (
	"fmt"
	"time"
)

// EvidenceKind names one kind of fact behind a verdict. Each constant's
// comment lists the figures (F) and names (N) it carries, and what its
// items (I) are; EvidenceText (evidence_words.go) words every kind.
type EvidenceKind string

// Evidence kinds of lock verdicts, both paths.
const (
	// EvFutexWaits — F: waits, blocked, threads, words, wait_s, dur_s,
	// mean, truncated (1 when the waiter list hit its bound), queue (1 when
	// the words are one per waiter, a hand-rolled queue). N: lock.
	EvFutexWaits EvidenceKind = "futex-waits"
	// EvWaitPoints — the points the lock is waited for at. I: point →
	// seconds waited there.
	EvWaitPoints EvidenceKind = "wait-points"
	// EvHandoffs — F: woken, rate, hold_bound_s, dur_s. N: releaser
	// (optional).
	EvHandoffs EvidenceKind = "handoffs"
	// EvHandoffHolds — F: holds (measured), releases (hand-offs in the
	// event log), woken (wakes of a waiter the kernel counted), coverage
	// (holds / releases), mean_s, p50_s, p90_s, p99_s, max_s, held_s,
	// io_s, io_share (of held_s the holders spent in I/O), unsure_s (the
	// time between the first and last hand-off neither measured as held
	// nor known free: what the unmeasured holds can add at most),
	// owner_seen (waits begun inside a measured hold that read a glibc
	// owner field), owner_agree (the share of those whose owner is the
	// hold's releaser).
	EvHandoffHolds EvidenceKind = "handoff-holds"
	// EvWaitQuantiles — F: p50_s, p99_s, logged, max_s. N: from ("event
	// log" or "histogram").
	EvWaitQuantiles EvidenceKind = "wait-quantiles"
	// EvContendedSpan — F: share (of the event log's span during which a
	// thread slept on the lock).
	EvContendedSpan EvidenceKind = "contended-span"
	// EvOwnerField — F: owners (distinct holders named), owner, waits,
	// seen (owner is set when one holder dominates).
	EvOwnerField EvidenceKind = "owner-field"
	// EvHolderPreempted — F: waits, runq_s, share.
	EvHolderPreempted EvidenceKind = "holder-preempted"
	// EvHolderIO — F: io_s, share, logged_s. I: system call → seconds.
	EvHolderIO EvidenceKind = "holder-io"
	// EvIOSite — F: holders, victims, waiters. N: site.
	EvIOSite EvidenceKind = "io-site"
	// EvWaitersDoIO — F: share, waiters. N: calls, site (optional).
	EvWaitersDoIO EvidenceKind = "waiters-do-io"
	// EvTurnsHandoff — F: waiters, self_share (of the hand-offs made by
	// waiters of the lock).
	EvTurnsHandoff EvidenceKind = "turns-handoff"
	// EvTurnsDemand — F: cpus (CPU and run-queue time of the waiters per
	// second: how busy they keep the lock), cpu_cpus, runq_cpus, waiters,
	// num_cpu, mean (waiting on the lock).
	EvTurnsDemand EvidenceKind = "turns-demand"
	// EvTurnsTimeouts — F: timeouts.
	EvTurnsTimeouts EvidenceKind = "turns-timeouts"
	// EvWriterQueue — F: p50_s, holds, hold_bound_s, p99_s, tail,
	// wake_latency_s.
	EvWriterQueue EvidenceKind = "writer-queue"
	// EvWriterGroups — F: passed, woken, share (passed / woken), group
	// (woken / passed: waiters per group), p50_s, holds (how many holds a
	// typical wait spans).
	EvWriterGroups EvidenceKind = "writer-groups"
	// EvWaiterCPU — F: cpu_s, machinery_share, section_share,
	// outside_share. N: function.
	EvWaiterCPU EvidenceKind = "waiter-cpu"
	// EvShortHolds — F: hold_bound_s, waiters, p50_s (optional), holds.
	EvShortHolds EvidenceKind = "short-holds"
	// EvLatchWaits — F: threads, waits, wait_s, mean, peer_wakes. N:
	// call (the sleep), acquire (the acquisition path's outer frame),
	// point.
	EvLatchWaits EvidenceKind = "latch-waits"
	// EvLatchReleaser — F: wakes, share (of the waiters' wake-ups by
	// their peers). N: releaser (where the wake-ups came from).
	EvLatchReleaser EvidenceKind = "latch-releaser"
	// EvLatchHolderIO — F: io_s (logged), hold_s, share (of the holds
	// spent in I/O, the logged I/O scaled by kept), kept (share of the
	// I/O time the log kept, 0 when unknown), holders (threads seen
	// holding), in_io (of them, those in I/O while holding), all (1 when
	// every holder did), cut (holds left out for lasting longer than
	// cut_s, latchMaxHoldRatio mean holds). I: system call → logged
	// seconds.
	EvLatchHolderIO EvidenceKind = "latch-holder-io"
	// EvHotStripe — F: share, elements, wait_s, array_wait_s. N: array,
	// lock.
	EvHotStripe EvidenceKind = "hot-stripe"
	// EvWriterStarved — F: writers, readers (distinct threads seen waiting
	// on each side of a reader-writer lock), writer_waits, reader_waits,
	// writer_mean_s, reader_mean_s, writer_wait_s, read_phase_waits,
	// read_phase_wait_s (the writers' waits for a read phase to end),
	// ratio (writer_mean_s / reader_mean_s). N: lock.
	EvWriterStarved EvidenceKind = "writer-starved"
	// EvArrayMerge — F: locks. N: array, point. I: the locks (value 0).
	EvArrayMerge EvidenceKind = "array-merge"
	// EvChain — F: share, wait_s, cycle (1 when the other lock's holders
	// wait for this one). N: what.
	EvChain EvidenceKind = "chain"
	// EvChainDump — a dump's holders waiting for another lock. F: share
	// (of the holders the dump shows). N: what.
	EvChainDump EvidenceKind = "chain-dump"
)

// Evidence kinds of Go profiles and dumps.
const (
	// EvDumpWaiters — F: waiters, population. N: source. I: state → count.
	EvDumpWaiters EvidenceKind = "dump-waiters"
	// EvBlockWaits — F: contentions, sites, wait_s, each_s, dur_s, mean.
	// N: probed (the functions the collector's uprobes measured the waits
	// on, source go-lockwaits; "" for the runtime's block profile).
	EvBlockWaits EvidenceKind = "block-waits"
	// EvMutexRelease — F: delay_s, contentions, guess (1 when the pairing
	// with the Lock site is a guess), paired (1 when there is a Lock site).
	// N: site. I: the reasons of guessed pairings (value 0).
	EvMutexRelease EvidenceKind = "mutex-release"
	// EvDumpUnseen — F: mean.
	EvDumpUnseen EvidenceKind = "dump-unseen"
	// EvDumpReleasing — F: releasing, population, mean.
	EvDumpReleasing EvidenceKind = "dump-releasing"
	// EvDumpSpread — F: named, distinct, most.
	EvDumpSpread EvidenceKind = "dump-spread"
	// EvDumpSameMutex — F: named. N: addr.
	EvDumpSameMutex EvidenceKind = "dump-same-mutex"
	// EvWaitSpread — F: distinct, share (the busiest lock's share of the
	// measured waiting).
	EvWaitSpread EvidenceKind = "wait-spread"
	// EvCallPaths — F: paths. N: site.
	EvCallPaths EvidenceKind = "call-paths"
	// EvGoHoldBound — F: hold_bound_s, dur_s, contentions, max_s.
	EvGoHoldBound EvidenceKind = "go-hold-bound"
	// EvSectionCPU — F: cpu_s, io (1 when some of it is in I/O calls).
	EvSectionCPU EvidenceKind = "section-cpu"
	// EvSpinBeforePark — F: cpu_s.
	EvSpinBeforePark EvidenceKind = "spin-before-park"
	// EvDumpHolderIO — F: goroutines. N: call, state, at, how ("inside the
	// critical section" or the way the holder was found).
	EvDumpHolderIO EvidenceKind = "dump-holder-io"
	// EvSectionIOCPU — F: io_s, samples. I: I/O function → seconds.
	EvSectionIOCPU EvidenceKind = "section-io-cpu"
	// EvSectionIOSleep — F: io_s, calls. I: I/O function → seconds. The
	// I/O calls the probes saw sleep inside the critical sections.
	EvSectionIOSleep EvidenceKind = "section-io-sleep"
	// EvRuntimeLock — F: contentions, delay_s, mean. N: where.
	EvRuntimeLock EvidenceKind = "runtime-lock"
	// EvRuntimeLockUser — N: user.
	EvRuntimeLockUser EvidenceKind = "runtime-lock-user"
)

// Evidence kinds of Java locks (live/jvm.go, java/case.go).
const (
	// EvJVMParkWords — F: threads (whose own park words the lock was
	// put together from), by_wakes (1 when told by hand-offs, 0 by thread
	// dumps). N: flavor, lock.
	EvJVMParkWords EvidenceKind = "jvm-park-words"
	// EvJavaDumpWaiters — F: waiters (distinct), dumps, mean (waiting per
	// dump), max, points. N: lock, how ("waited to enter the monitor of",
	// "parked waiting for"), point.
	EvJavaDumpWaiters EvidenceKind = "java-dump-waiters"
	// EvJavaDumpHolder — F: held (dumps naming a holder), dumps, holders
	// (distinct), io (dumps with the holder in I/O), blocked (dumps with
	// the holder waiting for another lock). N: holder, at, state, call.
	EvJavaDumpHolder EvidenceKind = "java-dump-holder"
)

// Evidence kinds of spin verdicts.
const (
	// EvSpinCPU — F: spin_s, total_s, share, threads, cpus, dur_s. N:
	// function.
	EvSpinCPU EvidenceKind = "spin-cpu"
	// EvSpinLoop — F: insns, start, pause, xchg. N: shape.
	EvSpinLoop EvidenceKind = "spin-loop"
	// EvTightLoop — F: share, addrs, atomic_share.
	EvTightLoop EvidenceKind = "tight-loop"
	// EvSpinRunnable — F: runnable_share, involuntary, mean_runnable,
	// num_cpu.
	EvSpinRunnable EvidenceKind = "spin-runnable"
	// EvSpinRunq — F: runq_s. N: function.
	EvSpinRunq EvidenceKind = "spin-runq"
	// EvSpinPark — F: park_s, spin_s. N: function.
	EvSpinPark EvidenceKind = "spin-park"
	// EvYieldLoop — F: yields, rate, threads, runq_s, cpu_s, share (of the
	// process's busy time). N: function.
	EvYieldLoop EvidenceKind = "yield-loop"
	// EvGoSpinCPU — F: spin_s, share, function_share, cpus, dur_s. N:
	// function.
	EvGoSpinCPU EvidenceKind = "go-spin-cpu"
	// EvGoSpinYield — F: yield_share (0: no sample yields).
	EvGoSpinYield EvidenceKind = "go-spin-yield"
	// EvGoSpinDump — F: running, population, parked, callers. N: function,
	// source. I: state → count.
	EvGoSpinDump EvidenceKind = "go-spin-dump"
	// EvGoSpinRunnable — F: wait_s, running, dur_s, cpu_s.
	EvGoSpinRunnable EvidenceKind = "go-spin-runnable"
)

// Evidence kinds of locks the kernel holds and of polled locks
// (live/kobj.go).
const (
	// EvKernelWaits — F: sleeps, threads, wait_s, dur_s, mean (waiting
	// at any moment), woken (sleeps a thread of the target ended), rate
	// (those wakes a second). N: object (what is locked), frame (the
	// kernel function the waiters slept in), call (their system call).
	EvKernelWaits EvidenceKind = "kernel-waits"
	// EvKernelHolder — F: holds (logged holds measured from the holder's
	// own wait to its wake of the next waiter), hold_s, io_s (the
	// holders' logged I/O inside them), share (io_s / hold_s), holders.
	// N: holder (where the wakes came from), call (the heaviest I/O
	// call). I: system call → seconds.
	EvKernelHolder EvidenceKind = "kernel-holder"
	// EvPolledTries — F: failures (counted), logged (failures in the
	// log), rate (failures a second), threads, sleeps, sleep_s, share
	// (of the threads' time asleep between tries), dur_s. N: object,
	// call (the failing call and its command), err, sleep (the sleeping
	// call).
	EvPolledTries EvidenceKind = "polled-tries"
	// EvPolledHolder — F: share (of the logged failures during which
	// another thread that takes the object was in I/O), io_s, holders.
	// N: call (that I/O, the heaviest).
	EvPolledHolder EvidenceKind = "polled-holder"
)

// Evidence kinds of CPU saturation.
const (
	// EvRunQueue — F: runq_threads (waiting for a CPU on average), cpus
	// (CPUs the process may use), running (CPUs' worth used), runnable
	// (threads in state R on average), threads, dur_s.
	EvRunQueue EvidenceKind = "run-queue"
	// EvRunnableShare — F: share (of the busy threads' time spent
	// runnable without a CPU), lock_share (spent waiting for locks).
	EvRunnableShare EvidenceKind = "runnable-share"
	// EvRunQueuePoints — I: program point → seconds runnable there.
	EvRunQueuePoints EvidenceKind = "runqueue-points"
)

// EvidenceKinds lists every evidence kind, for renderers to check that
// they word each one.
var EvidenceKinds = []EvidenceKind{
	EvFutexWaits,
	EvWaitPoints,
	EvHandoffs,
	EvHandoffHolds,
	EvWaitQuantiles,
	EvContendedSpan,
	EvOwnerField,
	EvHolderPreempted,
	EvHolderIO,
	EvIOSite,
	EvWaitersDoIO,
	EvTurnsHandoff,
	EvTurnsDemand,
	EvTurnsTimeouts,
	EvWriterQueue,
	EvWriterGroups,
	EvWaiterCPU,
	EvShortHolds,
	EvHotStripe,
	EvLatchWaits,
	EvLatchReleaser,
	EvLatchHolderIO,
	EvArrayMerge,
	EvChain,
	EvChainDump,
	EvDumpWaiters,
	EvBlockWaits,
	EvMutexRelease,
	EvDumpUnseen,
	EvDumpReleasing,
	EvDumpSpread,
	EvDumpSameMutex,
	EvWaitSpread,
	EvCallPaths,
	EvGoHoldBound,
	EvSectionCPU,
	EvSpinBeforePark,
	EvDumpHolderIO,
	EvSectionIOCPU,
	EvSectionIOSleep,
	EvRuntimeLock,
	EvRuntimeLockUser,
	EvJVMParkWords,
	EvWriterStarved,
	EvJavaDumpWaiters,
	EvJavaDumpHolder,
	EvSpinCPU,
	EvSpinLoop,
	EvTightLoop,
	EvSpinRunnable,
	EvSpinRunq,
	EvSpinPark,
	EvYieldLoop,
	EvGoSpinCPU,
	EvGoSpinYield,
	EvGoSpinDump,
	EvGoSpinRunnable,
	EvKernelWaits,
	EvKernelHolder,
	EvPolledTries,
	EvPolledHolder,
	EvRunQueue,
	EvRunnableShare,
	EvRunQueuePoints,
}

// Fact builds an evidence item. kv alternates keys and values: strings
// become names, numbers figures (a time.Duration becomes seconds, a bool
// 0 or 1), and a []Item the items.
func Fact(source string, kind EvidenceKind, kv ...any) Evidence {
	e := Evidence{Source: source, Kind: kind}
	for i := 0; i+1 < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			panic(fmt.Sprintf("analyzer: evidence %s: key %v is not a string", kind, kv[i]))
		}
		switch v := kv[i+1].(type) {
		case string:
			if v == "" {
				continue
			}
			if e.Names == nil {
				e.Names = map[string]string{}
			}
			e.Names[k] = v
		case []Item:
			e.Items = v
		default:
			if e.Figures == nil {
				e.Figures = map[string]float64{}
			}
			e.Figures[k] = number(v)
		}
	}
	return e
}

// number converts a figure to float64.
func number(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		return x
	case time.Duration:
		return x.Seconds()
	case bool:
		if x {
			return 1
		}
		return 0
	}
	panic(fmt.Sprintf("analyzer: evidence figure of type %T", v))
}
