package analyzer

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/analyzer/goprofile"
	"github.com/contend-dev/contend/recording"
	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"
)

const sec = int64(time.Second)

// A shared lock with many distinct waiters and short holds is a convoy,
// with a striping suggestion reasoned from the number of contenders.
func TestLockConvoy(t *testing.T) {
	handle := fr("app.(*Sub).handle@/src/app/sub.go:18")
	handleUnlock := fr("app.(*Sub).handle@/src/app/sub.go:23")
	worker := fr("app.worker@/src/app/sub.go:60", "runtime.goexit@/go/src/runtime/asm_amd64.s:1700")
	block := contentionProf(t).
		add([]int64{900_000, 400 * sec}, stack(blockLock, handle, worker)...).
		add([]int64{100, sec / 100}, stack(blockLock, fr("app.other@/src/app/other.go:5"), worker)...).
		build()
	mutex := contentionProf(t).add([]int64{950_000, 380 * sec}, stack(unlockLeaf, handleUnlock, worker)...).build()
	cpu := cpuProf(t, 10*time.Second).
		cpu(300, stack(fr("app.(*Sub).handle@/src/app/sub.go:20"), worker)...).
		cpu(100, stack(fr("app.parse@/src/app/parse.go:9"), worker)...).
		build()
	d := newDump(t).
		add(150, "sync.Mutex.Lock", stack(lockFrames, handle, worker)...).
		add(2, "runnable", stack(fr("app.parse@/src/app/parse.go:9"), worker)...).
		add(5, "select", "app.serve@/src/app/serve.go:30").
		build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{
		recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu,
	}, d))
	if diff := cmp.Diff([]string{"lock-convoy@app.(*Sub).handle"}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	f := res.Findings[0]
	if f.Participants != 150 || f.Population != 157 {
		t.Errorf("participants %d of %d, want 150 of 157", f.Participants, f.Population)
	}
	if !strings.HasPrefix(f.Headline, "150 of 157 goroutines wait at ONE program point: sync.Mutex.Lock in app.(*Sub).handle (sub.go:18)") {
		t.Errorf("headline %q", f.Headline)
	}
	if f.Point.Line != 18 || f.Point.File != "/src/app/sub.go" || f.Point.Stack[f.Point.PointIndex].Func != "app.(*Sub).handle" {
		t.Errorf("point %+v", f.Point)
	}
	if f.Releaser == nil || f.Releaser.Line != 23 {
		t.Errorf("releaser %+v, want app.(*Sub).handle line 23", f.Releaser)
	}
	if f.Lock == nil || f.Lock.PairingGuess || !strings.Contains(f.Lock.Name, "released at app.(*Sub).handle (sub.go:23)") {
		t.Errorf("lock %+v", f.Lock)
	}
	if f.WaitSeconds != 400 {
		t.Errorf("wait %v, want 400 (block profile delay)", f.WaitSeconds)
	}
	// 400 s over 10 s for 150 participants.
	if want := 400.0 / (10 * 150); f.WaitShare < want-1e-9 || f.WaitShare > want+1e-9 {
		t.Errorf("wait share %v, want %v", f.WaitShare, want)
	}
	if f.Confidence != core.ConfidenceHigh {
		t.Errorf("confidence %s, want high (block, mutex, dump and CPU agree)", f.Confidence)
	}
	if !strings.Contains(f.Suggestion.Action, "fixed array of 32 mutexes") || !strings.Contains(f.Suggestion.Action, "never put the locks inside map entries") {
		t.Errorf("suggestion %q", f.Suggestion.Action)
	}
	// No stripe model for goroutines: the suggestion says so instead
	// of a figure.
	if s := f.Suggestion; len(s.Expected) != 0 || !strings.HasPrefix(s.ExpectedGain, "no estimate: goroutines are descheduled where they block") {
		t.Errorf("expected %+v, %q", s.Expected, s.ExpectedGain)
	}
	if f.Score < f.WaitSeconds {
		t.Errorf("score %v below wait %v", f.Score, f.WaitSeconds)
	}
	if len(res.Idle) != 1 || res.Idle[0].Count != 5 || !strings.Contains(res.Idle[0].Reason, "select") {
		t.Errorf("idle %+v, want the 5 select goroutines", res.Idle)
	}
	if len(res.Locks) == 0 || res.Locks[0].DistinctWaiters != 150 {
		t.Errorf("locks %+v", res.Locks)
	}
	if res.Target.Population != 157 || res.Target.Duration != 10*time.Second {
		t.Errorf("target %+v", res.Target)
	}
}

// The block profile's largest entry by count is an idle sync.Cond.Wait:
// it is never a finding, findings rank by delay, and a note says why.
func TestIdleCondWaitHugeCount(t *testing.T) {
	worker := fr("app.worker@/src/app/pool.go:40")
	block := contentionProf(t).
		add([]int64{5_000_000, 900 * sec}, stack(fr("sync.(*Cond).Wait@/go/src/sync/cond.go:71"), fr("app.(*Pool).get@/src/app/pool.go:22"), worker)...).
		add([]int64{2_000, 30 * sec}, stack(blockLock, fr("app.(*Cache).Put@/src/app/cache.go:12"), worker)...).
		build()
	cpu := cpuProf(t, 10*time.Second).cpu(100, "app.work@/src/app/pool.go:50").build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoCPU: cpu}))
	for _, f := range res.Findings {
		if f.Point.Function == "app.(*Pool).get" {
			t.Fatalf("idle Cond.Wait reported as %s", f.Kind)
		}
	}
	if diff := cmp.Diff([]string{"contention@app.(*Cache).Put"}, kinds(res)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	var idle *core.IdleGroup
	for i := range res.Idle {
		if res.Idle[i].Point.Function == "app.(*Pool).get" {
			idle = &res.Idle[i]
		}
	}
	if idle == nil || idle.WaitSeconds != 900 || !strings.Contains(idle.Reason, "sync.Cond.Wait") {
		t.Errorf("idle groups %+v, want the Cond.Wait with 900 s", res.Idle)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "largest entry by count (5,000,000 waits) is sync.Cond.Wait") {
		t.Errorf("notes %q lack the count-versus-delay note", res.Notes)
	}
}

