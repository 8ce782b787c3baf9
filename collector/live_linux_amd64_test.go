//go:build linux && amd64

package collector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// Integration tests: they load the probes and attach them to the helper
// programs in testdata, started by the tests. They need root (see
// requireRoot).

// recordFor records pid for d and checks the recording round-trips.
func recordFor(t *testing.T, o Options) *recording.Recording {
	t.Helper()
	rec, err := Record(context.Background(), o, nil)
	if err != nil {
		t.Fatalf("record pid %d: %v", o.PID, err)
	}
	checkRoundTrip(t, rec)
	return rec
}

// checkRoundTrip writes rec, reads it back and checks that every profile
// is valid and that nothing was lost on the way.
func checkRoundTrip(t *testing.T, rec *recording.Recording) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rec")
	if err := recording.Write(dir, rec); err != nil {
		t.Fatalf("write recording: %v", err)
	}
	back, err := recording.Read(dir)
	if err != nil {
		t.Fatalf("read recording: %v", err)
	}
	if len(back.Profiles) != len(rec.Profiles) {
		t.Errorf("round trip: %d profiles, want %d", len(back.Profiles), len(rec.Profiles))
	}
	for v, p := range back.Profiles {
		if err := p.CheckValid(); err != nil {
			t.Errorf("profile %s: %v", v, err)
		}
		if got, want := len(p.Sample), len(rec.Profiles[v].Sample); got != want {
			t.Errorf("profile %s: %d samples after round trip, want %d", v, got, want)
		}
	}
	if len(back.Events) != len(rec.Events) || len(back.Stacks) != len(rec.Stacks) || len(back.Locks) != len(rec.Locks) {
		t.Errorf("round trip: events %d/%d stacks %d/%d locks %d/%d", len(back.Events), len(rec.Events), len(back.Stacks), len(rec.Stacks), len(back.Locks), len(rec.Locks))
	}
	if back.Meta.PID != rec.Meta.PID || back.Meta.Partial != rec.Meta.Partial || len(back.Meta.Counters) != len(rec.Meta.Counters) {
		t.Errorf("round trip: meta %+v, want %+v", back.Meta, rec.Meta)
	}
	for _, name := range []string{"drop_ringbuf_event", "drop_stack_user", "drop_map_full_futex_wait", "ev_futex_wait"} {
		if _, ok := back.Meta.Counters[name]; !ok {
			t.Errorf("counter %s missing from meta.json", name)
		}
	}
}

// callerOf returns the first function after (outward of) the innermost
// frame whose name contains callee, "" when none.
func callerOf(names []string, callee string) string {
	for i, n := range names {
		if strings.Contains(n, callee) {
			for _, m := range names[i+1:] {
				if !strings.Contains(m, callee) {
					return m
				}
			}
		}
	}
	return ""
}

func tidSet(t *testing.T, p *testbin.Proc, n int) map[int64]bool {
	t.Helper()
	vals := mustValues(t, p, "tid", n)
	set := map[int64]bool{}
	for _, v := range vals {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		set[id] = true
	}
	return set
}

// oneTID returns the first tid the program printed.
func oneTID(t *testing.T, p *testbin.Proc) int64 {
	t.Helper()
	for tid := range tidSet(t, p, 1) {
		return tid
	}
	return 0
}

