package live

import (
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/contend-dev/contend/recording"
)

func pgFrames(names ...string) []recording.Frame {
	out := make([]recording.Frame, len(names))
	for i, n := range names {
		out[i] = recording.Frame{Func: n, Module: "postgres"}
	}
	return out
}

func TestNameWords(t *testing.T) {
	for name, want := range map[string][]string{
		"XactLockTableWait":     {"xact", "lock", "table", "wait"},
		"LWLockAcquire":         {"lwlock", "acquire"},
		"row_lock_acquire":      {"row", "lock", "acquire"},
		"WaitEventSetWaitBlock": {"wait", "event", "set", "wait", "block"},
	} {
		if got := nameWords(name); !slices.Equal(got, want) {
			t.Errorf("nameWords(%q) = %q, want %q", name, got, want)
		}
	}
}

// A PostgreSQL backend waiting for a row's transaction lock sleeps in
// epoll_wait under LockAcquireExtended: its point is the acquisition
// path's outermost frame, XactLockTableWait. The same backend idle, waiting for its client, sleeps
// in the same call under no lock-named frame ("Block" is no lock).
func TestLatchPoint(t *testing.T) {
	lockWait := pgFrames("epoll_wait", "WaitEventSetWaitBlock", "WaitEventSetWait", "WaitLatch", "ProcSleep",
		"WaitOnLock", "LockAcquireExtended", "XactLockTableWait", "heap_update", "ExecUpdate", "PostgresMain")
	pi, call, ok := latchPoint(lockWait)
	if !ok || lockWait[pi].Func != "XactLockTableWait" || call != "epoll_wait" {
		t.Errorf("lock wait: point %d, call %q, ok %v", pi, call, ok)
	}
	idle := pgFrames("epoll_wait", "WaitEventSetWaitBlock", "WaitEventSetWait", "secure_read", "pq_recvbuf",
		"pq_getbyte", "SocketBackend", "ReadCommand", "PostgresMain", "BackendRun", "main")
	if _, _, ok := latchPoint(idle); ok {
		t.Error("an idle backend's wait for its client taken for a latch wait")
	}
	// A lock-named frame right under the thread's entry names no point.
	if _, _, ok := latchPoint(pgFrames("epoll_wait", "lock_loop", "main")); ok {
		t.Error("a wait under main's own lock-named loop has no caller to point at")
	}
	if _, _, ok := latchPoint(pgFrames("nanosleep", "row_lock_acquire", "update_row")); ok {
		t.Error("a timed sleep taken for a latch wait")
	}
}

// A release that wakes several waiters at once is one release: the cut is
// four mean holds, the span over the runs of wake-ups by one waker.
func TestLatchHoldCut(t *testing.T) {
	wake := func(tid int, at int64) recording.Event {
		return recording.Event{Kind: recording.EventWakeup, TID: tid, T: at}
	}
	// Releases by 1 (three waiters woken), 2, 1, 3: four in 8 ms.
	w := []recording.Event{wake(1, 0), wake(1, 1), wake(1, 2), wake(2, 2000), wake(1, 4000), wake(3, 6000)}
	if got, want := latchHoldCut(w, 8000), int64(latchMaxHoldRatio*8000/4); got != want {
		t.Errorf("cut %d, want %d", got, want)
	}
	if got := latchHoldCut(nil, 8000); got != math.MaxInt64 {
		t.Errorf("cut without releases %d, want no cut", got)
	}
}