// [semacquire] goroutines without a sync frame wait inside the runtime
// (GC assist, allocation): not a user lock, never a finding.
func TestRuntimeInternalSemacquire(t *testing.T) {
	d := newDump(t).
		add(40, "semacquire",
			"runtime.semacquire1@/go/src/runtime/sema.go:160",
			"runtime.gcStart@/go/src/runtime/mgc.go:640",
			"runtime.mallocgc@/go/src/runtime/malloc.go:1000",
			"app.build@/src/app/build.go:12").
		add(3, "running", "app.build@/src/app/build.go:14").
		build()
	res := analyze(t, rec(nil, d))
	if len(res.Findings) != 0 {
		t.Fatalf("findings %v, want none", kinds(res))
	}
	if len(res.Idle) != 1 || res.Idle[0].Count != 40 || !strings.Contains(res.Idle[0].Reason, "not a user lock") {
		t.Errorf("idle %+v", res.Idle)
	}
	if len(res.Locks) != 0 {
		t.Errorf("locks %+v, want none", res.Locks)
	}
}

// Go ≤ 1.20 dumps show sync.Mutex waiters as [semacquire] with a sync
// frame: they are lock waiters.
func TestOldSemacquireMutex(t *testing.T) {
	d := newDump(t).
		add(12, "semacquire",
			"sync.runtime_SemacquireMutex@/go/src/runtime/sema.go:77",
			"sync.(*Mutex).lockSlow@/go/src/sync/mutex.go:171",
			"sync.(*Mutex).Lock@/go/src/sync/mutex.go:90",
			"app.(*Store).Get@/src/app/store.go:30").
		build()
	res := analyze(t, rec(nil, d))
	if diff := cmp.Diff([]string{"lock-convoy@app.(*Store).Get"}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	if res.Findings[0].Confidence == core.ConfidenceHigh {
		t.Errorf("a single dump gave confidence high")
	}
}

// Request handlers blocked in select waiting for a result are not lock
// waiters, however many.
func TestSelectHandlersNotContention(t *testing.T) {
	d := newDump(t).
		add(300, "select", "app.(*Server).handle@/src/app/server.go:88", "net/http.HandlerFunc.ServeHTTP@/go/src/net/http/server.go:2294").
		add(300, "IO wait",
			"internal/poll.runtime_pollWait@/go/src/runtime/netpoll.go:351",
			"internal/poll.(*pollDesc).wait@/go/src/internal/poll/fd_poll_runtime.go:84",
			"internal/poll.(*FD).Read@/go/src/internal/poll/fd_unix.go:165",
			"net.(*netFD).Read@/go/src/net/fd_posix.go:68",
			"net/http.(*connReader).Read@/go/src/net/http/server.go:800").
		build()
	block := contentionProf(t).
		add([]int64{1_000_000, 5000 * sec}, "runtime.selectgo@/go/src/runtime/select.go:351", "app.(*Server).handle@/src/app/server.go:88").
		build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block}, d))
	if len(res.Findings) != 0 {
		t.Fatalf("findings %v, want none", kinds(res))
	}
	if len(res.Idle) < 2 {
		t.Errorf("idle %+v, want select and netpoll groups", res.Idle)
	}
	for _, p := range res.Points {
		if p.Count == 300 && !p.Idle {
			t.Errorf("point %s with 300 idle goroutines not marked idle", p.Point.Function)
		}
	}
}

// Empty mutex and block profiles: say so, and fall back to the dump.
func TestEmptyProfilesFallBackToDump(t *testing.T) {
	empty := contentionProf(t).build()
	d := newDump(t).
		add(9, "sync.Mutex.Lock", stack(lockFrames, fr("app.(*Reg).Add@/src/app/reg.go:44"))...).
		add(1, "running", "app.(*Reg).Add@/src/app/reg.go:46").
		build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoMutex: empty, recording.ViewGoBlock: contentionProf(t).build()}, d))
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"mutex profile has no samples", "block profile has no samples", "judged from one goroutine dump"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if diff := cmp.Diff([]string{"lock-convoy@app.(*Reg).Add"}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	f := res.Findings[0]
	if f.Participants != 9 || f.WaitSeconds != 0 || f.Confidence != core.ConfidenceMedium {
		t.Errorf("finding %+v", f)
	}
}

// Fewer waiters than a convoy needs give no finding from a dump alone.
func TestFewDumpWaitersNoFinding(t *testing.T) {
	d := newDump(t).add(2, "sync.Mutex.Lock", stack(lockFrames, fr("app.f@/src/app/f.go:3"))...).build()
	res := analyze(t, rec(nil, d))
	if len(res.Findings) != 0 {
		t.Fatalf("findings %v, want none", kinds(res))
	}
	if len(res.Locks) != 1 || res.Locks[0].DistinctWaiters != 2 {
		t.Errorf("locks %+v", res.Locks)
	}
}

