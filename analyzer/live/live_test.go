package live

import (
	"debug/elf"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// Unit tests of the live detectors over hand-built data; live_replay_test.go
// replays real recordings.

// nativeStack builds leaf-first native frames of module m from names.
func nativeStack(m string, names ...string) []recording.Frame {
	out := make([]recording.Frame, len(names))
	for i, n := range names {
		out[i] = recording.Frame{Func: n, Module: m}
	}
	return out
}

var (
	condWaitStack  = nativeStack("app", "futex_wait", "__pthread_cond_wait_common", "pthread_cond_wait", "pool_take", "worker")
	condWakeStack  = nativeStack("app", "futex_wake", "pthread_cond_signal", "pool_submit", "main")
	mutexWaitStack = nativeStack("app", "futex_wait", "__lll_lock_wait", "pthread_mutex_lock", "update", "worker")
	mutexWakeStack = nativeStack("app", "__lll_lock_wake", "__pthread_mutex_unlock_usercnt", "update", "worker")
	goIdleStack    = []recording.Frame{{Func: "runtime.futex"}, {Func: "runtime.futexsleep"}, {Func: "runtime.notesleep"}, {Func: "runtime.stopm"}, {Func: "runtime.findRunnable"}, {Func: "runtime.schedule"}}
)

// liveFixture is a hand-built live recording for the unit tests.
type liveFixture struct {
	ld *Data
}

func newLiveFixture(d time.Duration) *liveFixture {
	rec := &recording.Recording{Meta: recording.Meta{Source: recording.SourceLive, Duration: d, NumCPU: 2}}
	return &liveFixture{ld: &Data{rec: rec, dur: d, numCPU: 2, locks: map[uint64]*recording.LockStat{}, threads: map[int]*liveThread{}, ev: indexEvents(nil)}}
}

// word adds a futex word's kernel statistics.
func (f *liveFixture) word(addr uint64, name string, waitNS uint64, waiters, wakers []int, woken uint64) {
	f.ld.rec.Locks = append(f.ld.rec.Locks, recording.LockStat{Addr: addr, Name: name, Waits: 100, Blocked: 100, WaitNS: waitNS, Waiters: waiters, Wakers: wakers, Woken: woken, Wakes: woken})
	for _, t := range append(append([]int(nil), waiters...), wakers...) {
		f.ld.thread(t)
	}
}

// wait adds a futex-wait sample of tid on addr.
func (f *liveFixture) wait(addr uint64, tid int, ns int64, frames []recording.Frame) {
	f.ld.waits = append(f.ld.waits, &liveSample{tid: tid, addr: addr, values: []int64{10, ns}, frames: frames})
}

// wake adds a futex-wake sample of tid on addr that woke n waiters.
func (f *liveFixture) wake(addr uint64, tid int, n int64, frames []recording.Frame) {
	f.ld.wakes = append(f.ld.wakes, &liveSample{tid: tid, addr: addr, values: []int64{n, n}, frames: frames})
}

// busy gives threads CPU time.
func (f *liveFixture) busy(seconds float64, tids ...int) {
	for _, t := range tids {
		f.ld.thread(t).user = seconds
	}
}

func groupOf(t *testing.T, groups []*LockGroup, addr uint64) *LockGroup {
	t.Helper()
	for _, g := range groups {
		for _, w := range g.words {
			if w.addr == addr {
				return g
			}
		}
	}
	t.Fatalf("no lock group holds 0x%x", addr)
	return nil
}

func TestFoldCondvarWithItsMutex(t *testing.T) {
	f := newLiveFixture(3 * time.Second)
	workers := []int{11, 12, 13, 14}
	// A pool: four workers wait on the condition variable's two sequence
	// words, the dispatcher (10) signals them; the mutex beside it is
	// released by the workers.
	f.word(0x1028, "pool_cv+0x28 (app)", 9e9, workers, []int{10}, 300)
	f.word(0x102c, "pool_cv+0x2c (app)", 8e9, workers, []int{10}, 300)
	f.word(0x1060, "pool_mu (app)", 0, nil, workers, 0)
	for _, w := range workers {
		f.wait(0x1028, w, 2e9, condWaitStack)
		f.wait(0x102c, w, 2e9, condWaitStack)
		f.wake(0x1060, w, 0, mutexWakeStack)
	}
	f.wake(0x1028, 10, 300, condWakeStack)
	f.wake(0x102c, 10, 300, condWakeStack)
	groups := f.ld.lockGroups()
	if len(groups) != 1 {
		t.Fatalf("%d locks, want the condition variable and its mutex folded into one", len(groups))
	}
	g := groups[0]
	if got := g.name(); got != "pool_cv + pool_mu (app)" {
		t.Errorf("name %q", got)
	}
	// The address is the condition variable's base, where its key
	// places the lock, not its first waited word.
	if id := g.id(f.ld); len(id.Words) != 3 || id.Words[0] != "0x1028" || id.Address != "0x1000" || id.Key != "app:pool_cv" {
		t.Errorf("lock id %+v, want three words from 0x1028, at pool_cv (0x1000)", id)
	}
	if !g.idle || g.turns || !strings.Contains(g.idleReason, "producer") {
		t.Errorf("idle %v turns %v (%q): want an idle pool", g.idle, g.turns, g.idleReason)
	}
	if g.waitNS != 17e9 || len(g.waiters) != 4 {
		t.Errorf("wait %d ns by %d waiters", g.waitNS, len(g.waiters))
	}
}

func TestTurnTakingCondvarIsContention(t *testing.T) {
	f := newLiveFixture(4 * time.Second)
	threads := []int{21, 22, 23, 24}
	// An interpreter lock: the threads that wait are the ones that wake,
	// and they run between waits.
	f.word(0xa5b8f0, "_PyRuntime+0x1b0 (python3.11)", 5e9, threads, threads, 500)
	f.word(0xa5b8f4, "_PyRuntime+0x1b4 (python3.11)", 5e9, threads, threads, 500)
	f.word(0xa5b8f8, "_PyRuntime+0x1b8 (python3.11)", 1e8, threads, threads, 400)
	f.word(0xa5b948, "_PyRuntime+0x208 (python3.11)", 1e8, threads, threads, 60)
	for _, w := range threads {
		f.wait(0xa5b8f0, w, 1e9, condWaitStack)
		f.wait(0xa5b8f8, w, 1e7, mutexWaitStack)
		f.wait(0xa5b948, w, 1e7, condWaitStack)
		f.wake(0xa5b8f0, w, 100, condWakeStack)
		f.wake(0xa5b948, w, 10, condWakeStack)
		f.wake(0xa5b8f8, w, 100, mutexWakeStack)
	}
	f.busy(1.0, threads...)
	groups := f.ld.lockGroups()
	if len(groups) != 1 {
		t.Fatalf("%d locks, want one interpreter lock", len(groups))
	}
	g := groups[0]
	if g.idle || !g.turns {
		t.Fatalf("idle %v turns %v: want threads taking turns", g.idle, g.turns)
	}
	if g.interp != core.InterpPython {
		t.Error("not recognised as the interpreter's global lock")
	}
	fd := core.JudgeLock(f.ld.lockCase(g, groups), f.ld.dur)
	if fd.Kind != core.KindContention || !strings.Contains(fd.Headline, "take turns") || !strings.Contains(fd.Suggestion.Action, "processes") {
		t.Errorf("finding %s %q / %q", fd.Kind, fd.Headline, fd.Suggestion.Action)
	}

	// The same lock with threads that barely run is an idle wait.
	f.busy(0.001, threads...)
	if g := f.ld.lockGroups()[0]; !g.idle || g.turns {
		t.Errorf("idle %v turns %v: idle threads must not be taking turns", g.idle, g.turns)
	}
}

func TestStripesAreNotFolded(t *testing.T) {
	f := newLiveFixture(3 * time.Second)
	for i, tids := range [][]int{{31, 32}, {33, 34}, {35, 36}} {
		addr := uint64(0x2000 + 0x28*i)
		f.word(addr, "stripes+0x"+hex.EncodeToString([]byte{byte(0x28 * i)})+" (app)", 1e9, tids, tids, 50)
		for _, t := range tids {
			f.wait(addr, t, 5e8, mutexWaitStack)
			f.wake(addr, t, 25, mutexWakeStack)
		}
	}
	groups := f.ld.lockGroups()
	if len(groups) != 3 {
		t.Fatalf("%d locks, want three stripes kept apart", len(groups))
	}
	for _, g := range groups {
		if g.idle || g.role != roleMutex {
			t.Errorf("stripe %s: idle %v role %d", g.name(), g.idle, g.role)
		}
	}
}

func TestGoIdleThreadsAreNotLocks(t *testing.T) {
	f := newLiveFixture(3 * time.Second)
	f.word(0x4000, "runtime.sched+0x10 (app)", 8e9, []int{41, 42, 43}, []int{44}, 30)
	for _, t := range []int{41, 42, 43} {
		f.wait(0x4000, t, 2e9, goIdleStack)
	}
	g := groupOf(t, f.ld.lockGroups(), 0x4000)
	if !g.idle || !strings.Contains(g.idleReason, "Go ") {
		t.Errorf("idle %v (%q): want a Go idle thread", g.idle, g.idleReason)
	}
	a := &core.Output{Rec: f.ld.rec, Res: &core.Result{}}
	liveLockVerdicts(a, f.ld, f.ld.lockGroups())
	if len(a.Res.Findings) != 0 {
		t.Errorf("findings %q for idle Go threads", kinds(a.Res))
	}
}

func TestRoleOf(t *testing.T) {
	for _, c := range []struct {
		frames []recording.Frame
		want   wordRole
	}{
		{mutexWaitStack, roleMutex},
		{condWaitStack, roleCond},
		// re-taking the mutex inside pthread_cond_wait waits on the mutex
		{nativeStack("libc.so.6", "futex_wait", "__lll_lock_wait", "__pthread_mutex_cond_lock", "__pthread_cond_wait_common", "pthread_cond_wait", "f"), roleMutex},
		{nativeStack("libc.so.6", "futex_wait", "__pthread_clockjoin_ex", "main"), roleIdle},
		{goIdleStack, roleIdle},
		{nativeStack("app", "syscall", "my_futex_wait", "queue_pop"), roleUnknown},
	} {
		if got, _ := roleOf(c.frames); got != c.want {
			t.Errorf("roleOf(%s) = %d, want %d", c.frames[len(c.frames)-1].Func, got, c.want)
		}
	}
}

func TestIOOfTheHolderExplainsTheWait(t *testing.T) {
	f := newLiveFixture(time.Second)
	const lock = 0x5000
	f.word(lock, "manager_mu (app)", 2e6, []int{51}, []int{52}, 2)
	f.wait(lock, 51, 2e6, mutexWaitStack)
	ms := int64(time.Millisecond)
	f.ld.rec.Stacks = []recording.Stack{{Frames: nativeStack("app", "fsync", "journal_write", "claim_update")}}
	f.ld.ev = indexEvents([]recording.Event{
		// 51 waits 10 ms on the lock owned by 52 …
		{Kind: recording.EventWait, T: 0, Dur: 10 * ms, TID: 51, Peer: 52, Addr: lock, Stack: -1},
		// … which fsyncs for 6 ms under it, releases it at 8 ms …
		{Kind: recording.EventIO, T: 1 * ms, Dur: 6 * ms, TID: 52, Syscall: "fsync", Stack: 0},
		{Kind: recording.EventWake, T: 8 * ms, TID: 52, Peer: 1, Addr: lock, Stack: -1},
		// … and writes again after the release, which explains nothing.
		{Kind: recording.EventIO, T: 9 * ms, Dur: 5 * ms, TID: 52, Syscall: "write", Stack: 0},
		// Meanwhile the owner was also preempted for 1 ms while holding it.
		{Kind: recording.EventRunq, T: 7 * ms, Dur: ms, TID: 52, Stack: -1},
	})
	g := groupOf(t, f.ld.lockGroups(), lock)
	lf := f.ld.factsOf(g)
	if lf.ioNS != 6*ms || lf.ioBySys["fsync"] != 6*ms || lf.ioBySys["write"] != 0 {
		t.Errorf("I/O explained %d ns by %v, want 6 ms of fsync", lf.ioNS, lf.ioBySys)
	}
	if lf.preemptNS != ms || lf.preemptWaits != 1 {
		t.Errorf("holder preempted %d ns over %d waits, want 1 ms over 1", lf.preemptNS, lf.preemptWaits)
	}
	io := f.ld.ioFacts(lf)
	if !io.Explains || io.Site == nil || io.Site.Function != "journal_write" || io.Call != "fsync" {
		t.Errorf("I/O facts %+v, want fsync at journal_write explaining the wait", io)
	}
}

func TestQuantiles(t *testing.T) {
	// 90 waits in [512, 1024) ns and 10 in [2^20, 2^21).
	hist := make([]uint64, 22)
	hist[9], hist[20] = 90, 10
	if p50 := histQuantile(hist, 0.5); p50 < 512 || p50 >= 1024 {
		t.Errorf("p50 %d, want in [512, 1024)", p50)
	}
	if p99 := histQuantile(hist, 0.99); p99 < 1<<20 || p99 >= 1<<21 {
		t.Errorf("p99 %d, want in [2^20, 2^21)", p99)
	}
	if histQuantile(nil, 0.5) != 0 {
		t.Error("empty histogram has a quantile")
	}
	if got := quantile([]int64{1, 2, 3, 4, 100}, 0.5); got != 3 {
		t.Errorf("median %d, want 3", got)
	}
}

func TestUnionLength(t *testing.T) {
	if got := unionLength([]span{{0, 10}, {5, 15}, {20, 30}, {29, 31}}); got != 26 {
		t.Errorf("union %d, want 26", got)
	}
	if unionLength(nil) != 0 {
		t.Error("union of nothing is not 0")
	}
}

// Machine code assembled from loops written for the purpose (gcc -c, Intel
// syntax), with the address of the instruction a sample would hit.
func TestBusyWaitLoops(t *testing.T) {
	for _, c := range []struct {
		name string
		code string
		hot  uint64
		busy bool
	}{
		// 1: mov eax, [rip+flag]; test eax, eax; jne 1b
		{"test-and-test-and-set wait", "8b0500000000" + "85c0" + "75f6" + "c3", 6, true},
		// mov edx,1; 2: mov eax,edx; xchg [rdi],eax; test; je 3f; pause; jmp 2b; 3: ret
		{"exchange with pause", "ba01000000" + "89d0" + "8707" + "85c0" + "7404" + "f390" + "ebf4" + "c3", 0x07, true},
		// xorshift in registers
		{"register work loop", "b964000000" + "4889d0" + "48c1e00d" + "4831d0" + "4889c2" + "48c1ea07" + "4831d0" + "83e901" + "75e7" + "c3", 0x0c, false},
		// mov rax, [rdi+rdx*8]; add rcx, rax; add rdx, 1; cmp; jne
		{"array walk", "31d2" + "488b04d7" + "4801c1" + "4883c201" + "4881fa00100000" + "75ec" + "c3", 0x02, false},
		// mov eax,[rbp-4]; add eax,1; mov [rbp-4],eax; cmp eax,99; jle
		{"unoptimised counter", "8b45fc" + "83c001" + "8945fc" + "83f863" + "7ef2" + "c3", 0x00, false},
		// 1: mov rax,[rip+0x2dd9]; add rax,1; mov [rip+0x2dce],rax; jmp 1b —
		// a counter bumped forever (the two RIP displacements name one
		// global), waiting for nothing
		{"unconditional counter loop", "488b05d92d0000" + "4883c001" + "488905ce2d0000" + "ebec" + "c3", 0x00, false},
		// a loop that calls out is not a spin loop
		{"loop with a call", "8b0500000000" + "e800000000" + "85c0" + "75f1" + "c3", 0x0b, false},
		// mov edx,1; 1: xor eax,eax; lock cmpxchg [rdi],edx; jne 1b — a
		// spin lock's compare-and-swap against the free value
		{"compare-and-swap spin lock", "ba01000000" + "31c0" + "f00fb117" + "75f8" + "c3", 0x07, true},
		// 1: mov [rbp],rax; lock cmpxchg [rip+0x126db],rbp; jne 1b — a
		// lock-free push retried with the head the failed CAS returned
		{"lock-free push", "48894500" + "f0480fb12ddb260100" + "75f1" + "c3", 0x04, false},
		// 1: mov rax,[rdi]; lea rdx,[rax+1]; lock cmpxchg [rdi],rdx; jne 1b
		// — an add by compare-and-swap, the word reloaded each try
		{"compare-and-swap add", "488b07" + "488d5001" + "f0480fb117" + "75f2" + "c3", 0x07, false},
	} {
		code, err := hex.DecodeString(c.code)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		insts := decodeAll(code, 0)
		l := innermostLoop(insts, c.hot)
		got := l != nil && l.busyWait()
		if got != c.busy {
			t.Errorf("%s: busy-wait %v, want %v (loop %v)", c.name, got, c.busy, l)
		}
		d := &localDecoder{code: code, at: map[uint64]inst{}}
		ll := d.innermostLoop(c.hot)
		if got := ll != nil && ll.busyWait(); got != c.busy {
			t.Errorf("%s: decoded around the address: busy-wait %v, want %v (loop %v)", c.name, got, c.busy, ll)
		}
	}
}

func TestRegFamily(t *testing.T) {
	if regFamily(0) != -1 {
		t.Error("no register has a family")
	}
}

func TestLockSeries(t *testing.T) {
	rec := &recording.Recording{Meta: recording.Meta{Source: recording.SourceLive, Duration: 2 * time.Second}}
	s := int64(time.Second)
	rec.Events = []recording.Event{
		{Kind: recording.EventWait, T: s / 2, Dur: s, TID: 1, Addr: 0x10}, // half in each window
		{Kind: recording.EventWait, T: s + s/4, Dur: s / 4, TID: 2, Addr: 0x10},
		{Kind: recording.EventWait, T: 0, Dur: s, TID: 3, Addr: 0x20}, // another lock
	}
	got := LockSeries(rec, []uint64{0x10}, 3.0, time.Second) // the log holds 1.25 s of 3 s
	if len(got) != 2 {
		t.Fatalf("%d windows, want 2", len(got))
	}
	scale := 3.0 / 1.25
	if d := got[0] - 0.5*scale; d > 1e-9 || d < -1e-9 {
		t.Errorf("window 0: %v threads waiting, want %v", got[0], 0.5*scale)
	}
	if d := got[1] - 0.75*scale; d > 1e-9 || d < -1e-9 {
		t.Errorf("window 1: %v threads waiting, want %v", got[1], 0.75*scale)
	}
	if LockSeries(rec, []uint64{0x30}, 1, time.Second) != nil {
		t.Error("a series for a lock with no logged waits")
	}
	if got := LockAddrs(core.LockID{Address: "0x10", Words: []string{"0x10", "0x14"}}); len(got) != 2 || got[1] != 0x14 {
		t.Errorf("LockAddrs = %x", got)
	}
}

// Threads that each wait on a word of their own at one program point form
// one hand-rolled lock queue: woken by a producer that never waits there,
// it is an idle pool; woken by each other while they keep the CPU busy, it
// is one lock.
func TestPerWaiterWordsAreOneQueue(t *testing.T) {
	stack := nativeStack("app", "syscall", "sem_park", "queue_wait", "worker")
	build := func(woken func(i int) int) *liveFixture {
		f := newLiveFixture(2 * time.Second)
		for i := range 5 {
			addr := uint64(0x9000 + 0x100*i)
			f.word(addr, "", 1e9, []int{60 + i}, []int{woken(i)}, 10)
			f.wait(addr, 60+i, 1e9, stack)
			f.wake(addr, woken(i), 10, nativeStack("app", "syscall", "sem_post", "queue_pass", "worker"))
		}
		return f
	}

	idle := build(func(int) int { return 70 })
	groups := idle.ld.lockGroups()
	if len(groups) != 1 || len(groups[0].words) != 5 || !groups[0].queue {
		t.Fatalf("%d locks, want the 5 per-waiter words folded into one queue", len(groups))
	}
	if !groups[0].idle || !strings.Contains(groups[0].idleReason, "word of its own") {
		t.Errorf("idle %v (%q): a producer-fed queue must be idle", groups[0].idle, groups[0].idleReason)
	}
	a := &core.Output{Rec: idle.ld.rec, Res: &core.Result{}}
	liveLockVerdicts(a, idle.ld, groups)
	if len(a.Res.Findings) != 0 {
		t.Errorf("findings %q for an idle queue", kinds(a.Res))
	}

	turns := build(func(i int) int { return 60 + (i+1)%5 })
	turns.busy(0.2, 60, 61, 62, 63, 64)
	groups = turns.ld.lockGroups()
	// Not an interpreter's lock: judged as a lock like a mutex, by its
	// hand-offs and holds, not as threads taking turns.
	if len(groups) != 1 || groups[0].idle || groups[0].turns {
		t.Fatalf("queue handed around by its waiters: %d groups, idle %v, turns %v", len(groups), groups[0].idle, groups[0].turns)
	}
	f := core.JudgeLock(turns.ld.lockCase(groups[0], groups), turns.ld.dur)
	if f.Participants != 5 || f.Lock == nil || len(f.Lock.Words) != 5 || f.Lock.Key != "waited at app!sem_park" {
		t.Errorf("finding %s %q: participants %d, lock %+v", f.Kind, f.Headline, f.Participants, f.Lock)
	}
}

// A thread that waits the whole recording on a semaphore nobody posts (a
// Python thread join: sem_wait in PyThread_acquire_lock_timed) waits for an
// event, not for a lock; the same word posted again and again to its one
// waiter, another thread holding it in turn, stays a lock.
func TestUnreleasedSemaphoreIsIdle(t *testing.T) {
	join := nativeStack("libpython3.11.so.1.0", "futex_abstimed_wait_common", "__new_sem_wait_slow64.constprop.0", "PyThread_acquire_lock_timed", "lock_PyThread_acquire_lock", "main")
	f := newLiveFixture(8 * time.Second)
	f.word(0xa000, "", 8e9, []int{80}, nil, 0)
	f.wait(0xa000, 80, 8e9, join)
	g := groupOf(t, f.ld.lockGroups(), 0xa000)
	if !g.idle || !strings.Contains(g.idleReason, "nobody released") {
		t.Errorf("idle %v (%q): want a wait for an event", g.idle, g.idleReason)
	}
	a := &core.Output{Rec: f.ld.rec, Res: &core.Result{}}
	liveLockVerdicts(a, f.ld, f.ld.lockGroups())
	if len(a.Res.Findings) != 0 {
		t.Errorf("findings %q for a join", kinds(a.Res))
	}

	handed := newLiveFixture(8 * time.Second)
	handed.word(0xa000, "", 6e9, []int{80}, []int{81}, 400)
	handed.wait(0xa000, 80, 6e9, join)
	if g := groupOf(t, handed.ld.lockGroups(), 0xa000); g.idle {
		t.Errorf("a semaphore handed to its waiter 400 times judged idle: %q", g.idleReason)
	}
}

// kinds lists the findings of res as kind@function, for failure messages.
func kinds(res *core.Result) []string {
	var out []string
	for _, f := range res.Findings {
		out = append(out, fmt.Sprintf("%s@%s", f.Kind, f.Point.Function))
	}
	return out
}

// TestLocalLoopsMatchTheWholeFunction finds the loop around every
// instruction of glibc's exported functions twice: decoding the whole
// function, and decoding only near the address. Wherever the smallest loop
// is small enough to be a busy-wait the two must be the same loop, and
// elsewhere the local search must find none.
func TestLocalLoopsMatchTheWholeFunction(t *testing.T) {
	path := "/lib/x86_64-linux-gnu/libc.so.6"
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatalf("glibc, which every test machine has: %v", err)
	}
	defer ef.Close()
	syms, err := ef.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	text := ef.Section(".text")
	data, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	funcs, addrs, small := 0, 0, 0
	for _, sym := range syms {
		if elf.ST_TYPE(sym.Info) != elf.STT_FUNC || sym.Size == 0 || sym.Size > 8192 ||
			sym.Value < text.Addr || sym.Value+sym.Size > text.Addr+text.Size {
			continue
		}
		code := data[sym.Value-text.Addr : sym.Value-text.Addr+sym.Size]
		insts := decodeAll(code, sym.Value)
		d := &localDecoder{code: code, start: sym.Value, at: map[uint64]inst{}}
		funcs++
		for _, in := range insts {
			addrs++
			whole := innermostLoop(insts, in.addr)
			local := d.innermostLoop(in.addr)
			if whole != nil && len(whole.insts) <= maxSpinLoopInsns {
				small++
				if local == nil || local.insts[0].addr != whole.insts[0].addr || len(local.insts) != len(whole.insts) {
					t.Fatalf("0x%x in %s: local loop %v, whole-function loop %v", in.addr, sym.Name, local, whole)
				}
			} else if local != nil {
				t.Fatalf("0x%x in %s: local loop %v where the smallest is %v", in.addr, sym.Name, local, whole)
			}
		}
	}
	if funcs < 500 || small < 100 {
		t.Fatalf("%d functions, %d addresses in small loops: too few to compare", funcs, small)
	}
	t.Logf("%d functions, %d addresses, %d in loops of at most %d instructions", funcs, addrs, small, maxSpinLoopInsns)
}

