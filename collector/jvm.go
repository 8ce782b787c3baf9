package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/contend-dev/contend/internal/boundedio"
	"github.com/contend-dev/contend/javadump"
	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/symbolize"
)

// This file is what the collector does for a Java target, a process that
// maps libjvm.so. Code the JIT compiled has no symbols on disk: the JVM
// names it in a perf map (/tmp/perf-PID.map) when asked with `jcmd PID
// Compiler.perfmap` (JDK 17 and later). The map is taken once before the
// probes attach and once after they detach, so that methods compiled
// during the recording are named too; stacks named before the second map
// was read are named again from it. With Options.JVMDumps the collector
// also takes Java thread dumps (`jcmd PID Thread.print -l`) spread over
// the recording, which name the monitor or lock each thread waits for and
// the thread that holds it. Everything here runs jcmd as a child process
// and reads files; a JVM that refuses to be attached is still recorded by
// the probes, with a warning saying what is missing and what to run.

// jcmdTimeout bounds one jcmd call. Attaching starts a thread in the
// target (on the first attach, after the JVM's signal thread has handled
// SIGQUIT), which on a machine whose CPUs the target saturates takes
// seconds; jcmd itself gives up after its own attach timeout, raised here
// to 20 s, and contend kills it 10 s after that.
const (
	jcmdTimeout       = 30 * time.Second
	jcmdAttachTimeout = "-J-Dsun.tools.attach.attachTimeout=20000"
)

// perfMapLoader is what the JVM support needs of the symbolizer.
type perfMapLoader interface {
	LoadPerfMap(path string) (int, error)
}

// jvmTarget is the JVM support of one session.
type jvmTarget struct {
	pid      int
	procRoot string
	// jcmd is the jcmd to run, "" when none was found.
	jcmd string
	// mapPath is where the target writes its perf map, seen from here.
	mapPath string
	// since is when the target started: a perf map older than it is
	// another process's that had the same pid.
	since time.Time
	sym   perfMapLoader

	mu       sync.Mutex
	warnings []string
	// entries is how many perf map entries were loaded, per map taken.
	entries []int
	dumps   []*javadump.Dump
	// dumpsDone is closed when the dump taker has finished.
	dumpsDone chan struct{}
	stopDumps context.CancelFunc
	// ended is closed when the recording ends: the dumps still due are
	// taken at once.
	ended   chan struct{}
	endOnce sync.Once
	// dumpWait is how long the end of the recording waited for dumps.
	dumpWait time.Duration
}

// isJVM reports whether pid maps a HotSpot JVM (libjvm.so).
func isJVM(procRoot string, pid int) bool {
	b, err := os.ReadFile(procPath(procRoot, strconv.Itoa(pid), "maps"))
	return err == nil && bytes.Contains(b, []byte("/libjvm.so\n"))
}

// startJVM prepares the JVM support of a session and takes the first
// perf map; nil when the target is not a JVM.
func startJVM(procRoot string, pid int, sym procSymbols, jcmd string) *jvmTarget {
	if !isJVM(procRoot, pid) {
		return nil
	}
	j := &jvmTarget{pid: pid, procRoot: procRoot, mapPath: symbolize.PerfMapPath(procRoot, pid)}
	j.sym, _ = sym.(perfMapLoader)
	if fs, err := procfs.NewFS(mountPoint(procRoot)); err == nil {
		if p, err := fs.Proc(pid); err == nil {
			if st, err := p.Stat(); err == nil {
				if s, err := st.StartTime(); err == nil {
					j.since = time.Unix(int64(s), 0)
				}
			}
		}
	}
	j.jcmd = jcmd
	if j.jcmd == "" {
		j.warn("Java frames compiled by the JIT are not named: no jcmd was given (--jcmd), in $JAVA_HOME/bin or on PATH. Install a JDK 17 or later (Debian: openjdk-17-jdk-headless) or name its jcmd with --jcmd, or start the JVM with -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit and record until it exits")
		return j
	}
	// A map another session took from this very process moments ago (the
	// agent's previous window) is loaded as it is: the end of this
	// session takes a fresh one anyway, and a JVM attached to for every
	// window would pay a jcmd run each time.
	if st, err := os.Stat(j.mapPath); err == nil && !st.ModTime().Before(j.since) && time.Since(st.ModTime()) < reuseMapAge && j.sym != nil {
		j.load()
		if w, ok := noFramePointers.Load(j.key()); ok && w.(bool) {
			j.warn(noFramePointersWarning)
		}
	} else if j.takePerfMap() {
		j.checkFramePointers()
	}
	return j
}

