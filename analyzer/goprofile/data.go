package goprofile

import (
	"sort"
	"strings"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/recording"
	"github.com/google/pprof/profile"
)

// This file folds a recording's Go runtime profiles and goroutine dumps
// into sites (one per program point and wait class) and goroutine groups,
// once per analysis, for the Go detectors to share.

// callerDepth is how many frames above a program point count as its
// callers when pairing a Lock site with an Unlock site. Two frames reach
// the method that calls a small locking helper and that method's caller;
// deeper frames (worker loops, main) are shared by everything and would
// pair unrelated locks.
const callerDepth = 2

// site aggregates the samples of one profile that share a program point and
// a wait class.
type site struct {
	key core.PointKey
	sc  core.StackClass
	// count is contentions (block, mutex) or samples (CPU); value is delay
	// or CPU time in nanoseconds.
	count, value int64
	// stacks counts distinct stacks folded into the site.
	stacks int
	// point is the program point with the heaviest sample's stack.
	point    core.ProgramPoint
	topValue int64
	// callers holds the enclosing functions of the frames up to
	// callerDepth above the point.
	callers map[string]bool
	// user is the first frame outside machinery of a runtime-lock stack
	// (the user code that reached the runtime lock), "" when none.
	user string
	// addrNS holds, when the samples name their lock (the uprobes'
	// go-lockwaits view), the delay per lock address.
	addrNS map[string]int64
	// CPU sites only: CPU in samples that execute an atomic operation at
	// the point, and in samples that yield.
	atomicNS, yieldNS int64

	ids map[uint64]bool
}

// siteKey tells sites apart.
type siteKey struct {
	core.PointKey
	class  core.WaitClass
	flavor core.LockFlavor
}

// gGroup is a set of goroutines with one stack and state.
type gGroup struct {
	count int
	// state is the dump's wait reason, or one inferred from the stack when
	// the dump has none (stateInferred).
	state  string
	frames []recording.Frame
	pi     int
	sc     core.StackClass
	key    core.PointKey
	// lockAddr is the lock the group waits on, from the arguments of its
	// lock slow path in a debug=2 dump; "" when unknown.
	lockAddr string
	// args holds each frame's arguments as a debug=2 dump prints them
	// ("0xc000010000, 0x1"), nil for other inputs.
	args []string
}

// Data is the Go side of one recording, folded for the detectors.
type Data struct {
	// duration is the profiled wall time, 0 when unknown.
	duration time.Duration

	// blockSrc is the view the block sites come from: the runtime's block
	// profile, or, without one, the goroutines' lock waits the collector
	// measured with uprobes (ViewGoLockWaits), whose samples mean the same
	// (where goroutines waited for a lock, and how long); probed then
	// names the functions the uprobes were on.
	blockSrc recording.View
	probed   string

	// Presence of each profile (possibly empty) and whether it has samples.
	blockGiven, mutexGiven, cpuGiven bool
	blockSamples, mutexSamples       bool

	// Sites, heaviest first.
	block, mutex, cpu []*site
	// cpuTotal is the CPU profile's total CPU time; cpuPeriod its sampling
	// period in nanoseconds.
	cpuTotal, cpuPeriod int64
	cpuProf             *profile.Profile
	cpuIdx              int
	Stacks              *core.ProfStacks
	// ioProf is the probes' view of the I/O calls that slept (ViewIO),
	// in a live recording; nil otherwise.
	ioProf *profile.Profile

	// Goroutines: groups from the chosen dump, the population, and where
	// both came from.
	groups        []*gGroup
	population    int
	gorSource     string
	stateInferred bool
	dumps         int

	// numCPU is the target machine's CPU count, 0 when unknown.
	numCPU int
}

