package goendpoint

import (
	"bufio"
	"context"
	"os"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

// TestMain runs the helper processes some tests start from this binary
// (testbin.HelperCmd), then the tests.
func TestMain(m *testing.M) {
	testbin.RunHelper(map[string]func() int{
		"gofetch-target": goFetchTarget,
		"gofetch-child":  func() int { return ServeChild(context.Background(), os.Args[1:], os.Stdout, os.Stderr) },
	})
	os.Exit(m.Run())
}

// startHelper runs this test binary as helper process helper and
// returns a scanner over its stdout. The helper lives until its stdin
// closes: it is closed, and the process killed, when the test ends.
func startHelper(t *testing.T, helper string) *bufio.Scanner {
	t.Helper()
	cmd := testbin.HelperCmd(helper)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return bufio.NewScanner(stdout)
}