// noFramePointers remembers, per JVM process (key), whether it runs
// without -XX:+PreserveFramePointer, for the sessions that reuse its map.
// It is forgotten whole past maxRemembered processes: an agent that
// watches JVMs come and go must not grow without bound, and forgetting
// costs one more jcmd run.
const maxRemembered = 1024

var (
	noFramePointers sync.Map
	rememberedMu    sync.Mutex
	remembered      int
)

// key identifies the target process across pid reuse.
func (j *jvmTarget) key() string { return fmt.Sprintf("%d@%d", j.pid, j.since.Unix()) }

// reuseMapAge is how old a perf map of the same process may be for a
// session to start from it without asking the JVM again: the methods it
// names are those compiled by then, and the JIT of a warmed-up service
// compiles little new within minutes.
const reuseMapAge = 2 * time.Minute

// mountPoint is the proc mount to read, procfs's default for "".
func mountPoint(root string) string {
	if root == "" {
		return procfs.DefaultMountPoint
	}
	return root
}

// ErrUntrustedJcmd is wrapped by the error about a jcmd that contend
// will not run: not a regular executable file, or writable by users
// other than its owner.
var ErrUntrustedJcmd = errors.New("jcmd is not trusted")

// FindJcmd returns the jcmd to run against Java targets, found only in
// places the user of contend controls, never the target: the path given
// (--jcmd), else $JAVA_HOME/bin/jcmd from contend's own environment, else
// jcmd on contend's PATH (exec.LookPath, which refuses a match found
// through a relative PATH entry). A target chooses its executable's
// directory and the files it maps; a jcmd found there would run the
// target's code with contend's privileges. "" with a nil error means none
// was found.
func FindJcmd(given string) (string, error) {
	if given != "" {
		return checkJcmd(given)
	}
	if home := os.Getenv("JAVA_HOME"); home != "" && filepath.IsAbs(home) {
		if p, err := checkJcmd(filepath.Join(home, "bin", "jcmd")); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("jcmd")
	if err != nil {
		return "", nil
	}
	return checkJcmd(p)
}

// checkJcmd resolves path and accepts it when it is an absolute path to a
// regular executable file that nobody but its owner may write: a jcmd
// that any user could replace would run that user's code.
func checkJcmd(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("jcmd %s: %w", path, err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return "", fmt.Errorf("jcmd %s: %w", path, err)
	}
	st, err := os.Stat(real)
	switch {
	case err != nil:
		return "", fmt.Errorf("jcmd %s: %w", path, err)
	case !st.Mode().IsRegular() || st.Mode()&0o111 == 0:
		return "", fmt.Errorf("jcmd %s: not an executable file: %w", path, ErrUntrustedJcmd)
	case st.Mode()&0o022 != 0:
		return "", fmt.Errorf("jcmd %s: writable by group or others (mode %v): %w", path, st.Mode().Perm(), ErrUntrustedJcmd)
	}
	return real, nil
}

// jcmdOutputCap bounds what one jcmd call may print: a thread dump of a
// JVM with 10,000 threads and deep stacks is about 30 MiB, and a process
// that answers with an endless stream is stopped there instead of being
// buffered whole.
const jcmdOutputCap = 64 << 20

// errJcmdOutput is the error of a jcmd call stopped at jcmdOutputCap.
var errJcmdOutput = fmt.Errorf("printed more than %d MiB", jcmdOutputCap>>20)

// credential returns the user and group the target runs as (effective
// ids), for running jcmd as that user: the JVM accepts an attach from its
// own user, and a jcmd run as the target gains nothing the target had
// not. A target that runs as root gets jcmd run as root.
func (j *jvmTarget) credential() (*syscall.Credential, error) {
	fs, err := procfs.NewFS(mountPoint(j.procRoot))
	if err != nil {
		return nil, err
	}
	p, err := fs.Proc(j.pid)
	if err != nil {
		return nil, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(st.UIDs[1]), Gid: uint32(st.GIDs[1]), Groups: []uint32{}}, nil
}

// run runs one jcmd command against the target, as the target's user,
// with a timeout and an output cap, and returns its output without
// jcmd's "PID:" line.
func (j *jvmTarget) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, jcmdTimeout)
	defer cancel()
	cred, err := j.credential()
	if err != nil {
		return "", fmt.Errorf("jcmd %d %s: read the target's user: %w", j.pid, strings.Join(args, " "), err)
	}
	cmd := exec.CommandContext(ctx, j.jcmd, append([]string{jcmdAttachTimeout, strconv.Itoa(j.pid)}, args...)...)
	// "/" is readable by every user; contend's own directory may not be.
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setsid: true}
	if cred.Uid == uint32(os.Geteuid()) && cred.Gid == uint32(os.Getegid()) {
		// The same user: nothing to change, and an unprivileged contend
		// could not set its groups.
		cmd.SysProcAttr.Credential = nil
	}
	out := boundedio.CappedBuffer{Limit: jcmdOutputCap, Stop: cancel}
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if out.Over() {
		return "", fmt.Errorf("jcmd %d %s: %w", j.pid, strings.Join(args, " "), errJcmdOutput)
	}
	text := strings.TrimPrefix(out.String(), strconv.Itoa(j.pid)+":\n")
	if err != nil {
		return text, fmt.Errorf("jcmd %d %s: %w: %s", j.pid, strings.Join(args, " "), err, jcmdReason(text))
	}
	// jcmd reports a command the JVM does not know, or an attach that
	// failed, on stdout with exit status 0 on some versions.
	if r := jcmdFailure(text); r != "" {
		return text, fmt.Errorf("jcmd %d %s: %s", j.pid, strings.Join(args, " "), r)
	}
	return text, nil
}

