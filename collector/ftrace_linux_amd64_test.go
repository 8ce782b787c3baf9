package collector

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// schedTrace records the scheduler's events for a set of threads with
// ftrace, in a tracing instance of its own (so that it neither reads nor
// disturbs anyone's global trace buffer): an independent account of when
// each thread was woken, switched out and switched in, for tests to hold
// the probes to. Its timestamps are CLOCK_MONOTONIC (trace_clock mono),
// the clock bpf_ktime_get_ns reads.
type schedTrace struct {
	dir   string
	wall0 time.Time // a wall-clock reading and ...
	mono0 int64     // ... the monotonic one taken with it
}

const tracefsDir = "/sys/kernel/tracing"

// startSchedTrace starts tracing sched_waking, sched_wakeup and
// sched_switch of the threads tids. tracefs is mounted if it is not (CI
// machines may not have it mounted) and unmounted at the test's end; the
// instance is removed then too.
func startSchedTrace(t *testing.T, tids map[int64]bool) *schedTrace {
	t.Helper()
	var st unix.Statfs_t
	if unix.Statfs(tracefsDir, &st) != nil || st.Type != unix.TRACEFS_MAGIC {
		if err := unix.Mount("nodev", tracefsDir, "tracefs", 0, ""); err != nil {
			t.Fatalf("mount tracefs on %s: %v", tracefsDir, err)
		}
		t.Cleanup(func() { unix.Unmount(tracefsDir, 0) })
	}
	dir := filepath.Join(tracefsDir, "instances", fmt.Sprintf("contend-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatalf("ftrace instance: %v", err)
	}
	tr := &schedTrace{dir: dir}
	t.Cleanup(func() {
		tr.write(t, "tracing_on", "0")
		for _, ev := range []string{"sched_waking", "sched_wakeup", "sched_switch"} {
			os.WriteFile(filepath.Join(dir, "events/sched", ev, "enable"), []byte("0"), 0)
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove ftrace instance: %v", err)
		}
	})
	var pid, prev, next []string
	for tid := range tids {
		pid = append(pid, fmt.Sprintf("pid == %d", tid))
		prev = append(prev, fmt.Sprintf("prev_pid == %d", tid))
		next = append(next, fmt.Sprintf("next_pid == %d", tid))
	}
	tr.write(t, "tracing_on", "0")
	tr.write(t, "trace_clock", "mono")
	// Per CPU; an event takes about 64 bytes, and four threads on one
	// lock make about 100,000 switches a second here.
	tr.write(t, "buffer_size_kb", "65536")
	for _, ev := range []string{"sched_waking", "sched_wakeup"} {
		tr.write(t, "events/sched/"+ev+"/filter", strings.Join(pid, " || "))
		tr.write(t, "events/sched/"+ev+"/enable", "1")
	}
	tr.write(t, "events/sched/sched_switch/filter", strings.Join(append(prev, next...), " || "))
	tr.write(t, "events/sched/sched_switch/enable", "1")
	var ts unix.Timespec
	tr.wall0 = time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	tr.mono0 = ts.Nano()
	tr.write(t, "tracing_on", "1")
	return tr
}

func (tr *schedTrace) write(t *testing.T, file, v string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(tr.dir, file), []byte(v), 0); err != nil {
		t.Fatalf("ftrace %s: %v", file, err)
	}
}

// mono maps a wall-clock time to the trace's clock.
func (tr *schedTrace) mono(x time.Time) int64 { return tr.mono0 + int64(x.Sub(tr.wall0)) }

var (
	traceLine = regexp.MustCompile(`\s(\d+)\.(\d{6}): (sched_\w+): (.*)$`)
	tracePID  = regexp.MustCompile(`\bpid=(\d+)`)
	traceSw   = regexp.MustCompile(`prev_pid=(\d+) .*prev_state=(\S+) ==> .*next_pid=(\d+)`)
)

// runq stops the trace and returns the threads' time woken and waiting to
// run, as the off-CPU view defines it, over the sleeps and preemptions
// that end with a switch-in in [from, to): from the switch-out when the
// thread was preempted (it left runnable), else from the first
// sched_waking after its switch-out or, for a sleep woken before its
// switch-out (the waker found it still on its way into the scheduler),
// from the sched_wakeup that queues it after; and the count of such
// switch-ins. A trace that lost events fails the test.
func (tr *schedTrace) runq(t *testing.T, tids map[int64]bool, from, to time.Time) (runq time.Duration, n int) {
	t.Helper()
	tr.write(t, "tracing_on", "0")
	lo, hi := tr.mono(from), tr.mono(to)
	f, err := os.Open(filepath.Join(tr.dir, "trace"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := map[int64]int64{} // thread -> when it became runnable, while off CPU
	off := map[int64]bool{}    // thread -> switched out and not yet back
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "LOST") && strings.Contains(line, "EVENTS") {
			t.Fatalf("ftrace lost events: %s", line)
		}
		m := traceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		usec, _ := strconv.ParseInt(m[2], 10, 64)
		ts := sec*1e9 + usec*1e3
		switch m[3] {
		case "sched_waking", "sched_wakeup":
			p := tracePID.FindStringSubmatch(m[4])
			if p == nil {
				continue
			}
			tid, _ := strconv.ParseInt(p[1], 10, 64)
			if _, ok := start[tid]; !ok && off[tid] {
				start[tid] = ts
			}
		case "sched_switch":
			s := traceSw.FindStringSubmatch(m[4])
			if s == nil {
				continue
			}
			prev, _ := strconv.ParseInt(s[1], 10, 64)
			next, _ := strconv.ParseInt(s[3], 10, 64)
			if tids[prev] {
				off[prev] = true
				delete(start, prev)
				if strings.HasPrefix(s[2], "R") {
					start[prev] = ts
				}
			}
			if tids[next] {
				if b, ok := start[next]; ok && ts >= lo && ts < hi {
					runq += time.Duration(ts - b)
					n++
				}
				delete(start, next)
				off[next] = false
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return runq, n
}
