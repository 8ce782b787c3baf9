package collector

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contend-dev/contend/internal/testbin"
)

func caps(list ...int) CapSet {
	var c CapSet
	for _, n := range list {
		c |= 1 << uint(n)
	}
	return c
}

func TestCheckCaps(t *testing.T) {
	for _, tc := range []struct {
		name    string
		caps    CapSet
		missing []string
	}{
		{"none", 0, []string{"CAP_BPF", "CAP_PERFMON"}},
		{"bpf only", caps(CapBPF), []string{"CAP_PERFMON"}},
		{"perfmon only", caps(CapPerfmon), []string{"CAP_BPF"}},
		{"ptrace only", caps(CapSysPtrace), []string{"CAP_BPF", "CAP_PERFMON"}},
		{"bpf and perfmon", caps(CapBPF, CapPerfmon), nil},
		{"sys_admin", caps(CapSysAdmin), nil},
		{"all", ^CapSet(0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCaps(tc.caps)
			if tc.missing == nil {
				if err != nil {
					t.Fatalf("checkCaps = %v, want nil", err)
				}
				return
			}
			var pe *PermissionError
			if !errors.Is(err, ErrPermission) || !errors.As(err, &pe) {
				t.Fatalf("checkCaps = %v, want a *PermissionError wrapping ErrPermission", err)
			}
			if diff := cmp.Diff(tc.missing, pe.Missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
			msg := err.Error()
			for _, m := range tc.missing {
				if !strings.Contains(msg, m) {
					t.Errorf("message %q does not name %s", msg, m)
				}
			}
			if !strings.Contains(msg, "setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep") {
				t.Errorf("message %q does not say what to do", msg)
			}
		})
	}
}

func TestEffectiveCaps(t *testing.T) {
	got, err := EffectiveCaps()
	if err != nil {
		t.Fatal(err)
	}
	// /proc/self/status shows the same set in hex.
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		testbin.Skip(t, "no /proc/self/status to compare with")
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			want, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			if uint64(got) != want {
				t.Errorf("EffectiveCaps = %x, /proc says %x", got, want)
			}
			return
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
}

func TestParseKernelRelease(t *testing.T) {
	for in, want := range map[string]KernelVersion{
		"6.1.0-18-amd64":    {6, 1, 0},
		"5.15.0-91-generic": {5, 15, 0},
		"5.8":               {5, 8, 0},
		"6.18.44-fc-v669":   {6, 18, 44},
		"4.19.0+":           {4, 19, 0},
	} {
		got, err := ParseKernelRelease(in)
		if err != nil || got != want {
			t.Errorf("ParseKernelRelease(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "linux", "6", "x.y"} {
		if _, err := ParseKernelRelease(in); err == nil {
			t.Errorf("ParseKernelRelease(%q) accepted", in)
		}
	}
	if !(KernelVersion{5, 14, 99}).Less(MinKernel) || (KernelVersion{5, 15, 0}).Less(MinKernel) || !(KernelVersion{4, 99, 0}).Less(KernelVersion{5, 0, 0}) {
		t.Error("KernelVersion.Less is wrong")
	}
}

func TestCheckKernel(t *testing.T) {
	sys := t.TempDir()
	if err := checkKernel(sys, "6.1.0"); !errors.Is(err, ErrNoBTF) {
		t.Errorf("no BTF file: got %v, want ErrNoBTF", err)
	}
	if err := os.MkdirAll(filepath.Join(sys, "kernel", "btf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys, btfPath), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkKernel(sys, "6.1.0"); err != nil {
		t.Errorf("BTF present, 6.1: %v", err)
	}
	err := checkKernel(sys, "5.10.0-28-amd64")
	if !errors.Is(err, ErrKernel) || !strings.Contains(err.Error(), "5.15") {
		t.Errorf("5.10: got %v, want ErrKernel naming 5.15", err)
	}
	if err := checkKernel(sys, "garbage"); err == nil || errors.Is(err, ErrKernel) {
		t.Errorf("unparsable release: got %v", err)
	}
}

func TestCheckTargetAccess(t *testing.T) {
	if err := checkTargetAccess("", os.Getpid()); err != nil {
		t.Errorf("own process: %v", err)
	}
	if err := checkTargetAccess("", 1<<30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("no such pid: got %v, want ErrNoProcess", err)
	}
}

// A process that exits between the /proc scan of --comm or --cgroup and
// the access check is skipped; one named by -p that does not exist stops
// the recording.
func TestCheckTargetsAccessSkipsGoneFollowed(t *testing.T) {
	pids := []int{os.Getpid(), 1 << 30}
	if err := checkTargetsAccess("", pids, true); err != nil {
		t.Errorf("followed target with a gone process: %v", err)
	}
	if err := checkTargetsAccess("", pids, false); !errors.Is(err, ErrNoProcess) {
		t.Errorf("-p with a gone process: got %v, want ErrNoProcess", err)
	}
}

// targetAccess is a helper process (see TestMain): it runs
// checkTargetAccess on the pid in CONTEND_ACCESS_PID and prints the
// result; TestCheckTargetAccessOtherUser runs it as an unprivileged user.
func targetAccess() int {
	pid, err := strconv.Atoi(os.Getenv("CONTEND_ACCESS_PID"))
	if err != nil {
		fmt.Println("CONTEND_ACCESS_PID is not a pid")
		return 2
	}
	err = checkTargetAccess("", pid)
	var pe *PermissionError
	if errors.As(err, &pe) {
		fmt.Printf("permission: %s\n", strings.Join(pe.Missing, ","))
	} else {
		fmt.Printf("result: %v\n", err)
	}
	return 0
}

// runUnprivileged runs this test binary as helper process helper, as user
// nobody without capabilities, and returns its output.
func runUnprivileged(t *testing.T, helper string, env ...string) string {
	t.Helper()
	cmd := testbin.HelperCmd(helper, env...)
	testbin.AsNobody(t, cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run %s: %v", helper, err)
		}
	}
	return string(out)
}

func TestCheckTargetAccessOtherUser(t *testing.T) {
	// A process of another user (root's: this test, or init when the
	// test is not root) cannot be read without CAP_SYS_PTRACE.
	target := os.Getpid()
	if os.Geteuid() != 0 {
		target = 1
	}
	out := runUnprivileged(t, "target-access", fmt.Sprintf("CONTEND_ACCESS_PID=%d", target))
	if !strings.Contains(out, "permission: CAP_SYS_PTRACE") {
		t.Errorf("unprivileged access to pid %d: got %q, want a permission error naming CAP_SYS_PTRACE", target, out)
	}
}
