package live

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// The CPU saturation detector: the target's threads wait for a CPU, not
// for a lock. It reads the run-queue time of every thread (the off-CPU
// view's runnable time: preempted, or woken and not yet running), the
// CPUs the process may use, and the waiting on locks that are not idle,
// after the spin detector has claimed the threads that spin (a busy-wait
// fills the run queue by itself, and its verdict says so).

// The least oversubscription the verdict must catch is two CPU-bound
// threads per CPU: then every CPU has one thread queued behind the one it
// runs, and each thread spends half its time runnable without a CPU. The
// thresholds below sit at half and at two thirds of those figures, so that
// measurement (sampled off-CPU intervals, threads that also sleep now and
// then) cannot drop that case under them, while a process that queues
// for CPUs only now and then stays out. Both are per CPU or per thread,
// so they hold the same from 2 to 64 threads per CPU.
const (
	// satMinRunqPerCPU is how many threads must wait for each CPU on
	// average (run-queue time per second of wall time, per CPU the process
	// may use): at two CPU-bound threads per CPU it is one.
	satMinRunqPerCPU = 0.5

	// satMinThreadDemand is the share of its time a thread must want a CPU
	// (running or runnable) to count among the saturating threads. A
	// thread that competes for an oversubscribed CPU wants it all the
	// time, whatever its share of it; a quarter keeps out threads that
	// mostly sleep and only now and then queue behind the others.
	satMinThreadDemand = 0.25

	// satMinRunnableShare is the share of their time the busy threads
	// must spend runnable without a CPU: a half at two CPU-bound threads
	// per CPU. A third keeps out the producers of a serialized writer on a
	// busy machine, which queue for a CPU about a quarter of the time
	// while the lock hand-offs are the larger lever (their verdict stays
	// the lock's).
	satMinRunnableShare = 1.0 / 3

	// satMinOwnRunnable is how many of the process's own threads must be
	// runnable (running or queued) on average, per CPU it may use: two at
	// two CPU-bound threads per CPU. At one or fewer per CPU its threads
	// do not compete with each other, and the time they queue is spent
	// behind other processes: the machine is busy, not the process
	// oversubscribed, and fewer threads would not help.
	satMinOwnRunnable = 1.5
)

// liveSaturation reports CPU saturation; spinning holds the threads a spin
// finding already accounts for.
//
// kernelWaits holds each thread's waiting on the kernel objects and
// polled locks that got a finding: lock waiting like a futex lock's.
func liveSaturation(a *core.Output, ld *Data, locks []*LockGroup, spinning map[int]bool, kernelWaits map[int]int64) {
	cpus := ld.cpus()
	if ld.dur <= 0 || cpus <= 0 {
		return
	}
	s := satLoad{cpus: cpus}
	s.busy, s.runqNS, s.cpuS = demandingThreads(ld, spinning, turningThreads(locks))
	s.runq = core.Seconds(s.runqNS) / ld.dur.Seconds()
	if s.runq < satMinRunqPerCPU*float64(cpus) || len(s.busy) <= cpus {
		return
	}
	s.runnable = ld.meanRunnable
	if ld.rec.Threads == nil {
		s.runnable = s.runq + s.cpuS/ld.dur.Seconds()
	}
	if s.runnable < satMinOwnRunnable*float64(cpus) {
		return
	}
	// Lock waits must be the smaller part: a crowd queued on a lock whose
	// holder is preempted is the lock's verdict, with the run queue as its
	// cause in the chain. The run-queue time inside the lock waits, from a
	// waiter's wake to its running again, is the lock's hand-off: it is
	// weighed with the lock, and only what the threads queue for a CPU
	// outside lock waits is weighed against it: otherwise a convoy whose
	// woken waiters spend most of their wait queued for a CPU weighs the
	// same time on both sides and the verdict is a coin toss. A recording
	// without LockStat.RunqNS weighs the whole run queue.
	s.lockNS, s.lockRunqNS = busyLockWaits(s.busy, locks, kernelWaits)
	if s.lockNS >= s.runqNS-min(s.lockRunqNS, s.runqNS) {
		return
	}
	for t := range s.busy {
		s.busyRunq += ld.threads[t].runqNS
	}
	s.busyTime = int64(len(s.busy)) * int64(ld.dur)
	if float64(s.busyRunq) < satMinRunnableShare*float64(s.busyTime) {
		return
	}
	a.Res.Findings = append(a.Res.Findings, core.Judge(saturationVerdict(ld, &s)))
}

