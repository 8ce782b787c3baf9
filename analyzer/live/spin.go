package live

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// The live spin detector: on-CPU samples of many threads concentrated in a
// tight loop that re-reads one memory word (confirmed in the machine code
// where the binary is readable), those threads runnable in /proc, more of
// them runnable than there are CPUs, and no futex waits where they spin.

// spinTopAddrs is how many instruction addresses may hold a busy-wait's
// samples when the machine code cannot be read: a spin loop is 2–6
// instructions and its samples pile on the load and the branch after it,
// while a work loop spreads its samples over its whole body.
const spinTopAddrs = 4

// minRunnableShare is the share of its /proc samples a thread must spend in
// state R to count as runnable in the headline: a spinner never sleeps, so
// it is R at every sample; half allows for the instants it was descheduled
// by something else.
const minRunnableShare = 0.5

// spinCand is the CPU of one function (its physical frame) as seen by the
// cpu-clock samples.
type spinCand struct {
	fn, module string
	cpuNS      int64
	addrs      map[uint64]int64
	line       map[uint64]int
	atomicNS   int64
	// waitOps marks addresses whose samples execute an atomic load,
	// swap or compare-and-swap: the operations a busy-wait repeats.
	waitOps   map[uint64]bool
	point     core.ProgramPoint
	top       int64
	inlinedIn string
}

// liveSpin reports busy-wait convoys and returns the threads that spin in
// them.
func liveSpin(a *core.Output, ld *Data) map[int]bool {
	spinning := map[int]bool{}
	if ld.cpuTotalNS == 0 {
		return spinning
	}
	cands := ld.spinCandidates()
	for _, c := range cands {
		if f, ok := ld.judgeSpin(a, c, spinning); ok {
			a.Res.Findings = append(a.Res.Findings, f)
		}
	}
	return spinning
}

// userSpace reports whether a cpu-clock sample interrupted user code (its
// kernel frames, if any, are an interrupt's, not a system call's).
func userSpace(frames []recording.Frame) bool {
	for _, f := range frames {
		if !f.Kernel {
			return true
		}
		if strings.HasPrefix(f.Func, "entry_SYSCALL") || strings.HasPrefix(f.Func, "do_syscall") {
			return false
		}
	}
	return false
}

// spinCandidates groups the on-CPU samples taken in user space by the
// physical function of their leaf frame, heaviest first, and keeps those
// that burn enough CPU to matter.
func (ld *Data) spinCandidates() []*spinCand {
	by := map[string]*spinCand{}
	for _, s := range ld.oncpu {
		if !userSpace(s.frames) {
			continue
		}
		fr := s.userFrames()
		if len(fr) == 0 || isSyntheticFrame(fr[0]) {
			continue
		}
		if sc := core.ClassifyFrames(fr, -1); sc.Class == core.ClassIdle || sc.Class == core.ClassRuntimeWait {
			continue // the Go scheduler looking for work, GC workers
		}
		pi := physical(fr, 0)
		phys := fr[pi]
		if pkg := core.GoPackage(phys.Func); pkg != "" && core.IsLockPackage(pkg) {
			continue // the Go runtime's own spinning (lock2, procyield)
		}
		key := phys.Module + "\x00" + phys.Func
		c := by[key]
		if c == nil {
			c = &spinCand{fn: phys.Func, module: phys.Module, addrs: map[uint64]int64{}, line: map[uint64]int{}, waitOps: map[uint64]bool{}}
			by[key] = c
		}
		ns := value(s, 1)
		c.cpuNS += ns
		c.addrs[fr[0].Addr] += ns
		c.line[fr[0].Addr] = fr[0].Line
		if core.IsAtomicFrame(fr[0]) {
			c.atomicNS += ns
			if isWaitOp(fr[0].Func) {
				c.waitOps[fr[0].Addr] = true
			}
		}
		if ns > c.top {
			c.top = ns
			idx := livePointIndex(fr)
			if idx < 0 || idx > pi {
				idx = pi
			}
			c.point = core.NewPoint(fr, idx)
			if idx < pi {
				c.inlinedIn = phys.Func
			} else {
				c.inlinedIn = ""
			}
		}
	}
	var out []*spinCand
	for _, c := range by {
		if float64(c.cpuNS) >= core.SpinMinCPUShare*float64(ld.cpuTotalNS) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].cpuNS != out[j].cpuNS {
			return out[i].cpuNS > out[j].cpuNS
		}
		return out[i].fn < out[j].fn
	})
	return out
}

