package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/tui"
)

func init() { subcommands = append(subcommands, newTopCmd) }

// topOptions are the options of `contend top`.
type topOptions struct {
	targets   targetFlags
	duration  time.Duration
	pprofURL  string
	exportDir string
}

func newTopCmd() *cobra.Command {
	var o topOptions
	c := &cobra.Command{
		Use:   "top (-p PID[,PID…] | --comm NAME | --cgroup PATH)",
		Short: "Watch live processes' contention in an interactive view",
		Long: `top attaches contend's probes to a running process and shows, analysed
once a second has been recorded and again every 2 s or so (less often
when an analysis is costly), the convoys it finds with their evidence and
suggestion, the program points where threads sit, the locks they wait on
and each thread's states over time. w switches between the last second,
the last ten seconds and the whole run; p freezes the screen while recording goes on; e writes
the recording so far to a directory that 'contend tui' and 'contend analyze'
read. ? lists every key.

It needs root, or CAP_BPF and CAP_PERFMON; without them it says which is
missing before drawing anything and stops, unless --pprof is given: then it
shows what the Go runtime profiles and /proc allow, notes the missing
capabilities on the screen, says so again on exit and exits with code 3.
The view is drawn on stderr, which must be a terminal.

` + targetHelp,
		Example: `  contend top -p 1234
  contend top --comm postgres                        # every backend, new ones too
  contend top -p 1234 -d 60s                         # stop recording after a minute
  contend top -p 1234 --pprof http://127.0.0.1:6060  # add a Go target's runtime profiles
  NO_COLOR=1 contend top -p 1234`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runTop(c.Context(), o)
		},
	}
	f := c.Flags()
	o.targets.register(f)
	f.DurationVarP(&o.duration, "duration", "d", 0, "stop recording after this long (0: until you quit or the target exits)")
	f.StringVar(&o.pprofURL, "pprof", "", "a Go target's net/http/pprof base URL, e.g. http://127.0.0.1:6060 (default: one the target serves on its own loopback or wildcard listening sockets, if any)")
	f.StringVar(&o.exportDir, "export-dir", ".", "directory the e key writes recordings into")
	return c
}

// topHistory is how far back the view's windows reach: its longest window
// short of the whole run is ten seconds.
const topHistory = 10 * time.Second

// topMaxEvents bounds top's event log at half a recording's (maxEvents
// in package collector). Top holds the log three times over at each
// analysis: the session's, its converted cache (tui.SessionSource) and
// the window's copy handed to the analyzer, with the analyzer's index on
// it: at a recording's 120,000 events those copies are the largest part
// of top's memory above its 100 MB goal (docs/cost.md, "What contend's
// own limits rest on"). 60,000 events still hold a whole second at the
// kernel's full event rate (50,000 a second, collector's eventRate, plus
// bursts), which the one-second window shows whole, and five seconds of
// a 64-thread convoy (about 12,000 a second); of the ten-second window
// they keep the most recent part, and the aggregates, which the verdicts'
// shares and rates come from, cover all of it.
const topMaxEvents = 60000

// runTop starts the session, then the view. Everything that can refuse
// (arguments, terminal, privileges, the target) is checked before the
// screen is touched, so its message reaches a normal terminal.
func runTop(ctx context.Context, o topOptions) error {
	target, err := o.targets.target("top")
	if err != nil {
		return err
	}
	if o.duration < 0 {
		return usageErrorf("top: --duration must not be negative")
	}
	jcmd, err := o.targets.jcmdPath("top")
	if err != nil {
		return err
	}
	limitMemory(topMemoryLimit)
	if err := tui.CheckTerminal(); err != nil {
		return withCode(exitUsage, fmt.Errorf("top: %w", err))
	}
	// The session and the view stay root (see privileges.go); the pprof
	// fetches run as the user, and exports belong to the user.
	opts := collector.Options{Target: target, Duration: o.duration, PprofURL: o.pprofURL, History: topHistory, MaxEvents: topMaxEvents, GoFetchCommand: fetchChildCommand(), DiscoverPprof: true, Jcmd: jcmd}
	// Without the probes' capabilities a live view has only /proc's
	// thread states to show, which name no lock and no program point:
	// refuse, naming what is missing. A Go target's runtime profiles do
	// name them, so with --pprof the view runs on those, the screen notes
	// the gap, and the exit code reports it.
	missing := collector.CheckProbePrivileges()
	var pe *collector.PermissionError
	switch {
	case missing == nil:
	case o.pprofURL == "" || !errors.As(missing, &pe):
		return fmt.Errorf("top: %w", missing)
	default:
		fmt.Fprintf(os.Stderr, "contend: %v\ncontend: top shows the Go runtime profiles from %s and the /proc thread states only, without eBPF probes\n", missing, o.pprofURL)
		opts.NoProbes = true
	}
	sess, err := collector.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("top: %w", err)
	}
	// Attaching leaves its garbage (the kernel's BTF decoded, the symbol
	// table's reading) to be collected before the first analysis comes
	// on top of it.
	settle := settleMemory(topMemoryLimit)
	settle()
	runErr := tui.Run(ctx, tui.NewSessionSource(sess), tui.Options{Title: "contend top", AnalyzeEvery: tui.DefaultAnalyzeEvery, ExportDir: o.exportDir, ExportOwner: recordingOwner(), AfterLoad: settle})
	// The view showed what it had; building the whole session's
	// recording would only delay the exit (and a signal's).
	stopErr := sess.Close()
	if runErr != nil {
		return runErr
	}
	if pe != nil {
		return withCode(exitPrivilege, fmt.Errorf("top: watched without eBPF probes: missing %s", strings.Join(pe.Missing, " and ")))
	}
	// The target exiting is how a watch often ends; the screen said so.
	if stopErr != nil && !errors.Is(stopErr, collector.ErrProcessGone) {
		return fmt.Errorf("top: recording cut short: %w", stopErr)
	}
	return nil
}
