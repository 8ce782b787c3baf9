package collector

import (
	"os"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

// TestMain runs the helper processes some tests start from this binary
// (testbin.HelperCmd), then the tests.
func TestMain(m *testing.M) {
	testbin.RunHelper(map[string]func() int{
		"procsample-child": procSampleChild,
		"target-access":    targetAccess,
		"start-degraded":   startDegraded,
	})
	os.Exit(m.Run())
}