// jcmdFailure returns the reason of a failure jcmd reported in its
// output, "" when it reported none.
func jcmdFailure(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "Exception") || strings.Contains(l, "Unknown diagnostic command") {
			return jcmdReason(out)
		}
	}
	return ""
}

// jcmdReason picks the line of jcmd's output that says why it failed:
// the exception, without its stack.
func jcmdReason(out string) string {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "at ") {
			return l
		}
	}
	return "no output"
}

// takePerfMap asks the JVM for its perf map and loads it; false when it
// could not be had (a warning says why and what to do).
func (j *jvmTarget) takePerfMap() bool {
	if j.jcmd == "" || j.sym == nil {
		return false
	}
	out, err := j.run(context.Background(), "Compiler.perfmap")
	if err != nil {
		switch {
		case strings.Contains(out, "Unknown diagnostic command"):
			j.warn(fmt.Sprintf("Java frames compiled by the JIT are not named: the JVM has no Compiler.perfmap command (JDK 16 or older). On JDK 17 and later contend takes the perf map itself; on older JVMs a perf map agent (perf-map-agent) can write /tmp/perf-%d.map, which contend reads when it is newer than the process", j.pid))
		default:
			j.warn(fmt.Sprintf("Java frames compiled by the JIT are not named: %v. contend runs jcmd as the JVM's own user, which needs root when that user is not contend's; a JVM started with -XX:+DisableAttachMechanism refuses jcmd. Run contend as root, or start the JVM with -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit and record until it exits", err))
		}
		return false
	}
	return j.load()
}

// load reads the target's perf map into the symbolizer.
func (j *jvmTarget) load() bool {
	n, err := j.sym.LoadPerfMap(j.mapPath)
	if err != nil {
		j.warn(fmt.Sprintf("Java frames compiled by the JIT are not named: %v", err))
		return false
	}
	j.mu.Lock()
	j.entries = append(j.entries, n)
	j.mu.Unlock()
	return true
}

// checkFramePointers warns when the JVM runs without
// -XX:+PreserveFramePointer: its compiled code then keeps no frame
// pointer, and a stack walked from the kernel or from a copied window
// stops at the first compiled frame.
func (j *jvmTarget) checkFramePointers() {
	out, err := j.run(context.Background(), "VM.flags")
	if err != nil {
		return
	}
	missing := !strings.Contains(out, "-XX:+PreserveFramePointer")
	rememberedMu.Lock()
	if remembered++; remembered > maxRemembered {
		noFramePointers.Clear()
		remembered = 1
	}
	rememberedMu.Unlock()
	noFramePointers.Store(j.key(), missing)
	if missing {
		j.warn(noFramePointersWarning)
	}
}

const noFramePointersWarning = "the JVM runs without -XX:+PreserveFramePointer: its JIT-compiled code keeps no frame pointer, so Java stacks end at the first compiled frame and callers above it are missing. Restart it with -XX:+PreserveFramePointer (it costs a few percent of speed) for whole Java stacks"