// satLoad is what liveSaturation measured of the threads that want a CPU,
// over the whole recording.
type satLoad struct {
	cpus int          // CPUs the process may use
	busy map[int]bool // threads wanting a CPU at least satMinThreadDemand of the time

	// runqNS and cpuS are the run-queue and CPU time of every thread
	// neither spinning nor taking turns on a lock; runq is runqNS per
	// second of wall time, the threads queued on average.
	runqNS int64
	cpuS   float64
	runq   float64

	runnable float64 // the process's threads running or queued, on average

	// lockNS is the busy threads' waiting on locks that are not idle and
	// on kernel objects, lockRunqNS the run-queue time inside those lock
	// waits (the locks' hand-offs).
	lockNS, lockRunqNS int64

	// busyRunq is the busy threads' run-queue time, busyTime their
	// number times the recording's length.
	busyRunq, busyTime int64
}

// turningThreads returns the waiters of the locks whose threads take
// turns. Threads that take turns on a global lock wake to take it back and
// queue for a CPU on the way: that run-queue time is the lock's
// hand-offs, and the lock's verdict says so.
func turningThreads(locks []*LockGroup) map[int]bool {
	turning := map[int]bool{}
	for _, g := range locks {
		if g.turns {
			for t := range g.waiters {
				turning[t] = true
			}
		}
	}
	return turning
}

// demandingThreads returns, of the threads neither spinning nor turning,
// those that want a CPU (running or runnable) at least satMinThreadDemand
// of the recording, and the run-queue and CPU time of all of them.
func demandingThreads(ld *Data, spinning, turning map[int]bool) (busy map[int]bool, runqNS int64, cpuS float64) {
	busy = map[int]bool{}
	// In thread order: cpuS is a float sum, and a sum in map order
	// differs in its last bits from run to run.
	for _, tid := range slices.Sorted(maps.Keys(ld.threads)) {
		t := ld.threads[tid]
		if spinning[t.tid] || turning[t.tid] {
			continue
		}
		if (t.cpu()+core.Seconds(t.runqNS))/ld.dur.Seconds() >= satMinThreadDemand {
			busy[t.tid] = true
		}
		runqNS += t.runqNS
		cpuS += t.cpu()
	}
	return busy, runqNS, cpuS
}

// busyLockWaits returns the busy threads' waiting on the locks that are
// not idle (each lock's wait and run-queue time shared evenly among its
// waiters) plus their waiting in kernelWaits, and the run-queue time
// inside those lock waits.
func busyLockWaits(busy map[int]bool, locks []*LockGroup, kernelWaits map[int]int64) (lockNS, lockRunqNS int64) {
	for _, g := range locks {
		if !g.idle {
			n := int64(max(len(g.waiters), 1))
			for t := range g.waiters {
				if busy[t] {
					lockNS += g.waitNS / n
					lockRunqNS += g.runqNS / n
				}
			}
		}
	}
	for t, ns := range kernelWaits {
		if busy[t] {
			lockNS += ns
		}
	}
	return lockNS, lockRunqNS
}

