//go:build linux && amd64

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

func TestDemoUsage(t *testing.T) {
	var out bytes.Buffer
	if err := runDemo(t.Context(), demoOptions{list: true, fixtures: t.TempDir()}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, c := range demoCases {
		if !strings.Contains(out.String(), "  "+c.name+" ") {
			t.Errorf("--list lacks %s:\n%s", c.name, out.String())
		}
	}
	if !strings.Contains(out.String(), "writer") || !strings.Contains(out.String(), "not built") {
		t.Errorf("--list does not say the native-only case is not built:\n%s", out.String())
	}
	for _, o := range []demoOptions{
		{name: "nope", duration: 1},
		{name: "spin", duration: 0},
		{name: "spin", duration: 1, variant: "worse"},
	} {
		if o.variant == "" {
			o.variant = "bad"
		}
		err := runDemo(t.Context(), o, &out, &out)
		if err == nil || exitCode(err) != exitUsage {
			t.Errorf("demo %+v: %v (exit %d), want a usage error", o, err, exitCode(err))
		}
	}
}

func TestDemoCommandPrefersNative(t *testing.T) {
	dir := t.TempDir()
	cmd, desc, err := demoCommand(demoCases[0], dir, "bad")
	if err != nil || !strings.Contains(desc, "Go fixture lockedspin") || cmd.Args[1] != "fixture" {
		t.Errorf("without native fixtures: %q %v, %v", desc, cmd, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "spin"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, desc, err = demoCommand(demoCases[0], dir, "fixed")
	if err != nil || desc != "native fixture spin" || cmd.Args[0] != filepath.Join(dir, "spin") || cmd.Args[2] != "fixed" {
		t.Errorf("with a native spin outside the working directory: %q %v, %v (want it named by its file name)", desc, cmd.Args, err)
	}
	t.Chdir(filepath.Dir(dir))
	if _, desc, _ = demoCommand(demoCases[0], dir, "bad"); desc != "native fixture "+filepath.Join(filepath.Base(dir), "spin") {
		t.Errorf("a native spin below the working directory is %q, want it relative to it", desc)
	}
	var writer demoCase
	for _, c := range demoCases {
		if c.name == "writer" {
			writer = c
		}
	}
	if _, _, err := demoCommand(writer, t.TempDir(), "bad"); err == nil || exitCode(err) != exitUsage {
		t.Errorf("writer without its native fixture: %v", err)
	}
}

var startedRE = regexp.MustCompile(`started .* pid (\d+)\)`)

// runDemoBinary runs the contend binary's demo with args and returns its
// output and the fixture's pid, checking that the fixture is gone.
func runDemoBinary(t *testing.T, args ...string) string {
	t.Helper()
	cmd, out, errb := contendCmd(t, append([]string{"demo"}, args...)...)
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("contend demo exited %d\nstderr: %s", code, errb)
	}
	m := startedRE.FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("stderr does not name the fixture's pid: %s", errb)
	}
	pid, _ := strconv.Atoi(m[1])
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the fixture (pid %d) still runs after the demo", pid)
	}
	// The report wraps its lines; compare words, not layout.
	return strings.Join(strings.Fields(out.String()), " ")
}

func TestDemoNativeSpin(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "../../fixtures/c/spin.c", "-O2", "-g", "-pthread")
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "spin")); err != nil {
		t.Fatal(err)
	}
	out := runDemoBinary(t, "spin", "-d", "3s", "--fixtures", dir)
	if !strings.Contains(out, "kind spin-convoy") || !strings.Contains(out, "busy-wait in spin_acquire") {
		t.Errorf("no spin convoy found:\n%s", out)
	}
}

func TestDemoGoLockedSpin(t *testing.T) {
	requireRoot(t)
	out := runDemoBinary(t, "lockedspin", "-d", "3s", "--fixtures", t.TempDir())
	if !strings.Contains(out, "kind spin-convoy") || !strings.Contains(out, "lockedspin.(*spinLock).lock") {
		t.Errorf("no spin convoy found in the Go fixture:\n%s", out)
	}
}
