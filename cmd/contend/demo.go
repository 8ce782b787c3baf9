package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/collector"
)

func init() { subcommands = append(subcommands, newDemoCmd) }

// demoOptions are the options of `contend demo`.
type demoOptions struct {
	name     string
	list     bool
	duration time.Duration
	output   string
	fixtures string
	variant  string
	verbose  bool
}

// demoCase is one bundled fixture the demo can run.
type demoCase struct {
	name, what string
	// native is the fixture program under the fixtures directory; goName
	// the Go fixture run as `contend fixture <goName>` when the native one
	// is absent (or the only one).
	native, goName string
	// pprof records the Go fixture's runtime profiles too (goroutine
	// contention is invisible to the kernel).
	pprof bool
}

// demoCases lists the demo's cases; the first is the default: a busy-wait
// convoy is found from the kernel's view alone, in seconds, with the
// machine code of the loop as evidence.
var demoCases = []demoCase{
	{name: "spin", native: "spin", goName: "lockedspin", what: "relay threads guard shared state with a busy-wait on an atomic flag"},
	{name: "stripe", native: "stripe", goName: "stripe", pprof: true, what: "one mutex shared by many per-connection threads that touch disjoint entries"},
	{name: "iolock", native: "iolock", goName: "iolock", pprof: true, what: "a journal write, fsync and rename under the mutex every lookup takes"},
	{name: "writer", native: "writer", what: "many producers write frames to one connection through one mutex per frame"},
	{name: "lockedspin", goName: "lockedspin", what: "Go workers locked to OS threads busy-wait on an atomic flag"},
	{name: "idle", native: "idle", goName: "idle", pprof: true, what: "negative control: an idle worker pool and lock-free CPU work (nothing to report)"},
}

// demoWarmup lets the fixture start its threads before the probes attach.
const demoWarmup = time.Second

// demoStopWait bounds how long the fixture may take to exit after SIGTERM.
const demoStopWait = 5 * time.Second

func newDemoCmd() *cobra.Command {
	var o demoOptions
	c := &cobra.Command{
		Use:   "demo [case]",
		Short: "Find a real convoy in a bundled fixture app, live",
		Long: `demo starts a bundled fixture app as a child process — a small program that
reproduces one kind of lock contention — records it with contend's probes
for a few seconds, prints the findings, and stops the child.

The default case, spin, shows a busy-wait convoy: threads that spin on an
atomic flag instead of parking, more of them runnable than there are CPUs.
Native fixtures are taken from the fixtures directory beside the contend
binary (make builds bin/contend and bin/fixtures), from
../libexec/contend/fixtures (make install), or --fixtures, never
from the working directory, and only when owned like contend itself;
otherwise the Go version of the case runs inside contend itself. It needs
root, or CAP_BPF and CAP_PERFMON; under sudo the fixture, the pprof fetches
and the report run as the user sudo names.`,
		Example: `  sudo contend demo               # the spin convoy
  sudo contend demo stripe        # a lock shared by 64 threads over disjoint keys
  sudo contend demo --list
  sudo contend demo iolock -o iolock-bad && contend tui iolock-bad`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.name = args[0]
			}
			return runDemo(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.BoolVar(&o.list, "list", false, "list the cases and exit")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "say on stderr what the probes lost even when it is too little to move a figure")
	f.DurationVarP(&o.duration, "duration", "d", 5*time.Second, "how long to record")
	f.StringVarP(&o.output, "output", "o", "", "also write the recording to this new directory")
	f.StringVar(&o.fixtures, "fixtures", "", "directory of the native fixtures (default: fixtures/ beside the contend binary)")
	f.StringVar(&o.variant, "variant", "bad", "fixture variant: bad, or fixed to see the fix")
	return c
}

