package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/internal/termsafe"
	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/report"
)

func init() { subcommands = append(subcommands, newRecordCmd) }

// recordOptions are the options of `contend record`.
type recordOptions struct {
	targets        targetFlags
	duration       time.Duration
	output         string
	stackThreshold time.Duration
	ioThreshold    time.Duration
	hz             int
	pprofURL       string
	format         string
	failOnFindings bool
	progress       bool
	jvmDumps       int
	probes         []string
	verbose        bool
}

func newRecordCmd() *cobra.Command {
	var o recordOptions
	c := &cobra.Command{
		Use:   "record (-p PID[,PID…] | --comm NAME | --cgroup PATH)",
		Short: "Record live processes' lock contention and print the findings",
		Long: `record attaches contend's eBPF probes to every thread of the processes
chosen (threads they start while recording included): futex waits and
wakes per lock and stack, off-CPU time by thread state, wake edges, on-CPU
samples, and file I/O syscalls. Several processes are one recording: a
lock in memory they share (a process-shared mutex) is one lock. It records
for --duration, or until Ctrl-C, SIGTERM or the exit of every process
named with -p, detaches, writes the recording to a directory (one pprof
file per view, opening in 'go tool pprof' as is, plus JSON) and prints the
findings.

` + targetHelp + `

Progress goes to stderr when it is a terminal. A recording cut short (the
target exited, Ctrl-C before --duration) is written and marked partial.
It needs root, or CAP_BPF and CAP_PERFMON ('contend doctor' says what this
machine allows). Without them it says which capability is missing, records
what /proc (and --pprof) allow, the threads' states and CPU over time and
the Go runtime profiles, prints the findings, and exits with code 3.`,
		Example: `  contend record -p 1234                             # 10 s, then the findings
  contend record -p $(pgrep -n myserver) -d 30s -o before
  contend record -p $(pgrep -d, postgres) -d 20s       # every backend: one recording
  contend record --comm postgres -d 20s               # the same, and backends started meanwhile
  contend record --cgroup system.slice/nginx.service
  go tool pprof -top before/futex-wait.pb.gz
  contend record -p 1234 --pprof http://127.0.0.1:6060  # add a Go target's runtime profiles
  contend record -p 1234 --format json --fail-on-findings > findings.json
  contend record -p $(pgrep -n java) --jvm-dumps 3     # a JVM: name the monitors and their holders`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runRecord(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	o.targets.register(f)
	f.DurationVarP(&o.duration, "duration", "d", 10*time.Second, "how long to record (0: until Ctrl-C or the target exits)")
	f.StringVarP(&o.output, "output", "o", "", "recording directory to create (default contend-<comm>-<pid>-<YYYYmmdd-HHMMSS>)")
	f.DurationVar(&o.stackThreshold, "stack-threshold", collector.DefaultStackThreshold, "futex waits at least this long carry a stack")
	f.DurationVar(&o.ioThreshold, "io-threshold", collector.DefaultIOThreshold, "I/O syscalls at least this long carry a stack")
	f.IntVar(&o.hz, "hz", collector.DefaultOnCPUHz, "on-CPU sampling frequency per CPU")
	f.StringVar(&o.pprofURL, "pprof", "", "a Go target's net/http/pprof base URL, e.g. http://127.0.0.1:6060 (default: one the target serves on its own loopback or wildcard listening sockets, if any)")
	f.StringVar(&o.format, "format", formatText, "findings format: text or json")
	f.BoolVar(&o.failOnFindings, "fail-on-findings", false, "exit with code 1 when findings are reported")
	f.BoolVar(&o.progress, "progress", false, "print a progress line every second on stderr even when it is not a terminal (for scripts)")
	f.IntVar(&o.jvmDumps, "jvm-dumps", 0, "Java targets: take N thread dumps (jcmd Thread.print -l) during the recording")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "say on stderr what the probes lost even when it is too little to move a figure (the report notes it from 1 %)")
	f.StringSliceVar(&o.probes, "probes", nil, "probe families to attach, comma-separated, of "+strings.Join(collector.AllProbes, ",")+" (default all; leave out gosync to spare a Go target its uprobes)")
	return c
}

// runRecord records, writes the recording and prints the findings.
func runRecord(ctx context.Context, o recordOptions, stdout, stderr io.Writer) error {
	target, err := o.targets.target("record")
	if err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	jcmd, err := o.targets.jcmdPath("record")
	if err != nil {
		return err
	}
	limitMemory(memoryLimit)
	if err := checkOutput("record", o.output, firstPID(target)); err != nil {
		return err
	}
	opts := o.collectorOptions(target, jcmd, stderr)
	// Without the probes' capabilities, record what /proc and pprof allow
	// and say so now, and again with the exit code at the end.
	var missing *collector.PermissionError
	if err := collector.CheckProbePrivileges(); errors.As(err, &missing) {
		what := "the /proc thread timeline"
		if o.pprofURL != "" {
			what += " and the Go runtime profiles from " + o.pprofURL
		}
		fmt.Fprintf(stderr, "contend: %v\ncontend: recording %s only, without eBPF probes\n", missing, what)
		opts.NoProbes = true
	} else if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	rec, err := recordLive(ctx, opts, stderr, o.progress)
	if rec == nil || errors.Is(err, collector.ErrProcessGone) || errors.Is(err, collector.ErrNoProcess) {
		return fmt.Errorf("record: %w", err)
	}
	dir := o.output
	if dir == "" {
		dir = recording.DirName(rec.Meta, rec.Meta.Start)
	}
	if werr := writeRecording(dir, rec); werr != nil {
		if errors.Is(werr, recording.ErrExists) || errors.Is(werr, fs.ErrPermission) {
			return withCode(exitUsage, fmt.Errorf("record: %w%s", werr, invokerNote()))
		}
		return fmt.Errorf("record: %w", werr)
	}
	// The probes are detached and the recording written: nothing left
	// needs root.
	if derr := dropForAnalysis("record"); derr != nil {
		return derr
	}
	printWritten(stderr, dir, rec, o.verbose)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}

	res, err := printFindings(stdout, rec, o.format)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if missing != nil {
		// The gap outranks --fail-on-findings: the findings are printed,
		// but they come from less than a full recording.
		return withCode(exitPrivilege, fmt.Errorf("record: recorded without eBPF probes: missing %s", strings.Join(missing.Missing, " and ")))
	}
	if o.failOnFindings && len(res.Findings) > 0 {
		return errFindings
	}
	return nil
}

