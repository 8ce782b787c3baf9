//go:build linux && amd64

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/contend-dev/contend/internal/testbin"
)

// pane is a tmux session on a private server running one command in a
// terminal, so that contend top gets the terminal it requires.
type pane struct {
	t      *testing.T
	socket string
}

// runInPane runs args (shell-quoted into one command line) in a new
// 100x30 tmux pane, followed by "EXIT=<status>", and returns the pane.
func runInPane(t *testing.T, args []string) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (CI installs it)")
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	p := &pane{t: t, socket: fmt.Sprintf("contend-top-%d-%d", os.Getpid(), time.Now().UnixNano())}
	line := strings.Join(quoted, " ") + "; echo EXIT=$?; sleep 600"
	if out, err := exec.Command("tmux", "-L", p.socket, "new-session", "-d", "-x", "100", "-y", "30", line).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-L", p.socket, "kill-server").Run() })
	return p
}

func (p *pane) screen() string {
	out, err := exec.Command("tmux", "-L", p.socket, "capture-pane", "-p", "-J").CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux capture-pane: %v\n%s", err, out)
	}
	return string(out)
}

// waitFor polls the screen until it holds every one of want.
func (p *pane) waitFor(want ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := p.screen()
		missing := ""
		for _, w := range want {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("screen never showed %q:\n%s", missing, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (p *pane) keys(k ...string) {
	if out, err := exec.Command("tmux", append([]string{"-L", p.socket, "send-keys"}, k...)...).CombinedOutput(); err != nil {
		p.t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
}

// TestTopWithoutPrivileges runs contend top as user nobody, without
// capabilities: on a plain target it names what is missing and stops
// before drawing; with --pprof it shows the Go target's findings, says
// "no probes", and on quitting names the gap again and exits with 3.
func TestTopWithoutPrivileges(t *testing.T) {
	pid, url := startGoFixture(t)
	plain := exec.Command(testbin.Go(t, "cmd/contend"), "top", "-p", strconv.Itoa(pid))
	testbin.AsNobody(t, plain)
	p := runInPane(t, plain.Args)
	s := p.waitFor("EXIT=")
	if !strings.Contains(s, "contend: top: missing CAP_BPF and CAP_PERFMON") || !strings.Contains(s, "EXIT=3") {
		t.Errorf("top without privileges or --pprof:\n%s", s)
	}

	live := exec.Command(testbin.Go(t, "cmd/contend"), "top", "-p", strconv.Itoa(pid), "--pprof", url)
	testbin.AsNobody(t, live)
	p = runInPane(t, append([]string{"env", "-C", live.Dir}, live.Args...))
	p.waitFor("no probes", "lock-convoy", "onIncomingMessage")
	p.keys("q")
	s = p.waitFor("EXIT=")
	for _, want := range []string{
		"contend: missing CAP_BPF and CAP_PERFMON",
		"contend: top: watched without eBPF probes: missing CAP_BPF and CAP_PERFMON",
		"EXIT=3",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("after quitting, the terminal lacks %q:\n%s", want, s)
		}
	}
}

// child returns the pid of the one process the pane's shell runs, once it
// has started.
func (p *pane) child() int {
	p.t.Helper()
	out, err := exec.Command("tmux", "-L", p.socket, "display-message", "-p", "#{pane_pid}").CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux display-message: %v\n%s", err, out)
	}
	sh := strings.TrimSpace(string(out))
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + sh + "/task/" + sh + "/children")
		if f := strings.Fields(string(b)); len(f) > 0 {
			pid, _ := strconv.Atoi(f[0])
			return pid
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the pane's shell (pid %s) started no command", sh)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hangUp ends the pane's tmux server: the terminal hangs up on what runs
// in it.
func (p *pane) hangUp() {
	if out, err := exec.Command("tmux", "-L", p.socket, "kill-server").CombinedOutput(); err != nil {
		p.t.Fatalf("tmux kill-server: %v\n%s", err, out)
	}
}

// gone reports whether process pid has ended (exited, or a zombie not yet
// reaped).
func gone(pid int) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return true
	}
	st, err := p.Stat()
	return err != nil || st.State == "Z" || st.State == "X"
}

// topExitWithin is how soon contend top must be gone after a signal or a
// hang-up: detaching the probes and restoring the terminal take
// milliseconds, and the rest of the allowance is for a machine busy with
// the target (the stripe fixture's 64 threads on 2 CPUs) and other tests.
// An exit that builds the whole session's recording took minutes.
const topExitWithin = 5 * time.Second

// TestTopExitsOnSignals watches the stripe fixture (about 100,000 lock
// waits a second) with contend top for a few seconds, then ends it by a
// signal or by hanging up its terminal: each time it must be gone within
// topExitWithin, with every BPF program and link it held released, and
// after a signal its shell sees it exit normally.
func TestTopExitsOnSignals(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "../../fixtures/c/stripe.c", "-O2", "-g")
	contend := testbin.Go(t, "cmd/contend")
	for _, c := range []struct {
		name string
		sig  syscall.Signal // 0: hang up the terminal
	}{{"SIGTERM", syscall.SIGTERM}, {"SIGHUP", syscall.SIGHUP}, {"SIGINT", syscall.SIGINT}, {"hang-up", 0}} {
		t.Run(c.name, func(t *testing.T) {
			target := testbin.Start(t, bin, "-variant", "bad", "-duration", "120")
			p := runInPane(t, []string{contend, "top", "-p", strconv.Itoa(target.PID)})
			top := p.child()
			progs, links := waitAttached(t, top)
			p.waitFor("LIVE", fmt.Sprintf("pid %d stripe", target.PID), "#▼ Finding")
			time.Sleep(3 * time.Second)
			start := time.Now()
			if c.sig == 0 {
				p.hangUp()
			} else if err := syscall.Kill(top, c.sig); err != nil {
				t.Fatal(err)
			}
			for !gone(top) {
				if time.Since(start) > topExitWithin {
					t.Fatalf("contend top (pid %d) still runs %s after %s", top, topExitWithin, c.name)
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("gone %s after %s", time.Since(start).Round(time.Millisecond), c.name)
			testbin.CheckBPFGone(t, progs, links)
			if c.sig != 0 {
				if s := p.waitFor("EXIT="); !strings.Contains(s, "EXIT=0") {
					t.Errorf("after %s the shell saw:\n%s", c.name, s)
				}
			}
			if !target.Running() {
				t.Error("the target stopped running")
			}
		})
	}
}