// Runtime-internal lock contention is its own kind, pointed at the
// runtime, never blamed on the user code that reached it.
func TestRuntimeLock(t *testing.T) {
	user := fr("app.pump@/src/app/pump.go:20")
	mutex := contentionProf(t).
		add([]int64{5000, 3 * sec}, stack(fr("runtime.unlock@/go/src/runtime/lock_spinbit.go:261", "runtime.selunlock@/go/src/runtime/select.go:98", "runtime.selectgo@/go/src/runtime/select.go:500"), user)...).
		add([]int64{1000, 2 * sec}, "runtime._LostContendedRuntimeLock@/go/src/runtime/proc.go:5741").
		// sync.Mutex machinery calling into a contended semaphore-table lock.
		add([]int64{10, sec}, stack(fr("runtime.unlock@/go/src/runtime/lock_spinbit.go:261", "runtime.semrelease1@/go/src/runtime/sema.go:230", "internal/sync.runtime_Semrelease@/go/src/runtime/sema.go:124", "internal/sync.(*Mutex).unlockSlow@/go/src/internal/sync/mutex.go:221", "sync.(*Mutex).Unlock@/go/src/sync/mutex.go:65"), fr("app.(*M).op@/src/app/m.go:22"))...).
		build()
	cpu := cpuProf(t, 10*time.Second).cpu(100, stack(fr("runtime.selectgo@/go/src/runtime/select.go:300"), user)...).build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu}))
	got := kinds(res)
	want := []string{"runtime-lock@runtime.selunlock", "runtime-lock@runtime._LostContendedRuntimeLock", "runtime-lock@runtime.semrelease1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	for _, f := range res.Findings {
		if f.Kind != core.KindRuntimeLock {
			continue
		}
		if strings.HasPrefix(f.Point.Function, "app.") {
			t.Errorf("runtime lock blamed on %s", f.Point.Function)
		}
		if f.Suggestion.Action == "" || !strings.Contains(f.Suggestion.Action, "Nothing to change in your own locks") {
			t.Errorf("suggestion %q", f.Suggestion.Action)
		}
	}
	if !strings.Contains(res.Findings[0].Headline, "reached from app.pump") || !strings.Contains(res.Findings[0].Suggestion.Action, "channel") {
		t.Errorf("finding %q / %q", res.Findings[0].Headline, res.Findings[0].Suggestion.Action)
	}
}

// manager is the program of the I/O-under-lock tests: lookups (data
// plane) wait at the Manager's Lock, which claim (control plane) holds
// across a journal's save, which fsyncs.
type manager struct {
	lookup, claim, save, dp, cp, fsync []string
}

func newManager() manager {
	return manager{
		lookup: fr("app.(*Manager).lookup@/src/app/m.go:80"),
		claim:  fr("app.(*Manager).claim@/src/app/m.go:40"),
		save:   fr("app.(*journal).save@/src/app/j.go:20"),
		dp:     fr("app.dataPlane@/src/app/m.go:200"),
		cp:     fr("app.controlPlane@/src/app/m.go:220"),
		fsync: fr("syscall.Syscall@/go/src/syscall/syscall_linux.go:73", "syscall.Fsync@/go/src/syscall/zsyscall_linux_amd64.go:423",
			"internal/poll.(*FD).Fsync@/go/src/internal/poll/fd_fsync_posix.go:17", "os.(*File).Sync@/go/src/os/file_posix.go:160"),
	}
}

// block is the block profile: the lookups wait 50 s at the Lock, claim 4 s.
func (m manager) block(t *testing.T) *profile.Profile {
	return contentionProf(t).
		add([]int64{3000, 50 * sec}, stack(blockLock, m.lookup, m.dp)...).
		add([]int64{200, 4 * sec}, stack(blockLock, m.claim, m.cp)...).
		build()
}

// Goroutines waiting at a lookup's Lock while the lock's holder is in
// fsync: I/O under the lock, pointed at the stalled lookups.
func TestIOUnderLock(t *testing.T) {
	m := newManager()
	lookup, save, dp, cp := m.lookup, m.save, m.dp, m.cp
	block := m.block(t)
	mutex := contentionProf(t).
		add([]int64{3100, 52 * sec}, stack(unlockLeaf, fr("app.(*Manager).claim@/src/app/m.go:52"), cp)...).
		add([]int64{100, sec}, stack(unlockLeaf, fr("app.(*Manager).lookup@/src/app/m.go:82"), dp)...).
		build()
	fsync := m.fsync
	cpu := cpuProf(t, 5*time.Second).
		cpu(10, stack(fsync, fr("app.(*journal).writeFile@/src/app/j.go:30"), save, fr("app.(*Manager).claim@/src/app/m.go:45"), cp)...).
		cpu(200, stack(fr("app.route@/src/app/m.go:300"), dp)...).
		build()
	d := newDump(t).
		add(14, "sync.Mutex.Lock", stack(lockFrames, lookup, dp)...).
		add(1, "syscall", stack(fsync, fr("app.(*journal).writeFile@/src/app/j.go:30"), save, fr("app.(*Manager).claim@/src/app/m.go:45"), cp)...).
		add(2, "runnable", stack(fr("app.route@/src/app/m.go:300"), dp)...).
		build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu}, d))
	if diff := cmp.Diff([]string{"io-under-lock@app.(*Manager).lookup"}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	f := res.Findings[0]
	if !hasFact(f, core.EvDumpHolderIO, "call", "os.(*File).Sync", "state", "syscall", "how", core.HolderInSection) || !hasFact(f, core.EvSectionIOCPU) {
		t.Errorf("evidence lacks the holder in os.(*File).Sync inside the critical section, or the CPU in I/O:\n%s", evidenceData(f))
	}
	if !strings.Contains(f.Suggestion.Action, "sequence number") || !strings.Contains(f.Suggestion.Action, "older snapshot never overwrites a newer one") {
		t.Errorf("suggestion %q", f.Suggestion.Action)
	}
	if !f.Lock.PairingGuess {
		t.Errorf("lookup's Lock and claim's Unlock are paired through their receiver: the pairing is a guess")
	}
	if !strings.Contains(f.Headline, "held across I/O (os.(*File).Sync)") {
		t.Errorf("headline %q", f.Headline)
	}
}

