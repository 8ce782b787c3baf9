package main

import (
	"errors"
	"strings"

	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/javadump"
	"github.com/contend-dev/contend/recording"
)

// sentinels maps the sentinel errors of contend's packages to exit codes.
// A package whose errors the CLI should tell apart adds them here.
var sentinels = []struct {
	err  error
	code int
}{
	{goprof.ErrBadProfile, exitUsage},
	{goprof.ErrNotRegular, exitUsage},
	{javadump.ErrBadDump, exitUsage},
	{recording.ErrNotRecording, exitUsage},
	{recording.ErrInvalid, exitUsage},
	{recording.ErrNoInput, exitUsage},
	{recording.ErrTwoRecordings, exitUsage},
	{collector.ErrPermission, exitPrivilege},
	{collector.ErrNoProcess, exitTarget},
	{collector.ErrProcessGone, exitTarget},
	{collector.ErrNoBTF, exitKernel},
	{collector.ErrKernel, exitKernel},
}

// sentinelCode maps err to an exit code through sentinels.
func sentinelCode(err error) (int, bool) {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code, true
		}
	}
	return 0, false
}

// isCobraUsageError recognises cobra's own argument errors, which it does not
// type.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
