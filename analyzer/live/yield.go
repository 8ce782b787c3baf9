package live

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// The yield-loop detector: a busy-wait that calls sched_yield between
// polls. Its threads never park: they leave the CPU runnable at every
// yield and queue for it again at once, so they show in the off-CPU view
// as runnable time at the yield, in the on-CPU samples as the loop and
// the yield system call, and in /proc as R. RocksDB's write queue
// (WriteThread::AwaitState with adaptive yield) waits this way. On a
// machine with more such threads than CPUs the thread that would end the
// wait queues behind the yielders, as a spinning holder does.

// yieldMinShare is the share of the process's threads' busy time (on a
// CPU or runnable) that the loop must take — its CPU plus the time its
// threads sat runnable after yielding — for it to be a finding: the same
// tenth as spinMinCPUShare, a tenth of the process's time thrown away.
const yieldMinShare = core.SpinMinCPUShare

// yieldLoop is one program point where threads yield in a loop.
type yieldLoop struct {
	key      core.PointKey
	point    core.ProgramPoint
	top      int64
	threads  map[int]bool
	yields   int64 // switches that left the CPU runnable at the yield
	runqNS   int64 // runnable time after those yields
	cpuNS    int64 // on-CPU samples in the loop's function and its yields
	parkedNS int64 // futex waits of the same threads at the same point
}

// isYieldFrame reports whether f gives up the CPU on purpose.
func isYieldFrame(f recording.Frame) bool {
	return !f.Kernel && core.YieldFuncs[core.NormNative(f.Func)]
}

// goRuntimeYield reports whether a yield is the Go scheduler's own
// (runtime.osyield, runtime.usleep: work stealing, runtime locks, a
// semaphore hand-off): a Go program's busy-wait yields with
// runtime.Gosched, which switches goroutines without leaving the thread,
// so the kernel never sees it, and the goroutine profiles report it.
func goRuntimeYield(f recording.Frame) bool {
	return strings.HasPrefix(core.NormNative(f.Func), "runtime.")
}

// liveYield reports yield-loop convoys and adds their threads to spinning.
func liveYield(a *core.Output, ld *Data, spinning map[int]bool) {
	loops := ld.yieldLoops()
	var busyNS int64
	for _, t := range ld.threads {
		busyNS += int64(t.cpu()*1e9) + t.runqNS
	}
	for _, l := range loops {
		if len(l.threads) < core.MinSpinners || busyNS == 0 || float64(l.runqNS+l.cpuNS) < yieldMinShare*float64(busyNS) {
			continue
		}
		// A loop that mostly parks is an adaptive lock doing its job.
		if l.parkedNS >= l.runqNS+l.cpuNS {
			continue
		}
		// Yielding only costs when others want the CPU: with no more
		// runnable threads than CPUs, a yield returns at once.
		if ld.rec.Threads != nil && ld.meanRunnable <= float64(ld.cpus()) {
			continue
		}
		for t := range l.threads {
			spinning[t] = true
		}
		a.Res.Findings = append(a.Res.Findings, ld.yieldFinding(l, busyNS))
	}
}

// yieldLoops groups the runnable switches at a yield by the program point
// that yields, and adds the CPU its threads burn there.
func (ld *Data) yieldLoops() []*yieldLoop {
	by := map[core.PointKey]*yieldLoop{}
	var out []*yieldLoop
	for _, s := range ld.offcpu {
		if s.state != recording.StateRunnable {
			continue
		}
		fr := s.userFrames()
		if len(fr) == 0 || !isYieldFrame(fr[0]) || goRuntimeYield(fr[0]) {
			continue
		}
		pi := livePointIndex(fr)
		if pi < 0 {
			continue
		}
		k := core.KeyOf(fr, pi)
		k.Line = 0 // a loop yields from one line or two; its function is the point
		l := by[k]
		if l == nil {
			l = &yieldLoop{key: k, threads: map[int]bool{}}
			by[k] = l
			out = append(out, l)
		}
		l.threads[s.tid] = true
		l.yields += value(s, 0)
		l.runqNS += runqOf(s)
		if v := runqOf(s); v > l.top || l.point.Stack == nil {
			l.top, l.point = v, core.NewPoint(fr, pi)
		}
	}
	for _, l := range out {
		for _, s := range ld.oncpu {
			if l.threads[s.tid] && inFunction(s.userFrames(), l.key.Fn) {
				l.cpuNS += value(s, 1)
			}
		}
		for _, s := range ld.waits {
			if l.threads[s.tid] && inFunction(s.userFrames(), l.key.Fn) {
				l.parkedNS += value(s, 1)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].runqNS+out[i].cpuNS > out[j].runqNS+out[j].cpuNS })
	return out
}

