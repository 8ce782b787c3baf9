package collector

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAggregatesAdd(t *testing.T) {
	k1 := waitKey{Addr: 0x10, PID: 9, TID: 1, Stack: 33}
	k2 := waitKey{Addr: 0x10, PID: 9, TID: 2, Stack: stackNone}
	a := newAggregates()
	a.waits[k1] = aggVal{Count: 5, TotalNS: 500, MaxNS: 300}
	a.locks[lockKey{Addr: 0x10, PID: 9}] = lockVal{Waits: 5, TotalNS: 500, MaxNS: 300, Hist: [histSlots]uint64{8: 5}}
	b := newAggregates()
	b.waits[k1] = aggVal{Count: 3, TotalNS: 600, MaxNS: 450}
	b.waits[k2] = aggVal{Count: 2, TotalNS: 20, MaxNS: 10}
	b.locks[lockKey{Addr: 0x10, PID: 9}] = lockVal{Waits: 5, TotalNS: 620, MaxNS: 450, Hist: [histSlots]uint64{3: 2, 8: 3}}
	b.edges[edgeKey{Waker: 1, Wakee: 2}] = 4
	a.add(b)
	want := map[waitKey]aggVal{
		k1: {Count: 8, TotalNS: 1100, MaxNS: 450},
		k2: {Count: 2, TotalNS: 20, MaxNS: 10},
	}
	if diff := cmp.Diff(want, a.waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	l := a.locks[lockKey{Addr: 0x10, PID: 9}]
	if l.Waits != 10 || l.TotalNS != 1120 || l.MaxNS != 450 || l.Hist[8] != 8 || l.Hist[3] != 2 {
		t.Errorf("lock %+v", l)
	}
	if a.edges[edgeKey{Waker: 1, Wakee: 2}] != 4 {
		t.Errorf("edges %v", a.edges)
	}
	if n := a.entries(); n != 4 {
		t.Errorf("%d entries, want 4", n)
	}
}

// TestFoldExitedThreads checks that the entries of exited threads move
// onto one entry per remaining key, that the folded thread counts are
// right, and that live threads keep theirs.
func TestFoldExitedThreads(t *testing.T) {
	a := newAggregates()
	lock := lockKey{Addr: 0x10, PID: 9}
	for tid := uint32(100); tid < 110; tid++ {
		// Ten short-lived threads wait on one lock from one stack, each
		// held by the previous one.
		a.waits[waitKey{Addr: 0x10, PID: 9, TID: tid, Stack: 77, Owner: tid - 1, Op: opWait}] = aggVal{Count: 2, TotalNS: 200, MaxNS: 150}
		a.wakes[wakeKey{Addr: 0x10, PID: 9, TID: tid, Stack: 78}] = wakeVal{Wakes: 1, Woken: 1}
		a.offcpu[offcpuKey{PID: 9, TID: tid, Stack: 77, State: 1}] = offcpuVal{Count: 1, TotalNS: 1000}
		a.edges[edgeKey{WakerPID: 9, Waker: tid, WakeePID: 9, Wakee: tid + 1, Stack: 78}] = 1
	}
	live := waitKey{Addr: 0x10, PID: 9, TID: 5, Stack: 77, Owner: 109, Op: opWait}
	a.waits[live] = aggVal{Count: 1, TotalNS: 50, MaxNS: 50}
	gone := map[threadKey]bool{}
	for tid := uint32(100); tid < 110; tid++ {
		gone[threadKey{9, tid}] = true
	}
	a.fold(gone)

	folded := waitKey{Addr: 0x10, PID: 9, TID: foldedTID, Stack: 77, Owner: foldedTID, Op: opWait}
	// Thread 100's owner (99) is not gone: it keeps its own entry.
	first := waitKey{Addr: 0x10, PID: 9, TID: foldedTID, Stack: 77, Owner: 99, Op: opWait}
	want := map[waitKey]aggVal{
		folded: {Count: 18, TotalNS: 1800, MaxNS: 150},
		first:  {Count: 2, TotalNS: 200, MaxNS: 150},
		// The live waiter keeps its tid; its owner exited.
		{Addr: 0x10, PID: 9, TID: 5, Stack: 77, Owner: foldedTID, Op: opWait}: {Count: 1, TotalNS: 50, MaxNS: 50},
	}
	if diff := cmp.Diff(want, a.waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	if a.threads.waits[folded] != 9 || a.threads.waits[first] != 1 {
		t.Errorf("folded thread counts %v", a.threads.waits)
	}
	if n := a.threads.waits[waitKey{Addr: 0x10, PID: 9, TID: 5, Stack: 77, Owner: foldedTID, Op: opWait}]; n != 0 {
		t.Errorf("a live waiter counted as %d folded threads", n)
	}
	if a.threads.waiters[lock] != 10 || a.threads.wakers[lock] != 10 {
		t.Errorf("folded waiters %d, wakers %d, want 10 each", a.threads.waiters[lock], a.threads.wakers[lock])
	}
	if len(a.wakes) != 1 || a.wakes[wakeKey{Addr: 0x10, PID: 9, TID: foldedTID, Stack: 78}] != (wakeVal{Wakes: 10, Woken: 10}) {
		t.Errorf("wakes %v", a.wakes)
	}
	if len(a.offcpu) != 1 {
		t.Errorf("offcpu %v", a.offcpu)
	}
	// The last edge's wakee (110) lives on.
	if a.edges[edgeKey{WakerPID: 9, Waker: foldedTID, WakeePID: 9, Wakee: foldedTID, Stack: 78}] != 9 ||
		a.edges[edgeKey{WakerPID: 9, Waker: foldedTID, WakeePID: 9, Wakee: 110, Stack: 78}] != 1 {
		t.Errorf("edges %v", a.edges)
	}

	// Folding again with the same threads changes nothing, and another
	// drain's entries of a folded thread fold onto the same entry.
	before := a.entries()
	a.fold(gone)
	if a.entries() != before {
		t.Errorf("second fold: %d entries, want %d", a.entries(), before)
	}
	late := newAggregates()
	late.waits[waitKey{Addr: 0x10, PID: 9, TID: 104, Stack: 77, Owner: 103, Op: opWait}] = aggVal{Count: 1, TotalNS: 10, MaxNS: 10}
	lk := lockKey{Addr: 0x10, PID: 9}
	waiters := a.threads.waiters[lk]
	late.foldAgain(gone)
	a.add(late)
	if got := a.waits[folded]; got.Count != 19 {
		t.Errorf("late entry not folded: %+v", got)
	}
	// Thread 104 was counted among the lock's waiters at its first fold.
	if got := a.threads.waiters[lk]; got != waiters || waiters == 0 {
		t.Errorf("lock's exited waiters %d after a late fold, want the %d of the first (not 0)", got, waiters)
	}
}