// saturationVerdict builds the CPU saturation verdict from what
// liveSaturation measured: the headline, the evidence, the remedy and
// the score it is ranked by.
func saturationVerdict(ld *Data, s *satLoad) core.Verdict {
	f := core.Verdict{
		Kind:         core.KindCPUSaturation,
		Participants: len(s.busy),
		Counted:      true,
		Population:   ld.population,
		Unit:         "threads",
		WaitSeconds:  core.Seconds(s.runqNS),
		Duration:     ld.dur,
	}
	pts := ld.runqPoints(s.busy)
	if len(pts) > 0 {
		f.Point = pts[0].point
	}
	who := core.Participants(len(s.busy), ld.population, "threads", true, 0)
	cpuWord := fmt.Sprintf("the %d CPUs", s.cpus)
	if s.cpus == 1 {
		cpuWord = "the 1 CPU"
	}
	f.Headline = fmt.Sprintf("%s threads wait for a CPU on average: %s want more than %s the process may use", units.Float(s.runq), who, cpuWord)
	if f.Point.Function != "" {
		f.Headline += ", most in " + funcIn(f.Point)
	}
	f.Evidence = []core.Evidence{
		core.Fact("sched", core.EvRunQueue, "runq_threads", s.runq, "cpus", s.cpus, "running", s.cpuS/ld.dur.Seconds(),
			"runnable", ld.meanRunnable, "threads", len(s.busy), "dur_s", ld.dur),
		core.Fact("sched", core.EvRunnableShare, "share", float64(s.busyRunq)/float64(s.busyTime), "lock_share", float64(s.lockNS)/float64(s.busyTime)),
	}
	if len(pts) > 1 {
		items := make([]core.Item, 0, 4)
		for _, p := range pts[1:min(len(pts), 5)] {
			items = append(items, core.Item{Name: p.key.String(), Value: core.Seconds(p.weight)})
		}
		f.Evidence = append(f.Evidence, core.Fact("sched", core.EvRunQueuePoints, "items", items))
	}
	f.Confidence = core.ConfidenceMedium
	if ld.rec.Threads != nil {
		f.Confidence = core.ConfidenceHigh // /proc states agree with the scheduler's
	}
	f.Remedy, f.Sugg = core.RemedyFewerThreads, core.Sugg{Whom: "thread", CPUs: s.cpus, RunqThreads: s.runq, WaitS: core.Seconds(s.runqNS)}
	score := satRankSeconds(s.runqNS-min(s.lockRunqNS, s.runqNS), s.runnable, s.cpuS/ld.dur.Seconds(), s.cpus, ld.dur) + f.CPUSeconds
	f.Score = &score
	return f
}

// satRankSeconds is the time a CPU saturation finding is ranked by
// against the lock findings of the same recording (see rank): the
// run-queue time outside lock waits (the run queue inside them is the
// locks' hand-offs, already in their waiting, and counting it twice made
// the order of a lock and saturation a coin toss), and of that only what
// the process's own oversubscription explains: runnable - cpus threads
// queued on average over the recording. The rest is time queued behind
// other processes, which fewer threads in this process would not give
// back; counting it let two CPU hogs beside c/hotstripe rank saturation
// above the hot stripe. The runnable count itself grows when other
// processes take the CPUs (a thread that wakes, works briefly and sleeps
// stays runnable longer), so the oversubscription is weighed by the share
// of the CPUs the process kept busy (running / cpus, at most 1): a thread
// can queue behind its own process's threads only while they hold the
// CPUs. A process running 0.36 CPUs' worth of work on 2 CPUs with 4
// threads runnable (c/mmapstorm beside a busy build) saturates nothing
// by itself; a CPU-bound one alone keeps the weight whole. Every term is
// per CPU and per second, so the rule reads the same at 2 and at 64
// threads per CPU.
func satRankSeconds(outsideLocksNS int64, runnable, running float64, cpus int, dur time.Duration) float64 {
	own := max(0, runnable-float64(cpus)) * dur.Seconds() * min(1, running/float64(cpus))
	return min(core.Seconds(outsideLocksNS), own)
}

// satCommonShare is the share of the run-queue time a function must be on
// the stacks of to name the work the saturating threads share: four in
// five, so that the point is code nearly all of them run (a request
// handler), not one branch of it that half of them happen to be in.
const satCommonShare = 0.8

