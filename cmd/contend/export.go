package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/export/perfetto"
	"github.com/contend-dev/contend/internal/atomicfile"
	"github.com/contend-dev/contend/internal/termsafe"
	"github.com/contend-dev/contend/recording"
)

func init() { subcommands = append(subcommands, newExportCmd) }

// formatPerfetto is the one export format: a Perfetto protobuf trace.
const formatPerfetto = "perfetto"

// exportOptions are the options of `contend export`.
type exportOptions struct {
	dir    string
	format string
	output string
}

func newExportCmd() *cobra.Command {
	var o exportOptions
	c := &cobra.Command{
		Use:         "export DIR --format perfetto -o FILE",
		Annotations: map[string]string{annPrivileges: privDropFirst},
		Short:       "Write a recording as a timeline to open in Perfetto",
		Long: `export writes a recording directory as a Perfetto trace (a protobuf Trace of
TracePackets) that opens in ui.perfetto.dev or trace_processor:

  - one track per thread with its state over time (running, runnable,
    sleeping, D) from the /proc samples, refined by the scheduler and futex
    events of the event log;
  - under each thread, its lock waits named by lock and program point, and
    its I/O calls, with their stacks where the event log has them;
  - a flow from the waker to the wakee of each hand-off;
  - counters of the runnable threads and of the threads in a lock wait.

A recording without an event log still gives the thread states from /proc
and the runnable counter; what is missing is said on stderr and in the
trace (the "contend notes" marker at its start).`,
		Example: `  contend record -p 1234 -o before
  contend export before --format perfetto -o before.pftrace
  # then open before.pftrace in https://ui.perfetto.dev`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = args[0]
			return runExport(o, c.ErrOrStderr())
		},
	}
	c.Flags().StringVar(&o.format, "format", formatPerfetto, "output format: perfetto")
	c.Flags().StringVarP(&o.output, "output", "o", "", "file to write (required)")
	return c
}

// runExport reads the recording, builds the trace and writes it
// atomically.
func runExport(o exportOptions, stderr io.Writer) error {
	switch {
	case o.format != formatPerfetto:
		return usageErrorf("export: unknown --format %q (want perfetto)", o.format)
	case o.output == "":
		return usageErrorf("export: give the file to write with -o FILE")
	}
	defer installInputBudget()()
	rec, err := recording.Read(o.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return withCode(exitUsage, fmt.Errorf("export: %w", err))
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	data, notes, err := perfetto.Export(rec)
	if errors.Is(err, perfetto.ErrNothingToExport) {
		return withCode(exitUsage, fmt.Errorf("export %s: %w", o.dir, err))
	}
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(o.output, data); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "contend: note: %s\n", termsafe.String(n))
	}
	fmt.Fprintf(stderr, "contend: wrote %s (%d bytes); open it in https://ui.perfetto.dev\n", o.output, len(data))
	return nil
}