// buildGoData folds the Go views and dumps of rec. It returns nil when the
// recording holds no Go data.
func buildGoData(rec *recording.Recording) *Data {
	g := &Data{Stacks: core.NewProfStacks()}
	any := false
	g.blockSrc = recording.ViewGoBlock
	p := rec.Profile(recording.ViewGoBlock)
	if p == nil {
		if p = rec.Profile(recording.ViewGoLockWaits); p != nil {
			g.blockSrc = recording.ViewGoLockWaits
			if gd := rec.Meta.GoData; gd != nil && gd.Uprobes != nil {
				g.probed = strings.Join(gd.Uprobes.Functions, ", ")
			}
		}
	}
	if p != nil {
		any, g.blockGiven, g.blockSamples = true, true, len(p.Sample) > 0
		g.block = g.contentionSites(p)
	}
	if p := rec.Profile(recording.ViewGoMutex); p != nil {
		any, g.mutexGiven, g.mutexSamples = true, true, len(p.Sample) > 0
		g.mutex = g.contentionSites(p)
	}
	if p := rec.Profile(recording.ViewGoCPU); p != nil {
		any, g.cpuGiven = true, true
		g.cpu = g.cpuSites(p)
	}
	if g.goroutines(rec) {
		any = true
	}
	if !any {
		return nil
	}
	g.ioProf = rec.Profile(recording.ViewIO)
	g.duration = profiledDuration(rec)
	if g.blockSrc == recording.ViewGoLockWaits {
		// Uprobes taken off early (they cost the target too much) cover
		// only part of the recording: the waits are averaged over that.
		if p := rec.Profile(recording.ViewGoLockWaits); p.DurationNanos > 0 && time.Duration(p.DurationNanos) < g.duration {
			g.duration = time.Duration(p.DurationNanos)
		}
	}
	g.numCPU = rec.Meta.NumCPU
	return g
}

// profiledDuration returns the wall time the profiles cover: the
// recording's duration, else the longest profile duration (CPU profiles
// and delta profiles carry one), else 0.
func profiledDuration(rec *recording.Recording) time.Duration {
	if rec.Meta.Duration > 0 {
		return rec.Meta.Duration
	}
	var best time.Duration
	for _, v := range recording.GoViews {
		if p := rec.Profile(v); p != nil && time.Duration(p.DurationNanos) > best {
			best = time.Duration(p.DurationNanos)
		}
	}
	return best
}

// contentionSites folds a mutex or block profile (values contentions,
// delay) into sites.
func (g *Data) contentionSites(p *profile.Profile) []*site {
	ci := core.ValueIndex(p, "contentions", "")
	di := core.ValueIndex(p, "delay", "")
	if di < 0 && len(p.SampleType) >= 2 {
		ci, di = 0, 1
	}
	if di < 0 {
		return nil
	}
	sites := map[siteKey]*site{}
	for _, s := range p.Sample {
		frames := g.Stacks.SampleFrames(p, s)
		pi := core.PointIndex(frames)
		sc := core.ClassifyFrames(frames, pi)
		var count int64
		if ci >= 0 {
			count = s.Value[ci]
		}
		st := g.addSample(sites, s, frames, pi, sc, count, s.Value[di])
		if a := s.Label[recording.LabelLock]; len(a) == 1 {
			// The uprobes' waits name their lock (ViewGoLockWaits).
			if st.addrNS == nil {
				st.addrNS = map[string]int64{}
			}
			st.addrNS[a[0]] += s.Value[di]
		}
	}
	return sortSites(sites)
}

// runtimePoint returns the point of a runtime-lock stack: the first frame
// above the unlock machinery (runtime.selunlock for a channel lock), -1
// when the stack holds nothing else (runtime._LostContendedRuntimeLock).
func runtimePoint(frames []recording.Frame) int {
	for i, f := range frames {
		if _, ok := core.UnlockFuncs[f.Func]; !ok {
			return i
		}
	}
	return -1
}

// addSample folds one sample into sites.
func (g *Data) addSample(sites map[siteKey]*site, s *profile.Sample, frames []recording.Frame, pi int, sc core.StackClass, count, value int64) *site {
	user := ""
	if sc.Class == core.ClassRuntimeLock {
		if pi >= 0 {
			user = frames[pi].Func
		}
		pi = runtimePoint(frames)
	}
	k := siteKey{PointKey: core.KeyOf(frames, pi), class: sc.Class, flavor: sc.Flavor}
	st := sites[k]
	if st == nil {
		st = &site{key: k.PointKey, sc: sc, callers: map[string]bool{}, ids: map[uint64]bool{}, user: user}
		sites[k] = st
	}
	st.count += count
	st.value += value
	if id := core.StackID(s); !st.ids[id] {
		st.ids[id] = true
		st.stacks++
		if pi >= 0 {
			for i := pi + 1; i < len(frames) && i <= pi+callerDepth; i++ {
				st.callers[core.EnclosingFunc(frames[i].Func)] = true
			}
		}
	}
	if value > st.topValue || st.point.Stack == nil {
		st.topValue = value
		st.point = core.NewPoint(frames, pi)
		if user != "" {
			st.user = user
		}
	}
	return st
}

