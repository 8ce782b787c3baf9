package collector

import "testing"

func TestBucketParams(t *testing.T) {
	for _, tc := range []struct {
		rate          float64
		burst, ncpu   int
		interval, tol uint64
	}{
		// 50000 events/s over 2 CPUs: one event per 40 µs on each CPU.
		{50000, 512, 2, 40000, 40000 * 511},
		{500, 16, 4, 8000000, 8000000 * 15},
		// A burst of one: no tolerance at all.
		{1000, 1, 1, 1000000, 0},
		// Nonsense CPU and burst counts are clamped to one.
		{1000, 0, 0, 1000000, 0},
	} {
		iv, tol := bucketParams(tc.rate, tc.burst, tc.ncpu)
		if iv != tc.interval || tol != tc.tol {
			t.Errorf("bucketParams(%v, %d, %d) = %d, %d; want %d, %d", tc.rate, tc.burst, tc.ncpu, iv, tol, tc.interval, tc.tol)
		}
	}
	if iv, tol := bucketParams(0, 8, 2); tol != 0 || iv < 1<<60 {
		t.Errorf("rate 0: interval %d tolerance %d; want an interval no clock reaches", iv, tol)
	}
}

func TestGCRABurstThenRate(t *testing.T) {
	const interval = 1000 // ns
	const burst = 5
	iv, tol := bucketParams(1e9/interval, burst, 1)
	g := gcra{intervalNS: iv, toleranceNS: tol}
	// At one instant, exactly burst events pass.
	now := uint64(1 << 40)
	passed := 0
	for i := 0; i < 3*burst; i++ {
		if g.take(now) {
			passed++
		}
	}
	if passed != burst {
		t.Errorf("%d events passed at one instant, want the burst of %d", passed, burst)
	}
	// Offered far faster than the rate for 1 ms, the bucket passes the
	// rate: one event per interval (the burst is spent).
	passed = 0
	for dt := uint64(0); dt < 1000000; dt += 10 {
		if g.take(now + dt) {
			passed++
		}
	}
	if want := 1000000 / interval; passed < want-burst || passed > want+1 {
		t.Errorf("%d events passed in 1 ms at %d ns per token, want about %d", passed, interval, want)
	}
	// After a quiet spell the burst is available again, not more.
	later := now + 1000000 + 100*interval
	passed = 0
	for i := 0; i < 3*burst; i++ {
		if g.take(later) {
			passed++
		}
	}
	if passed != burst {
		t.Errorf("%d events passed after a pause, want %d", passed, burst)
	}
}

// gcra is the Go form of the kernel bucket (ct_take), used to reason about
// and test the parameters: tat is the theoretical arrival time.
type gcra struct {
	intervalNS, toleranceNS uint64
	tat                     uint64
}

// take reports whether an event at now passes, and takes its token.
func (g *gcra) take(now uint64) bool {
	t := g.tat
	if t < now {
		t = now
	}
	if t-now > g.toleranceNS {
		return false
	}
	g.tat = t + g.intervalNS
	return true
}
