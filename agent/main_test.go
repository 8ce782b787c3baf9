package agent

import (
	"os"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

// TestMain runs the helper processes the tests start from this binary
// (testbin.HelperCmd), then the tests.
func TestMain(m *testing.M) {
	testbin.RunHelper(map[string]func() int{
		// serve serves the metrics server on Listener with few
		// descriptors (serveMetricsHelper).
		"serve": serveMetricsHelper,
	})
	os.Exit(m.Run())
}
