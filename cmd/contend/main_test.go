package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
)

// TestMain runs the helper processes tests start from this binary
// (testbin.HelperCmd), then the tests.
func TestMain(m *testing.M) {
	testbin.RunHelper(map[string]func() int{
		// doctor runs `contend doctor` in-process, for
		// TestDoctorWithoutPrivileges to run as nobody.
		"doctor": func() int { return run([]string{"doctor"}) },
		// measure runs its arguments as a command and reports the
		// command's exit code and peak memory (runMeasured).
		"measure": measureChild,
		// stuck stops on its first signal as contend does and then
		// hangs, as a command stuck past it would.
		"stuck": stuckAfterSignal,
	})
	os.Exit(m.Run())
}

// stuckAfterSignal says "ready", waits for a stop signal, says
// "stopping" and then does not return for a minute.
func stuckAfterSignal() int {
	ctx, stop := stopOnSignal(context.Background())
	defer stop()
	fmt.Println("ready")
	<-ctx.Done()
	fmt.Println("stopping")
	time.Sleep(time.Minute)
	return 0
}

// TestSecondSignalEndsContend: the first SIGTERM asks contend to stop
// (it goes on, here stuck); the next ones end it.
func TestSecondSignalEndsContend(t *testing.T) {
	cmd := testbin.HelperCmd("stuck")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			cmd.Process.Kill()
			t.Fatalf("helper said %q (%v), want %q", lines.Text(), lines.Err(), want)
		}
	}
	expect("ready")
	cmd.Process.Signal(syscall.SIGTERM)
	expect("stopping")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The default action comes back just after the first signal: signal
	// until it takes, for at most 20 s.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case err := <-exited:
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
				t.Fatalf("helper ended with %v, want killed by SIGTERM", err)
			}
			return
		case <-tick.C:
			cmd.Process.Signal(syscall.SIGTERM)
		case <-deadline:
			cmd.Process.Kill()
			t.Fatal("a stuck command outlived 20 s of SIGTERMs after the first")
		}
	}
}