// I/O done after the Unlock, in the same function, is not under the lock.
func TestIOAfterUnlockIsNotUnderLock(t *testing.T) {
	op := fr("app.(*M).op@/src/app/m.go:10")
	worker := fr("app.worker@/src/app/m.go:90")
	block := contentionProf(t).add([]int64{1_000_000, 60 * sec}, stack(blockLock, op, worker)...).build()
	mutex := contentionProf(t).add([]int64{1_000_000, 60 * sec}, stack(unlockLeaf, fr("app.(*M).op@/src/app/m.go:14"), worker)...).build()
	write := fr("syscall.Syscall@/go/src/syscall/syscall_linux.go:73", "os.(*File).Write@/go/src/os/file.go:195")
	cpu := cpuProf(t, 10*time.Second).
		cpu(50, stack(write, fr("app.(*M).op@/src/app/m.go:16"), worker)...). // after line 14's Unlock
		cpu(50, stack(fr("app.(*M).op@/src/app/m.go:12"), worker)...).
		build()
	d := newDump(t).add(20, "sync.Mutex.Lock", stack(lockFrames, op, worker)...).build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu}, d))
	if diff := cmp.Diff([]string{"lock-convoy@app.(*M).op"}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
}

// A lock whose every waiter does I/O under it serializes the I/O: not the
// I/O-under-lock case (nobody without I/O is stalled).
func TestSerializedIO(t *testing.T) {
	commit := fr("app.(*journal).commit@/src/app/j.go:20")
	cp := fr("app.controlPlane@/src/app/m.go:220")
	block := contentionProf(t).add([]int64{40, 2 * sec}, stack(blockLock, commit, cp)...).build()
	mutex := contentionProf(t).add([]int64{40, 2 * sec}, stack(unlockLeaf, fr("app.(*journal).commit@/src/app/j.go:30"), cp)...).build()
	fsync := fr("syscall.Fsync@/go/src/syscall/zsyscall_linux_amd64.go:423", "os.(*File).Sync@/go/src/os/file_posix.go:160")
	cpu := cpuProf(t, 5*time.Second).cpu(5, stack(fsync, fr("app.(*journal).commit@/src/app/j.go:25"), cp)...).build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu}))
	if diff := cmp.Diff([]string{"contention@app.(*journal).commit"}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	if !strings.Contains(res.Findings[0].Headline, "ONE lock that serializes I/O") {
		t.Errorf("headline %q", res.Findings[0].Headline)
	}
}

// Methods of different types guard different objects: a Lock in one and
// an Unlock in the other are not one lock even when one calls the other.
func TestPairingDifferentReceivers(t *testing.T) {
	commit := fr("app.(*journal).commit@/src/app/j.go:20")
	claim := fr("app.(*Manager).claim@/src/app/m.go:45")
	block := contentionProf(t).add([]int64{40, 2 * sec}, stack(blockLock, commit, claim)...).build()
	mutex := contentionProf(t).add([]int64{40, 2 * sec}, stack(unlockLeaf, fr("app.(*Manager).claim@/src/app/m.go:50"), fr("app.main@/src/app/main.go:1"))...).build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex}))
	if len(res.Locks) != 2 {
		t.Fatalf("locks %+v, want two separate locks", res.Locks)
	}
}

// A busy-wait on an atomic flag with goroutines runnable there is a spin
// convoy; parallel work with no atomics is not.
func TestSpinConvoy(t *testing.T) {
	worker := fr("app.(*stats).observe@/src/app/stats.go:76", "app.worker@/src/app/stats.go:112")
	lock := "app.(*spinLock).lock@/src/app/spin.go:"
	cpu := cpuProf(t, 4*time.Second).
		cpu(200, stack(fr("sync/atomic.(*Bool).Load@/go/src/sync/atomic/type.go:19", lock+"47"), worker)...).
		cpu(150, stack(fr(lock+"47"), worker)...). // the loop's branch, same line
		cpu(50, stack(fr("runtime.asyncPreempt@/go/src/runtime/preempt_amd64.s:9", "sync/atomic.(*Bool).Swap@/go/src/sync/atomic/type.go:25", lock+"46"), worker)...).
		cpu(300, stack(fr("app.measure@/src/app/stats.go:93"), fr("app.worker@/src/app/stats.go:110"))...).
		build()
	d := newDump(t).
		add(3, "runnable", stack(fr("sync/atomic.(*Bool).Load@/go/src/sync/atomic/type.go:19", lock+"47"), worker)...).
		add(2, "runnable", worker...). // stopped at the call into the lock
		add(3, "runnable", "app.measure@/src/app/stats.go:93", "app.worker@/src/app/stats.go:110").
		build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoCPU: cpu}, d))
	if diff := cmp.Diff([]string{"spin-convoy@app.(*spinLock).lock"}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	f := res.Findings[0]
	if f.Participants != 5 || f.CPUSeconds != 4 {
		t.Errorf("participants %d cpu %v, want 5 and 4 s", f.Participants, f.CPUSeconds)
	}
	if f.Confidence != core.ConfidenceHigh || !strings.Contains(f.Suggestion.Action, "parking lock") {
		t.Errorf("finding %+v", f)
	}
	if !hasFact(f, core.EvGoSpinYield, "yield_share", 0.0) {
		t.Errorf("evidence lacks a loop that never yields:\n%s", evidenceData(f))
	}
}

func TestParallelWorkIsNotSpin(t *testing.T) {
	work := "app.crunch@/src/app/work.go:"
	cpu := cpuProf(t, 4*time.Second).
		cpu(700, work+"20", "app.worker@/src/app/work.go:40").
		cpu(20, "sync/atomic.(*Int64).Add@/go/src/sync/atomic/type.go:100", work+"22", "app.worker@/src/app/work.go:40").
		build()
	d := newDump(t).add(16, "runnable", work+"20", "app.worker@/src/app/work.go:40").build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoCPU: cpu}, d))
	if len(res.Findings) != 0 {
		t.Fatalf("findings %v, want none", kinds(res))
	}
	if len(res.Points) == 0 || res.Points[0].Count != 16 || res.Points[0].CPUSeconds != 7 {
		t.Errorf("points %+v", res.Points)
	}
}

