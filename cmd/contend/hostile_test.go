package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// These tests feed contend inputs a hostile target or file can produce
// and check what it must never do: use memory without bound, crash, write
// escape sequences to the terminal, read what it should not, or keep root
// longer than it needs.

// maxBombRSS bounds the peak memory of contend refusing a decompression
// bomb: the 256 MiB default budget filled once, plus the runtime and
// contend's own data.
const maxBombRSS = 640 << 20

// measured is a finished contend run.
type measured struct {
	code        int
	stdout      string
	stderr      string
	maxRSSBytes int64
}

// runMeasured runs the contend binary with args (and extra environment)
// and returns its exit code, output and peak resident memory.
//
// The run goes through a small helper process (measureChild) instead of
// being started from the test binary itself: Go starts children with
// vfork, the child shares its parent's memory until exec, and Linux
// carries that memory's high-water mark into the child's ru_maxrss. A
// test binary grown to 650 MiB by earlier tests (with -race) made every
// contend it started read as 650 MiB. The helper is small, so the figure
// is contend's own.
func runMeasured(t *testing.T, env []string, args ...string) measured {
	t.Helper()
	probe, _, _ := contendCmd(t)
	report := filepath.Join(t.TempDir(), "measured")
	cmd := testbin.HelperCmd("measure", append(env, measureOutEnv+"="+report)...)
	cmd.Args = append(cmd.Args, append([]string{probe.Path}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("measuring helper: %v\n%s", err, errb.String())
	}
	m := measured{stdout: out.String(), stderr: errb.String()}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("measuring helper wrote no report: %v\n%s", err, errb.String())
	}
	if _, err := fmt.Sscan(string(data), &m.code, &m.maxRSSBytes); err != nil {
		t.Fatalf("measuring helper report %q: %v", data, err)
	}
	return m
}

// measureOutEnv names the file measureChild writes its report to.
const measureOutEnv = "CONTEND_TEST_MEASURE_OUT"

// measureChild is the helper behind runMeasured: it runs os.Args[1:]
// with this process's standard streams and writes "<exit code> <peak
// resident bytes>" to $CONTEND_TEST_MEASURE_OUT. A child killed by a
// signal reports exit code -1, as exec.ExitError does.
func measureChild() int {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "measure: no command")
		return 2
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "measure:", err)
		return 2
	}
	var maxRSS int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss << 10
	}
	report := fmt.Sprintf("%d %d\n", cmd.ProcessState.ExitCode(), maxRSS)
	if err := os.WriteFile(os.Getenv(measureOutEnv), []byte(report), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		return 2
	}
	return 0
}

// checkNoCrash fails when a run panicked or was killed: Go's panic exit
// code is 2, the same as bad input, so the output tells them apart.
func checkNoCrash(t *testing.T, what string, m measured) {
	t.Helper()
	if strings.Contains(m.stderr, "panic:") || strings.Contains(m.stderr, "goroutine ") || strings.Contains(m.stderr, "fatal error") || m.code < 0 {
		t.Errorf("%s crashed (exit %d):\n%s", what, m.code, firstLines(m.stderr, 6))
	}
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	return strings.Join(l[:min(n, len(l))], "\n")
}

// liveRecording copies a recording of the spin fixture from the
// analyzer's testdata into a new directory and returns its path.
func liveRecording(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "analyzer", "testdata", "live", "c-spin-bad")
	dst := filepath.Join(t.TempDir(), "rec")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestAnalyzeBombs: profiles and recordings whose content inflates to
// gigabytes are refused as bad input (exit 2) at the budget; the peak
// memory of the run is measured. Before, the nested stream and the
// recording's files had no limit at all, and a single stream was cut at
// 1 GiB only.
func TestAnalyzeBombs(t *testing.T) {
	dir := t.TempDir()
	write := func(path string, data []byte) string {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	recProfile := liveRecording(t)
	write(filepath.Join(recProfile, "futex-wait.pb.gz"), testbin.GzipZeros(2048))
	recEvents := liveRecording(t)
	write(filepath.Join(recEvents, recording.EventsFile), testbin.GzipFill(' ', 1024))
	for _, c := range []struct{ name, path, want string }{
		{"2 GiB gzip stream", write(filepath.Join(dir, "bomb.pb.gz"), testbin.GzipZeros(2048)), "over the size budget"},
		{"gzip inside gzip", write(filepath.Join(dir, "nested.pb.gz"), testbin.Gzip(testbin.GzipZeros(2048))), "nested compression is refused"},
		{"recording view", recProfile, "futex-wait.pb.gz"},
		{"recording event log of 1 GiB of spaces", recEvents, recording.EventsFile},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := runMeasured(t, nil, "analyze", c.path)
			checkNoCrash(t, c.name, m)
			if m.code != exitUsage || !strings.Contains(m.stderr, c.want) {
				t.Errorf("exit %d, stderr %q: want exit %d naming %q", m.code, m.stderr, exitUsage, c.want)
			}
			if m.maxRSSBytes > maxBombRSS {
				t.Errorf("peak memory %d MiB, more than %d MiB", m.maxRSSBytes>>20, maxBombRSS>>20)
			}
			t.Logf("peak memory %d MiB", m.maxRSSBytes>>20)
		})
	}
}

