//go:build linux

package collector

import (
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

// requireRoot skips a test that loads BPF when not root, except in CI
// (CI set), where the environment must support it and the test fails.
func requireRoot(tb testing.TB) {
	tb.Helper()
	testbin.RequireRoot(tb, "loading BPF programs")
}
