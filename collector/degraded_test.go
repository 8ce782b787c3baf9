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
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// startDegraded is a helper process (see TestMain): it records the pid in
// CONTEND_DEGRADED_PID for half a second without probes, under the /proc
// mount in CONTEND_PROC_ROOT ("" for /proc), and prints what it got.
func startDegraded() int {
	pid, err := strconv.Atoi(os.Getenv("CONTEND_DEGRADED_PID"))
	if err != nil {
		fmt.Println("CONTEND_DEGRADED_PID is not a pid")
		return 2
	}
	rec, err := Record(context.Background(), Options{PID: pid, Duration: 500 * time.Millisecond, NoProbes: true, ProcRoot: os.Getenv("CONTEND_PROC_ROOT")}, nil)
	var pe *PermissionError
	switch {
	case errors.As(err, &pe):
		fmt.Printf("permission: %s\n", strings.Join(pe.Missing, ","))
		return 0
	case err != nil:
		fmt.Printf("error: %v\n", err)
		return 0
	}
	samples := 0
	if rec.Threads != nil {
		samples = rec.Threads.Samples
	}
	fmt.Printf("probes=%d views=%d samples=%d\n", len(rec.Meta.Probes), len(rec.Profiles), samples)
	for _, w := range rec.Meta.Warnings {
		fmt.Printf("warning: %s\n", w)
	}
	return 0
}

// checkDegradedOutput checks startDegraded's report of a recording.
func checkDegradedOutput(t *testing.T, out string, why string) {
	t.Helper()
	if !strings.Contains(out, "probes=0 views=0 samples=") || strings.Contains(out, "samples=0\n") {
		t.Errorf("recording without probes: %q, want no probes, no views and a timeline", out)
	}
	if !strings.Contains(out, "warning: no eBPF probes ("+why+"): recorded the /proc thread timeline only") {
		t.Errorf("recording without probes: %q, want a warning saying %q", out, why)
	}
}

func TestStartWithoutProbes(t *testing.T) {
	c := startChild(t, 2, false)
	pid := c.cmd.Process.Pid
	rec, err := Record(context.Background(), Options{PID: pid, Duration: 400 * time.Millisecond, NoProbes: true, PprofURL: "http://127.0.0.1:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Meta.Probes) != 0 || len(rec.Profiles) != 0 || rec.Locks != nil {
		t.Errorf("probes %v, views %d, locks %v: want none", rec.Meta.Probes, len(rec.Profiles), rec.Locks)
	}
	if rec.Threads == nil || rec.Threads.Samples < 2 || len(rec.Threads.Threads) < 3 {
		t.Errorf("timeline %+v: want samples of the child's threads", rec.Threads)
	}
	all := strings.Join(rec.Meta.Warnings, "\n")
	why := "asked for"
	if err := checkPrivileges(); err != nil {
		why = "missing " + strings.Join(err.(*PermissionError).Missing, " and ")
	}
	if !strings.Contains(all, "no eBPF probes ("+why+"): recorded the /proc thread timeline and the Go runtime profiles only") {
		t.Errorf("warnings %q lack what was recorded and why", all)
	}
	// The unreachable endpoint is reported, not fatal.
	if !strings.Contains(all, "127.0.0.1:1") {
		t.Errorf("warnings %q lack the unreachable pprof endpoint", all)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := recording.Write(dir, rec); err != nil {
		t.Fatal(err)
	}
	back, err := recording.Read(dir)
	if err != nil || back.Threads == nil || back.Threads.Samples != rec.Threads.Samples {
		t.Errorf("round trip: %v", err)
	}
}

// TestStartWithoutProbesUnprivileged records, as user nobody, a process
// of another user: /proc shows its threads' stat and status to anyone,
// so the timeline is recorded and the missing capabilities named.
func TestStartWithoutProbesUnprivileged(t *testing.T) {
	c := startChild(t, 2, false)
	cmd := testbin.HelperCmd("start-degraded", fmt.Sprintf("CONTEND_DEGRADED_PID=%d", c.cmd.Process.Pid))
	testbin.AsNobody(t, cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	checkDegradedOutput(t, string(out), "missing CAP_BPF and CAP_PERFMON")
	if os.Geteuid() == 0 && !strings.Contains(string(out), "executable of pid") || !strings.Contains(string(out), "is unknown") {
		t.Errorf("root's process recorded by nobody: %q, want the unknown executable noted", out)
	}
}

// TestStartWithoutProbesHiddenProc records, as nobody, a root process
// under a /proc mounted with hidepid=1 (in a private mount namespace):
// its entries cannot be read, and Start fails at once naming
// CAP_SYS_PTRACE.
func TestStartWithoutProbesHiddenProc(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal("unshare (util-linux) is missing")
	}
	procDir := t.TempDir()
	if err := os.Chmod(procDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := testbin.HelperCmd("start-degraded", fmt.Sprintf("CONTEND_DEGRADED_PID=%d", os.Getpid()), "CONTEND_PROC_ROOT="+procDir)
	testbin.AsNobody(t, cmd)
	args := append([]string{"unshare", "-m", "--propagation", "private", "sh", "-c", `mount -t proc -o hidepid=1 proc "$0" && exec "$@"`, procDir}, cmd.Args...)
	cmd.Path, cmd.Args = "/usr/bin/unshare", args
	if p, err := exec.LookPath("unshare"); err == nil {
		cmd.Path = p
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "permission: CAP_SYS_PTRACE") {
		t.Errorf("hidden /proc: %q, want a permission error naming CAP_SYS_PTRACE", out)
	}
}