// checkLockWaits checks the futex-wait view and locks.json for a program
// whose workers (tids) contend on lock through caller.
func checkLockWaits(t *testing.T, rec *recording.Recording, lock string, tids map[int64]bool, lockFunc, caller string) {
	t.Helper()
	p := rec.Profile(recording.ViewFutexWait)
	if p == nil {
		t.Fatal("no futex-wait view")
	}
	var stacked, onCaller int64
	owners := map[int64]bool{}
	for _, s := range p.Sample {
		if len(s.Label[recording.LabelLock]) == 0 || s.Label[recording.LabelLock][0] != lock {
			continue
		}
		if tid := s.NumLabel[recording.LabelTID][0]; !tids[tid] {
			t.Errorf("wait on %s by tid %d, not a worker", lock, tid)
		}
		for _, o := range s.NumLabel[recording.LabelOwner] {
			owners[o] = true
		}
		names := funcs(s)
		if len(names) == 1 && names[0] == frameShortWaits {
			continue
		}
		stacked += s.Value[1]
		if c := callerOf(names, lockFunc); c == caller {
			onCaller += s.Value[1]
		} else {
			t.Logf("wait stack not through %s -> %s: %v", caller, lockFunc, names)
		}
	}
	if stacked == 0 {
		t.Fatalf("no wait on %s carries a stack", lock)
	}
	if onCaller < stacked*9/10 {
		t.Errorf("wait time under %s called from %s: %d of %d ns, want at least 90%%", lockFunc, caller, onCaller, stacked)
	}
	if len(owners) == 0 {
		t.Errorf("no owner tid read for %s", lock)
	}
	for o := range owners {
		if !tids[o] {
			t.Errorf("owner %d of %s is not a worker (workers %v)", o, lock, tids)
		}
	}
	var ls *recording.LockStat
	for i := range rec.Locks {
		if fmt.Sprintf("0x%x", rec.Locks[i].Addr) == lock {
			ls = &rec.Locks[i]
		}
	}
	if ls == nil {
		t.Fatalf("lock %s missing from locks.json", lock)
	}
	if ls.Blocked == 0 || ls.WaitNS == 0 || len(ls.Waiters) < 2 || ls.Wakes == 0 {
		t.Errorf("lock stat %+v: want blocked waits, wait time, several waiters and wakes", *ls)
	}
	var histSum uint64
	for _, n := range ls.Hist {
		histSum += n
	}
	if histSum != ls.Waits {
		t.Errorf("lock histogram holds %d waits, want %d", histSum, ls.Waits)
	}
}

func TestFutexWaitsPthreadMutex(t *testing.T) {
	requireRoot(t)
	for _, fp := range []string{"-fno-omit-frame-pointer", "-fomit-frame-pointer"} {
		t.Run(fp, func(t *testing.T) {
			bin := testbin.C(t, "testdata/cmutex.c", "-O2", "-g", fp)
			p := testbin.Start(t, bin, "4")
			pid := mustPID(t, p)
			lock, err := p.Value("lock", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			tids := tidSet(t, p, 4)
			rec := recordFor(t, Options{PID: pid, Duration: 3 * time.Second})
			checkLockWaits(t, rec, lock, tids, "pthread_mutex_lock", "update_shared_state")
			for _, ls := range rec.Locks {
				if fmt.Sprintf("0x%x", ls.Addr) == lock && !strings.HasPrefix(ls.Name, "big_lock") {
					t.Errorf("lock %s named %q, want big_lock", lock, ls.Name)
				}
			}
			// Long waits are in the event log with their owner and a
			// stack through the caller.
			var waits, withCaller int
			for _, e := range rec.Events {
				if e.Kind != recording.EventWait || fmt.Sprintf("0x%x", e.Addr) != lock {
					continue
				}
				waits++
				if e.Stack >= 0 {
					for _, f := range rec.Stacks[e.Stack].Frames {
						if f.Func == "update_shared_state" {
							withCaller++
							break
						}
					}
				}
			}
			if waits == 0 || withCaller < waits/2 {
				t.Errorf("event log: %d waits on %s, %d with update_shared_state on their stack", waits, lock, withCaller)
			}
			// Workers wake each other from task context, with the
			// waker's stack through pthread_mutex_unlock.
			var wakes, fromTask, unlockStack int64
			for _, s := range rec.Profile(recording.ViewWakes).Sample {
				if !tids[s.NumLabel[recording.LabelWakee][0]] || len(s.NumLabel[recording.LabelTID]) == 0 || !tids[s.NumLabel[recording.LabelTID][0]] {
					continue
				}
				wakes += s.Value[0]
				if s.Label[recording.LabelContext][0] == "task" {
					fromTask += s.Value[0]
				}
				if callerOf(funcs(s), "pthread_mutex_unlock") == "update_shared_state" {
					unlockStack += s.Value[0]
				}
			}
			if wakes == 0 || fromTask < wakes*9/10 || unlockStack < wakes/2 {
				t.Errorf("worker-to-worker wakes %d: %d from task context, %d through update_shared_state -> pthread_mutex_unlock", wakes, fromTask, unlockStack)
			}
		})
	}
}

func TestFutexWaitsGoLock(t *testing.T) {
	requireRoot(t)
	bin := testbin.Go(t, "collector/testdata/golock")
	p := testbin.Start(t, bin, "-threads", "4")
	pid := mustPID(t, p)
	lock, err := p.Value("lock", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tids := tidSet(t, p, 4)
	rec := recordFor(t, Options{PID: pid, Duration: 3 * time.Second, Probes: []string{ProbeFutex}})
	checkLockWaits(t, rec, lock, tids, "main.futexWait", "main.(*futexLock).Lock")
	if rec.Meta.GoVersion == "" {
		t.Error("Meta.GoVersion not set for a Go target")
	}
}

// offcpuByState sums off-CPU time per state for one thread.
func offcpuByState(p *profile.Profile, tid int64) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		if s.NumLabel[recording.LabelTID][0] == tid {
			out[s.Label[recording.LabelState][0]] += s.Value[1]
		}
	}
	return out
}