// finish takes the perf map again after the probes have detached (or,
// when the target has exited, reads the map a JVM started with
// -XX:+DumpPerfMapAtExit wrote at exit), waits for the dump taker, and
// lets res name its stacks again with the map. It returns how long it
// waited for dumps.
func (j *jvmTarget) finish(res *resolver) time.Duration {
	waited := j.waitDumps()
	loaded := false
	if j.alive() {
		loaded = j.takePerfMap()
	} else if st, err := os.Stat(j.mapPath); err == nil && j.sym != nil && !st.ModTime().Before(j.since) {
		loaded = j.load()
	}
	if loaded && res != nil {
		res.forgetNames()
	}
	return waited
}

// alive reports whether the target still runs.
func (j *jvmTarget) alive() bool {
	_, err := os.Stat(procPath(j.procRoot, strconv.Itoa(j.pid), "maps"))
	return err == nil
}

// startDumps takes n Java thread dumps spread evenly over a recording of
// duration d (every dumpEvery when d is 0), in the background until
// finish. A dump that fails is tried again once, unless the JVM refused
// (refusal); dumps still due when the recording ends are taken then
// (finish waits for them).
func (j *jvmTarget) startDumps(n int, d time.Duration) {
	j.dumpsDone = make(chan struct{})
	if n <= 0 || j.jcmd == "" {
		close(j.dumpsDone)
		if n > 0 {
			j.warn("no Java thread dumps were taken: no jcmd was found")
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	j.stopDumps = cancel
	j.ended = make(chan struct{})
	start := time.Now()
	go func() {
		defer close(j.dumpsDone)
		failed := 0
		var why error
		defer func() { j.dumpShortfall(n, failed, why) }()
		for i := 0; i < n; i++ {
			at := dumpEvery * time.Duration(i+1)
			if d > 0 {
				at = d * time.Duration(2*i+1) / time.Duration(2*n)
			}
			select {
			case <-ctx.Done():
				return
			case <-j.ended:
			case <-time.After(time.Until(start.Add(at))):
			}
			err := j.takeDump(ctx)
			if err != nil && ctx.Err() == nil && !j.refused(err) {
				err = j.takeDump(ctx)
			}
			switch {
			case err == nil:
			case ctx.Err() != nil:
				return
			case j.refused(err):
				// Asking again gets the same answer.
				failed, why = n-i, err
				return
			default:
				failed++
				why = err
			}
		}
	}()
}

// takeDump takes one Java thread dump.
func (j *jvmTarget) takeDump(ctx context.Context) error {
	out, err := j.run(ctx, "Thread.print", "-l")
	if err != nil {
		return err
	}
	dump, err := javadump.Parse([]byte(out))
	if err != nil {
		return fmt.Errorf("jcmd %d Thread.print -l: %w", j.pid, err)
	}
	j.mu.Lock()
	j.dumps = append(j.dumps, dump)
	j.mu.Unlock()
	return nil
}

// refused reports whether a jcmd failure is the JVM's or the system's
// answer rather than a slow or failed attempt: the JVM disabled attaching
// (-XX:+DisableAttachMechanism), contend may not act as the JVM's user,
// or the JVM is gone. Only these leave a dump the user asked for missing
// without a second try.
func (j *jvmTarget) refused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, errJcmdOutput) ||
		strings.Contains(err.Error(), "does not support the attach mechanism") || !j.alive()
}

// dumpEvery spaces the Java thread dumps of a recording without a set
// duration: a dump stops every Java thread at a safepoint for a few
// milliseconds, so they are kept seconds apart.
const dumpEvery = 2 * time.Second

// dumpGrace bounds how long the end of a recording waits for the Java
// thread dumps still due: one jcmd call and its second try at their
// slowest (jcmdTimeout each). A dump takes 0.2-1 s on a loaded 2-CPU
// machine, so every dump of --jvm-dumps (at most maxJVMDumps) due at the
// end fits well inside it; only a JVM that does not answer reaches it.
const dumpGrace = 2 * jcmdTimeout

// waitDumps lets the dumps still due be taken now that the recording has
// ended, waits for them at most dumpGrace, and returns how long it
// waited.
func (j *jvmTarget) waitDumps() time.Duration {
	if j.stopDumps == nil {
		return 0
	}
	start := time.Now()
	j.endOnce.Do(func() { close(j.ended) })
	select {
	case <-j.dumpsDone:
	case <-time.After(dumpGrace):
		j.warn(fmt.Sprintf("the recording waited %s for its Java thread dumps, the most it waits, and ended without the rest", dumpGrace))
		j.stopDumps()
		<-j.dumpsDone
	}
	j.stopDumps()
	waited := time.Since(start)
	j.mu.Lock()
	j.dumpWait = waited
	j.mu.Unlock()
	return waited
}