// judgeSpin decides whether a hot function is a busy-wait convoy.
func (ld *Data) judgeSpin(a *core.Output, c *spinCand, spinning map[int]bool) (core.Finding, bool) {
	// A Go function's busy-wait is the Go detector's when the recording
	// carries the runtime's CPU profile and goroutine dumps: it sees the
	// goroutines, which the threads below them hide.
	if core.GoPackage(c.fn) != "" && a.Rec.Profile(recording.ViewGoCPU) != nil {
		return core.Finding{}, false
	}
	if ld.cpus() > 0 && ld.rec.Threads != nil && ld.meanRunnable <= float64(ld.cpus()) {
		// A convoy needs more runnable threads than CPUs, so that the
		// holder is descheduled while the others spin. With fewer, a
		// tight loop is at worst wasteful, and threads that take turns
		// through one hot function (behind a global lock) are the more
		// likely reading: they never run it at the same time. Judged
		// before the loop is looked for: reading the machine code of a
		// large function (an interpreter's loop: 56 KB) costs a tenth of
		// an always-on recorder's CPU.
		return core.Finding{}, false
	}
	loop, ok := ld.spinLoop(a, c)
	if !ok || loop.spinNS == 0 || float64(loop.spinNS) < core.SpinMinCPUShare*float64(ld.cpuTotalNS) {
		return core.Finding{}, false
	}
	spinners := map[int]bool{}
	for _, s := range ld.oncpu {
		fr := s.userFrames()
		if len(fr) > 0 && loop.addrs[fr[0].Addr] && fr[physical(fr, 0)].Func == c.fn {
			spinners[s.tid] = true
		}
	}
	if len(spinners) < core.MinSpinners {
		return core.Finding{}, false
	}
	// A lock that spins a while and then parks shows futex waits where it
	// spins: that is an adaptive mutex doing its job.
	parkNS := ld.parkedIn(spinners, c.fn)
	if parkNS >= loop.spinNS {
		return core.Finding{}, false
	}
	for t := range spinners {
		spinning[t] = true
	}
	return ld.spinFinding(c, loop, spinners, parkNS), true
}

// spinShape is the busy-wait loop a hot function was found to run.
type spinShape struct {
	// addrs are the sampled addresses inside the loop; spinNS the CPU
	// sampled there.
	addrs  map[uint64]bool
	spinNS int64
	// disasm is set when the machine code was read; rep describes it.
	disasm bool
	rep    loopReport
}

// spinLoop finds the busy-wait loop of a hot function: from its machine
// code where it can be read, else from how few addresses hold the samples
// and whether they execute an atomic wait operation. It reports false for
// a function that cannot be shown to spin.
func (ld *Data) spinLoop(a *core.Output, c *spinCand) (spinShape, bool) {
	sh := spinShape{addrs: map[uint64]bool{}}
	if r, ok := nativeLoops(a, ld.rec, c.module, c.addrs); ok {
		sh.disasm, sh.rep, sh.addrs = true, r, r.busy
		for addr := range sh.addrs {
			sh.spinNS += c.addrs[addr]
		}
		return sh, true
	}
	// JIT-compiled code has no file: its machine code is read from the
	// process's memory as the recording kept it.
	if c.module == recording.ModuleJava {
		if r, ok := jitLoops(ld.rec, c.fn, c.addrs); ok {
			sh.disasm, sh.rep, sh.addrs = true, r, r.busy
			for addr := range sh.addrs {
				sh.spinNS += c.addrs[addr]
			}
			return sh, true
		}
	}
	// Without the machine code a tight work loop (a hash, a checksum)
	// looks the same as a spin loop: few hot addresses. Only an atomic
	// load, swap or compare-and-swap at one of them, seen in the stacks
	// (Go's inlined sync/atomic frames), tells a busy-wait apart; anything
	// else is left unjudged, and said so.
	top := topAddrs(c.addrs, spinTopAddrs)
	waits := false
	for _, addr := range top {
		sh.spinNS += c.addrs[addr]
		waits = waits || c.waitOps[addr]
	}
	tight := float64(sh.spinNS) >= core.SpinMinLoopShare*float64(c.cpuNS)
	if !tight || !waits {
		if tight && ld.cpus() > 0 && ld.meanRunnable > float64(ld.cpus()) {
			a.Note(fmt.Sprintf("%s burns %s of the sampled CPU in a tight loop while more threads are runnable than CPUs, but its machine code (%s) could not be read to tell a busy-wait from work", core.ShortFuncName(c.fn), units.Percent(float64(c.cpuNS)/float64(ld.cpuTotalNS)), c.module))
		}
		return sh, false
	}
	for _, addr := range top {
		sh.addrs[addr] = true
	}
	return sh, true
}

// parkedIn sums the futex waits of threads from inside function fn.
func (ld *Data) parkedIn(tids map[int]bool, fn string) int64 {
	var ns int64
	for _, s := range ld.waits {
		if tids[s.tid] && !s.synthetic() && callsAny(s.userFrames(), map[string]bool{fn: true}) {
			ns += value(s, 1)
		}
	}
	return ns
}

// runqIn sums the run-queue time of threads preempted inside function fn.
func (ld *Data) runqIn(tids map[int]bool, fn string) int64 {
	var ns int64
	for _, s := range ld.offcpu {
		if s.state != recording.StateRunnable || !tids[s.tid] {
			continue
		}
		if fr := s.userFrames(); len(fr) > 0 && fr[physical(fr, 0)].Func == fn {
			ns += runqOf(s)
		}
	}
	return ns
}

