package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/internal/atomicfile"
	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/report"
)

func init() { subcommands = append(subcommands, newAnalyzeCmd) }

// Output formats of `contend analyze`.
const (
	formatText  = "text"
	formatJSON  = "json"
	formatPprof = "pprof"
)

// analyzeOptions are the options of `contend analyze`.
type analyzeOptions struct {
	// paths are recording directories and/or Go profile files.
	paths []string
	// format is text, json or pprof.
	format string
	// output is the file to write, "" or "-" for stdout.
	output string
	// failOnFindings makes the command exit 1 when it reports findings.
	failOnFindings bool
	// showIdle lists idle waits in the text output.
	showIdle bool
	// color turns on colour in the text output (NO_COLOR still wins).
	color bool
	// width wraps the text output; 0 means 80 columns.
	width int
	// verbose says on stderr what the probes of a live recording lost,
	// even when too little to move a figure.
	verbose bool
}

func newAnalyzeCmd() *cobra.Command {
	var o analyzeOptions
	c := &cobra.Command{
		Use:         "analyze PATH...",
		Annotations: map[string]string{annPrivileges: privDropFirst},
		Short:       "Find lock contention in Go profiles or a saved recording",
		Long: `analyze reads Go runtime profiles (mutex, block, CPU and goroutine profiles
in protobuf form, goroutine dumps in debug=1 or debug=2 text, gzipped or not,
recognised by content) and/or a recording directory written by 'contend
record', and prints the contention findings ranked by time lost: the kind,
the program point where goroutines pile up, the lock, how many take part,
the evidence, a confidence and what to change.

Give every profile of one interval together: the mutex profile says where a
lock is released, the block profile where goroutines waited, the goroutine
dump how many wait now and in which state, the CPU profile what the holders
do. Goroutines idle in select, channel receives, netpoll or sync.Cond are
never reported as contention (--show-idle lists them).

Java thread dumps (jcmd PID Thread.print -l, jstack -l) are recognised
too: the threads blocked on one monitor or parked on one
java.util.concurrent lock, where they wait, the thread that holds it and
what it does (I/O, waiting for another lock). A truncated dump, or one
with lines no JVM writes, is refused with the line at fault.

Output goes to stdout, or atomically to the file given with -o.`,
		Example: `  contend analyze mutex.pb.gz block.pb.gz goroutines.txt
  contend analyze profiles/*                        # every file of one run
  curl -so m.pb.gz 'localhost:6060/debug/pprof/mutex?seconds=10'
  curl -so g.txt 'localhost:6060/debug/pprof/goroutine?debug=2'
  contend analyze m.pb.gz g.txt --show-idle
  contend analyze rec-dir --format json -o findings.json
  contend analyze rec-dir --format pprof -o findings.pb.gz && go tool pprof -top findings.pb.gz
  contend analyze --fail-on-findings profiles/* || echo "contention found"
  jcmd $(pgrep -n java) Thread.print -l > threads.txt && contend analyze threads.txt`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.paths = args
			return runAnalyze(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVar(&o.format, "format", formatText, "output format: text, json or pprof")
	f.StringVarP(&o.output, "output", "o", "", "write the output to this file (atomically) instead of stdout")
	f.BoolVar(&o.failOnFindings, "fail-on-findings", false, "exit with code 1 when findings are reported")
	f.BoolVar(&o.showIdle, "show-idle", false, "list idle waits (not contention) in the text output")
	f.BoolVar(&o.color, "color", false, "colour the text output (ignored when NO_COLOR is set)")
	f.IntVar(&o.width, "width", 0, "wrap the text output at this many columns (default 80)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "say on stderr what the probes of a recording lost even when it is too little to move a figure (the report notes it from 1 %)")
	return c
}

// runAnalyze loads the inputs, analyzes them and renders the result.
func runAnalyze(_ context.Context, o analyzeOptions, stdout, stderr io.Writer) error {
	switch o.format {
	case formatText, formatJSON, formatPprof:
	default:
		return usageErrorf("unknown --format %q (want text, json or pprof)", o.format)
	}
	if o.width < 0 {
		return usageErrorf("--width must not be negative")
	}
	if o.format == formatPprof && (o.output == "" || o.output == "-") && isTerminal(stdout) {
		return usageErrorf("--format pprof writes binary data: give -o FILE or redirect stdout")
	}
	defer installInputBudget()()
	rec, err := recording.Open(o.paths...)
	if err != nil {
		return inputError(err)
	}
	res, err := analyzer.Analyze(rec, analyzer.Options{})
	if err != nil {
		return err
	}
	printLoss(stderr, o.verbose, rec.Meta)
	out, err := render(res, o.format, report.TextOptions{
		Width:    o.width,
		Color:    o.color && os.Getenv("NO_COLOR") == "",
		ShowIdle: o.showIdle,
	})
	if err != nil {
		return err
	}
	if o.output == "" || o.output == "-" {
		if _, err := stdout.Write(out); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	} else if err := atomicfile.WriteFile(o.output, out); err != nil {
		return err
	}
	if o.failOnFindings && len(res.Findings) > 0 {
		return errFindings
	}
	return nil
}

// isTerminal reports whether w is a terminal (not merely a character
// device: /dev/null is one too).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// render writes res in format (text with text's options, json or pprof):
// the one place analyze and record turn a result into output.
func render(res *analyzer.Result, format string, text report.TextOptions) ([]byte, error) {
	var buf bytes.Buffer
	var err error
	switch format {
	case formatText:
		err = report.Text(&buf, res, text)
	case formatJSON:
		err = report.JSON(&buf, res)
	case formatPprof:
		err = report.Pprof(&buf, res)
	default:
		err = fmt.Errorf("unknown format")
	}
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", format, err)
	}
	return buf.Bytes(), nil
}
