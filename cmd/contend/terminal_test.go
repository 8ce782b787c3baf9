package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
)

// TestNoTerminalQueries: on a terminal that never answers (script, a CI
// log, an editor's shell), commands other than top and tui write no
// terminal query and do not wait for an answer. The TUI library used to
// query the background colour and the cursor position before main ran,
// for every command, and wait 5 s for the answer.
func TestNoTerminalQueries(t *testing.T) {
	bin := testbin.Go(t, "cmd/contend")
	// The same command with no terminal at all is the baseline: what
	// starting contend costs on this machine now.
	start := time.Now()
	if out, err := exec.Command(bin, "--version").Output(); err != nil {
		t.Fatalf("contend --version: %v %s", err, out)
	}
	base := time.Since(start)
	// A query waits 5 s for its answer; starting contend takes a few
	// milliseconds. Three times the baseline, and never less than a
	// second, tells them apart on a loaded machine.
	bound := max(3*base, time.Second)
	recording := filepath.Join("..", "..", "analyzer", "testdata", "live", "c-spin-bad")
	for _, args := range [][]string{{"--version"}, {"analyze", recording}, {"compare", recording, recording}, {"doctor", "--help"}} {
		run := testbin.RunOnSilentPTY(t, exec.Command(bin, args...), 30*time.Second)
		if run.Err != nil {
			t.Errorf("contend %v: %v\n%s", args, run.Err, run.Output)
		}
		for _, q := range []string{"\x1b]11;?", "\x1b]10;?", "\x1b[6n", "\x1b[c"} {
			if bytes.Contains(run.Output, []byte(q)) {
				t.Errorf("contend %v queried the terminal (%q)", args, q)
			}
		}
		if args[0] == "--version" && bytes.ContainsRune(run.Output, 0x1b) {
			t.Errorf("contend --version wrote escape sequences: %q", run.Output)
		}
		if run.Took > bound {
			t.Errorf("contend %v took %s on a silent terminal, against %s without one (bound %s)", args, run.Took.Round(time.Millisecond), base.Round(time.Millisecond), bound)
		}
	}
}
