package core

// The Go spin detector: CPU samples concentrated in a busy-wait loop
// (atomic loads or compare-and-swaps, no park, no yield) with goroutines
// running or runnable there, or about to enter it, in the goroutine dump.

const (
	// spinMinCPUShare is the share of all CPU samples a busy-wait must
	// burn to be a finding. A spinning sample does no work at all, so the
	// threshold is one of waste, not of concentration: a tenth of the
	// process's CPU thrown away, the same tenth as minMeanWaiting.
	SpinMinCPUShare = 0.10

	// spinMinLoopShare is the share of a function's CPU that must fall on
	// the lines where it executes atomic operations for the function to be
	// a busy-wait: a spin loop is little more than its load or
	// compare-and-swap line, whereas a work loop that also bumps an atomic
	// counter spends most of its time on the other lines.
	SpinMinLoopShare = 0.5

	// minSpinners is how many goroutines must take part: with two or more,
	// at least one burns CPU waiting for another; one goroutine in a tight
	// atomic loop is merely a hot loop.
	MinSpinners = 2
)