// TestBlindGroups: a word of no known kind waited on only by calls in
// progress through the whole recording, with no stack and no wake, says
// nothing about what its threads wait for; a stack, a wake or a known
// role each make it a group to judge.
func TestBlindGroups(t *testing.T) {
	inProgress := func(tid int) *liveSample {
		return &liveSample{tid: tid, values: []int64{1, 3e9}, frames: []recording.Frame{{Func: "[in progress]"}}}
	}
	withStack := &liveSample{tid: 3, values: []int64{1, 3e9}, frames: []recording.Frame{{Func: "CompileQueue::get", Module: "libjvm.so"}}}
	group := func(role wordRole, woken uint64, s ...*liveSample) *LockGroup {
		return &LockGroup{role: role, woken: woken, words: []*futexWord{{addr: 0x10, waitS: s}}}
	}
	for _, c := range []struct {
		name  string
		g     *LockGroup
		blind bool
	}{
		{"two stackless waits in progress, no wake", group(roleUnknown, 0, inProgress(1), inProgress(2)), true},
		{"one wait has a stack", group(roleUnknown, 0, inProgress(1), withStack), false},
		{"a wake was seen", group(roleUnknown, 1, inProgress(1), inProgress(2)), false},
		{"a mutex by its other words", group(roleMutex, 0, inProgress(1), inProgress(2)), false},
	} {
		if got := c.g.blind(); got != c.blind {
			t.Errorf("%s: blind %v, want %v", c.name, got, c.blind)
		}
	}
	// Judged, a blind group is no finding and is said to be missing data,
	// so the report cannot read it as no contention.
	g := group(roleUnknown, 0, inProgress(1), inProgress(2))
	g.waiters, g.waitNS = map[int]bool{1: true, 2: true}, 6e9
	out := &core.Output{Res: &core.Result{}}
	liveLockVerdicts(out, &Data{dur: 3 * time.Second}, []*LockGroup{g})
	if len(out.Res.Findings) != 0 || len(out.Res.Missing) != 1 || !strings.Contains(out.Res.Missing[0].What, "2 threads") {
		t.Errorf("blind group judged as %d findings, missing %+v; want no finding and one missing entry", len(out.Res.Findings), out.Res.Missing)
	}
}
