package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

// TestMakeInstall installs into a staging directory as the README says
// (make install PREFIX=…) and runs the installed contend: it says its
// version and finds the demo's native fixtures where install put them.
func TestMakeInstall(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		testbin.Skip(t, "make is not installed")
	}
	testbin.Integration(t)
	stage := t.TempDir()
	cmd := exec.Command("make", "-s", "install", "DESTDIR="+stage, "PREFIX=/opt/contend")
	cmd.Dir = testbin.ModuleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	bin := filepath.Join(stage, "opt", "contend", "bin", "contend")
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "contend ") {
		t.Fatalf("installed contend --version: %q, %v", out, err)
	}
	list, err := exec.Command(bin, "demo", "--list").Output()
	want := "native, " + filepath.Join(stage, "opt", "contend", "bin", "..", "libexec", "contend", "fixtures", "spin")
	if err != nil || !strings.Contains(string(list), want) {
		t.Errorf("installed contend demo --list does not run the installed spin fixture (want %q):\n%s%v", want, list, err)
	}
}

func TestFixturesBeside(t *testing.T) {
	got := fixturesBeside("/opt/contend/bin/contend")
	if len(got) != 2 || got[0] != "/opt/contend/bin/fixtures" || got[1] != "/opt/contend/libexec/contend/fixtures" {
		t.Errorf("fixturesBeside: %q", got)
	}
}