// A mutex profile alone (no block profile, no dump, no duration) still
// reports real contention, at the releaser, with a low confidence.
func TestMutexProfileOnly(t *testing.T) {
	mutex := contentionProf(t).add([]int64{401, 64 * sec}, stack(unlockLeaf, fr("app.(*Sub).handle@/src/app/sub.go:23"), fr("app.worker@/src/app/sub.go:60"))...).build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoMutex: mutex}))
	if diff := cmp.Diff([]string{"contention@app.(*Sub).handle"}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	f := res.Findings[0]
	if f.Confidence != core.ConfidenceLow || f.WaitSeconds != 64 || !strings.Contains(f.Headline, "released at") {
		t.Errorf("finding %+v", f)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "duration unknown") {
		t.Errorf("notes %q", res.Notes)
	}
}

// A protobuf goroutine profile (no states) still tells lock waiters from
// idle goroutines by their frames.
func TestGoroutineProfileProto(t *testing.T) {
	g := newProf(t, "goroutine/count").
		add([]int64{30}, stack(fr("runtime.gopark@/go/src/runtime/proc.go:462", "runtime.semacquire1@/go/src/runtime/sema.go:192"), lockFrames, fr("app.(*Q).push@/src/app/q.go:9"))...).
		add([]int64{40}, "runtime.gopark@/go/src/runtime/proc.go:462", "runtime.chanrecv@/go/src/runtime/chan.go:667", "runtime.chanrecv1@/go/src/runtime/chan.go:509", "app.consumer@/src/app/q.go:30").
		build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoGoroutine: g}))
	if diff := cmp.Diff([]string{"lock-convoy@app.(*Q).push"}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	if res.Target.Population != 70 {
		t.Errorf("population %d, want 70", res.Target.Population)
	}
	if len(res.Idle) != 1 || res.Idle[0].Count != 40 {
		t.Errorf("idle %+v", res.Idle)
	}
	var states map[string]int
	for _, p := range res.Points {
		if p.Point.Function == "app.consumer" {
			states = p.States
		}
	}
	if states["chan receive"] != 40 {
		t.Errorf("inferred states %v, want 40 chan receive", states)
	}
}

func TestAnalyzeEmpty(t *testing.T) {
	if _, err := Analyze(nil, Options{}); err == nil {
		t.Error("Analyze(nil) gave no error")
	}
	res := analyze(t, &recording.Recording{})
	if res.Schema != core.SchemaVersion || len(res.Findings) != 0 || res.Findings == nil {
		t.Errorf("result %+v", res)
	}
	// Profiles with no samples at all.
	res = analyze(t, rec(map[recording.View]*profile.Profile{
		recording.ViewGoMutex: contentionProf(t).build(),
		recording.ViewGoCPU:   cpuProf(t, 0).build(),
	}))
	if len(res.Findings) != 0 {
		t.Errorf("findings %v", kinds(res))
	}
}

// Findings are ranked by time lost, not by count.
func TestRankByDelay(t *testing.T) {
	w := fr("app.w@/src/app/w.go:1")
	block := contentionProf(t).
		add([]int64{1_000_000, 20 * sec}, stack(blockLock, fr("app.many@/src/app/a.go:1"), w)...).
		add([]int64{1_000, 80 * sec}, stack(blockLock, fr("app.few@/src/app/b.go:1"), w)...).
		build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block}))
	got := kinds(res)
	if len(got) != 2 || got[0] != "contention@app.few" {
		t.Errorf("ranking %v, want app.few (80 s) first", got)
	}
}

// Plain locking helpers (no receiver) called from one function are paired
// through that caller, as a guess; a function that locks and unlocks
// itself stays its own lock even under the same worker loop.
func TestPairingSharedCaller(t *testing.T) {
	worker := fr("app.worker@/src/app/w.go:50")
	block := contentionProf(t).
		add([]int64{1000, 20 * sec}, stack(blockLock, fr("app.lockState@/src/app/s.go:5", "app.handle@/src/app/h.go:10"), worker)...).
		add([]int64{1000, 10 * sec}, stack(blockLock, fr("app.other@/src/app/o.go:3"), worker)...).
		build()
	mutex := contentionProf(t).
		add([]int64{1000, 20 * sec}, stack(unlockLeaf, fr("app.unlockState@/src/app/s.go:9", "app.handle@/src/app/h.go:14"), worker)...).
		add([]int64{1000, 10 * sec}, stack(unlockLeaf, fr("app.other@/src/app/o.go:6"), worker)...).
		build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex}))
	if len(res.Locks) != 2 {
		t.Fatalf("locks %+v, want 2", res.Locks)
	}
	top := res.Locks[0]
	if !top.Lock.PairingGuess || top.Waker == nil || top.Waker.Function != "app.unlockState" || top.Waiter.Function != "app.lockState" {
		t.Errorf("lock %+v", top.Lock)
	}
	if res.Locks[1].Lock.PairingGuess {
		t.Errorf("app.other locks and unlocks itself: not a guess")
	}
}

// Odd but valid input never panics: samples without stacks, runtime-only
// stacks, a dump group without frames, unknown sample types.
func TestOddInput(t *testing.T) {
	block := contentionProf(t).add([]int64{5, sec}).add([]int64{5, sec}, "runtime.goexit@/go/src/runtime/asm_amd64.s:1700").build()
	mutex := newProf(t, "weird/count").add([]int64{3}, "app.f@/src/f.go:1").build()
	cpu := cpuProf(t, time.Second).cpu(1).cpu(3, "runtime._System@/go/src/runtime/proc.go:1").build()
	d := newDump(t).add(3, "running").add(2, "sync.Mutex.Lock").build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu}, d))
	for _, f := range res.Findings {
		if f.Headline == "" || f.Kind == "" {
			t.Errorf("incomplete finding %+v", f)
		}
	}
}