// TestAnalyzeMalformedTimeline: a threads.json whose series start before
// the first instant, or that claims 1e11 instants, is bad input named by
// its file. Before, the first panicked (index -3) and the second ran out
// of memory.
func TestAnalyzeMalformedTimeline(t *testing.T) {
	for _, c := range []struct {
		name  string
		patch func(tl map[string]any)
		want  string
	}{
		{"first -3", func(tl map[string]any) {
			for _, th := range tl["threads"].([]any) {
				th.(map[string]any)["first"] = -3
			}
		}, "first -3 is negative"},
		{"samples 1e11", func(tl map[string]any) { tl["samples"] = 1e11 }, "samples 100000000000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := liveRecording(t)
			path := filepath.Join(rec, recording.ThreadsFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var tl map[string]any
			if err := json.Unmarshal(data, &tl); err != nil {
				t.Fatal(err)
			}
			c.patch(tl)
			if data, err = json.Marshal(tl); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, sub := range []string{"analyze", "compare"} {
				args := []string{sub, rec}
				if sub == "compare" {
					args = append(args, liveRecording(t))
				}
				m := runMeasured(t, nil, args...)
				checkNoCrash(t, sub, m)
				if m.code != exitUsage || !strings.Contains(m.stderr, recording.ThreadsFile) || !strings.Contains(m.stderr, c.want) {
					t.Errorf("%s: exit %d, stderr %q: want exit %d naming %s and %q", sub, m.code, m.stderr, exitUsage, recording.ThreadsFile, c.want)
				}
			}
		})
	}
}

// hostileComm is a process name that retitles the terminal window (OSC 0)
// and clears the screen: 15 bytes, the most a name holds.
const hostileComm = "\x1b]0;PWNED\x07\x1b[2J"

// checkNoEscapes fails when out holds a byte a terminal would act on.
func checkNoEscapes(t *testing.T, what, out string) {
	t.Helper()
	if i := strings.IndexAny(out, "\x1b\x07\x9b"); i >= 0 {
		t.Errorf("%s holds a raw control character at %d: %q", what, i, out[max(i-40, 0):min(i+40, len(out))])
	}
}

// TestRecordHostileProcessName records a process that named itself with
// escape sequences: the report shows the name escaped and writes no
// control character; the recording keeps it exact.
func TestRecordHostileProcessName(t *testing.T) {
	requireRoot(t)
	sh := exec.Command("/bin/sh", "-c", `printf '`+strings.ReplaceAll(hostileComm, "\x1b", `\033`)+`' > /proc/$$/comm; echo ready; while :; do sleep 1; done`)
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Process.Kill(); sh.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("target printed %q", line)
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", sh.Process.Pid))
	if strings.TrimSpace(string(comm)) != strings.TrimSpace(hostileComm) {
		t.Fatalf("target's name is %q", comm)
	}
	rec := filepath.Join(t.TempDir(), "rec")
	m := runMeasured(t, nil, "record", "-p", strconv.Itoa(sh.Process.Pid), "-d", "1s", "-o", rec)
	checkNoCrash(t, "record", m)
	if m.code != 0 {
		t.Fatalf("exit %d: %s", m.code, m.stderr)
	}
	checkNoEscapes(t, "stdout", m.stdout)
	checkNoEscapes(t, "stderr", m.stderr)
	if !strings.Contains(m.stdout, `\x1b]0;PWNED\x07\x1b[2J`) {
		t.Errorf("the report does not show the name escaped:\n%s", m.stdout)
	}
	r, err := recording.Read(rec)
	if err != nil {
		t.Fatal(err)
	}
	if r.Meta.Comm != hostileComm {
		t.Errorf("meta.json comm %q, want it exact", r.Meta.Comm)
	}
	// The JSON report stays exact too.
	m = runMeasured(t, nil, "analyze", "--format", "json", rec)
	if m.code != 0 || !strings.Contains(m.stdout, `\u001b]0;PWNED\u0007\u001b[2J`) {
		t.Errorf("JSON report (exit %d) does not hold the exact name:\n%s", m.code, firstLines(m.stdout, 12))
	}
}

// uidOfPeer returns the uid owning the local TCP socket on port (this
// machine's end of a loopback connection), from /proc/net/tcp.
func uidOfPeer(port int) (int, bool) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	want := fmt.Sprintf(":%04X", port)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 7 && strings.HasSuffix(fs[1], want) {
			uid, err := strconv.Atoi(fs[7])
			return uid, err == nil
		}
	}
	return 0, false
}

// uidProxy forwards to the pprof endpoint at target and records the uid
// of every client that connects.
type uidProxy struct {
	mu   sync.Mutex
	uids map[int]int
}

func (p *uidProxy) seen() map[int]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int]int{}
	for k, v := range p.uids {
		out[k] = v
	}
	return out
}