// collectorOptions are the collector's options for this record.
func (o recordOptions) collectorOptions(target collector.Target, jcmd string, stderr io.Writer) collector.Options {
	return collector.Options{
		Target:         target,
		Duration:       o.duration,
		StackThreshold: o.stackThreshold,
		IOThreshold:    o.ioThreshold,
		OnCPUHz:        o.hz,
		PprofURL:       o.pprofURL,
		GoFetchCommand: fetchChildCommand(),
		DiscoverPprof:  true,
		OnNote:         stderrNote(stderr),
		JVMDumps:       o.jvmDumps,
		Jcmd:           jcmd,
		Probes:         o.probes,
	}
}

// check refuses option values record cannot use, as usage errors.
func (o recordOptions) check() error {
	switch {
	case o.duration < 0:
		return usageErrorf("record: --duration must not be negative")
	case o.stackThreshold <= 0:
		return usageErrorf("record: --stack-threshold must be positive")
	case o.ioThreshold <= 0:
		return usageErrorf("record: --io-threshold must be positive")
	case o.hz <= 0 || o.hz > collector.MaxOnCPUHz:
		return usageErrorf("record: --hz must be between 1 and %d", collector.MaxOnCPUHz)
	case o.format != formatText && o.format != formatJSON:
		return usageErrorf("record: unknown --format %q (want text or json)", o.format)
	case o.jvmDumps < 0 || o.jvmDumps > maxJVMDumps:
		return usageErrorf("record: --jvm-dumps must be between 0 and %d", maxJVMDumps)
	}
	for _, p := range o.probes {
		if !slices.Contains(collector.AllProbes, p) {
			return usageErrorf("record: unknown probe family %q in --probes (have %s)", p, strings.Join(collector.AllProbes, ", "))
		}
	}
	return nil
}

// printWritten says on stderr where the recording went, over what time,
// what the probes lost (under verbose) and which processes left early.
func printWritten(stderr io.Writer, dir string, rec *recording.Recording, verbose bool) {
	summary := fmt.Sprintf("contend: wrote %s (%s", dir, rec.Meta.Duration.Round(time.Millisecond))
	if rec.Meta.Partial {
		summary += ", partial: " + rec.Meta.PartialReason
	}
	fmt.Fprintln(stderr, termsafe.String(summary+")"))
	printLoss(stderr, verbose, rec.Meta)
	for _, p := range rec.Meta.Processes {
		if p.Left > 0 {
			how := "left the target"
			if p.Exited {
				how = "exited"
			}
			fmt.Fprintf(stderr, "contend: pid %d (%s) %s after %s\n", p.PID, termsafe.String(p.Comm), how, p.Left.Round(time.Millisecond))
		}
	}
}

