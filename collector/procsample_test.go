package collector

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// copyTree copies testdata/proc into a fresh directory the test may edit.
func copyTree(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir("testdata/proc", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/proc", path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// fakeThread is what setThread writes for one thread of the fake tree.
type fakeThread struct {
	comm         string
	state        byte
	utime, stime uint64
	start        uint64
	vol, invol   uint64
}

// setThread writes stat and status of thread tid of process 4242 in the
// fake tree at root, keeping every other line of the template thread.
func setThread(t *testing.T, root string, tid int, ft fakeThread) {
	t.Helper()
	tmplStat, err := os.ReadFile("testdata/proc/4242/task/4242/stat")
	if err != nil {
		t.Fatal(err)
	}
	tmplStatus, err := os.ReadFile("testdata/proc/4242/task/4242/status")
	if err != nil {
		t.Fatal(err)
	}
	s := string(tmplStat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	fields[0] = string(ft.state)
	fields[11] = strconv.FormatUint(ft.utime, 10)
	fields[12] = strconv.FormatUint(ft.stime, 10)
	fields[19] = strconv.FormatUint(ft.start, 10)
	stat := fmt.Sprintf("%d (%s) %s\n", tid, ft.comm, strings.Join(fields, " "))
	var status []string
	for _, line := range strings.Split(strings.TrimSuffix(string(tmplStatus), "\n"), "\n") {
		switch k, _, _ := strings.Cut(line, ":"); k {
		case "Name":
			line = "Name:\t" + ft.comm
		case "Pid":
			line = fmt.Sprintf("Pid:\t%d", tid)
		case "voluntary_ctxt_switches":
			line = fmt.Sprintf("voluntary_ctxt_switches:\t%d", ft.vol)
		case "nonvoluntary_ctxt_switches":
			line = fmt.Sprintf("nonvoluntary_ctxt_switches:\t%d", ft.invol)
		}
		status = append(status, line)
	}
	dirs := []string{filepath.Join(root, "4242", "task", strconv.Itoa(tid))}
	if tid == 4242 {
		dirs = append(dirs, filepath.Join(root, "4242"))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "status"), []byte(strings.Join(status, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func removeThread(t *testing.T, root string, tid int) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(root, "4242", "task", strconv.Itoa(tid))); err != nil {
		t.Fatal(err)
	}
}

func TestProcSamplerFakeTree(t *testing.T) {
	root := copyTree(t)
	s, err := NewProcSampler(root, 4242, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.real {
		t.Fatal("a test tree was taken for a procfs mount")
	}
	if err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	// Instant 1: 4243 goes to sleep having used more CPU, 4244 exits, a
	// new thread 4245 appears.
	setThread(t, root, 4243, fakeThread{comm: "w (1) x)", state: 'S', utime: 4010, stime: 14, start: 99010, vol: 4, invol: 905})
	removeThread(t, root, 4244)
	setThread(t, root, 4245, fakeThread{comm: "late", state: 'R', utime: 1, start: 99500, vol: 1})
	if err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	// Instant 2: 4243 has gone too.
	removeThread(t, root, 4243)
	setThread(t, root, 4245, fakeThread{comm: "late-renamed", state: 'R', utime: 11, stime: 2, start: 99500, vol: 1, invol: 7})
	if err := s.Sample(); err != nil {
		t.Fatal(err)
	}

	want := &recording.Timeline{
		Interval:   50 * time.Millisecond,
		ClockTicks: ClockTicks(),
		Samples:    3,
		Threads: []recording.ThreadSeries{
			{PID: 4242, TID: 4242, Comm: "server", First: 0, States: "SSS", UTime: []uint64{150, 150, 150}, STime: []uint64{30, 30, 30}, Voluntary: []uint64{1200, 1200, 1200}, Involuntary: []uint64{45, 45, 45}},
			{PID: 4242, TID: 4243, Comm: "w (1) x)", First: 0, States: "RS", UTime: []uint64{4000, 4010}, STime: []uint64{12, 14}, Voluntary: []uint64{3, 4}, Involuntary: []uint64{900, 905}},
			{PID: 4242, TID: 4244, Comm: "flusher", First: 0, States: "D", UTime: []uint64{20}, STime: []uint64{310}, Voluntary: []uint64{5000}, Involuntary: []uint64{2}},
			{PID: 4242, TID: 4245, Comm: "late-renamed", First: 1, States: "RR", UTime: []uint64{1, 11}, STime: []uint64{0, 2}, Voluntary: []uint64{1, 1}, Involuntary: []uint64{0, 7}},
		},
	}
	got := s.Timeline()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("timeline (-want +got):\n%s", diff)
	}

	// The copy is the caller's: changing it leaves the sampler's alone.
	got.Threads[0].UTime[0] = 999
	if s.Timeline().Threads[0].UTime[0] != 150 {
		t.Error("Timeline returned shared slices")
	}

	// The whole process exits: only a zombie leader is left.
	removeThread(t, root, 4245)
	setThread(t, root, 4242, fakeThread{comm: "server", state: 'Z', utime: 150, stime: 30, start: 99000})
	err = s.Sample()
	if !errors.Is(err, ErrProcessGone) {
		t.Fatalf("sample after exit: got %v, want ErrProcessGone", err)
	}
	if n := s.Timeline().Samples; n != 3 {
		t.Errorf("an instant was recorded for an exited process: %d samples", n)
	}
}

func TestProcSamplerZombieLeaderWithLiveThreads(t *testing.T) {
	// A leader that called pthread_exit stays a zombie while its threads
	// run on: the process is not gone.
	root := copyTree(t)
	s, err := NewProcSampler(root, 4242, 0)
	if err != nil {
		t.Fatal(err)
	}
	setThread(t, root, 4242, fakeThread{comm: "server", state: 'Z', utime: 150, stime: 30, start: 99000})
	if err := s.Sample(); err != nil {
		t.Fatalf("zombie leader with live threads: %v", err)
	}
	if got := s.Timeline().StatesAt(0); got.Other != 1 || got.Threads != 3 {
		t.Errorf("states = %+v, want 3 threads, 1 other (the zombie)", got)
	}
}

func TestProcSamplerVanishingThread(t *testing.T) {
	// A thread listed in task/ whose files are gone by the time they are
	// read (exited in between) is skipped, not an error.
	root := copyTree(t)
	s, err := NewProcSampler(root, 4242, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"stat", "status"} {
		if err := os.Remove(filepath.Join(root, "4242", "task", "4244", f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sample(); err != nil {
		t.Fatalf("sample: %v", err)
	}
	tl := s.Timeline()
	if len(tl.Threads) != 2 {
		t.Errorf("got %d series, want 2 (4244 vanished while read)", len(tl.Threads))
	}
}

func TestProcSamplerPIDReused(t *testing.T) {
	root := copyTree(t)
	s, err := NewProcSampler(root, 4242, 0)
	if err != nil {
		t.Fatal(err)
	}
	setThread(t, root, 4242, fakeThread{comm: "other", state: 'S', start: 123456})
	if err := s.Sample(); !errors.Is(err, ErrProcessGone) {
		t.Fatalf("sample after PID reuse: got %v, want ErrProcessGone", err)
	}
}

func TestProcSamplerWholeDirGone(t *testing.T) {
	root := copyTree(t)
	s, err := NewProcSampler(root, 4242, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "4242")); err != nil {
		t.Fatal(err)
	}
	if err := s.Sample(); !errors.Is(err, ErrProcessGone) {
		t.Fatalf("sample after the process was reaped: got %v, want ErrProcessGone", err)
	}
}

func TestProcSamplerSkippedInstants(t *testing.T) {
	root := copyTree(t)
	s, err := NewProcSampler(root, 4242, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.sampleAt(0); err != nil {
		t.Fatal(err)
	}
	setThread(t, root, 4243, fakeThread{comm: "w (1) x)", state: 'R', utime: 4300, stime: 12, start: 99010, vol: 3, invol: 990})
	if err := s.sampleAt(3); err != nil {
		t.Fatal(err)
	}
	tl := s.Timeline()
	if tl.Samples != 4 {
		t.Fatalf("samples = %d, want 4", tl.Samples)
	}
	w := tl.Threads[1]
	if w.States != "R??R" {
		t.Errorf("states = %q, want R??R", w.States)
	}
	if diff := cmp.Diff([]uint64{4000, 4000, 4000, 4300}, w.UTime); diff != "" {
		t.Errorf("utime carried over skipped instants (-want +got):\n%s", diff)
	}
	if c := tl.StatesAt(1); c.Unsampled != 3 || c.Runnable != 0 {
		t.Errorf("states at a skipped instant = %+v, want 3 unsampled", c)
	}
	// CPU over the whole window is still the real delta.
	if u := tl.Usage(0, 3); u[0].TID != 4243 || u[0].UTime != 300 {
		t.Errorf("usage = %+v, want 4243 first with 300 user ticks", u)
	}
}

func TestNewProcSamplerErrors(t *testing.T) {
	root := copyTree(t)
	// A thread id has its own directory under /proc, but is no process.
	setThread(t, root, 4243, fakeThread{comm: "w", state: 'S', start: 99010})
	if err := os.Rename(filepath.Join(root, "4242", "task", "4243"), filepath.Join(root, "4243")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pid  int
		want string
	}{
		{"missing", 999, "no such process"},
		{"zero", 0, "no such process"},
		{"thread", 4243, "thread of process 4242"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewProcSampler(root, tc.pid, 0)
			if !errors.Is(err, ErrNoProcess) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrNoProcess mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := NewProcSampler(filepath.Join(root, "nowhere"), 4242, 0); err == nil || errors.Is(err, ErrNoProcess) {
		t.Errorf("bad root: got %v, want a plain error", err)
	}
}

func TestProcSamplerBadFiles(t *testing.T) {
	root := copyTree(t)
	s, err := NewProcSampler(root, 4242, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "4242", "task", "4243", "stat"), []byte("4243 (w) R 1 2 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = s.Sample()
	if err == nil || errors.Is(err, ErrProcessGone) || !strings.Contains(err.Error(), "4243") {
		t.Fatalf("truncated stat: got %v, want an error naming thread 4243", err)
	}
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantErr bool
		comm    string
		state   byte
		ut, st  uint64
	}{
		{in: "1 (a b) S 0 1 1 0 -1 0 0 0 0 0 7 8 0 0 20 0 1 0 99 0 0", comm: "a b", state: 'S', ut: 7, st: 8},
		{in: "1 ((x) ) R 0 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 0 0", comm: "(x) ", state: 'R', ut: 1, st: 2},
		{in: "1 (a) S 0 1 1 0 -1 0 0 0 0 0 x 8 0 0 20 0 1 0 99 0 0", wantErr: true},
		{in: "1 (a) S 0 1", wantErr: true},
		{in: "no parens", wantErr: true},
		{in: "1 (a) SS 0 1 1 0 -1 0 0 0 0 0 7 8 0 0 20 0 1 0 99 0 0", wantErr: true},
	} {
		var ps procSample
		err := parseStat([]byte(tc.in), &ps)
		if (err != nil) != tc.wantErr {
			t.Errorf("parseStat(%q): err = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && (string(ps.comm) != tc.comm || ps.state != tc.state || ps.utime != tc.ut || ps.stime != tc.st) {
			t.Errorf("parseStat(%q) = comm %q state %c utime %d stime %d", tc.in, ps.comm, ps.state, ps.utime, ps.stime)
		}
	}
}

func TestParseStatus(t *testing.T) {
	var ps procSample
	err := parseStatus([]byte("Name:\tx\nTgid:\t12\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t6\n"), &ps)
	if err != nil || ps.tgid != 12 || ps.voluntary != 5 || ps.involuntary != 6 {
		t.Errorf("parseStatus = %+v, %v", ps, err)
	}
	if err := parseStatus([]byte("Name:\tx\nTgid:\t12\n"), &ps); err == nil {
		t.Error("status without switch counts parsed")
	}
	if err := parseStatus([]byte("voluntary_ctxt_switches:\t-1\nnonvoluntary_ctxt_switches:\t6\n"), &ps); err == nil {
		t.Error("negative count parsed")
	}
}

// The helper child for the real /proc tests: with CONTEND_PROCSAMPLE_CHILD=N
// it starts N threads parked on a channel (and one spinning with
// CONTEND_PROCSAMPLE_SPIN set), says "ready",
// grows by three threads on each "more" line, and exits at end of input.
func procSampleChild() int {
	n, err := strconv.Atoi(os.Getenv("CONTEND_PROCSAMPLE_CHILD"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "CONTEND_PROCSAMPLE_CHILD is not a number")
		return 2
	}
	block := make(chan struct{})
	park := func(started chan<- struct{}) {
		runtime.LockOSThread()
		started <- struct{}{}
		<-block
	}
	start := func(k int) {
		started := make(chan struct{})
		for range k {
			go park(started)
		}
		for range k {
			<-started
		}
	}
	start(n)
	if os.Getenv("CONTEND_PROCSAMPLE_SPIN") != "" {
		go func() {
			runtime.LockOSThread()
			for x := 0; ; x++ {
				if x < 0 {
					fmt.Print("")
				}
			}
		}()
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "more" {
			// A locked goroutine may take an idle thread: start them
			// until the process has three threads more.
			before := countTasks()
			for countTasks() < before+3 {
				start(1)
			}
			fmt.Println("ok")
		}
	}
	return 0
}

func countTasks() int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		panic(err)
	}
	return len(ents)
}

// child is a running helper process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startHelper runs this test binary as helper process helper (see
// TestMain) with env added, its stdin and stdout piped to the test.
func startHelper(t testing.TB, helper string, env ...string) *child {
	t.Helper()
	cmd := testbin.HelperCmd(helper, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	t.Cleanup(func() {
		c.stdin.Close()
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
	return c
}

func startChild(t testing.TB, threads int, spin bool) *child {
	t.Helper()
	env := []string{fmt.Sprintf("CONTEND_PROCSAMPLE_CHILD=%d", threads)}
	if spin {
		env = append(env, "CONTEND_PROCSAMPLE_SPIN=1")
	}
	c := startHelper(t, "procsample-child", env...)
	c.expect(t, "ready")
	return c
}

func (c *child) expect(t testing.TB, line string) {
	t.Helper()
	for c.out.Scan() {
		if c.out.Text() == line {
			return
		}
	}
	t.Fatalf("helper process ended before saying %q", line)
}

// openFDs counts this process's descriptors open on files of process pid.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, fmt.Sprintf("/proc/%d/", pid)) {
			n++
		}
	}
	return n
}

func TestProcSamplerRealProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		testbin.Skip(t, "no /proc/self/task here")
	}
	c := startChild(t, 8, true)
	pid := c.cmd.Process.Pid
	s, err := NewProcSampler("", pid, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !s.real {
		t.Fatal("/proc not recognised as a procfs mount")
	}
	if err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	first := s.Timeline().ThreadCount(0)
	// 8 parked, 1 spinning, the main thread, plus the runtime's own.
	if first < 10 {
		t.Fatalf("sampled %d threads, want at least 10", first)
	}
	fmt.Fprintln(c.stdin, "more")
	c.expect(t, "ok")
	if err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	tl := s.Timeline()
	if got := tl.ThreadCount(1); got < first+3 {
		t.Errorf("after starting 3 threads: %d threads, want at least %d", got, first+3)
	}
	var born int
	for _, ts := range tl.Threads {
		if ts.First == 1 {
			born++
		}
	}
	if born < 3 {
		t.Errorf("%d series start at instant 1, want at least 3", born)
	}
	// The spinner accumulates user time: wait (bounded) until some thread
	// shows at least one tick between two samples.
	// A spinning thread shares the CPUs with whatever else runs: it gets
	// a clock tick of user time sooner or later, within the deadline.
	testbin.WaitUntil(t, "user CPU time of the spinning thread", func() bool {
		if err := s.Sample(); err != nil {
			t.Fatal(err)
		}
		tl = s.Timeline()
		u := tl.Usage(0, tl.LastInstant())
		return len(u) > 0 && u[0].UTime > 0
	})
	if got := openFDs(t, pid); got < 2*first {
		t.Errorf("%d files of the target open between samples, want stat and status of each of %d threads", got, first)
	}

	// The child exits: the sampler must say the target is gone.
	c.stdin.Close()
	var gone error
	testbin.WaitUntil(t, "the sampler sees the target exit", func() bool {
		gone = s.Sample()
		return gone != nil
	})
	if !errors.Is(gone, ErrProcessGone) {
		t.Fatalf("after the target exited: got %v, want ErrProcessGone", gone)
	}
	s.Close()
	if got := openFDs(t, pid); got != 0 {
		t.Errorf("%d files of the target open after Close, want 0", got)
	}
}

func TestProcSamplerRun(t *testing.T) {
	c := startChild(t, 2, false)
	s, err := NewProcSampler("", c.cmd.Process.Pid, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { done <- s.Run(t.Context(), time.Now()) }()
	// Let a few instants pass, then end the target: Run reports it.
	testbin.WaitUntil(t, "three instants sampled", func() bool { return s.Timeline().Samples >= 3 })
	c.stdin.Close()
	if err := <-done; !errors.Is(err, ErrProcessGone) {
		t.Fatalf("Run after the target exited: got %v, want ErrProcessGone", err)
	}
	tl := s.Timeline()
	for _, ts := range tl.Threads {
		if ts.First+len(ts.States) > tl.Samples {
			t.Errorf("thread %d has samples past the last instant", ts.TID)
		}
	}
}

// BenchmarkProcSample times one sampling instant of a process with 200
// threads, and in the same run the same reads through procfs's Stat and
// NewStatus; "x-procfs" is the sampler's cost as a fraction of that
// baseline.
func BenchmarkProcSample(b *testing.B) {
	c := startChild(b, 198, false)
	pid := c.cmd.Process.Pid
	s, err := NewProcSampler("", pid, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	pfs, err := procfs.NewDefaultFS()
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Sample(); err != nil {
		b.Fatal(err)
	}
	threads := s.Timeline().ThreadCount(0)
	var ours, theirs time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := s.Sample(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		ths, err := pfs.AllThreads(pid)
		if err != nil {
			b.Fatal(err)
		}
		for _, th := range ths {
			if _, err := th.Stat(); err != nil {
				b.Fatal(err)
			}
			if _, err := th.NewStatus(); err != nil {
				b.Fatal(err)
			}
		}
		theirs += time.Since(t1)
		ours += t1.Sub(t0)
	}
	b.ReportMetric(float64(threads), "threads")
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "ns/sample")
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N)/float64(threads), "ns/thread")
	b.ReportMetric(float64(ours)/float64(theirs), "x-procfs")
}

// TestTimelineBounds checks the two bounds of a timeline: the series of
// exited threads beyond maxExitedSeries go, oldest first, and past
// maxTimelineCells the resolution halves.
func TestTimelineBounds(t *testing.T) {
	s := &ProcSampler{
		pid:    9,
		live:   map[int]*procThread{},
		exited: map[int]bool{},
		tl:     recording.Timeline{Interval: 100 * time.Millisecond},
	}
	// Series 0..9, each with three samples from instant k; 0..6 exited in
	// that order; 7..9 alive.
	for k := 0; k < 10; k++ {
		s.tl.Threads = append(s.tl.Threads, recording.ThreadSeries{PID: 9, TID: 100 + k, First: k,
			UTime: []uint64{1, 2, 3}, STime: []uint64{0, 0, 0}, Voluntary: []uint64{4, 5, 6}, Involuntary: []uint64{0, 0, 1}})
		s.states = append(s.states, []byte("RSR"))
		s.cells += 3
		if k < 7 {
			s.exited[k] = true
			s.exitOrder = append(s.exitOrder, k)
		} else {
			s.live[100+k] = &procThread{tid: 100 + k, series: k, stat: -1, status: -1}
		}
	}
	s.tl.Samples = 12
	s.dropExited(4)
	tl := s.Timeline()
	if len(tl.Threads) != 6 || tl.Threads[0].TID != 104 || tl.DroppedThreads != 4 || s.cells != 18 {
		t.Fatalf("after dropping 4: %d series, first %d, dropped %d, cells %d", len(tl.Threads), tl.Threads[0].TID, tl.DroppedThreads, s.cells)
	}
	if s.live[108].series != 4 || s.exitOrder[0] != 0 || len(s.exitOrder) != 3 {
		t.Errorf("live series index %d, exit order %v: not renumbered", s.live[108].series, s.exitOrder)
	}

	s.halve()
	tl = s.Timeline()
	if tl.Interval != 200*time.Millisecond || tl.Samples != 6 {
		t.Errorf("halved: interval %s, %d samples; want 200ms and 6", tl.Interval, tl.Samples)
	}
	// Series 104 had instants 4, 5, 6: the even ones (4, 6) stay, as
	// instants 2 and 3.
	if s0 := tl.Threads[0]; s0.First != 2 || s0.States != "RR" || len(s0.UTime) != 2 || s0.UTime[1] != 3 {
		t.Errorf("halved series %+v", s0)
	}
	// Series 105 (instants 5, 6, 7) keeps instant 6 only.
	if s1 := tl.Threads[1]; s1.First != 3 || s1.States != "S" || s1.Voluntary[0] != 5 {
		t.Errorf("halved odd series %+v", s1)
	}
	if s.cells != 2+1+2+1+2+1 {
		t.Errorf("cells %d after halving", s.cells)
	}
}
