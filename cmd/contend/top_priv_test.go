//go:build linux && amd64

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

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
