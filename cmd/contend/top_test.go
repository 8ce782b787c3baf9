package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/term"

	"github.com/contend-dev/contend/internal/testbin"
)

// The interactive commands refuse bad arguments, bad inputs and a missing
// terminal with a one-line message and a usage exit code, before anything
// is drawn. (Their screens are tested in package tui, end to end in tmux.)
func TestInteractiveCommandsRefuseEarly(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.txt")
	if err := os.WriteFile(junk, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"top"}, exitUsage, "give -p PID[,PID…], --comm NAME or --cgroup PATH"},
		{[]string{"top", "-p", "-3"}, exitUsage, "pid -3: a process id is a positive number"},
		{[]string{"top", "-p", "1", "--comm", "x"}, exitUsage, "give one of -p, --comm and --cgroup"},
		{[]string{"top", "-p", "1", "-d", "-1s"}, exitUsage, "--duration must not be negative"},
		{[]string{"top", "-p", "1", "extra"}, exitUsage, "unknown command"},
		{[]string{"tui"}, exitUsage, "requires at least 1 arg"},
		{[]string{"tui", filepath.Join(dir, "missing")}, exitUsage, "no such file or directory"},
		{[]string{"tui", junk}, exitUsage, "not a Go profile or goroutine dump"},
		{[]string{"tui", dir}, exitUsage, "not a Go profile or goroutine dump"}, // junk.txt inside
		{[]string{"tui", t.TempDir()}, exitUsage, "holds no profile files"},
	}
	for _, c := range cases {
		_, stderr, code := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("contend %s: exit %d, %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr, c.code, c.msg)
		}
		if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 && !strings.Contains(stderr, "Run '") {
			t.Errorf("contend %s: message of %d lines: %q", strings.Join(c.args, " "), n+1, stderr)
		}
	}
}

func TestInteractiveCommandsNeedTerminal(t *testing.T) {
	if term.IsTerminal(os.Stderr.Fd()) {
		testbin.Skip(t, "stderr is a terminal here: the test needs one that is not")
	}
	rec := live("c-idle-bad")
	for _, args := range [][]string{{"top", "-p", "1"}, {"tui", rec}} {
		_, stderr, code := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "needs a terminal on stderr") {
			t.Errorf("contend %s without a terminal: exit %d, %q", strings.Join(args, " "), code, stderr)
		}
	}
}
