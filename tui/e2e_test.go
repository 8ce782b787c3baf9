package tui

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
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
	testbin.Integration(t)
	if !ok {
		testbin.Skip(t, reason)
	}
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
func (p *tmuxPane) keys(keys ...string) {
	p.tmux(append([]string{"send-keys", "-t", "e2e"}, keys...)...)
}

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

// walkViews moves through every view and quits; it checks what each view
// shows and that the terminal is restored. With a finding named, it opens
// the first finding, checks it is that one, and scrolls to its stack where
// point (the program point frame) must be marked; with openLock, it opens
// the first lock.
func walkViews(t *testing.T, p *tmuxPane, finding, point string, openLock bool) {
	t.Helper()
	if got := p.format("alternate_on"); got != "1" {
		t.Errorf("contend runs outside the alternate screen (alternate_on=%s)", got)
	}
	if finding != "" {
		p.keys("Enter")
		p.waitFor("Finding #1", finding, "Suggestion")
		p.keys("PageDown")
		p.waitFor("Evidence")
		p.keys("End")
		p.waitFor("  > " + point)
		// Escape then a key at once reads as alt+key in a terminal: wait
		// for the escape to land first, as a person's typing does.
		p.keys("Escape")
		p.waitFor("#▼ Finding")
	}
	p.keys("2")
	p.waitFor("[2 Points", "Program point")
	p.keys("s")
	p.waitFor("Points sorted by wait")
	p.keys("3")
	p.waitFor("[3 Locks", "Total")
	if openLock {
		p.keys("Enter")
		p.waitFor("Wait-time histogram")
		p.keys("Escape")
		p.waitFor("Total▼")
	}
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
	p.quit()
}

// quit presses q and checks contend exited with 0 and left the terminal
// as it found it: main screen back, cursor visible.
func (p *tmuxPane) quit() {
	p.t.Helper()
	p.keys("q")
	p.waitFor("EXIT=0")
	if got := p.format("alternate_on"); got != "0" {
		p.t.Errorf("alternate screen still on after quitting (alternate_on=%s)", got)
	}
	if got := p.format("cursor_flag"); got != "1" {
		p.t.Errorf("cursor hidden after quitting (cursor_flag=%s)", got)
	}
}

// stripeBadDir returns a directory of the stripe fixture's bad-variant
// profiles: the captured one under analyzer/testdata when present, else
// one written by running the Go fixture for a few seconds.
func stripeBadDir(t *testing.T, dir string) string {
	t.Helper()
	captured := filepath.Join(moduleRoot(t), "analyzer", "testdata", "fixtures", "stripe-bad")
	if files, _ := filepath.Glob(filepath.Join(captured, "*")); len(files) > 0 {
		return captured
	}
	fix := goBuild(t, "fixtures/cmd/gofixture", dir)
	prof := filepath.Join(dir, "profiles")
	cmd := exec.Command(fix, "stripe", "-variant", "bad", "-duration", "3s", "-profiles", prof)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gofixture stripe: %v\n%s", err, b)
	}
	return prof
}

// TestEndToEndTUI browses the stripe fixture's profile directory with
// `contend tui DIR` in tmux: the lock convoy is named, opens, every view
// shows, q restores the terminal.
func TestEndToEndTUI(t *testing.T) {
	testbin.Integration(t)
	dir := t.TempDir()
	bin := goBuild(t, "cmd/contend", dir)
	p := newTmux(t, 80, 24, fmt.Sprintf("%s tui %s; echo EXIT=$?", bin, stripeBadDir(t, dir)))
	p.waitFor("lock-convoy", "stripe.(*subscription)")
	walkViews(t, p, "lock-convoy", "stripe.(*subscription).onIncomingMessage", true)
}

// liveFixture builds contend and the native spin fixture (root only) and
// starts the fixture's bad variant for secs seconds: eight relay threads
// busy-waiting on one flag on a 2-core machine, the design's spin convoy.
// It is killed when the test ends.
func liveFixture(t *testing.T, secs int) (bin string, target *exec.Cmd) {
	t.Helper()
	testbin.Integration(t)
	needEnv(t, os.Geteuid() == 0, "contend top needs root for its BPF probes")
	_, err := exec.LookPath("gcc")
	needEnv(t, err == nil, "gcc is not installed (it builds the native fixture)")
	dir := t.TempDir()
	bin = goBuild(t, "cmd/contend", dir)
	fix := filepath.Join(dir, "spin")
	// The Makefile's fixture flags: optimised, with symbols and line
	// numbers for the program point.
	cc := exec.Command("gcc", "-O2", "-g", "-pthread", "-Wall", "-o", fix, "fixtures/c/spin.c")
	cc.Dir = moduleRoot(t)
	if b, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("gcc spin.c: %v\n%s", err, b)
	}
	target = exec.Command(fix, "-variant", "bad", "-duration", strconv.Itoa(secs))
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
	return bin, target
}

