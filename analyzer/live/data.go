package live

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
	"github.com/google/pprof/profile"
)

// This file reads a live recording (the eBPF collector's views, locks.json,
// the /proc timeline and the event log) into plain per-sample records and
// per-thread figures, once per analysis, for the live detectors to share.

// kernelModule is the mapping name of kernel frames in the live views.
const kernelModule = "[kernel]"

// liveSample is one sample of a live view: its thread, labels, values and
// frames (leaf first, copied out of the profile).
type liveSample struct {
	tid      int
	addr     uint64
	lockName string
	state    string
	values   []int64
	frames   []recording.Frame
}

// userFrames returns the sample's frames without the kernel's, leaf first.
func (s *liveSample) userFrames() []recording.Frame {
	for i, f := range s.frames {
		if !f.Kernel {
			return s.frames[i:]
		}
	}
	return nil
}

// synthetic reports whether the sample stands for data recorded without a
// stack ("[short waits]", "[stack lost]", …): a single bracketed frame.
func (s *liveSample) synthetic() bool {
	return len(s.frames) == 1 && isSyntheticFrame(s.frames[0])
}

// isSyntheticFrame reports whether f is one of the collector's placeholder
// frames ("[short waits]", "[woke nobody]", "[stack lost]", …).
func isSyntheticFrame(f recording.Frame) bool {
	n := f.Func
	return len(n) > 1 && n[0] == '[' && n[len(n)-1] == ']'
}

// liveThread is one thread's figures over the recording.
type liveThread struct {
	tid  int
	comm string
	// states is the /proc state strip; runnable and sampled count its 'R'
	// instants and its real samples.
	states            string
	runnable, sampled int
	user, sys         float64 // seconds
	vol, invol        uint64
	// cpuNS is on-CPU time from the cpu-clock samples.
	cpuNS int64
	// futexNS is time blocked in futex waits (every address).
	futexNS int64
	// runqNS is time runnable without a CPU (the off-CPU view's run-queue
	// value, every state), offNS time off CPU in any state.
	runqNS, offNS int64
}

// cpu returns the thread's CPU seconds: from /proc when the timeline has
// them, else from the cpu-clock samples.
func (t *liveThread) cpu() float64 {
	if t.user+t.sys > 0 {
		return t.user + t.sys
	}
	return core.Seconds(t.cpuNS)
}

// runnableShare is the share of the thread's /proc samples in state R.
func (t *liveThread) runnableShare() float64 {
	if t.sampled == 0 {
		return 0
	}
	return float64(t.runnable) / float64(t.sampled)
}

// Data is one live recording, read for the detectors.
type Data struct {
	rec    *recording.Recording
	dur    time.Duration
	numCPU int

	// Samples of each view.
	waits, wakes, offcpu, oncpu []*liveSample

	// locks indexes locks.json by address.
	locks map[uint64]*recording.LockStat

	threads map[int]*liveThread
	// population is the number of threads seen during the recording.
	population int
	// cpuTotalNS sums the on-CPU samples of every thread.
	cpuTotalNS int64
	// meanRunnable is the average number of the target's threads in state
	// R at the timeline's instants (running or waiting for a CPU), 0 when
	// there is no timeline.
	meanRunnable float64

	ev *eventIndex

	// Stacks expanded the views' samples (and counted the stacks cut).
	Stacks *core.ProfStacks
}

// buildLiveData reads every part of a live recording.
func buildLiveData(rec *recording.Recording) *Data {
	ld := &Data{
		rec:     rec,
		dur:     rec.Meta.Duration,
		numCPU:  rec.Meta.NumCPU,
		locks:   map[uint64]*recording.LockStat{},
		threads: map[int]*liveThread{},
	}
	ps := core.NewProfStacks()
	ld.Stacks = ps
	ld.waits = readLiveView(rec.Profile(recording.ViewFutexWait), ps)
	ld.wakes = readLiveView(rec.Profile(recording.ViewFutexWake), ps)
	ld.offcpu = readLiveView(rec.Profile(recording.ViewOffCPU), ps)
	ld.oncpu = readLiveView(rec.Profile(recording.ViewOnCPU), ps)
	for i := range rec.Locks {
		ld.locks[rec.Locks[i].Addr] = &rec.Locks[i]
	}
	ld.readTimeline()
	for _, s := range ld.oncpu {
		ns := value(s, 1)
		ld.cpuTotalNS += ns
		ld.thread(s.tid).cpuNS += ns
	}
	for _, s := range ld.waits {
		ld.thread(s.tid).futexNS += value(s, 1)
	}
	for _, s := range ld.offcpu {
		t := ld.thread(s.tid)
		t.offNS += value(s, 1)
		t.runqNS += runqOf(s)
	}
	ld.population = len(ld.threads)
	ld.ev = indexEvents(rec.Events)
	return ld
}

