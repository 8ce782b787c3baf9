//go:build linux && amd64

package collector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// Integration tests of target selection: several processes, processes that
// come and go, shared futexes, thread churn. They load the probes (root).

// commOf returns the process name the kernel gives an executable: the
// first 15 bytes of its file name.
func commOf(bin string) string {
	c := filepath.Base(bin)
	if len(c) > commMax {
		c = c[:commMax]
	}
	return c
}

// processOf returns the recording's entry for pid, or nil.
func processOf(rec *recording.Recording, pid int) *recording.Process {
	for i := range rec.Meta.Processes {
		if rec.Meta.Processes[i].PID == pid {
			return &rec.Meta.Processes[i]
		}
	}
	return nil
}

// TestSharedMutexAcrossProcesses records forked processes that contend on
// one PTHREAD_PROCESS_SHARED mutex, by name: every process is recorded,
// and their waits on the mutex are one lock, identified by its shared
// mapping.
func TestSharedMutexAcrossProcesses(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/shmmutex.c", "-O2", "-g")
	p := testbin.Start(t, bin, "3", "60")
	parent := mustPID(t, p)
	children := mustValues(t, p, "child", 3)
	lock, err := p.Value("lock", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rec := recordFor(t, Options{Target: Target{Comm: commOf(bin)}, Duration: 2 * time.Second})
	if len(rec.Meta.Processes) < 4 {
		t.Fatalf("recorded %d processes, want the parent and its 3 children: %+v", len(rec.Meta.Processes), rec.Meta.Processes)
	}
	for _, pid := range append([]string{strconv.Itoa(parent)}, children...) {
		n, _ := strconv.Atoi(pid)
		if processOf(rec, n) == nil {
			t.Errorf("process %d not recorded", n)
		}
	}
	if rec.Meta.Target == nil || rec.Meta.Target.Comm != commOf(bin) {
		t.Errorf("meta target %+v", rec.Meta.Target)
	}

	// locks.json: one entry per child, one identity.
	byKey := map[string][]recording.LockStat{}
	for _, ls := range rec.Locks {
		if fmt.Sprintf("0x%x", ls.Addr) == lock && ls.Shared != nil {
			byKey[ls.Key] = append(byKey[ls.Key], ls)
		}
	}
	if len(byKey) != 1 {
		t.Fatalf("shared lock %s under %d identities, want 1: %+v", lock, len(byKey), byKey)
	}
	for key, stats := range byKey {
		if !strings.HasPrefix(key, "shared:") || len(stats) < 2 {
			t.Errorf("identity %q held by %d processes, want a shared identity in several", key, len(stats))
		}
		var blocked uint64
		for _, ls := range stats {
			blocked += ls.Blocked
			if ls.Shared.Inode == 0 || !strings.Contains(ls.Name, "+0x") {
				t.Errorf("lock of pid %d: shared %+v name %q, want its mapping", ls.PID, ls.Shared, ls.Name)
			}
		}
		if blocked == 0 {
			t.Errorf("no wait on the shared lock blocked: %+v", stats)
		}
	}

	// futex-wait samples carry each process's pid and the one identity.
	pids := map[int64]bool{}
	keys := map[string]bool{}
	for _, s := range rec.Profile(recording.ViewFutexWait).Sample {
		if len(s.Label[recording.LabelLock]) == 0 || s.Label[recording.LabelLock][0] != lock {
			continue
		}
		pids[s.NumLabel[recording.LabelPID][0]] = true
		keys[s.Label[recording.LabelLockKey][0]] = true
		if c := callerOf(funcs(s), "pthread_mutex_lock"); c != "update_shared" && c != "" {
			t.Errorf("wait through %s, want update_shared: %v", c, funcs(s))
		}
	}
	if len(pids) < 2 || len(keys) != 1 {
		t.Errorf("futex-wait samples of the shared lock: pids %v, lock keys %v; want several pids, one key", pids, keys)
	}
}

// TestProcessExitsMidRecording records two processes; one exits halfway:
// the other goes on, and the recording says when the first left.
func TestProcessExitsMidRecording(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/sleeper.c", "-O2", "-g")
	a := testbin.Start(t, bin, "0")
	b := testbin.Start(t, bin, "0")
	pa, pb := mustPID(t, a), mustPID(t, b)
	s, err := Start(context.Background(), Options{Target: Target{PIDs: []int{pa, pb}}, Duration: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	syscall.Kill(pa, syscall.SIGKILL)
	<-s.Done()
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, rec)
	if rec.Meta.Partial {
		t.Errorf("recording partial (%s): one process of two exited, the other ran to the end", rec.Meta.PartialReason)
	}
	left := processOf(rec, pa)
	if left == nil || !left.Exited || left.Left < 500*time.Millisecond || left.Left > rec.Meta.Duration-500*time.Millisecond {
		t.Errorf("exited process: %+v in a %s recording, want it gone about a second in", left, rec.Meta.Duration)
	}
	if stay := processOf(rec, pb); stay == nil || stay.Left != 0 || stay.Exited {
		t.Errorf("surviving process: %+v", stay)
	}
	// The survivor's sleeps are recorded to the end.
	var sleptB int64
	for _, smp := range rec.Profile(recording.ViewOffCPU).Sample {
		if smp.NumLabel[recording.LabelPID][0] == int64(pb) {
			sleptB += smp.Value[1]
		}
	}
	if time.Duration(sleptB) < rec.Meta.Duration/2 {
		t.Errorf("surviving process slept %s in a %s recording", time.Duration(sleptB), rec.Meta.Duration)
	}

	// When every process named is gone, the recording ends, partial.
	s2, err := Start(context.Background(), Options{Target: Target{PIDs: []int{pb}}, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	syscall.Kill(pb, syscall.SIGKILL)
	select {
	case <-s2.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the recording outlived its only process")
	}
	rec2, _ := s2.Stop()
	if !rec2.Meta.Partial || !strings.Contains(rec2.Meta.PartialReason, "exited") {
		t.Errorf("recording of an exited process: partial %v (%q)", rec2.Meta.Partial, rec2.Meta.PartialReason)
	}
}

// TestMissingPIDNothingAttached gives a list with a pid that does not
// exist: the error names it, and nothing was loaded.
func TestMissingPIDNothingAttached(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/sleeper.c", "-O2", "-g")
	p := testbin.Start(t, bin, "0")
	pid := mustPID(t, p)
	const missing = 1<<22 - 7 // above any pid_max in use: never a process
	progs0, links0 := testbin.BPFObjects(t, os.Getpid())
	_, err := Start(context.Background(), Options{Target: Target{PIDs: []int{pid, missing}}, Duration: time.Second})
	if !errors.Is(err, ErrNoProcess) || !strings.Contains(err.Error(), strconv.Itoa(missing)) {
		t.Fatalf("Start with pid %d missing: %v, want ErrNoProcess naming it", missing, err)
	}
	progs1, links1 := testbin.BPFObjects(t, os.Getpid())
	if len(progs1) != len(progs0) || len(links1) != len(links0) {
		t.Errorf("BPF programs %d -> %d, links %d -> %d after a refused start", len(progs0), len(progs1), len(links0), len(links1))
	}
}

// TestCommFollowsNewProcesses starts recording a name before any process
// has it: the process started afterwards, and its forked children, join.
func TestCommFollowsNewProcesses(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/shmmutex.c", "-O2", "-g")
	// A minute, far longer than the processes take to start on a loaded
	// machine: the test stops the recording once all of them joined.
	s, err := Start(context.Background(), Options{Target: Target{Comm: commOf(bin)}, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // so that joining "after the start" is measurable
	p := testbin.Start(t, bin, "2", "60")
	parent := mustPID(t, p)
	children := mustValues(t, p, "child", 2)
	waitJoined(t, s, append([]string{strconv.Itoa(parent)}, children...))
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append([]string{strconv.Itoa(parent)}, children...) {
		pid, _ := strconv.Atoi(c)
		pr := processOf(rec, pid)
		if pr == nil || pr.Joined < 300*time.Millisecond {
			t.Errorf("process %s: %+v, want it joined after the start", c, pr)
		}
	}
	if rec.Meta.PID != parent && rec.Meta.PID == 0 {
		t.Errorf("meta pid %d: the first process to join stands for the target", rec.Meta.PID)
	}

	// A name nobody has: the recording waits its duration and says so.
	_, err = Record(context.Background(), Options{Target: Target{Comm: "no-such-comm-x"}, Duration: time.Second}, nil)
	if !errors.Is(err, ErrNoProcess) || !strings.Contains(err.Error(), "no-such-comm-x") {
		t.Errorf("--comm matching nothing: %v, want ErrNoProcess naming it", err)
	}
}

// TestCgroupTarget records the processes of a cgroup v2 directory: one
// moved in before, and the children it forks while recording.
func TestCgroupTarget(t *testing.T) {
	requireRoot(t)
	mount := cgroupMount()
	var st syscall.Statfs_t
	if err := syscall.Statfs(mount, &st); err != nil || st.Type != 0x63677270 { // CGROUP2_SUPER_MAGIC
		if os.Getenv("CI") != "" {
			t.Fatalf("no cgroup v2 hierarchy at %s", mount)
		}
		t.Skipf("no cgroup v2 hierarchy at %s", mount)
	}
	name := fmt.Sprintf("contend-test-%d", os.Getpid())
	dir := filepath.Join(mount, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := testbin.C(t, "testdata/shmmutex.c", "-O2", "-g")
	var procs []*testbin.Proc
	t.Cleanup(func() {
		for _, p := range procs {
			if pid, err := p.Value("pid", 0); err == nil {
				n, _ := strconv.Atoi(pid)
				syscall.Kill(-n, syscall.SIGKILL)
				syscall.Kill(n, syscall.SIGKILL)
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for os.Remove(dir) != nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	})
	// One process moved into the cgroup before the recording (0 children:
	// it only sleeps).
	p := testbin.Start(t, bin, "0", "60")
	procs = append(procs, p)
	before := mustPID(t, p)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(before)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A minute, far longer than the processes take to start on a loaded
	// machine: the test stops the recording once all of them joined.
	s, err := Start(context.Background(), Options{Target: Target{Cgroup: name}, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // so that joining "while recording" is measurable
	// A shell moves itself into the cgroup and execs the helper, which
	// forks: both arrive while recording.
	q := testbin.Start(t, "/bin/sh", "-c", fmt.Sprintf("echo $$ > %s/cgroup.procs && exec %s 2 60", dir, bin))
	procs = append(procs, q)
	later := mustPID(t, q)
	kids := mustValues(t, q, "child", 2)
	waitJoined(t, s, append([]string{strconv.Itoa(before), strconv.Itoa(later)}, kids...))
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Meta.Target == nil || rec.Meta.Target.Cgroup != name {
		t.Errorf("meta target %+v", rec.Meta.Target)
	}
	if pr := processOf(rec, before); pr == nil || pr.Joined != 0 {
		t.Errorf("process in the cgroup from the start: %+v", pr)
	}
	for _, c := range append([]string{strconv.Itoa(later)}, kids...) {
		pid, _ := strconv.Atoi(c)
		if pr := processOf(rec, pid); pr == nil || pr.Joined == 0 {
			t.Errorf("process %s started in the cgroup while recording: %+v", c, pr)
		}
	}
}

// maxChurnUnseen is the share of TestChurnNothingLost's waits or
// switches allowed to be lost for the VM's reasons (see the test).
const maxChurnUnseen = 0.001

// TestChurnNothingLost records a program that starts 3,000 threads, 16 at
// a time, each making 200 futex waits that sleep until their timeout:
// every wait is counted, as a timeout, no counter reports a loss, and the
// exited threads are folded.
func TestChurnNothingLost(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "testdata/churnwait.c", "-O2", "-g")
	goFile := filepath.Join(t.TempDir(), "go")
	p := testbin.Start(t, bin, goFile, "3000", "16", "200")
	pid := mustPID(t, p)
	word, err := p.Value("word", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), Options{Target: Target{PIDs: []int{pid}}, Probes: []string{ProbeFutex, ProbeSched}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waits, err := p.Value("waits", 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sleeps, err := p.Value("slept", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-s.Done() // the program exits after printing
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, rec)
	timeouts, _ := strconv.ParseInt(waits, 10, 64)
	want, _ := strconv.ParseInt(sleeps, 10, 64)
	if timeouts < 3000*200*9/10 || want < timeouts*9/10 {
		t.Fatalf("the program's waits timed out %d times of 600000, %d of them after a sleep", timeouts, want)
	}
	var got, folded int64
	for _, smp := range rec.Profile(recording.ViewFutexWait).Sample {
		if smp.Label[recording.LabelLock][0] != word || len(smp.NumLabel[recording.LabelInProgress]) > 0 {
			continue
		}
		got += smp.Value[0]
		if len(smp.NumLabel[recording.LabelThreads]) > 0 {
			folded += smp.NumLabel[recording.LabelThreads][0]
		}
	}
	// A wait whose 20 µs timer fires before its thread reaches the
	// scheduler (the thread was preempted on its way into the call, or
	// the hypervisor took its CPU) returns ETIMEDOUT without sleeping,
	// and the probes, which see waits as sleeps, do not count it: 40 to
	// 700 of 600,000 on this VM. The program tells those apart by its
	// thread's voluntary context switches, and every wait that slept is
	// recorded.
	if got > want || float64(got) < float64(want)*(1-maxChurnUnseen) {
		t.Errorf("recorded %d waits on %s, the program's waits timed out %d times, %d after a sleep", got, word, timeouts, want)
	}
	// A wait whose wake the probes did not see takes its run-queue time
	// from the scheduler's record and counts as a timeout
	// (info_wake_sched_futex): on this machine 2 to 964 of these
	// 600,000 timer wakes came in interrupts over the VM's init
	// process, where no BPF program runs. Only without that record is
	// it a loss (drop_wake_unseen), counted, and held to the same
	// 0.1 %.
	unseen := rec.Meta.Counters["drop_wake_unseen"]
	t.Logf("%d timeouts, %d after a sleep; %d waits recorded, %d of them with no wake seen and no run-queue record, %d with the scheduler's record", timeouts, want, got, unseen, rec.Meta.Counters["info_wake_sched_futex"])
	if float64(unseen) > float64(want)*maxChurnUnseen {
		t.Errorf("drop_wake_unseen = %d of %d waits, want at most %.1f %%", unseen, want, 100*maxChurnUnseen)
	}
	// A switch-in no program saw (drop_switch_in_unseen: the same VM's
	// property, 4-14 in a few seconds here) loses that time off CPU; it
	// is counted, and held to 0.1 % of the switches.
	switches, missed := rec.Meta.Counters["ev_switch"], rec.Meta.Counters["drop_switch_in_unseen"]
	if float64(missed) > float64(switches)*maxChurnUnseen {
		t.Errorf("drop_switch_in_unseen = %d of %d switches, want at most %.1f %%", missed, switches, 100*maxChurnUnseen)
	}
	for k, v := range rec.Meta.Counters {
		if strings.HasPrefix(k, recording.CounterDropPrefix) && k != "drop_wake_unseen" && k != "drop_switch_in_unseen" && v > 0 {
			t.Errorf("%s = %d", k, v)
		}
	}
	if folded < 2000 {
		t.Errorf("%d exited threads folded into the wait samples, want most of the 3000", folded)
	}
	found := false
	for _, ls := range rec.Locks {
		if fmt.Sprintf("0x%x", ls.Addr) != word {
			continue
		}
		found = true
		// A thread whose waits on the word all reach the collector
		// after its exit was folded is not counted (foldAgain); a
		// handful of 3,000 at most.
		t.Logf("lock %s: %d distinct waiters seen", word, ls.WaitersSeen)
		if ls.WaitersSeen < 2900 || ls.WaitersSeen > 3003 {
			t.Errorf("lock %s: %d distinct waiters seen, want the 3000 threads", word, ls.WaitersSeen)
		}
		// Each wait ends with its timer's wake, and the thread then
		// runs again: part of the wait, never all of it, is run-queue
		// time.
		if ls.RunqNS == 0 || ls.RunqNS >= ls.WaitNS {
			t.Errorf("lock %s: %d ns of its %d ns of waiting runnable, want some and less than all", word, ls.RunqNS, ls.WaitNS)
		}
		// Nobody wakes the word: every wait whose wake was seen
		// timed out, and the unseen ones are all on this word (the
		// program's other futex waits are woken by calls it makes,
		// and those the probes see from the waker's side too; an
		// unseen one there would only make this check stricter).
		if int64(ls.Blocked) != got || ls.Timeouts > ls.Blocked || ls.Blocked-ls.Timeouts > unseen {
			t.Errorf("lock %s: %d blocked, %d timeouts, %d wakes unseen, want the %d waits recorded, each a timeout or unseen", word, ls.Blocked, ls.Timeouts, unseen, got)
		}
	}
	if !found {
		t.Errorf("no lock entry for %s", word)
	}
	if tl := rec.Threads; tl == nil || len(tl.Threads) > 2*maxExitedSeries+100 {
		t.Errorf("timeline of %d threads, want it bounded", len(rec.Threads.Threads))
	}
}

// waitJoined waits until every process in pids (decimal) has joined
// session s, bounded by testbin.WaitUntil's deadline: a test that needs
// processes started while recording waits for them to join rather than
// trusting a fixed recording length to be long enough.
func waitJoined(t *testing.T, s *Session, pids []string) {
	t.Helper()
	testbin.WaitUntil(t, "processes "+strings.Join(pids, ", ")+" join the recording", func() bool {
		s.run.mu.Lock()
		defer s.run.mu.Unlock()
		for _, c := range pids {
			pid, _ := strconv.Atoi(c)
			if p := s.run.procs[uint32(pid)]; p == nil || !p.alive {
				return false
			}
		}
		return true
	})
}

// TestShortLivedProcessesNamedInLibc records processes that live about
// 50 ms, joined by name at their exec: coreutils' sleep(1), started again
// and again by a shell loop through a symlink of the test's own name.
// Their maps are first read at exec, before ld.so maps libc, and they may
// exit before anything reads them again: their sleeps must still be named
// in libc, not left as bare addresses with no program point.
func TestShortLivedProcessesNamedInLibc(t *testing.T) {
	requireRoot(t)
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatalf("no sleep(1): %v", err)
	}
	name := fmt.Sprintf("ctshort%d", os.Getpid()%100000)
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(sleepBin, link); err != nil {
		t.Fatal(err)
	}
	loop := exec.Command("bash", "-c", fmt.Sprintf("end=$((SECONDS+60)); while ((SECONDS < end)); do %q 0.05; done", link))
	loop.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-loop.Process.Pid, syscall.SIGKILL)
		loop.Wait()
	})
	rec := recordFor(t, Options{Target: Target{Comm: name}, Duration: 2 * time.Second})
	named, bare := 0, 0
	for _, e := range rec.Events {
		if e.Kind != recording.EventSleep || e.Stack < 0 || e.Stack >= len(rec.Stacks) {
			continue
		}
		for _, f := range rec.Stacks[e.Stack].Frames {
			if f.Kernel {
				continue
			}
			// The user leaf: clock_nanosleep, in libc.
			switch {
			case f.Module == "libc.so.6":
				named++
			case f.Module == "":
				bare++
			}
			break
		}
	}
	// A process whose task record reaches the collector after the
	// process exited (the reader runs late on a busy machine) has no maps
	// left to read, and its sleeps stay bare: 0 to 4 of about 38 here.
	// Without the join at the task record and the loader's re-read, 6 or
	// 7 of 26 to 29 were named.
	if named < 10 || bare > named/5 {
		t.Errorf("sleeps of short-lived processes: %d with their leaf named in libc, %d bare addresses; want at least 10 named and at most a fifth bare", named, bare)
	}
}