// startTop starts the spin fixture for secs seconds and `contend top` on
// it (with extra flags) in an 80x24 tmux pane, and waits for the live
// header.
func startTop(t *testing.T, secs int, flags string) (*tmuxPane, int) {
	t.Helper()
	p, target := startTopOn(t, secs, flags)
	return p, target.Process.Pid
}

// startTopOn is startTop returning the fixture's process, for a test
// that ends it.
func startTopOn(t *testing.T, secs int, flags string) (*tmuxPane, *exec.Cmd) {
	t.Helper()
	bin, target := liveFixture(t, secs)
	pid := target.Process.Pid
	// A top that outlives its pane (the tmux server gone, top slow to
	// exit on the hang-up) would hold its probes and a CPU into the next
	// test and starve that test's fixture: it is killed when the test
	// ends, after the pane (cleanups run last first).
	t.Cleanup(func() { _ = exec.Command("pkill", "-KILL", "-f", bin+" top -p "+strconv.Itoa(pid)).Run() })
	p := newTmux(t, 80, 24, fmt.Sprintf("%s top -p %d %s; echo EXIT=$?", bin, pid, flags))
	p.waitFor("contend top", fmt.Sprintf("pid %d spin", pid), "LIVE")
	return p, target
}

// TestEndToEndTopScreen runs `contend top` on the spin fixture in tmux and
// works every key of a live session: the header names the target, w
// switches the window, p pauses and resumes, e exports a recording that
// reads back, every view shows, q restores the terminal.
func TestEndToEndTopScreen(t *testing.T) {
	export := t.TempDir()
	p, pid := startTop(t, 300, "--export-dir "+export)
	p.waitFor("probes ")
	p.keys("w")
	p.waitFor("whole run")
	p.keys("p")
	p.waitFor("PAUSED", "recording goes on")
	p.keys("p")
	p.waitFor("LIVE", "resumed")
	p.keys("e")
	p.waitFor("exported to " + export)
	dirs, _ := filepath.Glob(filepath.Join(export, fmt.Sprintf("contend-spin-%d-*", pid)))
	if len(dirs) != 1 {
		t.Fatalf("export wrote %v, want one recording", dirs)
	}
	rec, err := recording.Read(dirs[0])
	if err != nil {
		t.Fatalf("exported recording does not read back: %v", err)
	}
	if rec.Meta.PID != pid || rec.Threads == nil || len(rec.Threads.Threads) == 0 {
		t.Errorf("exported recording: pid %d, timeline %v", rec.Meta.PID, rec.Threads)
	}
	if st, err := os.Stat(filepath.Join(dirs[0], TraceFile)); err != nil || st.Size() == 0 {
		t.Errorf("exported recording has no Perfetto trace: %v", err)
	}
	walkViews(t, p, "", "", false)
}

// TestEndToEndTop watches the spin fixture live with `contend top` in
// tmux: the spin convoy is named within the refreshes, opens with its
// suggestion and its stack, every view shows, q restores the terminal.
func TestEndToEndTop(t *testing.T) {
	p, _ := startTop(t, 300, "")
	p.waitFor("spin-convoy", "spin_acquire")
	walkViews(t, p, "spin-convoy", "spin_acquire", false)
}

// TestEndToEndTopTargetExit watches a fixture that ends: the
// screen says the target exited, keeps its data and still answers keys.
func TestEndToEndTopTargetExit(t *testing.T) {
	// The fixture is ended once top shows it live (SIGTERM: it stops its
	// workers and exits), so the exit comes after top attached however
	// slow the machine is.
	p, target := startTopOn(t, 300, "")
	if err := target.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitFor("EXITED", "target exited after")
	p.keys("3")
	p.waitFor("[3 Locks", fmt.Sprintf("pid %d spin", target.Process.Pid), "EXITED")
	p.quit()
}

type devNull struct{}

func (devNull) Write(b []byte) (int, error) { return len(b), nil }