// dumpShortfall warns when fewer dumps than asked for were taken.
func (j *jvmTarget) dumpShortfall(want, failed int, why error) {
	j.mu.Lock()
	got := len(j.dumps)
	j.mu.Unlock()
	switch {
	case failed > 0 && j.refused(why):
		j.warn(fmt.Sprintf("%d of %d Java thread dumps were not taken: the JVM refused: %v", failed, want, why))
	case failed > 0:
		j.warn(fmt.Sprintf("%d of %d Java thread dumps failed, each tried twice: %v", failed, want, why))
	case got < want:
		j.warn(fmt.Sprintf("%d of %d Java thread dumps were taken: the recording was stopped before the others were due", got, want))
	}
}

func (j *jvmTarget) warn(w string) {
	j.mu.Lock()
	j.warnings = append(j.warnings, w)
	j.mu.Unlock()
}

// apply adds what the JVM support gathered to a recording: its warnings,
// the thread dumps and how many perf map entries were read.
func (j *jvmTarget) apply(rec *recording.Recording) {
	j.mu.Lock()
	defer j.mu.Unlock()
	rec.Meta.Warnings = append(rec.Meta.Warnings, j.warnings...)
	rec.JavaDumps = append(rec.JavaDumps, j.dumps...)
	if rec.Meta.Settings == nil {
		rec.Meta.Settings = map[string]string{}
	}
	var maps []string
	for _, n := range j.entries {
		maps = append(maps, strconv.Itoa(n))
	}
	if len(maps) > 0 {
		rec.Meta.Settings["jvm_perf_map_entries"] = strings.Join(maps, ",")
	}
	if j.dumpWait > 0 {
		rec.Meta.Settings["jvm_dumps_wait"] = j.dumpWait.Round(time.Millisecond).String()
	}
}

// forgetNames drops the names of stacks made before a perf map was
// loaded, so that they are named again from it; unwound addresses are
// kept.
func (r *resolver) forgetNames() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.symCache = map[string]recording.Stack{}
}

// Bounds of the JIT code copied into a recording: the functions that took
// the most on-CPU samples, where a busy-wait would burn its CPU. Sixteen
// cover every function above a few percent of the samples; a compiled
// method is a few hundred bytes to a few KiB, and one larger than 64 KiB
// is no tight loop's home.
const (
	maxJITFunctions = 16
	maxJITCode      = 64 << 10
)

// perfMapRanger is what copyCode needs of the symbolizer.
type perfMapRanger interface {
	PerfMapRange(pc uint64) (symbolize.CodeRange, bool)
}

// copyCode copies into rec the machine code of the JIT-compiled functions
// that took the most on-CPU samples, read from the target's memory while
// it still runs.
func (j *jvmTarget) copyCode(rec *recording.Recording, sym procSymbols, mem io.ReaderAt) {
	pr, ok := sym.(perfMapRanger)
	p := rec.Profile(recording.ViewOnCPU)
	if !ok || mem == nil || p == nil {
		return
	}
	cpu := map[symbolize.CodeRange]int64{}
	for _, s := range p.Sample {
		if len(s.Location) == 0 || len(s.Value) < 2 {
			continue
		}
		loc := s.Location[0]
		if loc.Mapping == nil || loc.Mapping.File != recording.ModuleJava {
			continue
		}
		if r, ok := pr.PerfMapRange(loc.Address); ok {
			cpu[r] += s.Value[1]
		}
	}
	ranges := make([]symbolize.CodeRange, 0, len(cpu))
	for r := range cpu {
		ranges = append(ranges, r)
	}
	sort.Slice(ranges, func(a, b int) bool {
		if cpu[ranges[a]] != cpu[ranges[b]] {
			return cpu[ranges[a]] > cpu[ranges[b]]
		}
		return ranges[a].Start < ranges[b].Start
	})
	for _, r := range ranges[:min(len(ranges), maxJITFunctions)] {
		n := r.End - r.Start
		if n == 0 || n > maxJITCode {
			continue
		}
		code := make([]byte, n)
		if _, err := mem.ReadAt(code, int64(r.Start)); err != nil {
			continue
		}
		rec.JITCode = append(rec.JITCode, recording.CodeBlob{Name: r.Name, Start: r.Start, Code: code})
	}
}