func startUIDProxy(t *testing.T, target string) (*uidProxy, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &uidProxy{uids: map[int]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(r.RemoteAddr)
		n, _ := strconv.Atoi(port)
		uid, ok := uidOfPeer(n)
		if !ok {
			uid = -1
		}
		p.mu.Lock()
		p.uids[uid]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// TestRecordDropsPrivileges runs contend record as root under sudo (for
// user nobody): the pprof endpoint is fetched by processes of that user,
// and the recording belongs to it and is private. Before, everything ran
// as root and the recording was 0755 with 0644 files.
func TestRecordDropsPrivileges(t *testing.T) {
	requireRoot(t)
	// Built first: the fixture runs for 60 s from its start, which a
	// build on a busy machine can take.
	testbin.Go(t, "cmd/contend")
	pid, target := startGoFixture(t)
	proxy, url := startUIDProxy(t, target)
	// The recording is written as nobody, into a directory nobody may
	// write.
	rec := filepath.Join(testbin.WritableDir(t), "rec")
	cmd, stdout, errb := contendCmd(t, "record", "-p", strconv.Itoa(pid), "-d", "3s", "-o", rec, "--pprof", url)
	// The fetch children run contend's own binary as nobody.
	cmd.Path = testbin.PublicCopy(t, cmd.Path)
	cmd.Args[0] = cmd.Path
	id := strconv.Itoa(testbin.NobodyID)
	cmd.Env = append(os.Environ(), "SUDO_UID="+id, "SUDO_GID="+id, "SUDO_USER=nobody")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, errb)
	}
	seen := proxy.seen()
	if len(seen) != 1 || seen[testbin.NobodyID] == 0 {
		t.Errorf("pprof requests by uid: %v, want all from %d", seen, testbin.NobodyID)
	}
	testbin.CheckPrivateDir(t, rec, testbin.NobodyID, testbin.NobodyID, 5)
	r, err := recording.Read(rec)
	if err != nil {
		t.Fatal(err)
	}
	if r.Profile(recording.ViewGoMutex) == nil || len(r.Goroutines) == 0 {
		t.Errorf("Go profiles fetched as nobody missing: warnings %q", r.Meta.Warnings)
	}
	if !strings.Contains(stdout.String(), "onIncomingMessage") {
		t.Errorf("the report, made after the drop, lacks the convoy:\n%s", stdout)
	}
}

// TestRecordPprofBomb: an endpoint answering every profile with a 1 MiB
// gzip stream that inflates to 1 GiB costs the recording one budget,
// not gigabytes per answer, and a warning.
func TestRecordPprofBomb(t *testing.T) {
	requireRoot(t)
	_, pid := startTarget(t)
	bomb := testbin.GzipZeros(1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(bomb) }))
	defer srv.Close()
	rec := filepath.Join(t.TempDir(), "rec")
	m := runMeasured(t, nil, "record", "-p", strconv.Itoa(pid), "-d", "2s", "-o", rec, "--pprof", srv.URL)
	checkNoCrash(t, "record", m)
	if m.code != 0 {
		t.Fatalf("exit %d: %s", m.code, m.stderr)
	}
	if m.maxRSSBytes > maxBombRSS {
		t.Errorf("peak memory %d MiB, more than %d MiB", m.maxRSSBytes>>20, maxBombRSS>>20)
	}
	t.Logf("peak memory %d MiB", m.maxRSSBytes>>20)
	r, err := recording.Read(rec)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(r.Meta.Warnings, "\n"); !strings.Contains(w, "mutex profile: not a profile: decompresses to more than 256 MiB") {
		t.Errorf("warnings do not say the answer was refused:\n%s", w)
	}
}

// TestDemoIgnoresWorkingDirectory: demo never runs a fixture from the
// working directory (run as root, it would run whatever ./bin/fixtures
// holds), nor one beside contend that others may write.
func TestDemoIgnoresWorkingDirectory(t *testing.T) {
	cwd := t.TempDir()
	planted := filepath.Join(cwd, "bin", "fixtures", "spin")
	if err := os.MkdirAll(filepath.Dir(planted), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planted, []byte("#!/bin/sh\ntouch pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, out, errb := contendCmd(t, "demo", "--list")
	cmd.Dir = cwd
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if strings.Contains(out.String(), "bin/fixtures/spin") || !strings.Contains(out.String(), "spin        ") {
		t.Errorf("demo --list offers the working directory's fixture:\n%s", out)
	}

	// Beside the binary, but writable by others: not run either.
	self := testbin.PublicCopy(t, testbin.Go(t, "cmd/contend"))
	fx := filepath.Join(filepath.Dir(self), "fixtures")
	if err := os.Mkdir(fx, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"spin": 0o777, "stripe": 0o755} {
		if err := os.WriteFile(filepath.Join(fx, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(fx, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	list := exec.Command(self, "demo", "--list")
	list.Stdout, list.Stderr = &b, &b
	if err := list.Run(); err != nil {
		t.Fatalf("%v: %s", err, b.String())
	}
	if strings.Contains(b.String(), filepath.Join(fx, "spin")) || !strings.Contains(b.String(), filepath.Join(fx, "stripe")) {
		t.Errorf("demo --list with a world-writable spin and a private stripe beside contend:\n%s", b.String())
	}
}
