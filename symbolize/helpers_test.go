package symbolize

import (
	"bufio"
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

	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// requireRoot skips a test that needs root (ptrace of any thread,
// kallsyms addresses), and fails it when CI is set: CI runs as root.
func requireRoot(t testing.TB) {
	t.Helper()
	testbin.RequireRoot(t, "ptrace, /proc/PID/map_files and kallsyms addresses")
}

// requireTool skips (or fails under CI) when a build tool is missing.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testbin.Skip(t, fmt.Sprintf("%s not found (CI installs it)", name))
	}
	return p
}

// run runs a command and fails the test with its output on error.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// buildC compiles testdata/<src> into dir/<out> with gcc.
func buildC(t testing.TB, dir, src, out string, flags ...string) string {
	t.Helper()
	requireTool(t, "gcc")
	path := filepath.Join(dir, out)
	args := append([]string{"-pthread", "-Wall", "-o", path, filepath.Join("testdata", src)}, flags...)
	run(t, "gcc", args...)
	return path
}

// buildGo builds testdata/goprog into dir/<out> with extra flags.
func buildGo(t testing.TB, dir, out string, flags ...string) string {
	t.Helper()
	path := filepath.Join(dir, out)
	args := append([]string{"build", "-buildvcs=false", "-o", path}, flags...)
	args = append(args, "./testdata/goprog")
	run(t, filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
	return path
}

// target is a test program started by a test.
type target struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	first string // first line of its output
	lines chan string
}

// startTarget starts path with args, waits for its first output line and
// kills it when the test ends.
func startTarget(t testing.TB, path string, args ...string) *target {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	tg := &target{cmd: cmd, stdin: stdin, lines: make(chan string, 64)}
	go func() {
		defer close(tg.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			tg.lines <- strings.TrimSpace(sc.Text())
		}
	}()
	tg.first = waitLine(t, tg)
	return tg
}

// waitLine returns the target's next output line.
func waitLine(t testing.TB, tg *target) string {
	t.Helper()
	select {
	case s, ok := <-tg.lines:
		if !ok {
			t.Fatalf("%s exited without the expected output", tg.cmd.Path)
		}
		return s
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no output within 30s", tg.cmd.Path)
	}
	return ""
}

func (tg *target) pid() int { return tg.cmd.Process.Pid }

// fields parses "ready k=v k=v" lines into numbers (hex with 0x, else
// decimal).
func (tg *target) fields(t testing.TB) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, f := range strings.Fields(tg.first) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			t.Fatalf("bad field %q in %q", f, tg.first)
		}
		out[k] = n
	}
	return out
}

// threadSyscall reads /proc/PID/task/TID/syscall: the syscall number and
// first argument of a thread blocked in a syscall (-1 when running).
func threadSyscall(pid, tid int) (nr int64, arg0 uint64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return -1, 0, true
	}
	nr, err1 := strconv.ParseInt(f[0], 10, 64)
	arg0, err2 := strconv.ParseUint(f[1], 0, 64)
	return nr, arg0, err1 == nil && err2 == nil
}

func threads(t testing.TB, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// captured is a blocked thread's state copied while it was stopped.
type captured struct {
	tid       int
	regs      Regs
	nr, arg0  uint64 // syscall number (orig_rax) and first argument (rdi)
	window    []byte
	windowErr error
}

// captureWindow is how much stack the tests copy: 8 KiB, comfortably more
// than the deepest glibc lock-wait path needs.
const captureWindow = 8 << 10

// capture stops one thread with PTRACE_SEIZE + PTRACE_INTERRUPT (no
// signal reaches the target), reads its registers and copies the stack
// from SP, then detaches. The thread's interrupted syscall restarts.
func capture(t testing.TB, pid, tid int) (*captured, error) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.PtraceSeize(tid); err != nil {
		return nil, fmt.Errorf("seize %d: %w", tid, err)
	}
	if err := unix.PtraceInterrupt(tid); err != nil {
		unix.PtraceDetach(tid)
		return nil, fmt.Errorf("interrupt %d: %w", tid, err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
		return nil, fmt.Errorf("wait %d: %w", tid, err)
	}
	defer unix.PtraceDetach(tid)
	if !ws.Stopped() {
		return nil, fmt.Errorf("thread %d did not stop: %v", tid, ws)
	}
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &r); err != nil {
		return nil, fmt.Errorf("getregs %d: %w", tid, err)
	}
	c := &captured{tid: tid}
	c.regs, c.nr, c.arg0 = regsOf(&r)
	c.window, c.windowErr = readStack(pid, c.regs.SP, captureWindow)
	return c, nil
}

// readStack copies up to n bytes from sp, stopping at the end of the
// stack's mapping.
func readStack(pid int, sp uint64, n int) ([]byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	maps, err := parseMaps(strings.NewReader(string(b)))
	if err != nil {
		return nil, err
	}
	for _, m := range maps {
		if sp >= m.start && sp < m.end {
			n = int(min(uint64(n), m.end-sp))
			f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
			if err != nil {
				return nil, err
			}
			defer f.Close()
			buf := make([]byte, n)
			if _, err := f.ReadAt(buf, int64(sp)); err != nil {
				return nil, err
			}
			return buf, nil
		}
	}
	return nil, fmt.Errorf("sp 0x%x is unmapped", sp)
}

// captureBlocked finds a thread of pid blocked in futex(2) on addr (any
// futex when addr is 0) and captures it, retrying while threads move.
func captureBlocked(t testing.TB, pid int, addr uint64) *captured {
	t.Helper()
	const sysFutex = 202
	for attempt := 0; attempt < 200; attempt++ {
		for _, tid := range threads(t, pid) {
			nr, a0, ok := threadSyscall(pid, tid)
			if !ok || nr != sysFutex || (addr != 0 && a0 != addr) {
				continue
			}
			c, err := capture(t, pid, tid)
			if err != nil {
				t.Logf("capture %d: %v", tid, err)
				continue
			}
			if c.nr != sysFutex || (addr != 0 && c.arg0 != addr) || c.windowErr != nil {
				continue // it moved on between the check and the stop
			}
			return c
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no thread of %d found blocked in futex on 0x%x", pid, addr)
	return nil
}

// describe renders frames one a line, for failure messages.
func describe(frames []recording.Frame) string {
	var b strings.Builder
	for i, f := range frames {
		inl := ""
		if f.Inlined {
			inl = " [inlined]"
		}
		fmt.Fprintf(&b, "  #%d %s (%s) %s:%d 0x%x%s\n", i, f.Func, f.Module, f.File, f.Line, f.Addr, inl)
	}
	return b.String()
}

// openTarget builds testdata/<src> with flags, starts it with args and
// opens it without debug directories.
func openTarget(t testing.TB, src string, flags, args []string) (*target, *Process) {
	t.Helper()
	bin := buildC(t, t.TempDir(), src, strings.TrimSuffix(src, ".c"), flags...)
	tg := startTarget(t, bin, args...)
	p, err := Open(tg.pid(), Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return tg, p
}

// unwindCaptured opens pid with opts and unwinds a captured thread.
func unwindCaptured(t testing.TB, pid int, opts Options, c *captured) (*Process, recording.Stack, bool) {
	t.Helper()
	p, err := Open(pid, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	pcs, complete := p.Unwind(c.regs, c.window)
	st := p.Stack(pcs)
	t.Logf("complete=%v\n%s", complete, describe(st.Frames))
	return p, st, complete
}