func TestOffCPUSleeper(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/sleeper.c", "-O2", "-g")
	p := testbin.Start(t, bin)
	pid := mustPID(t, p)
	id := oneTID(t, p)
	rec := recordFor(t, Options{PID: pid, Duration: 2 * time.Second, Probes: []string{ProbeSched}})
	states := offcpuByState(rec.Profile(recording.ViewOffCPU), id)
	var total int64
	for _, v := range states {
		total += v
	}
	if total < int64(time.Second) || states[recording.StateSleeping] < total*9/10 {
		t.Errorf("sleeper off-CPU time by state %v: want at least 1s, 90%% sleeping", states)
	}
	// Its wakeups come from the timer interrupt, not from a task.
	var fromIRQ, all int64
	for _, s := range rec.Profile(recording.ViewWakes).Sample {
		if s.NumLabel[recording.LabelWakee][0] != id {
			continue
		}
		all += s.Value[0]
		if c := s.Label[recording.LabelContext][0]; c == "hardirq" || c == "softirq" {
			fromIRQ += s.Value[0]
		}
	}
	if all == 0 || fromIRQ < all*9/10 {
		t.Errorf("sleeper woken %d times, %d from interrupt context; want at least 90%%", all, fromIRQ)
	}
}

func TestOffCPUAndOnCPUHog(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/hog.c", "-O2", "-g")
	n := 2*max(onlineCPUs(), 1) + 1
	p := testbin.Start(t, bin, strconv.Itoa(n))
	pid := mustPID(t, p)
	tids := tidSet(t, p, n)
	rec := recordFor(t, Options{PID: pid, Duration: 2 * time.Second, Probes: []string{ProbeSched, ProbeOnCPU}})
	off := rec.Profile(recording.ViewOffCPU)
	for tid := range tids {
		states := offcpuByState(off, tid)
		var total int64
		for _, v := range states {
			total += v
		}
		if total == 0 || states[recording.StateRunnable] < total*9/10 {
			t.Errorf("spinner %d off-CPU time by state %v: want mostly runnable", tid, states)
		}
	}
	var samples, inLoop int64
	for _, s := range rec.Profile(recording.ViewOnCPU).Sample {
		if !tids[s.NumLabel[recording.LabelTID][0]] {
			continue
		}
		samples += s.Value[0]
		// A sample taken while the spinner was in the kernel (the
		// scheduler, a timer interrupt) still has spin_loop as its
		// innermost user frame.
		if names := userFuncs(s); len(names) > 0 && names[0] == "spin_loop" {
			inLoop += s.Value[0]
		}
	}
	if samples == 0 || inLoop < samples*9/10 {
		t.Errorf("on-CPU samples of the spinners: %d, %d with spin_loop as innermost user frame; want at least 90%%", samples, inLoop)
	}
}

func TestIOFsync(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/fsyncloop.c", "-O2", "-g")
	p := testbin.Start(t, bin, filepath.Join(t.TempDir(), "journal"))
	pid := mustPID(t, p)
	id := oneTID(t, p)
	rec := recordFor(t, Options{PID: pid, Duration: 2 * time.Second, Probes: []string{ProbeIO}})
	var calls, latency, stacked, atSite int64
	for _, s := range rec.Profile(recording.ViewIO).Sample {
		if s.Label[recording.LabelSyscall][0] != "fsync" {
			continue
		}
		if got := s.NumLabel[recording.LabelTID][0]; got != id {
			t.Errorf("fsync by tid %d, want %d", got, id)
		}
		calls += s.Value[0]
		latency += s.Value[1]
		names := funcs(s)
		if len(names) == 1 && names[0] == frameShortCalls {
			continue
		}
		stacked += s.Value[1]
		if callerOf(names, "fsync") == "flush_journal" {
			atSite += s.Value[1]
		}
	}
	if calls == 0 || latency == 0 {
		t.Fatalf("no fsync recorded")
	}
	if stacked < latency/2 || atSite < stacked*9/10 {
		t.Errorf("fsync latency %d ns, %d with a stack, %d from flush_journal", latency, stacked, atSite)
	}
	var events int
	for _, e := range rec.Events {
		if e.Kind == recording.EventIO && e.Syscall == "fsync" && e.TID == int(id) && e.Dur > 0 {
			events++
		}
	}
	if events == 0 {
		t.Error("no fsync interval in the event log")
	}
}

