package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/internal/testbin"
)

// runDoctorCmd runs `contend doctor args...` in this process and returns
// its stdout and exit code.
func runDoctorCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"doctor"}, args...))
	err := root.Execute()
	if err == nil {
		return out.String(), exitOK
	}
	return out.String(), exitCode(err)
}

func TestDoctorAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root")
		}
		t.Skip("needs root")
	}
	out, code := runDoctorCmd(t)
	for _, want := range []string{"System\n", "Capabilities\n", "BPF features\n", "Probes\n", "ok       CAP_BPF", "tracefs", "kernel.perf_event_paranoid", "Verdict: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Root holds every capability; this kernel (and CI's) has every
	// feature, so only a probe refused by the verifier may fail.
	switch code {
	case exitOK:
		if !strings.Contains(out, "Verdict: ready") {
			t.Errorf("exit 0 without a ready verdict:\n%s", out)
		}
	case exitKernel:
		if !strings.Contains(out, "contend bug or a verifier difference") {
			t.Errorf("exit 5 on a kernel with every feature, without naming a refused probe:\n%s", out)
		}
	default:
		t.Errorf("exit %d as root:\n%s", code, out)
	}

	js, code2 := runDoctorCmd(t, "--json")
	if code2 != code {
		t.Errorf("--json exit %d, text exit %d", code2, code)
	}
	var r collector.DoctorReport
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatalf("--json output: %v\n%s", err, js)
	}
	if r.Kernel == "" || len(r.Capabilities) != 4 || len(r.Probes) != 4 {
		t.Errorf("JSON report incomplete: %+v", r)
	}
}

func TestDoctorRejectsArgs(t *testing.T) {
	if _, code := runDoctorCmd(t, "extra"); code != exitUsage {
		t.Errorf("doctor extra: exit %d, want %d", code, exitUsage)
	}
}

func TestDoctorWithoutPrivileges(t *testing.T) {
	cmd := testbin.HelperCmd("doctor")
	testbin.AsNobody(t, cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("doctor without privileges: %v, want a non-zero exit\n%s%s", err, stdout.String(), stderr.String())
	}
	if ee.ExitCode() != exitPrivilege {
		t.Fatalf("exit %d, want %d\n%s%s", ee.ExitCode(), exitPrivilege, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"missing  CAP_BPF",
		"missing  CAP_PERFMON",
		"sudo setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep $(which contend)",
		"Verdict: missing privileges",
		"unknown  futex",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if msg := stderr.String(); !strings.Contains(msg, "contend: missing CAP_BPF and CAP_PERFMON") {
		t.Errorf("stderr = %q, want the missing capabilities named", msg)
	}
}