// stderrNote returns a collector.Options.OnNote that prints each note on
// stderr.
func stderrNote(stderr io.Writer) func(string) {
	return func(note string) {
		fmt.Fprintln(stderr, "contend: "+termsafe.String(note))
	}
}

// firstPID is the target's first process id, 0 when it names processes
// by name or cgroup: the default recording directory carries it.
func firstPID(t collector.Target) int {
	if len(t.PIDs) == 0 {
		return 0
	}
	return t.PIDs[0]
}

// checkOutput fails at once, before anything is attached, when the
// recording could not be written at the end: -o exists or cannot be
// created, or (without -o) the working directory takes no new directory.
// Under sudo or --user the check is made as that user, who will write
// the recording (writeRecording): root's permissions are not lent to a
// path the user names.
func checkOutput(cmd, output string, pid int) error {
	dir := output
	if dir == "" {
		dir = recording.DirName(recording.Meta{PID: pid}, time.Now())
	}
	err := asInvoker(func() error { return recording.CheckCreate(dir) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, recording.ErrExists):
		return usageErrorf("%s: %s already exists; give a new directory with -o", cmd, dir)
	case output == "":
		return usageErrorf("%s: the working directory takes no recording (%v)%s; give one with -o DIR", cmd, err, invokerNote())
	}
	return usageErrorf("%s: %v%s", cmd, err, invokerNote())
}

// maxJVMDumps bounds --jvm-dumps: each dump stops every Java thread at a
// safepoint for a few milliseconds and its text is kept in the recording;
// a few dozen sample a recording well enough.
const maxJVMDumps = 60

// recordLive records as opts say, with a progress line on stderr when it
// is a terminal, or one line a second when lines is set.
func recordLive(ctx context.Context, opts collector.Options, stderr io.Writer, lines bool) (*recording.Recording, error) {
	var progress func(collector.Stats)
	tty := isTerminal(stderr)
	switch {
	case tty:
		progress = progressLine(stderr, opts.Target, opts.Duration)
	case lines:
		progress = progressLines(stderr, opts.Target)
	}
	rec, err := collector.Record(ctx, opts, progress)
	if tty {
		fmt.Fprintln(stderr)
	}
	return rec, err
}

// printFindings analyzes rec and writes its findings to stdout as text
// (coloured on a terminal unless NO_COLOR is set) or JSON.
func printFindings(stdout io.Writer, rec *recording.Recording, format string) (*analyzer.Result, error) {
	res, err := analyzer.Analyze(rec, analyzer.Options{})
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	if format != formatJSON {
		format = formatText
	}
	out, err := render(res, format, report.TextOptions{Color: isTerminal(stdout) && os.Getenv("NO_COLOR") == ""})
	if err != nil {
		return nil, err
	}
	if _, err := stdout.Write(out); err != nil {
		return nil, fmt.Errorf("write output: %w", err)
	}
	return res, nil
}

// progressLine returns a progress callback that redraws one status line.
func progressLine(w io.Writer, target collector.Target, want time.Duration) func(collector.Stats) {
	return func(s collector.Stats) {
		el := s.Elapsed.Truncate(100 * time.Millisecond).String()
		if want > 0 {
			el += "/" + want.String()
		}
		state := ""
		if s.TargetExited {
			state = "  target exited"
		}
		fmt.Fprintf(w, "\rcontend: recording %s  %s  events %d  drops %d%s\x1b[K", targetLabel(target, s.Processes), el, s.Events, s.Drops, state)
	}
}

// progressLines returns a progress callback that prints a line a second:
// "contend: progress elapsed=1.5s events=N drops=N processes=N".
func progressLines(w io.Writer, target collector.Target) func(collector.Stats) {
	var last time.Duration
	return func(s collector.Stats) {
		if s.Elapsed-last < time.Second && !s.TargetExited {
			return
		}
		last = s.Elapsed
		fmt.Fprintf(w, "contend: progress elapsed=%s events=%d drops=%d processes=%d\n", s.Elapsed.Round(time.Millisecond), s.Events, s.Drops, s.Processes)
	}
}

// printLoss writes analyzer.LossLine to stderr under --verbose: a loss
// that could move a figure is in the report's notes already, and one that
// could not is noise in a routine run.
func printLoss(stderr io.Writer, verbose bool, m recording.Meta) {
	if !verbose {
		return
	}
	if line := analyzer.LossLine(m); line != "" {
		fmt.Fprintln(stderr, "contend: "+line)
	}
}