// fixturesDir returns the directory of the native fixtures: the one
// given, else the first of fixturesBeside(contend's binary) that exists;
// "" when none does. The working directory is never looked in: run as
// root, demo would run whatever a ./bin/fixtures there holds.
func fixturesDir(given string) string {
	if given != "" {
		return given
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	for _, d := range fixturesBeside(exe) {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}

// fixturesBeside lists where the fixtures of the contend binary exe may
// be: fixtures/ beside it (make builds bin/contend and bin/fixtures), then
// ../libexec/contend/fixtures (make install).
func fixturesBeside(exe string) []string {
	dir := filepath.Dir(exe)
	return []string{
		filepath.Join(dir, "fixtures"),
		filepath.Join(dir, "..", "libexec", "contend", "fixtures"),
	}
}

// nativePath returns the executable of a native fixture, "" when absent
// or not trusted as much as contend itself (see trustedLike).
func nativePath(dir, name string) string {
	if dir == "" || name == "" {
		return ""
	}
	p := filepath.Join(dir, name)
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 || !trustedLike(st) {
		return ""
	}
	return p
}

// trustedLike reports whether a fixture file may be run with contend's
// privileges: owned by root, by the user running contend or by the owner
// of contend's own binary (whoever could replace a fixture could replace
// contend), and writable by no one else.
func trustedLike(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || st.Mode().Perm()&0o022 != 0 {
		return false
	}
	if sys.Uid == 0 || int(sys.Uid) == os.Geteuid() {
		return true
	}
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	var self syscall.Stat_t
	return syscall.Stat(exe, &self) == nil && self.Uid == sys.Uid
}

func listDemo(w io.Writer, dir string) {
	fmt.Fprintln(w, "Cases (the first is the default):")
	for _, c := range demoCases {
		how := "Go, inside contend"
		if p := nativePath(dir, c.native); p != "" {
			how = "native, " + p
		} else if c.goName == "" {
			how = "native, not built (make fixtures)"
		}
		fmt.Fprintf(w, "  %-11s %s (%s)\n", c.name, c.what, how)
	}
}

func runDemo(ctx context.Context, o demoOptions, stdout, stderr io.Writer) error {
	dir := fixturesDir(o.fixtures)
	if o.list {
		listDemo(stdout, dir)
		return nil
	}
	dc, err := o.pick()
	if err != nil {
		return err
	}
	if o.output != "" {
		if err := checkOutput("demo", o.output, 0); err != nil {
			return err
		}
	}
	if err := collector.CheckProbePrivileges(); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	child, desc, err := demoCommand(*dc, dir, o.variant)
	if err != nil {
		return err
	}
	fx, err := startFixture(child, dc.pprof)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer fx.stop()

	fmt.Fprintf(stderr, "contend demo: started %s (%s variant, pid %d): %s\n", desc, o.variant, fx.pid(), dc.what)
	select {
	case <-time.After(demoWarmup):
	case <-ctx.Done():
		return fmt.Errorf("demo: %w", ctx.Err())
	case <-fx.exited:
		return fmt.Errorf("demo: the fixture exited at once: %s", fx.stderrTail())
	}
	fmt.Fprintf(stderr, "contend demo: recording pid %d for %s…\n", fx.pid(), o.duration)
	opts := collector.Options{
		Target:         collector.Target{PIDs: []int{fx.pid()}},
		Duration:       o.duration,
		StackThreshold: collector.DefaultStackThreshold,
		IOThreshold:    collector.DefaultIOThreshold,
		OnCPUHz:        collector.DefaultOnCPUHz,
		PprofURL:       fx.pprofURL,
		GoFetchCommand: fetchChildCommand(),
	}
	rec, err := recordLive(ctx, opts, stderr, false)
	fx.stop()
	if rec == nil {
		return fmt.Errorf("demo: record: %w", err)
	}
	if o.output != "" {
		if werr := writeRecording(o.output, rec); werr != nil {
			return fmt.Errorf("demo: %w", werr)
		}
		fmt.Fprintf(stderr, "contend demo: wrote %s\n", o.output)
	}
	if derr := dropPrivileges("demo"); derr != nil {
		return derr
	}
	if err != nil && !errors.Is(err, collector.ErrProcessGone) {
		return fmt.Errorf("demo: record: %w", err)
	}
	printLoss(stderr, o.verbose, rec.Meta)
	if _, err := printFindings(stdout, rec, formatText); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if line := fx.resultLine(); line != "" {
		fmt.Fprintf(stderr, "contend demo: the fixture reported %s\n", line)
	}
	if o.variant == "bad" {
		fmt.Fprintf(stderr, "contend demo: now the fix: contend demo %s --variant fixed\n", dc.name)
	}
	return nil
}

// pick returns the demo case o names (the first when none), refusing a
// bad case, duration or variant as a usage error.
func (o *demoOptions) pick() (*demoCase, error) {
	if o.name == "" {
		o.name = demoCases[0].name
	}
	var dc *demoCase
	var names []string
	for i := range demoCases {
		names = append(names, demoCases[i].name)
		if demoCases[i].name == o.name {
			dc = &demoCases[i]
		}
	}
	switch {
	case dc == nil:
		return nil, usageErrorf("demo: unknown case %q (have %s)", o.name, strings.Join(names, ", "))
	case o.duration <= 0:
		return nil, usageErrorf("demo: --duration must be positive")
	case o.variant != "bad" && o.variant != "fixed":
		return nil, usageErrorf("demo: unknown --variant %q (want bad or fixed)", o.variant)
	}
	return dc, nil
}

// demoCommand builds the child's command line: the native fixture when it
// is built, else the Go fixture inside contend.
func demoCommand(dc demoCase, dir, variant string) (*exec.Cmd, string, error) {
	life := "3600"
	if p := nativePath(dir, dc.native); p != "" {
		return exec.Command(p, "-variant", variant, "-duration", life), "native fixture " + shownPath(p), nil
	}
	if dc.goName == "" {
		return nil, "", withCode(exitUsage, fmt.Errorf("demo: case %s needs the native fixture %s, which is not built: run make fixtures, or give --fixtures DIR", dc.name, dc.native))
	}
	self, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("demo: find contend's own executable: %w", err)
	}
	args := []string{"fixture", dc.goName, "-variant", variant, "-duration", life + "s"}
	if dc.pprof {
		args = append(args, "-pprof", "127.0.0.1:0")
	}
	return exec.Command(self, args...), "Go fixture " + dc.goName, nil
}

// shownPath is how the demo names a fixture it runs: relative to the
// working directory when it lies below it (bin/fixtures/spin), else by its
// file name, so that the output carries no machine's directory layout.
func shownPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && filepath.IsLocal(rel) {
			return rel
		}
	}
	return filepath.Base(p)
}

