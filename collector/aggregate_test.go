package collector

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSnapshotMinus(t *testing.T) {
	k1 := waitKey{Addr: 0x10, TID: 1, StackID: 3}
	k2 := waitKey{Addr: 0x10, TID: 2, StackID: stackNone}
	base := newSnapshot()
	base.at = 1e9
	base.waits[k1] = aggVal{Count: 5, TotalNS: 500, MaxNS: 300}
	base.waits[k2] = aggVal{Count: 2, TotalNS: 20, MaxNS: 10}
	base.counters["ev_futex_wait"] = 7
	base.edges[edgeKey{Waker: 1, Wakee: 2}] = 4

	cur := newSnapshot()
	cur.at = 3e9
	cur.waits[k1] = aggVal{Count: 8, TotalNS: 1100, MaxNS: 450} // grew, new max
	cur.waits[k2] = aggVal{Count: 2, TotalNS: 20, MaxNS: 10}    // unchanged
	k3 := waitKey{Addr: 0x20, TID: 1, StackID: 4}               // new
	cur.waits[k3] = aggVal{Count: 1, TotalNS: 50, MaxNS: 50}
	cur.counters["ev_futex_wait"] = 10
	cur.counters["drop_stack_user"] = 1
	cur.edges[edgeKey{Waker: 1, Wakee: 2}] = 4

	d := cur.minus(base)
	if d.at != 2e9 {
		t.Errorf("interval length %d, want 2e9", d.at)
	}
	want := map[waitKey]aggVal{
		k1: {Count: 3, TotalNS: 600, MaxNS: 450},
		k3: {Count: 1, TotalNS: 50, MaxNS: 50},
	}
	if diff := cmp.Diff(want, d.waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	if len(d.edges) != 0 {
		t.Errorf("unchanged wake edge kept: %v", d.edges)
	}
	if d.counters["ev_futex_wait"] != 3 || d.counters["drop_stack_user"] != 1 {
		t.Errorf("counters %v", d.counters)
	}
	if cur.minus(nil) != cur {
		t.Error("minus(nil) should be the whole run")
	}
}

func TestIntervalMax(t *testing.T) {
	for _, tc := range []struct{ cur, base, bound, want uint64 }{
		{500, 300, 0, 500},   // the maximum rose inside the interval
		{300, 300, 100, 100}, // it did not: bounded by the interval's data
		{300, 300, 0, 300},   // no bound known: the cumulative maximum
		{300, 300, 900, 300}, // a loose bound does not raise it
	} {
		if got := intervalMax(tc.cur, tc.base, tc.bound); got != tc.want {
			t.Errorf("intervalMax(%d, %d, %d) = %d, want %d", tc.cur, tc.base, tc.bound, got, tc.want)
		}
	}
}

func TestSubLockHistogramBound(t *testing.T) {
	var a, b lockVal
	a.Waits, a.TotalNS, a.MaxNS = 10, 5000, 4000
	b.Waits, b.TotalNS, b.MaxNS = 6, 4200, 4000
	a.Hist[12] = 1 // the 4000 ns wait, before the interval
	b.Hist[12] = 1
	a.Hist[7] = 4 // four waits of 128..255 ns in the interval
	d, keep := subLock(a, b)
	if !keep || d.Waits != 4 || d.TotalNS != 800 {
		t.Fatalf("subLock = %+v, %v", d, keep)
	}
	if d.MaxNS != 255 {
		t.Errorf("interval max %d, want 255 (the top of the highest slot used)", d.MaxNS)
	}
	// A torn read (cur below base) gives zero, not a huge number.
	if sat(3, 5) != 0 {
		t.Error("sat(3, 5) != 0")
	}
}
