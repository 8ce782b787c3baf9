package collector

import "math"

// Rate limits of the kernel's token buckets (ct_take in
// bpf/helpers.bpf.h), with the reasoning for each.
const (
	// eventRate bounds the event log: 50000 events/s at 40 bytes is
	// 2 MB/s through the ring buffer and 60 MB in memory for a 30 s
	// recording (maxEvents). A badly contended four-thread program makes
	// about 30000 waits, wakes and wakeups a second; the log must keep all
	// of them for the analyzer to pair waits with holders.
	eventRate = 50000
	// eventBurst lets a short storm through whole (per CPU).
	eventBurst = 512
	// windowRate bounds stack windows: each is up to 8 KiB copied in the
	// kernel (about 2 µs) and unwound in user space (tens of µs). Windows
	// are only needed until each stack id is named (namedAfterWindows),
	// so a few hundred per second name the stacks of a recording within
	// seconds.
	windowRate = 500
	// windowBurst per CPU.
	windowBurst = 16
)

// bucketParams converts a rate (events per second over the whole machine)
// and a per-CPU burst into the parameters of the kernel's per-CPU GCRA
// buckets: interval is the spacing between two events on one CPU
// (ncpu/rate seconds, so all CPUs together pass rate events per second)
// and tolerance how far the bucket's theoretical arrival time may run
// ahead of now (burst-1 intervals, so burst events pass back to back).
func bucketParams(rate float64, burst, ncpu int) (intervalNS, toleranceNS uint64) {
	if ncpu < 1 {
		ncpu = 1
	}
	if burst < 1 {
		burst = 1
	}
	if rate <= 0 {
		// No rate: an interval no clock reaches, one event per burst.
		return math.MaxUint64 / 2, 0
	}
	iv := float64(ncpu) * 1e9 / rate
	if iv < 1 {
		iv = 1
	}
	intervalNS = uint64(iv)
	return intervalNS, intervalNS * uint64(burst-1)
}
