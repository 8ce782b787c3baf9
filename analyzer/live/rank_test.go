package live

import (
	"testing"
	"time"
)

// Saturation is weighed by the run-queue time its own threads beyond the
// CPUs explain, so CPU hogs beside the process, which lengthen its run
// queue but add none of its own runnable threads, do not move it above a
// lock; and the weight scales with threads per CPU (2 to 64).
func TestSatRankSecondsOwnOversubscription(t *testing.T) {
	const cpus = 2
	dur := 10 * time.Second
	for _, perCPU := range []int{2, 8, 64} {
		threads := float64(perCPU * cpus)
		alone := time.Duration((threads - cpus) * float64(dur))
		// Two hogs take two of threads+2 shares of the CPUs: the
		// process's threads queue longer, its runnable count is the same.
		share := cpus * threads / (threads + 2)
		withHogs := time.Duration((threads - share) * float64(dur))
		if withHogs <= alone {
			t.Fatalf("%d per CPU: the hogs' run queue %v is not longer than alone %v", perCPU, withHogs, alone)
		}
		// CPU-bound threads keep every CPU busy alone, and their share
		// of them beside the hogs.
		a := satRankSeconds(int64(alone), threads, cpus, cpus, dur)
		b := satRankSeconds(int64(withHogs), threads, share, cpus, dur)
		if want := (threads - cpus) * dur.Seconds(); a != want {
			t.Errorf("%d threads per CPU: weight %.2f s, want %.2f s", perCPU, a, want)
		}
		// The hogs never add weight; they take away at most the share of
		// the CPUs they took.
		if b > a || b < a*share/cpus {
			t.Errorf("%d threads per CPU: weight %.2f s alone, %.2f s with two hogs beside; want between %.2f and %.2f s", perCPU, a, b, a*share/cpus, a)
		}
	}
	// A process with no more runnable threads than CPUs queues only
	// behind others: nothing of it is its own saturation.
	if w := satRankSeconds(int64(5*time.Second), 2, 2, cpus, dur); w != 0 {
		t.Errorf("2 runnable threads on 2 CPUs weigh %.2f s, want 0", w)
	}
	// Threads that work briefly and sleep, 0.36 CPUs' worth on 2 CPUs,
	// runnable 4.3 on average because others hold the CPUs: at most the
	// share of the CPUs the process kept busy is its own.
	runq := int64(11 * time.Second)
	if w, most := satRankSeconds(runq, 4.3, 0.36, cpus, dur), 2.3*dur.Seconds()*0.36/cpus; w > most+1e-9 {
		t.Errorf("a process running 0.36 of 2 CPUs weighs %.2f s of saturation, want at most %.2f s", w, most)
	}
}
