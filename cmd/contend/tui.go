package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/tui"
)

func init() { subcommands = append(subcommands, newTUICmd) }

// tuiOptions are the options of `contend tui`.
type tuiOptions struct {
	// paths are a recording directory and/or Go profile files.
	paths []string
	// exportDir is where the e key writes recordings.
	exportDir string
}

func newTUICmd() *cobra.Command {
	var o tuiOptions
	c := &cobra.Command{
		Use:   "tui DIR|FILE...",
		Short: "Browse a saved recording or Go profiles in the interactive view",
		Long: `tui shows a recording directory (written by 'contend record' or by the e key
of 'contend top'), or Go profile files (mutex, block, CPU, goroutine), in the
same interactive views as 'contend top': findings, program points, locks,
threads and idle waits. The view is drawn on stderr, which must be a
terminal; 'contend analyze' prints the same findings as text.`,
		Example: `  contend tui rec-20250101-120000
  contend tui mutex.pb.gz block.pb.gz goroutines.txt
  NO_COLOR=1 contend tui rec-dir          # no colours`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.paths = args
			return runTUI(c.Context(), o)
		},
	}
	c.Flags().StringVar(&o.exportDir, "export-dir", ".", "directory the e key writes recordings into")
	return c
}

// runTUI loads the inputs and shows them; input errors are reported before
// any screen is drawn.
func runTUI(ctx context.Context, o tuiOptions) error {
	if err := tui.CheckTerminal(); err != nil {
		return withCode(exitUsage, err)
	}
	rec, err := recording.Open(o.paths...)
	if err != nil {
		return err
	}
	return tui.Run(ctx, tui.NewRecordingSource(rec), tui.Options{
		Title:     "contend tui",
		ExportDir: o.exportDir,
	})
}