func TestStopDetachesAndIsIdempotent(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/cmutex.c", "-O2", "-g")
	p := testbin.Start(t, bin, "2")
	pid := mustPID(t, p)
	progs0, links0 := testbin.BPFObjects(t, os.Getpid())
	// A window needs history to reach back (Options.History); without
	// it a Snapshot holds only the second under way, empty right after
	// it rolls over.
	s, err := Start(context.Background(), Options{PID: pid, History: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	progs1, links1 := testbin.BPFObjects(t, os.Getpid())
	newProgs, newLinks := minus(progs1, progs0), minus(links1, links0)
	if len(newProgs) == 0 || len(newLinks) == 0 {
		t.Fatalf("session holds %d programs and %d links, want some of each", len(newProgs), len(newLinks))
	}
	// Long enough for the history to hold a snapshot a full window before
	// the end even when attaching was slow (a loaded machine, the race
	// detector): the session's clock starts before the probes attach, and
	// history snapshots come once a second after that.
	time.Sleep(3 * time.Second)
	win := s.Snapshot(time.Second)
	// A window starts at the last history step (deltaEvery apart) a full
	// window before its end, plus however late a drain runs: at most a
	// window, a step and a drain period and a half, well short of the
	// whole session (over 3 s by now).
	if most := time.Second + s.deltaEvery + drainEvery*3/2; win.Meta.Duration <= 0 || win.Meta.Duration > most {
		t.Errorf("1s window covers %s, want at most %s", win.Meta.Duration, most)
	}
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	rec2, err := s.Stop()
	if err != nil || rec2 != rec {
		t.Errorf("second Stop returned %p, %v; want the same recording", rec2, err)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	if rec.Meta.Partial {
		t.Errorf("recording without duration stopped by Stop marked partial: %s", rec.Meta.PartialReason)
	}
	testbin.CheckBPFGone(t, newProgs, newLinks)
	if !p.Running() {
		t.Error("target stopped running")
	}
	checkRoundTrip(t, rec)
}

func minus(a, b []uint32) []uint32 {
	seen := map[uint32]bool{}
	for _, x := range b {
		seen[x] = true
	}
	var out []uint32
	for _, x := range a {
		if !seen[x] {
			out = append(out, x)
		}
	}
	return out
}

func TestTargetExitGivesPartialRecording(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/sleeper.c", "-O2", "-g")
	// The target lives until the probes are attached and have seen it:
	// a fixed life lets a loaded machine's slow attach outlast it.
	p := testbin.Start(t, bin, "0")
	pid := mustPID(t, p)
	s, err := Start(context.Background(), Options{PID: pid, Duration: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	testbin.WaitUntil(t, "an event of the sleeping target", func() bool { return s.Stats().Events > 0 })
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("recording still ran 20 s after the target exited")
	}
	t.Logf("the recording ended %s after the target was killed", time.Since(start).Round(time.Millisecond))
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Meta.Partial || !strings.Contains(rec.Meta.PartialReason, "exited") {
		t.Errorf("partial %v (%q), want partial because the target exited", rec.Meta.Partial, rec.Meta.PartialReason)
	}
	if off := rec.Profile(recording.ViewOffCPU); off == nil || len(off.Sample) == 0 {
		t.Error("partial recording holds no off-CPU data")
	}
	checkRoundTrip(t, rec)
}

func TestNoSuchProcess(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/sleeper.c", "-O2", "-g")
	p := testbin.Start(t, bin, "1")
	pid := mustPID(t, p)
	<-p.Exited()
	_, err := Start(context.Background(), Options{PID: pid})
	if !errors.Is(err, ErrNoProcess) {
		t.Errorf("Start on an exited pid: %v, want ErrNoProcess", err)
	}
}

func TestThreadsStartedDuringRecording(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/cmutex.c", "-O2", "-g")
	p := testbin.Start(t, bin, "3", "1500")
	pid := mustPID(t, p)
	rec := recordFor(t, Options{PID: pid, Duration: 3500 * time.Millisecond, Probes: []string{ProbeFutex, ProbeSched}})
	tids := tidSet(t, p, 3)
	waited := map[int64]bool{}
	for _, s := range rec.Profile(recording.ViewFutexWait).Sample {
		waited[s.NumLabel[recording.LabelTID][0]] = true
	}
	switched := map[int64]bool{}
	for _, s := range rec.Profile(recording.ViewOffCPU).Sample {
		switched[s.NumLabel[recording.LabelTID][0]] = true
	}
	for tid := range tids {
		if !waited[tid] || !switched[tid] {
			t.Errorf("worker %d started during the recording: futex waits %v, off-CPU %v", tid, waited[tid], switched[tid])
		}
	}
}

// waitBlocked waits until thread tid of pid sleeps in syscall nr.
func waitBlocked(t *testing.T, pid int, tid string, nr string) {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/task/%s/syscall", pid, tid)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasPrefix(string(b), nr+" ") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("thread %s never blocked in syscall %s", tid, nr)
}

func TestWaitsInProgress(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/holdlock.c", "-O2", "-g")
	// The late waiter blocks lateDelay after the program starts: well
	// after the probes attach (a fraction of a second), well before the
	// recording ends.
	const lateDelay = 3 * time.Second
	started := time.Now()
	p := testbin.Start(t, bin, strconv.Itoa(int(lateDelay/time.Millisecond)))
	pid := mustPID(t, p)
	lock, err := p.Value("lock", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := p.Value("owner", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	early, err := p.Value("early", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The early waiter is asleep in futex (202) before recording starts.
	waitBlocked(t, pid, early, "202")
	const dur = 4500 * time.Millisecond
	rec := recordFor(t, Options{PID: pid, Duration: dur, Probes: []string{ProbeFutex, ProbeSched}})
	late, err := p.Value("late", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n := rec.Meta.Counters["info_open_at_attach"]; n != 1 {
		t.Errorf("info_open_at_attach = %d, want 1: the early waiter only", n)
	}
	delays := map[string]int64{}
	for _, s := range rec.Profile(recording.ViewFutexWait).Sample {
		if len(s.NumLabel[recording.LabelInProgress]) == 0 {
			continue
		}
		tid := strconv.FormatInt(s.NumLabel[recording.LabelTID][0], 10)
		// The stack is unwound from a copy taken while the thread
		// waits: from /proc's registers for the early waiter, from the
		// probe's for the late one.
		want := map[string]string{early: "early", late: "late"}[tid]
		if c := callerOf(funcs(s), "pthread_mutex_lock"); c != want {
			t.Errorf("in-progress wait of %s has frames %v, want %s calling pthread_mutex_lock", tid, funcs(s), want)
		}
		if s.Label[recording.LabelLock][0] != lock || strconv.FormatInt(s.NumLabel[recording.LabelOwner][0], 10) != owner {
			t.Errorf("in-progress wait of %s: lock %v owner %v, want %s behind %s", tid, s.Label[recording.LabelLock], s.NumLabel[recording.LabelOwner], lock, owner)
		}
		delays[tid] += s.Value[1]
	}
	got := rec.Meta.Duration
	if d := time.Duration(delays[early]); d < got-100*time.Millisecond || d > got {
		t.Errorf("early waiter (blocked before the recording): %v in progress of a %v recording", d, got)
	}
	// The late waiter blocked during the recording, lateDelay after the
	// program started (and the program started after started): at most
	// until the recording's end from then, less only the program's own
	// start-up. The attach's duration does not enter: it varies with the
	// machine's load and the race detector.
	const startSlack = 500 * time.Millisecond
	most := rec.Meta.Start.Add(got).Sub(started.Add(lateDelay))
	if d := time.Duration(delays[late]); d > most || d < most-startSlack || d >= time.Duration(delays[early]) {
		t.Errorf("late waiter: %v in progress of a %v recording (the early one %v), want at most %v and at least %v", d, got, time.Duration(delays[early]), most, most-startSlack)
	}
	for _, ls := range rec.Locks {
		if fmt.Sprintf("0x%x", ls.Addr) != lock {
			continue
		}
		if ls.InProgress != 2 || ls.Waits < 2 || len(ls.Waiters) != 2 || time.Duration(ls.WaitNS) < got {
			t.Errorf("lock stat %+v: want two waits in progress by two waiters", ls)
		}
		return
	}
	t.Errorf("lock %s missing from locks.json", lock)
}

// TestStackHashTellsCallersApart checks that two call paths whose frames
// differ only in one return address two frames up get different stacks.
func TestStackHashTellsCallersApart(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/twocallers.c", "-O2", "-g", "-fno-omit-frame-pointer", "-fno-ipa-icf")
	p := testbin.Start(t, bin)
	pid := mustPID(t, p)
	rec := recordFor(t, Options{PID: pid, Duration: 2 * time.Second, Probes: []string{ProbeSched}})
	var total, alpha, beta int64
	for _, s := range rec.Profile(recording.ViewOffCPU).Sample {
		if s.Label[recording.LabelState][0] != recording.StateSleeping {
			continue
		}
		total += s.Value[1]
		names := strings.Join(funcs(s), " ")
		switch {
		case strings.Contains(names, "via_alpha") && !strings.Contains(names, "via_beta"):
			alpha += s.Value[1]
		case strings.Contains(names, "via_beta") && !strings.Contains(names, "via_alpha"):
			beta += s.Value[1]
		}
	}
	// Each path sleeps half the time; stacks told apart by fewer frames
	// would give one path's sleeps to the other.
	if total == 0 || alpha < total*35/100 || beta < total*35/100 {
		t.Errorf("sleeping time %v: %v through via_alpha, %v through via_beta; want about half each", time.Duration(total), time.Duration(alpha), time.Duration(beta))
	}
}

// TestOffCPURunqMatchesFtrace holds the off-CPU view's run-queue time to
// ftrace's account of the same sleeps (schedTrace.runq): four threads that
// share one mutex on two CPUs. With long holds they mostly sleep on the
// mutex and are woken by its handover, often onto an idle CPU; with short
// ones they mostly queue for a CPU when preempted. A few hundred of their
// sleeps in 3 s are woken before the switch-out that starts them is
// traced, their run-queue time the scheduler's record
// (info_wake_sched_offcpu); too few to tell that record's part (c/churn
// bad, 80 % of whose sleeps are woken so, was checked by hand, docs/how-it-works.md).
//
// The kernel's own run delay (/proc/PID/task/TID/schedstat) is not the
// measure: it starts at the enqueue, while the view, like ftrace's
// sched_waking, starts at the wake, and a wake that has to bring an idle
// CPU out of its halt takes tens of microseconds on this VM before the
// enqueue. With long holds schedstat gave 0.42-0.58 s/s where ftrace from
// the wake gave 0.83-0.84 and the view 0.83-1.1 (this test's first form
// compared with schedstat and failed in CI: 0.854 against 0.697).
func TestOffCPURunqMatchesFtrace(t *testing.T) {
	requireRoot(t)
	for _, hold := range []string{"20000", "200"} {
		t.Run("hold="+hold, func(t *testing.T) {
			bin := testbin.C(t, "testdata/cmutex.c", "-O2", "-g", "-DHOLD_ITERS="+hold)
			p := testbin.Start(t, bin, "4")
			pid := mustPID(t, p)
			tids := tidSet(t, p, 4)
			tr := startSchedTrace(t, tids)
			rec := recordFor(t, Options{PID: pid, Duration: 3 * time.Second, Probes: []string{ProbeFutex, ProbeSched}})
			from, to := rec.Meta.Start, rec.Meta.Start.Add(rec.Meta.Duration)
			truth, n := tr.runq(t, tids, from, to)
			// The probes stopped somewhere in the last silence of the
			// window (the end's clock read on both sides of taking the
			// processes out of the target set): ftrace's figures up to
			// its start are the least the recording may hold.
			silence := time.Duration(rec.Meta.Counters["info_end_silence_ns"])
			truthEarly, nEarly := tr.runq(t, tids, from, to.Add(-silence))
			var runq, switches int64
			for _, s := range rec.Profile(recording.ViewOffCPU).Sample {
				if tids[s.NumLabel[recording.LabelTID][0]] {
					switches += s.Value[0]
					runq += s.Value[2]
				}
			}
			unseen := int64(rec.Meta.Counters["drop_switch_in_unseen"])
			t.Logf("run-queue time of the 4 threads over %s: %v recorded over %d switch-ins (%d more unseen, counted lost), %v by ftrace over %d (%v over %d up to the end's silence of %v); sleeps with an unseen wake given the scheduler's record: %d",
				rec.Meta.Duration, time.Duration(runq), switches, unseen, truth, n, truthEarly, nEarly, silence, rec.Meta.Counters["info_wake_sched_offcpu"])
			// Both count a sleep whole by its switch-in, but the
			// window's edges are mapped from the wall clock to the
			// trace's, and the probes and ftrace read the clock at
			// different points of the same tracepoints (here the
			// run-queue time agreed within 2 %): 10 % either way.
			//
			// The switch-ins seen, with those counted lost, come within
			// 0-3 of ftrace's (of 3,800-65,000 in 3 s). A switch-in no
			// program saw is one the kernel does not trace at all on
			// this VM (a switch away from a thread of its init
			// process, for ftrace as for BPF), so ftrace misses it too.
			// The bound is 2 %, from ftrace's count up to the start of
			// the end's silence (the recorder's thread can be preempted
			// while it takes the processes out of the target set, for
			// hundreds of milliseconds on a loaded machine: 7 % of the
			// switch-ins once) to its count up to the end. 2 %
			// is 60 ms at the 1,300 switch-ins a second of short holds;
			// the recordings end 0.2-1.3 ms after they were due, and
			// before (the whole 65,536-word set emptied first, then the
			// clock read) 13-40 ms after, with 0.2-2.7 % fewer
			// switch-ins than ftrace's.
			if truth <= 0 || float64(runq) < 0.9*float64(truthEarly) || float64(runq) > 1.1*float64(truth) {
				t.Errorf("off-CPU run-queue time %v, ftrace's %v (%v up to the end's silence): want within 10 %%", time.Duration(runq), truth, truthEarly)
			}
			if seen := float64(switches + unseen); seen < float64(nEarly)-0.02*float64(n) || seen > 1.02*float64(n) {
				t.Errorf("off-CPU view saw %d switch-ins of the 4 threads (and %d counted lost), ftrace %d (%d up to the end's silence): want within 2 %%", switches, unseen, n, nEarly)
			}
		})
	}
}

// TestCountersBatchMatchesLookups reads the kernel counters of a session
// recording a lock convoy both ways, in one batch and one lookup per
// counter (and its calls in progress, in batches), and checks that every counter lands under its own name: the
// per-lookup values read after the batch can only be equal or larger,
// and the event counters that moved must have moved in both.
func TestCountersBatchMatchesLookups(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/cmutex.c", "-O2", "-g")
	p := testbin.Start(t, bin, "4")
	pid := mustPID(t, p)
	s, err := Start(context.Background(), Options{PID: pid})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	bt, ok := s.tr.(*bpfTracer)
	if !ok {
		t.Fatalf("session tracer is %T, want the BPF tracer", s.tr)
	}
	var batch []uint64
	for deadline := time.Now().Add(20 * time.Second); ; {
		bt.drainMu.Lock()
		batch, err = bt.readCounters()
		bt.drainMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if bt.noBatch {
			t.Fatal("this kernel (6.x) has batch map operations, but the batch read fell back to lookups")
		}
		if batch[slices.Index(bt.counters, "ev_futex_wait")] > 0 && batch[slices.Index(bt.counters, "ev_switch")] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no futex waits and switches counted within 20s of a convoy")
		}
		time.Sleep(50 * time.Millisecond)
	}
	bt.drainMu.Lock()
	_, err = bt.openCalls()
	fell := bt.noBatch
	bt.drainMu.Unlock()
	if err != nil || fell {
		t.Errorf("calls in progress: error %v, read without batches %v: want one batch read", err, fell)
	}
	m := bt.shared["ct_counters"]
	var perCPU []uint64
	for i, name := range bt.counters {
		if name == "" {
			continue
		}
		if err := m.Lookup(uint32(i), &perCPU); err != nil {
			t.Fatal(err)
		}
		var sum uint64
		for _, v := range perCPU {
			sum += v
		}
		if sum < batch[i] || batch[i] == 0 && sum > 1000 {
			t.Errorf("%s: %d in the batch, %d by lookup just after", name, batch[i], sum)
		}
	}
}