// The dump names the mutex each waiter parks on. Waiters spread over many
// mutexes at one Lock site (a striped table, per-object locks) are no
// convoy, however large the summed profile delay; waiters all on one mutex
// name it.
func TestLockAddressSpread(t *testing.T) {
	get := fr("app.(*Table).Get@/src/app/table.go:31")
	getUnlock := fr("app.(*Table).Get@/src/app/table.go:35")
	worker := fr("app.worker@/src/app/table.go:80", "runtime.goexit@/go/src/runtime/asm_amd64.s:1700")
	build := func(addrs ...string) *recording.Recording {
		block := contentionProf(t).add([]int64{400_000, 200 * sec}, stack(blockLock, get, worker)...).build()
		mutex := contentionProf(t).add([]int64{420_000, 190 * sec}, stack(unlockLeaf, getUnlock, worker)...).build()
		d := newDump(t)
		for _, a := range addrs {
			d.add(4, "sync.Mutex.Lock", stack(lockFrames, get, worker)...).lockedOn(a)
		}
		d.add(2, "runnable", stack(fr("app.parse@/src/app/parse.go:9"), worker)...)
		cpu := cpuProf(t, 10*time.Second).cpu(200, stack(fr("app.(*Table).Get@/src/app/table.go:33"), worker)...).build()
		return rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu}, d.build())
	}

	spread := analyze(t, build("0xc000010000", "0xc000010008", "0xc000010010", "0xc000010018", "0xc000010020", "0xc000010028"))
	for _, f := range spread.Findings {
		if f.Kind == core.KindLockConvoy {
			t.Fatalf("waiters on 6 mutexes judged a convoy: %s\n%s", f.Headline, evidenceData(f))
		}
	}
	if len(spread.Findings) == 0 || !hasFact(spread.Findings[0], core.EvDumpSpread, "distinct", 6, "most", 4) {
		t.Errorf("no spread evidence in %v", spread.Findings)
	}

	one := analyze(t, build("0xc000010000", "0xc000010000", "0xc000010000"))
	if diff := cmp.Diff([]string{"lock-convoy@app.(*Table).Get"}, kinds(one)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	f := one.Findings[0]
	if f.Lock == nil || f.Lock.Address != "0xc000010000" || !hasFact(f, core.EvDumpSameMutex, "named", 12, "addr", "0xc000010000") {
		t.Errorf("lock %+v, evidence:\n%s", f.Lock, evidenceData(f))
	}
}

// Profiles that average several goroutines waiting, with a dump (debug=2)
// of the same interval that shows none waiting for the lock: the waiting
// came in bursts, which is contention but no standing convoy.
func TestBurstsUnseenByTheDumpAreNoConvoy(t *testing.T) {
	get := fr("app.(*Table).Get@/src/app/table.go:31")
	worker := fr("app.worker@/src/app/table.go:80", "runtime.goexit@/go/src/runtime/asm_amd64.s:1700")
	block := contentionProf(t).add([]int64{457, 12 * sec}, stack(blockLock, get, worker)...).build()
	mutex := contentionProf(t).add([]int64{400, 11 * sec}, stack(unlockLeaf, fr("app.(*Table).Get@/src/app/table.go:33"), worker)...).build()
	cpu := cpuProf(t, 4*time.Second).cpu(260, stack(fr("app.(*Table).Get@/src/app/table.go:32"), worker)...).build()
	d := newDump(t).add(190, "runnable", stack(fr("app.parse@/src/app/parse.go:9"), worker)...).build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu}, d))
	if diff := cmp.Diff([]string{"contention@app.(*Table).Get"}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	if !hasFact(res.Findings[0], core.EvDumpUnseen) {
		t.Errorf("evidence lacks the dump's view:\n%s", evidenceData(res.Findings[0]))
	}
}

// A convoy on a Go mutex in starvation mode, dumped between hand-offs:
// its wait queue has drained and 188 goroutines sit runnable inside the
// lock's Unlock, each having handed the lock to the next waiter and yielded
// its CPU to it (the go/stripe fixture's bad variant, one run in six). They
// are the convoy seen, neither "nobody waiting" nor a crowded CPU.
func TestConvoyCaughtInItsHandoffs(t *testing.T) {
	onMsg := fr("app.(*Sub).onMsg@/src/app/sub.go:170")
	worker := fr("app.worker@/src/app/sub.go:242", "runtime.goexit@/go/src/runtime/asm_amd64.s:1700")
	block := contentionProf(t).add([]int64{757_432, 381 * sec}, stack(blockLock, onMsg, worker)...).build()
	mutex := contentionProf(t).add([]int64{1_167_080, 584 * sec}, stack(unlockLeaf, fr("app.(*Sub).onMsg@/src/app/sub.go:172"), worker)...).build()
	cpu := cpuProf(t, 3*time.Second).cpu(289, stack(fr("app.(*Sub).onMsg@/src/app/sub.go:171"), worker)...).build()
	handoff := fr("internal/sync.runtime_Semrelease@/go/src/runtime/sema.go:124",
		"internal/sync.(*Mutex).unlockSlow@/go/src/internal/sync/mutex.go:232",
		"internal/sync.(*Mutex).Unlock@/go/src/internal/sync/mutex.go:198",
		"sync.(*Mutex).Unlock@/go/src/sync/mutex.go:65")
	for _, tc := range []struct {
		name      string
		releasing int
		want      string
	}{
		{"caught in the hand-offs", 188, "lock-convoy@app.(*Sub).onMsg"},
		// The same runnable crowd outside the lock is a crowded CPU.
		{"crowd elsewhere", 0, "contention@app.(*Sub).onMsg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newDump(t).add(2, "runnable", stack(fr("runtime.Gosched@/go/src/runtime/proc.go:391"), worker)...)
			if tc.releasing > 0 {
				b.add(tc.releasing, "runnable", stack(handoff, fr("app.(*Sub).onMsg@/src/app/sub.go:172"), worker)...)
			} else {
				b.add(188, "runnable", stack(fr("app.parse@/src/app/parse.go:9"), worker)...)
			}
			r := rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu}, b.build())
			r.Meta.NumCPU = 2
			res := analyze(t, r)
			if diff := cmp.Diff([]string{tc.want}, kinds(res)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			f := res.Findings[0]
			if got := hasFact(f, core.EvDumpReleasing, "releasing", float64(tc.releasing)); got != (tc.releasing > 0) {
				t.Errorf("hand-off fact %v, want %v:\n%s", got, tc.releasing > 0, evidenceData(f))
			}
			if got := hasFact(f, core.EvDumpUnseen); got == (tc.releasing > 0) {
				t.Errorf("unseen fact %v:\n%s", got, evidenceData(f))
			}
		})
	}
}