func sortSites(m map[siteKey]*site) []*site {
	out := make([]*site, 0, len(m))
	for _, s := range m {
		s.ids = nil
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].value != out[j].value {
			return out[i].value > out[j].value
		}
		return out[i].key.String() < out[j].key.String()
	})
	return out
}

// cpuSites folds a CPU profile into sites and remembers it for
// critical-section walks.
func (g *Data) cpuSites(p *profile.Profile) []*site {
	vi := core.ValueIndex(p, "cpu", "nanoseconds")
	if vi < 0 {
		vi = len(p.SampleType) - 1
	}
	if vi < 0 {
		return nil
	}
	g.cpuProf, g.cpuIdx, g.cpuPeriod = p, vi, p.Period
	if p.PeriodType == nil || p.PeriodType.Unit != "nanoseconds" || g.cpuPeriod <= 0 {
		g.cpuPeriod = int64(10 * time.Millisecond) // Go's default 100 Hz
	}
	sites := map[siteKey]*site{}
	for _, s := range p.Sample {
		frames := g.Stacks.SampleFrames(p, s)
		pi := core.PointIndex(frames)
		sc := core.ClassifyFrames(frames, pi)
		v := s.Value[vi]
		g.cpuTotal += v
		st := g.addSample(sites, s, frames, pi, sc, 1, v)
		if core.HasAtomic(frames, pi) {
			st.atomicNS += v
		}
		if core.HasYield(frames, pi) {
			st.yieldNS += v
		}
	}
	return sortSites(sites)
}

// goroutines picks the goroutine data to use: the latest debug=2 dump (it
// has wait states), else the protobuf goroutine profile (full stacks, so
// waits can be told from frames), else the latest debug=1 dump (the
// runtime's own frames are left out of it, so a goroutine parked in select
// or a channel receive looks like one running user code). It reports
// whether there was any.
func (g *Data) goroutines(rec *recording.Recording) bool {
	g.dumps = len(rec.Goroutines)
	var debug2, debug1 *goprof.Dump
	for _, d := range rec.Goroutines {
		switch {
		case d == nil:
		case d.Kind == goprof.KindGoroutineDump:
			debug2 = d
		default:
			debug1 = d
		}
	}
	if debug2 != nil {
		g.gorSource = "goroutine dump (debug=2)"
		g.fromDump(debug2, false)
		return true
	}
	if p := rec.Profile(recording.ViewGoGoroutine); p != nil {
		g.gorSource = "goroutine profile"
		g.stateInferred = true
		vi := core.ValueIndex(p, "goroutine", "")
		if vi < 0 {
			vi = 0
		}
		for _, s := range p.Sample {
			if vi >= len(s.Value) {
				continue
			}
			frames := append([]recording.Frame(nil), g.Stacks.SampleFrames(p, s)...)
			g.addGroup(int(s.Value[vi]), "", frames, false, "")
			g.population += int(s.Value[vi])
		}
		return true
	}
	if debug1 != nil {
		g.gorSource = "goroutine dump (debug=1)"
		g.stateInferred = true
		g.fromDump(debug1, true)
		return true
	}
	return false
}

// fromDump adds a dump's groups; elided says the runtime's leading frames
// are left out (debug=1).
func (g *Data) fromDump(d *goprof.Dump, elided bool) {
	total := 0
	for _, gr := range d.Groups {
		g.addGroup(gr.Count, gr.State, g.Stacks.DumpFrames(gr), elided, goprof.LockAddr(gr.Frames))
		if !elided {
			last := g.groups[len(g.groups)-1]
			last.args = make([]string, len(last.frames))
			for i, f := range gr.Frames[:len(last.frames)] {
				last.args[i] = f.Args
			}
		}
		total += gr.Count
	}
	g.population = max(d.Total, total)
}

