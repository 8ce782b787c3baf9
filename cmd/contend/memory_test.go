package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestSettleMemoryFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const floor = 16 << 20
	settle := settleMemory(floor)

	// Little live data: the floor holds.
	settle()
	if got := debug.SetMemoryLimit(-1); got != floor {
		t.Errorf("limit %d MiB with a small live heap, want the floor, %d MiB", got>>20, floor>>20)
	}

	// A live heap past half the floor: the limit makes room for it.
	keep := make([][]byte, 48)
	for i := range keep {
		keep[i] = make([]byte, 1<<20)
		keep[i][0] = 1
	}
	settle()
	got := debug.SetMemoryLimit(-1)
	if want := int64(settleHeadroom * 48 << 20); got < want {
		t.Errorf("limit %d MiB with 48 MiB live, want at least %d MiB", got>>20, want>>20)
	}
	if got > 3*48<<20 {
		t.Errorf("limit %d MiB with 48 MiB live, want about %.1f times the live heap", got>>20, settleHeadroom)
	}
	runtime.KeepAlive(keep)
}

func TestSettleMemoryLeavesGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	debug.SetMemoryLimit(512 << 20)
	settleMemory(16 << 20)()
	if got := debug.SetMemoryLimit(-1); got != 512<<20 {
		t.Errorf("limit %d MiB after settling under GOMEMLIMIT, want it untouched (512 MiB)", got>>20)
	}
}

func TestRaiseLimitFollowsAGrowingLiveHeap(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	debug.SetMemoryLimit(16 << 20)
	keep := make([][]byte, 48)
	for i := range keep {
		keep[i] = make([]byte, 1<<20)
		keep[i][0] = 1
	}
	runtime.GC()
	raiseLimit(live)
	if got, want := debug.SetMemoryLimit(-1), int64(settleHeadroom*48)<<20; got < want {
		t.Errorf("limit %d MiB with 48 MiB live, want at least %d MiB", got>>20, want>>20)
	}
	// A limit already above the live heap's needs stays.
	debug.SetMemoryLimit(1 << 30)
	raiseLimit(live)
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("limit %d MiB after a check, want it left at 1024 MiB", got>>20)
	}
	runtime.KeepAlive(keep)
}