// The WAL's writers write their entries under the lock themselves, and a
// syncer fsyncs under it; the mutex profile charges most of the writers'
// delay to the syncer's Unlock. The writers' own I/O does not make the lock
// one that merely orders their I/O: the fsync they do not do is what they
// wait for (InfluxDB's WAL, captured under load, read "coalesce" before).
// With the delay charged to the writers' own Unlock instead, it is.
func TestOwnIOUnderAForeignSync(t *testing.T) {
	write := fr("app.(*WAL).writeToLog.func1@/src/app/wal.go:40")
	worker := fr("app.worker@/src/app/w.go:9", "runtime.goexit@/go/src/runtime/asm_amd64.s:1700")
	fileWrite := fr("syscall.Write@/go/src/syscall/syscall_unix.go:209", "os.(*File).Write@/go/src/os/file.go:189")
	fsync := fr("syscall.Fsync@/go/src/syscall/zsyscall_linux_amd64.go:423", "os.(*File).Sync@/go/src/os/file_posix.go:160")
	for _, tc := range []struct {
		name             string
		syncNS, writesNS int64
		want             core.Kind
	}{
		{"delay on the syncer", 658 * sec / 1000, 40 * sec / 1000, core.KindIOUnderLock},
		{"delay on the writers", 40 * sec / 1000, 658 * sec / 1000, core.KindContention},
	} {
		t.Run(tc.name, func(t *testing.T) {
			block := contentionProf(t).add([]int64{271, 4 * sec}, stack(blockLock, write, worker)...).build()
			mutex := contentionProf(t).
				add([]int64{1254, tc.syncNS}, stack(unlockLeaf, fr("app.(*WAL).scheduleSync.func1@/src/app/wal.go:85"), worker)...).
				add([]int64{300, tc.writesNS}, stack(unlockLeaf, fr("app.(*WAL).writeToLog.func1@/src/app/wal.go:44"), worker)...).
				build()
			cpu := cpuProf(t, 5*time.Second).
				cpu(10, stack(fsync, fr("app.(*WAL).scheduleSync.func1@/src/app/wal.go:83"), worker)...).
				cpu(20, stack(fileWrite, fr("app.(*WAL).writeToLog.func1@/src/app/wal.go:42"), worker)...).
				build()
			res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu}))
			if len(res.Findings) == 0 || res.Findings[0].Kind != tc.want {
				t.Fatalf("findings %q, want %s first", kinds(res), tc.want)
			}
			if tc.want == core.KindIOUnderLock && !strings.Contains(res.Findings[0].Suggestion.Reasoning, "charges 94% of it to holders never seen waiting") {
				t.Errorf("reasoning %q does not say where the delay falls", res.Findings[0].Suggestion.Reasoning)
			}
		})
	}
}

// A real debug=2 dump of the kvstore fixture's bad variant, taken alone:
// 61 goroutines wait in RLock of one RWMutex while the goroutine that
// holds its write side sits in fdatasync under (*store).commit. Without a
// mutex profile the critical sections are unknown; the holder is found in
// the dump by its method's type, and the verdict is I/O under the lock,
// never "stripe it".
func TestDumpHolderInIO(t *testing.T) {
	rec, err := recording.Open(filepath.Join("testdata", "dumps", "kvstore-bad.txt"))
	if err != nil {
		t.Fatal(err)
	}
	res := analyze(t, rec)
	if diff := cmp.Diff([]string{"io-under-lock@github.com/contend-dev/contend/fixtures/kvstore.(*store).Get"}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	f := res.Findings[0]
	if !hasFact(f, core.EvDumpHolderIO, "call", "unix.Fdatasync", "state", "syscall", "at", "kvstore.(*store).commit (kvstore.go:75)") {
		t.Errorf("evidence lacks the holder in fdatasync under commit:\n%s", evidenceData(f))
	}
	if !strings.Contains(f.Headline, "unix.Fdatasync") || !strings.Contains(f.Suggestion.Reasoning, "kvstore.(*store).commit") {
		t.Errorf("headline %q, reasoning %q", f.Headline, f.Suggestion.Reasoning)
	}
}

// A goroutine that waits for another lock from inside a contended lock's
// critical section is a link of a chain: the waiters of the first lock
// wait on the second too, and the evidence says so.
func TestDumpChain(t *testing.T) {
	get := fr("app.(*S).Get@/src/app/s.go:10")
	update := fr("app.(*S).Update@/src/app/s.go:20")
	flush := fr("app.(*T).Flush@/src/app/t.go:5")
	worker := fr("app.worker@/src/app/s.go:80", "runtime.goexit@/go/src/runtime/asm_amd64.s:1700")
	block := contentionProf(t).add([]int64{900, 20 * sec}, stack(blockLock, get, worker)...).build()
	mutex := contentionProf(t).add([]int64{900, 20 * sec}, stack(unlockLeaf, fr("app.(*S).Update@/src/app/s.go:30"), worker)...).build()
	d := newDump(t).
		add(12, "sync.Mutex.Lock", stack(lockFrames, get, worker)...).
		add(1, "sync.Mutex.Lock", stack(lockFrames, flush, update, worker)...).
		add(3, "sync.Mutex.Lock", stack(lockFrames, fr("app.(*T).Put@/src/app/t.go:9"), worker)...).
		build()
	cpu := cpuProf(t, 10*time.Second).cpu(100, stack(fr("app.(*S).Get@/src/app/s.go:11"), worker)...).build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu}, d))
	if len(res.Findings) == 0 {
		t.Fatal("no finding")
	}
	f := res.Findings[0]
	if f.Point.Function != "app.(*S).Get" || !hasFact(f, core.EvChainDump, "share", 1.0, "what", "sync.Mutex.Lock in app.(*T).Flush (t.go:5)") {
		t.Errorf("finding %s at %s, evidence:\n%s", f.Kind, f.Point.Function, evidenceData(f))
	}
}

