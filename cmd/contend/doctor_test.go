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
	"github.com/contend-dev/contend/internal/leftover"
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
	testbin.RequireRoot(t, "checking every capability and probe")
	out, code := runDoctorCmd(t)
	for _, want := range []string{"System\n", "Capabilities\n", "BPF features\n", "Probes\n", "ok       CAP_BPF", "kernel.perf_event_paranoid", "Verdict: "} {
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
	if r.Kernel == "" || len(r.Capabilities) != 4 || len(r.Probes) != len(collector.AllProbes) {
		t.Errorf("JSON report incomplete: %+v", r)
	}
	var top map[string]any
	if err := json.Unmarshal([]byte(js), &top); err != nil || top["schema"] != DoctorSchemaVersion {
		t.Errorf("--json schema %v (%v), want %q", top["schema"], err, DoctorSchemaVersion)
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

// TestLeftoverCheck: doctor says whether contend's probes are left in the
// kernel, and how to clean up when no process holds them.
func TestLeftoverCheck(t *testing.T) {
	held := []leftover.Program{{ID: 7, Name: "ct_sys_enter", Holders: []leftover.Holder{{PID: 4242, Cmdline: "contend record -p 1"}}}}
	orphan := []leftover.Program{held[0], {ID: 9, Name: "ct_sys_exit"}}
	for _, c := range []struct {
		progs  []leftover.Program
		err    error
		status collector.CheckStatus
		want   []string
	}{
		{nil, nil, collector.CheckOK, []string{"none of contend's BPF programs is loaded"}},
		{held, nil, collector.CheckInfo, []string{"held by pid 4242 (contend record -p 1)", "kill 4242"}},
		{orphan, nil, collector.CheckMissing, []string{"no process holds them: ct_sys_exit (id 9)", "bpftool prog show id 9", "/sys/fs/bpf"}},
		{nil, os.ErrPermission, collector.CheckUnknown, []string{"as root"}},
	} {
		got := leftoverCheck(c.progs, c.err)
		text := got.Detail + " " + got.Fix
		if got.Status != c.status {
			t.Errorf("%v: status %s, want %s (%s)", c.progs, got.Status, c.status, text)
		}
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%v: %q lacks %q", c.progs, text, w)
			}
		}
	}
	r := &collector.DoctorReport{}
	addLeftoverCheck(r, leftoverCheck(orphan, nil))
	if len(r.System) != 1 || len(r.Fixes) != 1 {
		t.Errorf("orphaned probes: the report lists %d checks and %d fixes, want one of each", len(r.System), len(r.Fixes))
	}
}
