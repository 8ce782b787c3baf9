package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
		Use:         "tui DIR|FILE...",
		Annotations: map[string]string{annPrivileges: privDropFirst},
		Short:       "Browse a saved recording or Go profiles in the interactive view",
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
// any screen is drawn, and before the terminal check, since they say more.
func runTUI(ctx context.Context, o tuiOptions) error {
	defer installInputBudget()()
	paths, err := expandProfileDirs(o.paths)
	if err != nil {
		return err
	}
	rec, err := recording.Open(paths...)
	if errors.Is(err, fs.ErrNotExist) {
		return withCode(exitUsage, err) // a mistyped path is bad input
	}
	if err != nil {
		return err
	}
	if err := tui.CheckTerminal(); err != nil {
		return withCode(exitUsage, fmt.Errorf("tui: %w", err))
	}
	return tui.Run(ctx, tui.NewRecordingSource(rec), tui.Options{
		Title:     "contend tui",
		ExportDir: o.exportDir,
	})
}

// expandProfileDirs replaces each directory that is not a recording with
// the files in it, so a directory of Go profiles (as `gofixture -profiles`
// and `make capture` write them) opens like the files themselves.
func expandProfileDirs(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() || recording.IsRecording(p) {
			out = append(out, p) // recording.Open reports what is wrong
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("tui: %w", err)
		}
		n := len(out)
		for _, e := range entries {
			if e.Type().IsRegular() {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
		if len(out) == n {
			return nil, withCode(exitUsage, fmt.Errorf("tui: %s: %w and holds no profile files", p, recording.ErrNotRecording))
		}
	}
	return out, nil
}
