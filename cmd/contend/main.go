// Command contend finds lock contention in Linux processes and in Go
// profiles, names the program point where threads pile up, explains why and
// says what to change.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/internal/termsafe"
	"github.com/contend-dev/contend/internal/version"
)

// Exit codes scripts can rely on.
const (
	exitOK        = 0 // success
	exitFindings  = 1 // findings were reported and --fail-on-findings was set
	exitUsage     = 2 // bad command line or bad input (corrupt profile, unknown file)
	exitPrivilege = 3 // missing root or CAP_BPF/CAP_PERFMON
	exitTarget    = 4 // no such process, or it vanished before anything was recorded
	exitKernel    = 5 // the kernel lacks something contend needs (BTF, eBPF features)
	exitFailure   = 6 // any other failure (I/O error, internal error)
)

// subcommands lists the constructors of every subcommand; each subcommand's
// file appends itself in an init function.
var subcommands []func() *cobra.Command

// exitError carries an exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so main exits with code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// usageErrorf returns a usage error (exit code 2).
func usageErrorf(format string, args ...any) error {
	return withCode(exitUsage, fmt.Errorf(format, args...))
}

// errFindings is returned when --fail-on-findings is set and findings were
// reported; the findings are already printed, so main prints nothing more.
var errFindings = errors.New("findings reported")

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "contend",
		Short: "Find lock contention in Linux processes and say what to change",
		Long: `contend finds lock contention in a running Linux process, or in Go
profiles taken from one, names the program point where threads pile up,
explains why, and says what to change.`,
		Example: `  contend demo                         # see a convoy found on a bundled fixture
  contend record -p 1234 -d 10s        # attach to a live process (root)
  contend analyze mutex.pb.gz block.pb.gz goroutines.txt
  contend top -p 1234                  # live TUI
  contend doctor                       # what this machine allows
  contend help verdicts                # the finding kinds (also: json, recording, exit-codes)`,
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("contend {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withCode(exitUsage, fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath()))
	})
	addRootFlags(root)
	for _, mk := range subcommands {
		root.AddCommand(mk())
	}
	return root
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the command line args and returns the process exit code.
func run(args []string) int {
	// A terminal hanging up (SIGHUP) ends a command as an interrupt
	// does: the probes detached, the terminal left as it was found, what
	// was recorded written. Left to its default, SIGHUP would kill contend
	// top with the screen still in its alternate mode.
	ctx, stop := stopOnSignal(context.Background())
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errFindings) {
		return exitFindings
	}
	code := exitCode(err)
	// Errors quote paths, names and file content: escape them as the
	// reports are, line by line (a usage error adds a hint on its own
	// line).
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = termsafe.String(l)
	}
	fmt.Fprintf(os.Stderr, "contend: %s\n", strings.Join(lines, "\n"))
	return code
}

// stopOnSignal returns a context cancelled by the first stop signal
// (Ctrl-C, SIGTERM or a terminal's hang-up). The
// first asks the command to stop and write what it has; from then on the
// signals have their default action again, so that a second one ends
// contend at once when the first did not (the kernel detaches its probes
// with its last file descriptor, and files are written whole or not at
// all).
func stopOnSignal(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}

// exitCode maps an error to an exit code: an explicit code first, then the
// sentinel errors of the packages below (see errcodes.go), then failure.
func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if code, ok := sentinelCode(err); ok {
		return code
	}
	// cobra reports unknown commands and bad arguments as plain errors.
	if isCobraUsageError(err) {
		return exitUsage
	}
	return exitFailure
}
