//go:build !(linux && amd64)

package collector

import (
	"fmt"
	"runtime"
)

// newTracer reports that the probes exist for linux/amd64 only.
func newTracer(tracerConfig) (tracer, error) {
	return nil, fmt.Errorf("%w: the probes are built for linux/amd64, not %s/%s", ErrKernel, runtime.GOOS, runtime.GOARCH)
}