// runqPoints finds where the busy threads sit runnable. Preempted
// threads leave their CPU wherever they happen to be, so the leaf frames
// scatter over every function the work calls; what they share is the code
// that does the work. The first point is the most specific function that
// satCommonShare of the run-queue time passes through (walking each stack
// from its leaf, once per function); the others are the heaviest leaf
// functions, for the evidence. "Most specific" is read from the stacks,
// not from the weights: of the functions that qualify, the one found
// below (nearer the leaf than) the others on the stacks they share. The
// weights cannot order them: a stack cut short at its root end keeps the
// callee and loses the caller, so a caller can weigh less than its callee
// (RocksDB: DBImpl::Get on 83.4 % of the time, the GetImpl it calls on
// 83.6 %).
func (ld *Data) runqPoints(busy map[int]bool) []*pointAgg {
	var samples []*liveSample
	var depths []map[string]int // per sample, each function's first index from the leaf
	var total int64
	through := map[string]int64{}
	best := map[string]*liveSample{}
	for _, s := range ld.offcpu {
		v := runqOf(s)
		if !busy[s.tid] || v <= 0 || s.state != recording.StateRunnable {
			continue
		}
		samples = append(samples, &liveSample{tid: s.tid, frames: s.frames, values: []int64{0, v}})
		total += v
		seen := map[string]int{}
		for i, f := range s.userFrames() {
			if _, dup := seen[f.Func]; dup || liveMachinery(f) || unnamed(f) || threadEntryFuncs[core.NormNative(f.Func)] {
				continue
			}
			seen[f.Func] = i
			through[f.Func] += v
			if b := best[f.Func]; b == nil || v > runqOf(b) {
				best[f.Func] = s
			}
		}
		depths = append(depths, seen)
	}
	leaves := byFunction(pointsOf(samples, 1))
	var shared []string
	for fn, w := range through {
		if float64(w) >= satCommonShare*float64(total) {
			shared = append(shared, fn)
		}
	}
	common := innermost(shared, samples, depths)
	if common == "" {
		return leaves
	}
	weight := through[common]
	fr := best[common].userFrames()
	pi := 0
	for i, f := range fr {
		if f.Func == common {
			pi = i
			break
		}
	}
	top := &pointAgg{key: core.KeyOf(fr, pi), point: core.NewPoint(fr, pi), weight: weight}
	top.key.Line = 0
	out := []*pointAgg{top}
	for _, l := range leaves {
		if l.key.Fn != common {
			out = append(out, l)
		}
	}
	return out
}

// innermost returns the function of fns found nearer the leaf than the
// others on the samples' stacks: for each pair, the one below the other
// on more of the run-queue time they share wins; the function with the
// most wins is the innermost (recursion can make the order cyclic, and
// then the most wins still names the deepest function in most stacks).
// Ties go to the name first in order, so the choice does not depend on
// map order. depths[i] maps each function on samples[i]'s stack to its
// first index from the leaf.
func innermost(fns []string, samples []*liveSample, depths []map[string]int) string {
	sort.Strings(fns)
	below := make([][]int64, len(fns)) // below[a][b]: time fns[a] sits below fns[b]
	for a := range below {
		below[a] = make([]int64, len(fns))
	}
	for i, d := range depths {
		v := samples[i].values[1]
		for a, fa := range fns {
			da, ok := d[fa]
			if !ok {
				continue
			}
			for b, fb := range fns {
				if db, ok := d[fb]; ok && da < db {
					below[a][b] += v
				}
			}
		}
	}
	best, bestWins := "", -1
	for a, fa := range fns {
		wins := 0
		for b := range fns {
			if a != b && below[a][b] > below[b][a] {
				wins++
			}
		}
		if wins > bestWins {
			best, bestWins = fa, wins
		}
	}
	return best
}

// byFunction merges points of one function (a thread is preempted at any
// line of the code it runs, so lines tell nothing there), heaviest first;
// each keeps the heaviest line's stack.
func byFunction(pts []*pointAgg) []*pointAgg {
	by := map[string]*pointAgg{}
	var out []*pointAgg
	for _, p := range pts {
		m := by[p.key.Fn]
		if m == nil {
			m = &pointAgg{key: core.PointKey{Fn: p.key.Fn, File: p.key.File}, point: p.point, top: p.top}
			by[p.key.Fn] = m
			out = append(out, m)
		}
		m.weight += p.weight
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].weight > out[j].weight })
	return out
}

// funcIn names a point's function, and the function it is inlined in:
// "fx_work (inlined in handle_request)".
func funcIn(p core.ProgramPoint) string {
	s := core.ShortFuncName(p.Function)
	if phys := PhysicalFunction(p); phys != p.Function {
		s += " (inlined in " + core.ShortFuncName(phys) + ")"
	}
	return s
}
