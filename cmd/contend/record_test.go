//go:build linux && amd64

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// These tests run the contend binary as a subprocess against helper
// programs of the collector's tests, and need root to attach probes.

func requireRoot(t *testing.T) {
	t.Helper()
	testbin.RequireRoot(t, "loading BPF programs")
}

// startTarget starts the collector's contended pthread program and returns
// it with its pid.
func startTarget(t *testing.T) (*testbin.Proc, int) {
	t.Helper()
	bin := testbin.C(t, "../../collector/testdata/cmutex.c", "-O2", "-g")
	p := testbin.Start(t, bin, "3")
	v, err := p.Value("pid", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(v)
	return p, pid
}

// contendCmd prepares the contend binary with args; stdout and stderr are
// captured.
func contendCmd(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	bin := testbin.Go(t, "cmd/contend")
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

func exitCodeOf(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	t.Fatalf("run contend: %v", err)
	return -1
}

// waitAttached waits until process pid holds BPF links and returns its
// programs and links.
func waitAttached(t *testing.T, pid int) (progs, links []uint32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		progs, links = testbin.BPFObjects(t, pid)
		// The tracepoint and per-CPU perf links of every family.
		if len(links) >= 10 {
			time.Sleep(300 * time.Millisecond) // let attaching finish
			return testbin.BPFObjects(t, pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("contend (pid %d) attached no probes in 30s", pid)
	return nil, nil
}

func TestRecordRunsToTheEnd(t *testing.T) {
	requireRoot(t)
	target, pid := startTarget(t)
	dir := filepath.Join(t.TempDir(), "rec")
	cmd, out, errb := contendCmd(t, "record", "-p", strconv.Itoa(pid), "-d", "2s", "-o", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	progs, links := waitAttached(t, cmd.Process.Pid)
	if code := exitCodeOf(t, cmd.Wait()); code != 0 {
		t.Fatalf("contend record exited %d\nstderr: %s", code, errb)
	}
	testbin.CheckBPFGone(t, progs, links)
	if !target.Running() {
		t.Error("target stopped running")
	}
	rec, err := recording.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Meta.Partial || rec.Meta.PID != pid || !strings.HasPrefix(rec.Meta.Comm, "cmutex") {
		t.Errorf("meta: partial %v pid %d comm %q", rec.Meta.Partial, rec.Meta.PID, rec.Meta.Comm)
	}
	for _, v := range recording.LiveViews {
		p := rec.Profile(v)
		if p == nil {
			t.Errorf("view %s missing", v)
			continue
		}
		if err := p.CheckValid(); err != nil {
			t.Errorf("view %s: %v", v, err)
		}
	}
	if !strings.Contains(errb.String(), "wrote "+dir) {
		t.Errorf("stderr does not name the recording: %s", errb)
	}
	if out.Len() == 0 {
		t.Error("no findings report on stdout")
	}
}

func TestRecordSignals(t *testing.T) {
	requireRoot(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			target, pid := startTarget(t)
			dir := filepath.Join(t.TempDir(), "rec")
			cmd, _, errb := contendCmd(t, "record", "-p", strconv.Itoa(pid), "-d", "60s", "-o", dir)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			progs, links := waitAttached(t, cmd.Process.Pid)
			time.Sleep(time.Second)
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("contend did not exit within 30s of %s", sig)
			}
			testbin.CheckBPFGone(t, progs, links)
			if !target.Running() {
				t.Errorf("target stopped running after contend got %s", sig)
			}
			if sig == syscall.SIGKILL {
				return
			}
			if code := exitCodeOf(t, err); code != 0 {
				t.Fatalf("contend exited %d after SIGTERM\nstderr: %s", code, errb)
			}
			rec, err := recording.Read(dir)
			if err != nil {
				t.Fatalf("recording after SIGTERM: %v", err)
			}
			if !rec.Meta.Partial || !strings.Contains(rec.Meta.PartialReason, "stopped after") {
				t.Errorf("recording after SIGTERM: partial %v (%q), want partial", rec.Meta.Partial, rec.Meta.PartialReason)
			}
		})
	}
}

func TestRecordErrors(t *testing.T) {
	requireRoot(t)
	// A pid that no longer exists.
	bin := testbin.C(t, "../../collector/testdata/sleeper.c", "-O2", "-g")
	gone := testbin.Start(t, bin, "1")
	v, err := gone.Value("pid", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-gone.Exited()

	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no pid", []string{"record"}, exitUsage, "-p PID"},
		{"gone pid", []string{"record", "-p", v, "-d", "1s"}, exitTarget, "no such process"},
		{"bad hz", []string{"record", "-p", "1", "--hz", "0"}, exitUsage, "--hz"},
		{"unknown probe family", []string{"record", "-p", "1", "--probes", "futex,gosnyc"}, exitUsage, `unknown probe family "gosnyc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, _, errb := contendCmd(t, tc.args...)
			code := exitCodeOf(t, cmd.Run())
			if code != tc.code || !strings.Contains(errb.String(), tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, errb, tc.code, tc.msg)
			}
		})
	}
}

// startGoFixture starts the Go stripe fixture with its pprof endpoint and
// returns its pid and endpoint URL (printed on stderr).
func startGoFixture(t *testing.T) (int, string) {
	t.Helper()
	cmd := exec.Command(testbin.Go(t, "fixtures/cmd/gofixture"), "stripe", "-variant", "bad", "-duration", "60s", "-pprof", "127.0.0.1:0")
	url := testbin.StartForLine(t, cmd, "pprof: ")
	return cmd.Process.Pid, url
}

// TestRecordWithoutPrivileges runs contend record as user nobody, without
// capabilities: it names the missing ones, records the /proc timeline and
// the Go profiles, writes the recording marked so, prints the findings
// and exits with code 3. Run as root, the target belongs to another user
// (root), whose threads' stat and status /proc shows to anyone.
func TestRecordWithoutPrivileges(t *testing.T) {
	pid, url := startGoFixture(t)
	out := filepath.Join(testbin.WritableDir(t), "rec")
	cmd, stdout, errb := contendCmd(t, "record", "-p", strconv.Itoa(pid), "-d", "3s", "-o", out, "--pprof", url)
	testbin.AsNobody(t, cmd)
	code := exitCodeOf(t, cmd.Run())
	if code != exitPrivilege {
		t.Fatalf("exit %d, want %d\nstderr: %s", code, exitPrivilege, errb)
	}
	msg := errb.String()
	for _, want := range []string{
		"contend: missing CAP_BPF and CAP_PERFMON",
		"contend: recording the /proc thread timeline and the Go runtime profiles from " + url + " only, without eBPF probes",
		"wrote " + out,
		"contend: record: recorded without eBPF probes: missing CAP_BPF and CAP_PERFMON",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	rec, err := recording.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Meta.Probes) != 0 || rec.Profile(recording.ViewFutexWait) != nil {
		t.Errorf("probes %v, futex view %v: want none", rec.Meta.Probes, rec.Profile(recording.ViewFutexWait) != nil)
	}
	if w := strings.Join(rec.Meta.Warnings, "\n"); !strings.Contains(w, "no eBPF probes (missing CAP_BPF and CAP_PERFMON)") {
		t.Errorf("warnings %q do not name the missing capabilities", w)
	}
	if rec.Threads == nil || rec.Threads.Samples == 0 {
		t.Error("no /proc timeline recorded")
	}
	if rec.Profile(recording.ViewGoMutex) == nil || len(rec.Goroutines) == 0 {
		t.Errorf("Go profiles missing: mutex %v, %d dumps", rec.Profile(recording.ViewGoMutex) != nil, len(rec.Goroutines))
	}
	// The Go data alone names the stripe fixture's convoy.
	if !strings.Contains(stdout.String(), "onIncomingMessage") {
		t.Errorf("findings on stdout do not name the convoy:\n%s", stdout)
	}
}

// TestRecordHiddenProc runs contend record as nobody under a /proc
// mounted with hidepid=1 (in a private mount namespace), where even a
// process's stat is refused: it fails at once, naming CAP_SYS_PTRACE.
func TestRecordHiddenProc(t *testing.T) {
	requireRoot(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatal("unshare (util-linux) is missing")
	}
	_, pid := startTarget(t)
	cmd, _, errb := contendCmd(t, "record", "-p", strconv.Itoa(pid), "-d", "60s", "-o", filepath.Join(testbin.WritableDir(t), "rec"))
	testbin.AsNobody(t, cmd)
	cmd.Args = append([]string{unshare, "-m", "--propagation", "private", "sh", "-c", `mount -t proc -o hidepid=1 proc /proc && exec "$@"`, "sh"}, cmd.Args...)
	cmd.Path = unshare
	start := time.Now()
	code := exitCodeOf(t, cmd.Run())
	if code != exitPrivilege || !strings.Contains(errb.String(), "missing CAP_SYS_PTRACE") {
		t.Errorf("exit %d, stderr %q; want exit %d naming CAP_SYS_PTRACE", code, errb, exitPrivilege)
	}
	// At once, not after the 60 s recording: half of it leaves a busy
	// machine's slow start of unshare, mount and contend far behind.
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("took %v to refuse: want at once, not after recording", el)
	}
}

// TestRecordDiskFull: a recording that does not fit on its file system is
// an error naming the path given, and leaves nothing behind: no
// half-written directory under the final name, no temporary directory.
func TestRecordDiskFull(t *testing.T) {
	requireRoot(t)
	small := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(small, 0o755); err != nil {
		t.Fatal(err)
	}
	// 64 KiB hold meta.json but not the views of a contended target.
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small).CombinedOutput(); err != nil {
		testbin.Skip(t, fmt.Sprintf("mount a small tmpfs: %v: %s", err, out))
	}
	defer exec.Command("umount", small).Run()
	_, pid := startTarget(t)
	dir := filepath.Join(small, "rec")
	cmd, _, errb := contendCmd(t, "record", "-p", strconv.Itoa(pid), "-d", "2s", "-o", dir)
	code := exitCodeOf(t, cmd.Run())
	if code == 0 {
		t.Fatalf("record into a full file system exited 0: %s", errb)
	}
	if !strings.Contains(errb.String(), dir) || !strings.Contains(errb.String(), "no space left") {
		t.Errorf("exit %d, %q: want the error to name %s and say no space is left", code, errb, dir)
	}
	left, err := os.ReadDir(small)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left behind in the full file system: %s", e.Name())
	}
}

// TestRecordAcrossThreadExitsAndExec: half the target's threads exit at
// once, then the target exec()s another program under the same pid. The
// recording completes, and the convoy recorded before the exec is named
// from the first image's symbols.
func TestRecordAcrossThreadExitsAndExec(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "../../collector/testdata/execmid.c", "-O2", "-g")
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	// The program contends until SIGUSR1, sent once contend has recorded
	// a second of it (its first progress line): a slow attach on a
	// loaded machine no longer misses the convoy before the exec.
	p := testbin.Start(t, bin, "8", "700", "500", sleep, "30")
	v, err := p.Value("pid", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(v)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	cmd, out, errb := contendCmd(t, "record", "-p", v, "-d", "4s", "-o", dir, "--format", "json", "--progress")
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(errb, pw)
	progress := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			if !once && strings.HasPrefix(sc.Text(), "contend: progress") {
				once = true
				close(progress)
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-progress:
		syscall.Kill(pid, syscall.SIGUSR1)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
	}
	runErr := cmd.Wait()
	pw.Close()
	if code := exitCodeOf(t, runErr); code != 0 && code != exitFindings {
		t.Fatalf("record across exits and exec: exit %d: %s", code, errb)
	}
	var res struct {
		Findings []struct {
			Kind  string `json:"kind"`
			Point struct {
				Function string `json:"function"`
			} `json:"point"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("record output: %v\n%s", err, out)
	}
	if len(res.Findings) == 0 || res.Findings[0].Point.Function != "update_shared_state" {
		t.Errorf("findings %+v: want the convoy at update_shared_state, named from the image before the exec", res.Findings)
	}
	rec, err := recording.Read(dir)
	if err != nil {
		t.Fatalf("read the recording: %v", err)
	}
	if rec.Meta.Duration < 3*time.Second {
		t.Errorf("recording of %s, want the whole 4 s: the exec kept the pid", rec.Meta.Duration)
	}
}