// thread returns the figures of tid, creating them for a thread the
// timeline missed (born and gone between two /proc samples).
func (ld *Data) thread(tid int) *liveThread {
	t := ld.threads[tid]
	if t == nil {
		t = &liveThread{tid: tid}
		ld.threads[tid] = t
	}
	return t
}

// isTarget reports whether tid is a thread of the target seen anywhere in
// the recording. Owner tids read beside a futex word that is not a glibc
// mutex are arbitrary numbers; this tells them apart.
func (ld *Data) isTarget(tid int) bool {
	_, ok := ld.threads[tid]
	return ok && tid > 0
}

func (ld *Data) readTimeline() {
	tl := ld.rec.Threads
	if tl == nil {
		return
	}
	last := tl.LastInstant()
	for _, u := range tl.Usage(0, last) {
		t := ld.thread(u.TID)
		t.comm = u.Comm
		t.user, t.sys = tl.Seconds(u.UTime), tl.Seconds(u.STime)
		t.vol, t.invol = u.Voluntary, u.Involuntary
	}
	for i := range tl.Threads {
		s := &tl.Threads[i]
		t := ld.thread(s.TID)
		if t.comm == "" {
			t.comm = s.Comm
		}
		t.states = s.States
		for k := 0; k < len(s.States); k++ {
			switch s.States[k] {
			case recording.NotSampled:
			case 'R':
				t.runnable++
				t.sampled++
			default:
				t.sampled++
			}
		}
	}
	// The mean counts the instants at which the process was sampled: a
	// process joined late (a JVM whose perf map took seconds to fetch on
	// a loaded machine) has no thread at the instants before, and those
	// are missing data, not instants with nothing runnable.
	covered := make([]bool, tl.Samples)
	for i := range tl.Threads {
		s := &tl.Threads[i]
		for k := 0; k < len(s.States); k++ {
			if j := s.First + k; j >= 0 && j < len(covered) && s.States[k] != recording.NotSampled {
				covered[j] = true
			}
		}
	}
	n := 0
	for _, c := range covered {
		if c {
			n++
		}
	}
	if n > 0 {
		total := 0
		for i, r := range tl.RunnableSeries() {
			if covered[i] {
				total += r
			}
		}
		ld.meanRunnable = float64(total) / float64(n)
	}
}

// readLiveView turns the samples of a live view into liveSamples.
func readLiveView(p *profile.Profile, ps *core.ProfStacks) []*liveSample {
	if p == nil {
		return nil
	}
	out := make([]*liveSample, 0, len(p.Sample))
	for _, s := range p.Sample {
		ls := &liveSample{values: s.Value}
		ls.frames = cutJunk(append([]recording.Frame(nil), ps.SampleFrames(p, s)...))
		for i := range ls.frames {
			// The collector files kernel frames under one "[kernel]"
			// mapping; pprof has no other way to mark them.
			if ls.frames[i].Module == kernelModule {
				ls.frames[i].Kernel = true
			}
		}
		ls.tid = numLabel(s, recording.LabelTID)
		ls.lockName = strLabel(s, recording.LabelLockName)
		ls.state = strLabel(s, recording.LabelState)
		if l := strLabel(s, recording.LabelLock); l != "" {
			ls.addr, _ = strconv.ParseUint(l, 0, 64)
		}
		out = append(out, ls)
	}
	return out
}

// cutJunk cuts a stack at its first junk frame: an address that lies in no
// mapped object ("0x11da0", no module). An unwinder that reads such a
// value as a return address has left the real stack, and every frame
// after it is noise.
func cutJunk(frames []recording.Frame) []recording.Frame {
	for i, f := range frames {
		if i > 0 && f.Module == "" && !f.Kernel && strings.HasPrefix(f.Func, "0x") {
			return frames[:i]
		}
	}
	return frames
}

func numLabel(s *profile.Sample, key string) int {
	if v := s.NumLabel[key]; len(v) > 0 {
		return int(v[0])
	}
	return 0
}

func strLabel(s *profile.Sample, key string) string {
	if v := s.Label[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// runqOf returns the run-queue time of an off-CPU sample: its third value,
// or for a recording that did not split it out, the whole off-CPU time of
// a thread that left its CPU runnable.
func runqOf(s *liveSample) int64 {
	if len(s.values) >= 3 {
		return max(s.values[2], 0)
	}
	if s.state == recording.StateRunnable {
		return value(s, 1)
	}
	return 0
}

// value returns value i of a sample, 0 when the view has fewer.
func value(s *liveSample, i int) int64 {
	if i < len(s.values) {
		return s.values[i]
	}
	return 0
}

// physical returns the index of the physical (not inlined) frame that
// frame i of a leaf-first stack was expanded from: inlined frames come
// before their physical frame.
func physical(frames []recording.Frame, i int) int {
	for i < len(frames)-1 && frames[i].Inlined {
		i++
	}
	return i
}

// sortedTIDs returns the keys of a thread set in order.
func sortedTIDs(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	sort.Ints(out)
	return out
}