// The mutex profile charges most of a lock's delay to the Unlock of the
// goroutine that syncs the log under it; the CPU profile, which rarely
// samples I/O (it waits off the CPU), has a single sample of that fsync
// inside the critical section. Together they say the waits last as long
// as the fsync: I/O under the lock, as InfluxDB's WAL shows.
func TestOneIOSampleUnderTheHeaviestUnlock(t *testing.T) {
	write := fr("app.(*WAL).writeToLog.func1@/src/app/wal.go:40")
	worker := fr("app.worker@/src/app/w.go:9", "runtime.goexit@/go/src/runtime/asm_amd64.s:1700")
	block := contentionProf(t).add([]int64{2000, 30 * sec}, stack(blockLock, write, worker)...).build()
	mutex := contentionProf(t).
		add([]int64{500, 23 * sec}, stack(unlockLeaf, fr("app.(*WAL).scheduleSync.func1@/src/app/wal.go:85"), worker)...).
		add([]int64{1500, 7 * sec}, stack(unlockLeaf, fr("app.(*WAL).writeToLog.func1@/src/app/wal.go:44"), worker)...).
		build()
	fsync := fr("syscall.Fsync@/go/src/syscall/zsyscall_linux_amd64.go:423", "os.(*File).Sync@/go/src/os/file_posix.go:160")
	cpu := cpuProf(t, 10*time.Second).
		cpu(1, stack(fsync, fr("app.(*WAL).scheduleSync.func1@/src/app/wal.go:83"), worker)...).
		cpu(300, stack(fr("app.encode@/src/app/e.go:3"), worker)...).
		build()
	res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu}))
	if len(res.Findings) == 0 || res.Findings[0].Kind != core.KindIOUnderLock {
		t.Fatalf("findings %q, want io-under-lock first", kinds(res))
	}
	if !strings.Contains(res.Findings[0].Suggestion.Reasoning, "app.(*WAL).scheduleSync holds it across os.(*File).Sync") {
		t.Errorf("reasoning %q does not name the holder's section", res.Findings[0].Suggestion.Reasoning)
	}
}

// TestIOUnderLockSeenAsleep: the holder's fsync under the lock shows in
// neither the CPU profile (I/O waits off the CPU) nor the goroutine dump;
// the probes saw it sleep inside the critical section again and again.
// Three such calls say I/O under the lock; two, like one, could be a
// start-up's, and leave the lock's verdict to the rest.
func TestIOUnderLockSeenAsleep(t *testing.T) {
	m := newManager()
	lookup, save, dp, cp, fsync := m.lookup, m.save, m.dp, m.cp, m.fsync
	for _, c := range []struct {
		calls int64
		io    bool
	}{{goprofile.MinIOSleeps, true}, {goprofile.MinIOSleeps - 1, false}} {
		block := m.block(t)
		// The mutex profile charges most of the delay to the lookups'
		// own Unlock, so that it does not vouch for the I/O (see
		// ioFacts): the calls asleep decide alone.
		mutex := contentionProf(t).
			add([]int64{100, sec}, stack(unlockLeaf, fr("app.(*Manager).claim@/src/app/m.go:52"), cp)...).
			add([]int64{3100, 52 * sec}, stack(unlockLeaf, fr("app.(*Manager).lookup@/src/app/m.go:82"), dp)...).
			build()
		cpu := cpuProf(t, 5*time.Second).
			cpu(200, stack(fr("app.route@/src/app/m.go:300"), dp)...).
			build()
		io := newProf(t, "calls/count", "latency/nanoseconds").
			add([]int64{c.calls, c.calls * int64(20*time.Millisecond)}, stack(fsync, fr("app.(*journal).writeFile@/src/app/j.go:30"), save, fr("app.(*Manager).claim@/src/app/m.go:45"), cp)...).
			build()
		d := newDump(t).
			add(14, "sync.Mutex.Lock", stack(lockFrames, lookup, dp)...).
			add(2, "runnable", stack(fr("app.route@/src/app/m.go:300"), dp)...).
			build()
		res := analyze(t, rec(map[recording.View]*profile.Profile{recording.ViewGoBlock: block, recording.ViewGoMutex: mutex, recording.ViewGoCPU: cpu, recording.ViewIO: io}, d))
		if len(res.Findings) == 0 {
			t.Fatalf("%d calls: no finding", c.calls)
		}
		f := res.Findings[0]
		if got := f.Kind == core.KindIOUnderLock; got != c.io {
			t.Errorf("%d fsync calls asleep under the lock: %s, want io-under-lock %v", c.calls, f.Kind, c.io)
		}
		if c.io && !hasFact(f, core.EvSectionIOSleep, "calls", float64(c.calls)) {
			t.Errorf("evidence lacks the %d calls asleep in the critical section:\n%s", c.calls, evidenceData(f))
		}
	}
}
