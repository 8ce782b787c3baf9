package main

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/boundedio"
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
	{boundedio.ErrNotRegular, exitUsage},
	{boundedio.ErrTooLarge, exitUsage},
	{boundedio.ErrOwner, exitUsage},
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

// inputError gives an error from opening or reading the inputs of a
// command the exit code of bad input: a path that does not exist or that
// the user may not read is a mistake in the command line, like a corrupt
// profile, not a failure of contend. Other errors keep their code.
func inputError(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return withCode(exitUsage, err)
	}
	return err
}

// installInputBudget sets the budget over all inputs of one command
// (goprof.SetInputBudget) to what the parsed form of one input may take,
// 4 times --max-profile-size: many inputs each within the budget cannot
// add up past what one may take. It returns the function that puts the
// previous budget back.
func installInputBudget() func() {
	prev := goprof.SetInputBudget(boundedio.NewBudget(goprof.MaxModel()))
	return func() { goprof.SetInputBudget(prev) }
}
