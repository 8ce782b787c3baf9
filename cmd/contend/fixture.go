package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/fixtures"
)

func init() {
	subcommands = append(subcommands, newFixtureCmd)
}

// fixtureOptions are the options of `contend fixture`: the fixture's own
// command line, parsed by fixtures.ParseArgs so it matches gofixture's.
type fixtureOptions struct {
	args []string
}

// newFixtureCmd builds the hidden `contend fixture` subcommand, which runs a
// Go fixture app inside contend's own process. `contend demo` re-executes
// contend with it to get a target to attach to, so the demo needs no
// second binary.
func newFixtureCmd() *cobra.Command {
	var o fixtureOptions
	cmd := &cobra.Command{
		Use:   "fixture NAME [-variant bad|fixed] [-duration 5s] [-workers N] [-pprof ADDR] [-profiles DIR]",
		Short: "Run a bundled Go fixture app (used by demo)",
		Example: `  contend fixture stripe -variant bad -duration 10s -pprof 127.0.0.1:0
  contend fixture iolock -variant fixed -profiles /tmp/iolock-fixed`,
		Hidden: true,
		// The fixture's flags use Go's flag syntax (-variant as well as
		// --variant), the same as gofixture.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runFixture(cmd, o)
		},
	}
	return cmd
}

func runFixture(cmd *cobra.Command, o fixtureOptions) error {
	f, fo, err := fixtures.ParseArgs("contend fixture", o.args, cmd.ErrOrStderr())
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return usageErrorf("fixture: %w", err)
	}
	fo.Stdout, fo.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
	if _, err := f.Run(cmd.Context(), fo); err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	return nil
}
