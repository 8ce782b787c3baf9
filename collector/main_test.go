package collector

import (
	"context"
	"os"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

// TestMain runs the helper processes some tests start from this binary
// (testbin.HelperCmd), then the tests.
func TestMain(m *testing.M) {
	testbin.RunHelper(map[string]func() int{
		"gofetch-target":   goFetchTarget,
		"procsample-child": procSampleChild,
		"target-access":    targetAccess,
		"start-degraded":   startDegraded,
		"gofetch-child":    func() int { return ServeGoFetch(context.Background(), os.Args[1:], os.Stdout, os.Stderr) },
	})
	os.Exit(m.Run())
}
