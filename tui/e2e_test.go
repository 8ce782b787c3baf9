package tui

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/recording"
)

// The end-to-end tests run the contend binary in a tmux pane at 80x24,
// read the screen with capture-pane, type keys with send-keys, and check
// that the terminal is restored when contend exits.

// screenTimeout bounds every wait for text on the screen. It is a guard
// against a hang, not a measurement: a loaded CI machine may take seconds
// to build, start the fixture and analyze.
const screenTimeout = 90 * time.Second

// needEnv skips (or, under CI, fails) when something the test needs is
// missing.
func needEnv(t *testing.T, ok bool, reason string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but %s", reason)
	}
	t.Skip(reason)
}

// moduleRoot is the repository root (this package is one level down).
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// goBuild builds the main package pkg (module-relative) into dir.
func goBuild(t *testing.T, pkg, dir string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, "./"+pkg)
	cmd.Dir = moduleRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// tmuxPane is one detached tmux session on a private server socket.
type tmuxPane struct {
	t      *testing.T
	socket string
}

func newTmux(t *testing.T, w, h int, command string) *tmuxPane {
	t.Helper()
	_, err := exec.LookPath("tmux")
	needEnv(t, err == nil, "tmux is not installed")
	p := &tmuxPane{t: t, socket: fmt.Sprintf("contend-e2e-%d-%d", os.Getpid(), time.Now().UnixNano())}
	// A plain shell runs the command, so its exit status and the state of
	// the terminal after contend are visible in the same pane.
	p.tmux("new-session", "-d", "-s", "e2e", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), "sh")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", p.socket, "kill-server").Run() })
	p.tmux("send-keys", "-t", "e2e", command, "Enter")
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (p *tmuxPane) screen() string { return p.tmux("capture-pane", "-p", "-t", "e2e") }

// keys types tmux key names (Enter, Escape, Tab, Down) or text.
func (p *tmuxPane) keys(keys ...string) { p.tmux(append([]string{"send-keys", "-t", "e2e"}, keys...)...) }

// waitFor polls the screen until it contains every one of want.
func (p *tmuxPane) waitFor(want ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(screenTimeout)
	for {
		s := p.screen()
		ok := true
		for _, w := range want {
			if !strings.Contains(s, w) {
				ok = false
			}
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("screen never showed %q; last screen:\n%s", want, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// format reads a tmux pane format variable.
func (p *tmuxPane) format(name string) string {
	return strings.TrimSpace(p.tmux("display-message", "-p", "-t", "e2e", "#{"+name+"}"))
}

// walkViews moves through every view and back to the first finding, and
// quits; it checks what each view shows and that the terminal is restored.
func walkViews(t *testing.T, p *tmuxPane, finding string) {
	t.Helper()
	if got := p.format("alternate_on"); got != "1" {
		t.Errorf("contend runs outside the alternate screen (alternate_on=%s)", got)
	}
	p.keys("Enter")
	p.waitFor("Finding #1", finding, "Suggestion")
	p.keys("PageDown")
	p.waitFor("Evidence")
	// Escape then a key at once reads as alt+key in a terminal: wait for
	// the escape to land first, as a person's typing does.
	p.keys("Escape")
	p.waitFor("#▼ Finding")
	p.keys("2")
	p.waitFor("[2 Points", "Program point")
	p.keys("s")
	p.waitFor("Points sorted by wait")
	p.keys("3")
	p.waitFor("[3 Locks", "Total")
	p.keys("Enter")
	p.waitFor("Wait-time histogram")
	p.keys("Escape")
	p.waitFor("Total▼")
	p.keys("4")
	p.waitFor("[4 Threads", "Invol")
	p.keys("5")
	p.waitFor("[5 Idle", "Not contention")
	p.keys("?")
	p.waitFor("Keys", "? or esc closes")
	p.keys("Escape")
	p.waitFor("Not contention: why")
	p.keys("Tab")
	p.waitFor("[1 Findings", finding)
	p.keys("q")
	p.waitFor("EXIT=0")
	if got := p.format("alternate_on"); got != "0" {
		t.Errorf("alternate screen still on after quitting (alternate_on=%s)", got)
	}
	if got := p.format("cursor_flag"); got != "1" {
		t.Errorf("cursor hidden after quitting (cursor_flag=%s)", got)
	}
}

// stripeBadInputs returns the inputs of the stripe fixture's bad variant:
// the captured fixture when it is in analyzer/testdata, otherwise profiles
// written by running the Go fixture for a few seconds.
func stripeBadInputs(t *testing.T, dir string) []string {
	t.Helper()
	captured := filepath.Join(moduleRoot(t), "analyzer", "testdata", "fixtures", "stripe-bad")
	if recording.IsRecording(captured) {
		return []string{captured}
	}
	if files, _ := filepath.Glob(filepath.Join(captured, "*")); len(files) > 0 {
		return files
	}
	fix := goBuild(t, "fixtures/cmd/gofixture", dir)
	prof := filepath.Join(dir, "profiles")
	cmd := exec.Command(fix, "stripe", "-variant", "bad", "-duration", "3s", "-profiles", prof)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gofixture stripe: %v\n%s", err, b)
	}
	files, err := filepath.Glob(filepath.Join(prof, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("gofixture wrote no profiles in %s", prof)
	}
	return files
}

// TestEndToEndTUI browses the stripe fixture's profiles with `contend tui`
// in tmux: the lock convoy is named, opens, every view shows, q restores
// the terminal.
func TestEndToEndTUI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds contend and a fixture")
	}
	dir := t.TempDir()
	bin := goBuild(t, "cmd/contend", dir)
	inputs := stripeBadInputs(t, dir)
	p := newTmux(t, 80, 24, fmt.Sprintf("%s tui %s; echo EXIT=$?", bin, strings.Join(inputs, " ")))
	p.waitFor("lock-convoy", "stripe.(*subscription)")
	walkViews(t, p, "lock-convoy")
}

// TestEndToEndTop watches the spin fixture live with `contend top` in
// tmux: the spin convoy is named within the refreshes, every view shows,
// the window and pause keys answer, q restores the terminal.
func TestEndToEndTop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds contend and a fixture")
	}
	needEnv(t, os.Geteuid() == 0, "contend top needs root for its BPF probes")
	dir := t.TempDir()
	bin := goBuild(t, "cmd/contend", dir)
	// Live findings need the collector's recordings and the live
	// detectors; `contend record` is the sign that both are in.
	needEnv(t, exec.Command(bin, "record", "--help").Run() == nil, "contend record is not available yet")
	fix := goBuild(t, "fixtures/cmd/gofixture", dir)

	target := exec.Command(fix, "spin", "-variant", "bad", "-duration", "120s")
	stdout, err := target.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = target.Process.Kill()
		_ = target.Wait()
	})
	go func() { _, _ = bufio.NewReader(stdout).WriteTo(devNull{}) }()

	p := newTmux(t, 80, 24, fmt.Sprintf("%s top -p %d; echo EXIT=$?", bin, target.Process.Pid))
	p.waitFor("contend top", fmt.Sprintf("pid %d", target.Process.Pid), "LIVE")
	p.waitFor("spin-convoy")
	p.keys("w")
	p.waitFor("whole run")
	p.keys("p")
	p.waitFor("PAUSED")
	p.keys("p")
	walkViews(t, p, "spin-convoy")
}

type devNull struct{}

func (devNull) Write(b []byte) (int, error) { return len(b), nil }