// inFunction reports whether a stack passes through function fn.
func inFunction(frames []recording.Frame, fn string) bool {
	for _, f := range frames {
		if f.Func == fn {
			return true
		}
	}
	return false
}

func (ld *Data) yieldFinding(l *yieldLoop, busyNS int64) core.Finding {
	n := len(l.threads)
	f := core.Verdict{
		Kind:         core.KindSpinConvoy,
		Point:        l.point,
		Participants: n,
		Counted:      true,
		Population:   ld.population,
		Unit:         "threads",
		CPUSeconds:   core.Seconds(l.cpuNS),
		WaitSeconds:  core.Seconds(l.runqNS),
		Duration:     ld.dur,
	}
	who := core.Participants(n, ld.population, "threads", true, 0)
	f.Headline = core.OnePoint(who, "sit", "busy-wait yielding the CPU in "+funcIn(l.point))
	rate := 0.0
	if ld.dur > 0 {
		rate = float64(l.yields) / ld.dur.Seconds()
	}
	f.Evidence = []core.Evidence{
		core.Fact("sched", core.EvYieldLoop, "yields", l.yields, "rate", rate, "threads", n, "runq_s", core.Seconds(l.runqNS),
			"cpu_s", core.Seconds(l.cpuNS), "share", float64(l.runqNS+l.cpuNS)/float64(busyNS), "function", core.ShortFuncName(l.point.Function)),
	}
	if ld.rec.Threads != nil {
		f.Evidence = append(f.Evidence, core.Fact("proc", core.EvSpinRunnable, "runnable_share", ld.shareRunnable(l.threads),
			"involuntary", ld.involuntary(l.threads), "mean_runnable", ld.meanRunnable, "num_cpu", ld.cpus()))
	}
	f.Evidence = append(f.Evidence, core.Fact("futex", core.EvSpinPark, "park_s", core.Seconds(l.parkedNS), "spin_s", core.Seconds(l.runqNS+l.cpuNS), "function", core.ShortFuncName(l.point.Function)))
	f.Confidence = core.ConfidenceMedium
	if ld.rec.Threads != nil {
		f.Confidence = core.ConfidenceHigh
	}
	f.Remedy, f.Sugg = core.RemedyPark, core.Sugg{Whom: "thread", Fn: core.ShortFuncName(l.point.Function), CPUs: ld.cpus(),
		CPUSeconds: f.CPUSeconds, Yield: true, GoLang: strings.Contains(l.point.Function, ".(")}
	return core.Judge(f)
}

// shareRunnable is the mean share of /proc samples in state R of threads.
func (ld *Data) shareRunnable(tids map[int]bool) float64 {
	var sum float64
	n := 0
	// In thread order: a float sum in map order differs in its last bits
	// from run to run, and the result is compared byte for byte.
	for _, t := range slices.Sorted(maps.Keys(tids)) {
		if th := ld.threads[t]; th != nil && th.sampled > 0 {
			sum += th.runnableShare()
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// involuntary sums the involuntary context switches of threads.
func (ld *Data) involuntary(tids map[int]bool) uint64 {
	var n uint64
	for t := range tids {
		if th := ld.threads[t]; th != nil {
			n += th.invol
		}
	}
	return n
}
