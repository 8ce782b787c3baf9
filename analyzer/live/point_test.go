package live

import (
	"testing"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// TestInnermost: the function nearest the leaf on the stacks wins even
// when its caller weighs less (stacks cut short at the root end lose the
// caller), and the choice does not depend on the weights alone.
func TestInnermost(t *testing.T) {
	// Stacks leaf first. The first two reach the caller; the third is cut
	// short and holds only the callee, so callee weighs more than caller.
	stacks := []struct {
		depth map[string]int
		v     int64
	}{
		{map[string]int{"leafA": 0, "callee": 2, "caller": 3}, 40},
		{map[string]int{"leafB": 0, "callee": 1, "caller": 2}, 40},
		{map[string]int{"leafC": 0, "callee": 4}, 5},
	}
	var samples []*liveSample
	var depths []map[string]int
	for _, s := range stacks {
		samples = append(samples, &liveSample{values: []int64{0, s.v}})
		depths = append(depths, s.depth)
	}
	if got := innermost([]string{"caller", "callee"}, samples, depths); got != "callee" {
		t.Errorf("innermost = %q, want callee", got)
	}
	// The other way round (a callee heavier than its caller because the
	// caller is missed) must not matter either: order the input both ways.
	if got := innermost([]string{"callee", "caller"}, samples, depths); got != "callee" {
		t.Errorf("innermost (reordered) = %q, want callee", got)
	}
	if got := innermost(nil, samples, depths); got != "" {
		t.Errorf("innermost of nothing = %q, want none", got)
	}
}

// TestPassOn: threads woken to take a mutex hand it on to the next waiter
// when others queue; a group commit's followers are woken as done and
// hand nothing on. Both logs have eight threads on per-thread words, so
// only who wakes whom tells them apart.
func TestPassOn(t *testing.T) {
	const us = int64(1000)
	var mutex, group []recording.Event
	// Mutex: each thread waits, is woken, holds 10 µs, wakes the next
	// and waits again 2 µs later; thread i's turn comes at i×10 µs of
	// each 80 µs round.
	for round := int64(0); round < 10; round++ {
		for i := int64(0); i < 8; i++ {
			tid := int(100 + i)
			woken := (round*8 + i) * 10 * us
			next := 100 + int((i+1)%8)
			mutex = append(mutex,
				recording.Event{Kind: recording.EventWait, TID: tid, Addr: uint64(tid), T: woken - 68*us, Dur: 68 * us, Stack: -1},
				recording.Event{Kind: recording.EventWake, TID: tid, Addr: uint64(next), T: woken + 10*us, Stack: -1})
		}
	}
	// Group commit: a leader (thread 100) wakes the seven followers
	// back to back each round; they wait again at once.
	for round := int64(0); round < 10; round++ {
		done := round * 100 * us
		for i := int64(1); i < 8; i++ {
			tid := int(100 + i)
			group = append(group,
				recording.Event{Kind: recording.EventWait, TID: tid, Addr: uint64(tid), T: done - 90*us + i, Dur: 90*us - i + i*us, Stack: -1},
				recording.Event{Kind: recording.EventWake, TID: 100, Addr: uint64(tid), T: done + i*us, Stack: -1})
		}
	}
	for _, c := range []struct {
		name    string
		evs     []recording.Event
		combine bool
	}{{"mutex", mutex, false}, {"group commit", group, true}} {
		g := &LockGroup{}
		own := map[uint64]bool{}
		for tid := uint64(100); tid < 108; tid++ {
			g.words = append(g.words, &futexWord{addr: tid})
			own[tid] = true
		}
		ld := &Data{ev: indexEvents(c.evs)}
		passed, of := ld.passOn(g, own)
		lc := &core.LockCase{PassOn: passed, PassOnOf: of}
		if of < core.MinLoggedWaits || lc.Combined() != c.combine {
			t.Errorf("%s: %d of %d woken waiters handed the lock on; combined = %v, want %v", c.name, passed, of, lc.Combined(), c.combine)
		}
	}
}

// TestMutexDoesNotCombine: threads woken from a mutex's wait that lose it
// to a barging thread and wait again hand nothing on, as a group
// commit's followers do; on a mutex that is barging, never combining.
// The shares are the stripe fixture's (64 threads on one glibc mutex,
// 2 CPUs): 0.21–0.43 of the woken passed the mutex on.
func TestMutexDoesNotCombine(t *testing.T) {
	for _, c := range []struct {
		mutex   bool
		passed  int
		combine bool
	}{{true, 4378, false}, {true, 8000, false}, {false, 4378, true}, {false, 8000, false}} {
		lc := &core.LockCase{Mutex: c.mutex, PassOn: c.passed, PassOnOf: 20184}
		if lc.Combined() != c.combine {
			t.Errorf("mutex %v, %d of 20184 passed on: combined = %v, want %v", c.mutex, c.passed, lc.Combined(), c.combine)
		}
	}
}
