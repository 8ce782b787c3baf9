package main

import (
	"os"
	"testing"

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
	})
	os.Exit(m.Run())
}