// fixtureProc is a running fixture child.
type fixtureProc struct {
	cmd      *exec.Cmd
	exited   chan struct{}
	out      *syncBuffer
	errOut   *syncBuffer
	pprofURL string
	stopped  bool
}

func (f *fixtureProc) pid() int { return f.cmd.Process.Pid }

// startFixture starts the child so that it dies with contend (a parent
// death signal) and, for a Go fixture serving pprof, waits for its
// address.
func startFixture(cmd *exec.Cmd, pprof bool) (*fixtureProc, error) {
	f := &fixtureProc{cmd: cmd, exited: make(chan struct{}), out: &syncBuffer{}, errOut: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = f.out, f.errOut
	// The child must not outlive contend: if contend is killed outright,
	// the kernel sends the child SIGKILL. It needs no privilege: under
	// sudo it runs as the user.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if rootFlags.drop {
		cmd.SysProcAttr.Credential = rootFlags.dropTo.Credential()
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start fixture: %w", err)
	}
	go func() {
		cmd.Wait()
		close(f.exited)
	}()
	if !pprof {
		return f, nil
	}
	deadline := time.After(15 * time.Second)
	for {
		if u := f.errOut.lineWith("pprof: "); u != "" {
			f.pprofURL = strings.TrimSpace(strings.TrimPrefix(u, "pprof: "))
			return f, nil
		}
		select {
		case <-f.exited:
			return nil, fmt.Errorf("fixture exited before serving pprof: %s", f.stderrTail())
		case <-deadline:
			f.stop()
			return nil, errors.New("fixture printed no pprof address within 15s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the child: SIGTERM, so it prints its result, then SIGKILL if
// it lingers. Safe to call more than once.
func (f *fixtureProc) stop() {
	if f.stopped {
		return
	}
	f.stopped = true
	select {
	case <-f.exited:
		return
	default:
	}
	f.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-f.exited:
	case <-time.After(demoStopWait):
		f.cmd.Process.Kill()
		<-f.exited
	}
}

// resultLine returns the fixture's "fixture=… ops_per_sec=…" line.
func (f *fixtureProc) resultLine() string {
	return f.out.lineWith("fixture=")
}

func (f *fixtureProc) stderrTail() string {
	s := strings.TrimSpace(f.errOut.String())
	if len(s) > 300 {
		s = s[len(s)-300:]
	}
	if s == "" {
		return "no output"
	}
	return s
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lineWith returns the last complete line that starts with prefix.
func (b *syncBuffer) lineWith(prefix string) string {
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	found := ""
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			found = sc.Text()
		}
	}
	return found
}