// Whether every holder does I/O at one rate, from the log's sample of it
// (a fifth of the holds show some, as PostgreSQL's 128 backends on 2 CPUs
// do): when all do, the rule says so in at least 19 runs of 20 at every
// number of holders (2 to 64 per CPU on 2 CPUs) once each is seen in ten
// holds or so; when a quarter of them (or one) do the I/O the others are
// spared, it says they do not in 19 runs of 20 once each is seen in 40
// holds (160 with only 4 threads, where 2 dry threads of 4 take longer to
// stand out). Below that the sample cannot tell, and the rule leans to
// one rate.
func TestSameIORate(t *testing.T) {
	sample := func(rng *rand.Rand, threads, meanHolds int, doers int, q float64) (map[int][]hold, map[int]int) {
		holds, wet := map[int][]hold{}, map[int]int{}
		for tid := 1; tid <= threads; tid++ {
			n := 1 + rng.Intn(2*meanHolds)
			for i := 0; i < n; i++ {
				holds[tid] = append(holds[tid], hold{int64(i), int64(i + 1)})
				if tid <= doers && rng.Float64() < q {
					wet[tid]++
				}
			}
		}
		return holds, wet
	}
	allDo := sameIORate
	const runs = 200
	for _, threads := range []int{4, 16, 32, 128} {
		for _, meanHolds := range []int{10, 40, 160} {
			rng := rand.New(rand.NewSource(int64(threads*1000 + meanHolds)))
			fails := 0
			for r := 0; r < runs; r++ {
				if !allDo(sample(rng, threads, meanHolds, threads, 0.2)) {
					fails++
				}
			}
			if fails > runs/20 {
				t.Errorf("%d threads, %d holds each: every thread does I/O, yet %d of %d runs say some do not", threads, meanHolds, fails, runs)
			}
			if meanHolds < 40 || threads == 4 && meanHolds < 160 {
				continue
			}
			for _, doers := range []int{1, max(1, threads/4)} {
				wrong := 0
				for r := 0; r < runs; r++ {
					if allDo(sample(rng, threads, meanHolds, doers, 0.2)) {
						wrong++
					}
				}
				if wrong > runs/20 {
					t.Errorf("%d threads, %d holds each: %d threads do the I/O, yet %d of %d runs say all do", threads, meanHolds, doers, wrong, runs)
				}
			}
		}
	}
}

// Rates a few points apart over a thousand holds each (PostgreSQL's 4
// backends on one row: 77-86 % of each one's holds flush the WAL) are one
// rate for the verdict, though the binomial test tells them apart; and so
// are many threads' rates spread a little wider than the binomial (128
// backends, ten holds each). A thread that does the I/O in a tenth as
// many of its holds as the others is spared it, at any number of holds.
func TestSameIORateBeyondTheBinomial(t *testing.T) {
	build := func(counts [][2]int) (map[int][]hold, map[int]int) {
		holds, wet := map[int][]hold{}, map[int]int{}
		for i, c := range counts {
			for j := 0; j < c[0]; j++ {
				holds[i+1] = append(holds[i+1], hold{int64(j), int64(j + 1)})
			}
			wet[i+1] = c[1]
		}
		return holds, wet
	}
	pg4 := [][2]int{{1317, 1134}, {1119, 856}, {1147, 903}, {1332, 1102}}
	if !sameIORate(build(pg4)) {
		t.Error("4 threads flushing in 77-86 % of ~1,200 holds each: want one rate")
	}
	spared := append(append([][2]int(nil), pg4...), [2]int{1200, 90})
	if sameIORate(build(spared)) {
		t.Error("a fifth thread with I/O in 8 % of its holds beside 77-86 %: want it spared")
	}
	// 128 threads, ten holds each, I/O in 2 to 7 of them: 1.3 times the
	// binomial's spread.
	var many [][2]int
	for i := 0; i < 128; i++ {
		many = append(many, [2]int{10, 2 + i%6})
	}
	if !sameIORate(build(many)) {
		t.Error("128 threads with I/O in 2-7 of 10 holds each: want one rate")
	}
	var half [][2]int
	for i := 0; i < 128; i++ {
		half = append(half, [2]int{10, map[bool]int{true: 8, false: 0}[i%2 == 0]})
	}
	if sameIORate(build(half)) {
		t.Error("64 threads with I/O in 8 of 10 holds, 64 in none: want the latter spared")
	}
}
