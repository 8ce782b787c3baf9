//go:build linux

package collector

import (
	"os"
	"testing"
)

// requireRoot skips a test that loads BPF when not root, except in CI
// (CI set), where the environment must support it and the test fails.
func requireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		tb.Fatal("integration test needs root (CI is set, so this is a failure)")
	}
	tb.Skip("integration test needs root to load BPF programs")
}