// spinFinding words a busy-wait convoy.
func (ld *Data) spinFinding(c *spinCand, loop spinShape, spinners map[int]bool, parkNS int64) core.Finding {
	runqNS := ld.runqIn(spinners, c.fn)
	f := core.Verdict{
		Kind:         core.KindSpinConvoy,
		Point:        c.point,
		Participants: len(spinners),
		Counted:      true,
		Population:   ld.population,
		Unit:         "threads",
		CPUSeconds:   core.Seconds(loop.spinNS),
		WaitSeconds:  core.Seconds(runqNS),
		Duration:     ld.dur,
	}
	where := core.PointString(c.point)
	if c.inlinedIn != "" {
		where += " (inlined in " + core.ShortFuncName(c.inlinedIn) + ")"
	}
	who := core.Participants(len(spinners), ld.population, "threads", true, 0)
	runnable, runnableSpinners := 0, 0
	for _, t := range ld.threads {
		if t.sampled > 0 && t.runnableShare() >= minRunnableShare {
			runnable++
			if spinners[t.tid] {
				runnableSpinners++
			}
		}
	}
	if runnable > 0 && runnableSpinners > 0 {
		who = fmt.Sprintf("%d of %d runnable threads", runnableSpinners, runnable)
	}
	f.Headline = fmt.Sprintf("%s sit at ONE program point: busy-wait in %s", who, where)
	share := float64(loop.spinNS) / float64(ld.cpuTotalNS)
	f.Evidence = ld.spinEvidence(c, loop, spinners, share, runqNS, parkNS)
	sources := 1
	if loop.disasm {
		sources++
	}
	if ld.rec.Threads != nil {
		sources++
	}
	f.Remedy, f.Sugg = core.RemedyPark, core.Sugg{GoLang: core.GoPackage(c.fn) != "" && c.module != recording.ModuleJava, Java: c.module == recording.ModuleJava, Whom: "thread", Fn: core.ShortFuncName(c.fn),
		CPUs: ld.cpus(), CPUSeconds: f.CPUSeconds, Share: share}
	f.Confidence = core.ConfidenceOf(sources, !loop.disasm)
	return core.Judge(f)
}

// spinEvidence states the facts of a busy-wait convoy.
func (ld *Data) spinEvidence(c *spinCand, loop spinShape, spinners map[int]bool, share float64, runqNS, parkNS int64) []core.Evidence {
	cpus := 0.0
	if ld.dur > 0 {
		cpus = float64(loop.spinNS) / float64(ld.dur)
	}
	ev := []core.Evidence{core.Fact("oncpu", core.EvSpinCPU, "spin_s", core.Seconds(loop.spinNS), "total_s", core.Seconds(ld.cpuTotalNS), "share", share,
		"threads", len(spinners), "cpus", cpus, "dur_s", ld.dur, "function", core.ShortFuncName(c.fn))}
	if loop.disasm {
		r := loop.rep
		ev = append(ev, core.Fact("disasm", core.EvSpinLoop, "insns", r.insns, "start", r.start, "pause", r.pause, "shape", r.text))
	} else {
		ev = append(ev, core.Fact("oncpu", core.EvTightLoop, "share", float64(loop.spinNS)/float64(c.cpuNS), "addrs", len(loop.addrs),
			"atomic_share", float64(c.atomicNS)/float64(c.cpuNS)))
	}
	if ld.rec.Threads != nil {
		ev = append(ev, core.Fact("proc", core.EvSpinRunnable, "runnable_share", ld.shareRunnable(spinners), "involuntary", ld.involuntary(spinners),
			"mean_runnable", ld.meanRunnable, "num_cpu", ld.cpus()))
	}
	if runqNS > 0 {
		ev = append(ev, core.Fact("sched", core.EvSpinRunq, "runq_s", core.Seconds(runqNS), "function", core.ShortFuncName(c.fn)))
	}
	return append(ev, core.Fact("futex", core.EvSpinPark, "park_s", core.Seconds(parkNS), "spin_s", core.Seconds(loop.spinNS), "function", core.ShortFuncName(c.fn)))
}

// isWaitOp reports whether an atomic function is one a busy-wait repeats
// (a load, a swap, a compare-and-swap), not a counter's add or a store.
func isWaitOp(fn string) bool {
	name := fn[strings.LastIndexByte(fn, '.')+1:]
	for _, p := range []string{"Load", "Swap", "CompareAndSwap", "Cas", "Xchg"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// topAddrs returns the n heaviest addresses.
func topAddrs(addrs map[uint64]int64, n int) []uint64 {
	out := make([]uint64, 0, len(addrs))
	for a := range addrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if addrs[out[i]] != addrs[out[j]] {
			return addrs[out[i]] > addrs[out[j]]
		}
		return out[i] < out[j]
	})
	return out[:int(math.Min(float64(n), float64(len(out))))]
}
