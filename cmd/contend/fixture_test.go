package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"
)

func TestFixtureCommand(t *testing.T) {
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"fixture", "idle", "-variant", "fixed", "-duration", "200ms", "-pprof", "127.0.0.1:0"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^fixture=idle variant=fixed ops=\d+ elapsed=\S+ ops_per_sec=\d+\n$`).Match(out.Bytes()) {
		t.Errorf("stdout %q", out.String())
	}
	if !regexp.MustCompile(`pprof: http://127\.0\.0\.1:\d+`).Match(errOut.Bytes()) {
		t.Errorf("stderr %q", errOut.String())
	}
}

func TestFixtureCommandUsage(t *testing.T) {
	for _, args := range [][]string{{"fixture"}, {"fixture", "nope"}, {"fixture", "spin", "-variant", "worse"}} {
		if code := run(args); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}

func TestFixtureCommandHidden(t *testing.T) {
	root := newRootCmd()
	for _, c := range root.Commands() {
		if c.Name() == "fixture" && !c.Hidden {
			t.Error("fixture subcommand is listed in help")
		}
	}
}