func (g *Data) addGroup(count int, state string, frames []recording.Frame, elided bool, lockAddr string) {
	pi := core.PointIndex(frames)
	sc := core.ClassifyGoroutine(state, frames, pi)
	if state == "" {
		state = inferState(sc, frames, elided)
	}
	g.groups = append(g.groups, &gGroup{count: count, state: state, frames: frames, pi: pi, sc: sc, key: core.KeyOf(frames, pi), lockAddr: lockAddr})
}

// stateUnknown is the inferred state of a goroutine whose stack cannot
// tell parked from running (debug=1 dumps leave the runtime's frames out).
const stateUnknown = "unknown"

// inferState names the state of a goroutine whose dump gave none, from its
// classification and leaf frame, with the runtime's wait-reason names.
func inferState(sc core.StackClass, frames []recording.Frame, elided bool) string {
	switch sc.Class {
	case core.ClassLock:
		switch sc.Flavor {
		case core.FlavorRWWrite:
			return "sync.RWMutex.Lock"
		case core.FlavorRWRead:
			return "sync.RWMutex.RLock"
		}
		return "sync.Mutex.Lock"
	case core.ClassIdle, core.ClassOtherWait:
		if s, ok := machineryStates[sc.Machinery]; ok {
			return s
		}
		return "waiting"
	case core.ClassRuntimeWait:
		return "semacquire"
	}
	if len(frames) == 0 {
		return stateUnknown
	}
	switch frames[0].Func {
	case "runtime.gopark", "runtime.goparkunlock":
		return "waiting"
	case "runtime.asyncPreempt", "runtime.asyncPreempt2":
		return "runnable"
	}
	if elided && !core.IsAtomicFrame(frames[0]) {
		return stateUnknown
	}
	return "running"
}

// machineryStates maps idle machinery frames to the runtime's wait reason.
var machineryStates = map[string]string{
	"runtime.selectgo":               "select",
	"runtime.block":                  "select (no cases)",
	"runtime.chanrecv":               "chan receive",
	"runtime.chanrecv1":              "chan receive",
	"runtime.chanrecv2":              "chan receive",
	"runtime.chansend":               "chan send",
	"runtime.chansend1":              "chan send",
	"internal/poll.runtime_pollWait": "IO wait",
	"internal/poll.(*pollDesc).wait": "IO wait",
	"runtime.netpollblock":           "IO wait",
	"sync.(*Cond).Wait":              "sync.Cond.Wait",
	"sync.runtime_notifyListWait":    "sync.Cond.Wait",
	"sync.(*WaitGroup).Wait":         "sync.WaitGroup.Wait",
	"time.Sleep":                     "sleep",
	"runtime.timeSleep":              "sleep",
}

// active returns how many dumped goroutines are not idle (working,
// runnable, or waiting for a lock), 0 without a dump.
func (g *Data) active() int {
	n := 0
	for _, gr := range g.groups {
		switch gr.sc.Class {
		case core.ClassIdle, core.ClassRuntimeWait, core.ClassOtherWait:
		default:
			n += gr.count
		}
	}
	return n
}

// meanWaiting is the average number of goroutines waiting, by Little's
// law: total wait divided by wall time. 0 when the duration is unknown.
func (g *Data) meanWaiting(waitNS int64) float64 {
	if g.duration <= 0 {
		return 0
	}
	return float64(waitNS) / float64(g.duration)
}

// ioWalk calls fn for every I/O sample of the probes that slept, with its
// frames (reused between calls), calls and time asleep.
func (g *Data) ioWalk(fn func(frames []recording.Frame, calls, ns int64)) {
	if g.ioProf == nil {
		return
	}
	for _, s := range g.ioProf.Sample {
		if len(s.Value) < 2 || s.Value[1] <= 0 {
			continue
		}
		fn(g.Stacks.SampleFrames(g.ioProf, s), s.Value[0], s.Value[1])
	}
}

// cpuWalk calls fn for every CPU sample with its frames (reused between
// calls) and CPU nanoseconds.
func (g *Data) cpuWalk(fn func(frames []recording.Frame, ns int64)) {
	if g.cpuProf == nil {
		return
	}
	for _, s := range g.cpuProf.Sample {
		fn(g.Stacks.SampleFrames(g.cpuProf, s), s.Value[g.cpuIdx])
	}
}
