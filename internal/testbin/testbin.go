// Package testbin builds and runs the helper programs that tests attach
// to: C programs compiled with gcc and Go programs built with the go
// command, cached in a directory so that each distinct source and flag set
// is compiled once per machine.
//
// The cache lives in $CONTEND_TESTBIN_CACHE, else in the user cache
// directory (contend-testbin). Binaries are written under a temporary name
// and renamed into place, so concurrent test processes never see a
// half-written one.
package testbin

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// CC is the C compiler used by C.
const CC = "gcc"

// CacheDir returns the directory binaries are cached in, creating it.
func CacheDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("CONTEND_TESTBIN_CACHE")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "contend-testbin")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testbin: cache dir: %v", err)
	}
	return dir
}

// ModuleRoot returns the directory of the go.mod enclosing the test's
// working directory.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("testbin: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("testbin: no go.mod above the working directory")
		}
		dir = parent
	}
}

// C compiles the C source file src (relative to the test's working
// directory, or absolute) with gcc and flags, links it with -pthread, and
// returns the path of the binary. The cache key covers the source, every
// header in its directory, the flags and the compiler's version.
func C(t testing.TB, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath(CC); err != nil {
		t.Fatalf("testbin: %s not found: %v", CC, err)
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		t.Fatalf("testbin: %v", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", CC, ccVersion(t))
	for _, f := range flags {
		fmt.Fprintf(h, "%s\x00", f)
	}
	hashFile(t, h, abs)
	headers, _ := filepath.Glob(filepath.Join(filepath.Dir(abs), "*.h"))
	sort.Strings(headers)
	for _, hdr := range headers {
		hashFile(t, h, hdr)
	}
	name := strings.TrimSuffix(filepath.Base(abs), ".c") + "-" + hex.EncodeToString(h.Sum(nil))[:16]
	out := filepath.Join(CacheDir(t), name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	build(t, out, func(tmp string) *exec.Cmd {
		args := append(append([]string{}, flags...), "-pthread", "-o", tmp, abs)
		return exec.Command(CC, args...)
	})
	return out
}

// Go builds the main package in dir (relative to the module root, e.g.
// "collector/testdata/golock") with extra go build flags and returns the
// path of the binary. The go command's own cache makes a rebuild of an
// unchanged package cheap, so a Go binary is rebuilt once per test process
// (go test puts its own go command first in PATH).
func Go(t testing.TB, dir string, flags ...string) string {
	t.Helper()
	root := ModuleRoot(t)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", root, dir)
	for _, f := range flags {
		fmt.Fprintf(h, "%s\x00", f)
	}
	out := filepath.Join(CacheDir(t), filepath.Base(dir)+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, done := goBuilt.Load(out); done {
		return out
	}
	build(t, out, func(tmp string) *exec.Cmd {
		args := append(append([]string{"build"}, flags...), "-o", tmp, "./"+filepath.ToSlash(dir))
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		return cmd
	})
	goBuilt.Store(out, true)
	return out
}

// goBuilt remembers the Go binaries built by this test process.
var goBuilt sync.Map

// buildMu serializes builds within one test process.
var buildMu sync.Mutex

// build runs the command mk returns for a temporary output path and renames
// the result to out.
func build(t testing.TB, out string, mk func(tmp string) *exec.Cmd) {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	tmp := fmt.Sprintf("%s.tmp-%d", out, os.Getpid())
	cmd := mk(tmp)
	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("testbin: %s: %v\n%s", strings.Join(cmd.Args, " "), err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatalf("testbin: %v", err)
	}
}

var (
	ccVersionOnce sync.Once
	ccVersionStr  string
)

func ccVersion(t testing.TB) string {
	ccVersionOnce.Do(func() {
		b, err := exec.Command(CC, "--version").Output()
		if err == nil {
			ccVersionStr = strings.SplitN(string(b), "\n", 2)[0]
		}
	})
	return ccVersionStr
}

func hashFile(t testing.TB, h io.Writer, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("testbin: %v", err)
	}
	defer f.Close()
	fmt.Fprintf(h, "%s\x00", filepath.Base(path))
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("testbin: %v", err)
	}
}

// Proc is a helper program started by Start. Its standard output is read
// line by line; lines of the form "key=value" (several per line, separated
// by spaces) are collected for Value.
type Proc struct {
	Cmd *exec.Cmd
	// PID is the process id.
	PID int

	mu     sync.Mutex
	values map[string][]string
	lines  []string
	cond   *sync.Cond
	eof    bool
	waited chan struct{}
	err    error
}

// Start runs path with args. The process is killed and reaped when the
// test ends.
func Start(t testing.TB, path string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Stderr = os.Stderr
	// A pipe of our own rather than StdoutPipe: Wait closes StdoutPipe's
	// read end once the program exits, and a line the program wrote just
	// before exiting could be lost unread. This read end is closed by
	// read, at the end of the output.
	stdout, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("testbin: %v", err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		t.Fatalf("testbin: start %s: %v", path, err)
	}
	p := &Proc{Cmd: cmd, PID: cmd.Process.Pid, values: map[string][]string{}, waited: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	go p.read(stdout)
	go func() {
		p.err = cmd.Wait()
		close(p.waited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		<-p.waited
	})
	return p
}

func (p *Proc) read(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		p.lines = append(p.lines, line)
		for _, f := range strings.Fields(line) {
			if k, v, ok := strings.Cut(f, "="); ok {
				p.values[k] = append(p.values[k], v)
			}
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
	p.mu.Lock()
	p.eof = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// ErrNoValue is returned by Value when the program ended its output, or the
// timeout passed, without printing the key.
var ErrNoValue = errors.New("value not printed")

// Values waits until the program has printed key=… at least n times and
// returns every value printed so far.
func (p *Proc) Values(key string, n int, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.values[key]) < n {
		if p.eof || time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: %w (output so far: %q%s)", key, ErrNoValue, p.lines, p.exitNote())
		}
		p.cond.Wait()
	}
	return append([]string(nil), p.values[key]...), nil
}

// exitNote says how the process ended, when it has ended by now (its
// output reached its end first, so wait a moment for the status).
func (p *Proc) exitNote() string {
	select {
	case <-p.waited:
	case <-time.After(time.Second):
		return ""
	}
	if p.err == nil {
		return "; it exited with status 0"
	}
	return "; it ended: " + p.err.Error()
}

// Value waits for the first key=… line and returns its value.
func (p *Proc) Value(key string, timeout time.Duration) (string, error) {
	v, err := p.Values(key, 1, timeout)
	if err != nil {
		return "", err
	}
	return v[0], nil
}

// Exited returns a channel closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.waited }

// Running reports whether the process is alive and not a zombie or
// stopped.
func (p *Proc) Running() bool {
	select {
	case <-p.waited:
		return false
	default:
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	switch s[i+2] {
	case 'Z', 'X', 'T', 't':
		return false
	}
	return true
}

// StartCmd starts cmd, which is killed and reaped when the test ends.
func StartCmd(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("testbin: start %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
}

// StartForLine starts cmd, which is killed and reaped when the test ends,
// and returns what follows marker in the first line of its standard
// error that holds it (trimmed), such as the URL after "pprof: "; the
// rest of its standard error is discarded. The test fails when the
// process's standard error ends without such a line.
func StartForLine(t testing.TB, cmd *exec.Cmd, marker string) string {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("testbin: %v", err)
	}
	StartCmd(t, cmd)
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), marker); ok {
			go io.Copy(io.Discard, stderr)
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("testbin: %s printed no line with %q", cmd.Path, marker)
	return ""
}
