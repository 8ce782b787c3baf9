package goprofile

import (
	"fmt"
	"math"
	"sort"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// spinFunc is the CPU and goroutine figures of one function with atomic
// operations.
type spinFunc struct {
	fn       string
	point    core.ProgramPoint
	topNS    int64
	cpuNS    int64           // all CPU at the function (as program point)
	lineNS   map[int]int64   // CPU per line
	atomicAt map[int]bool    // lines where atomic operations were sampled
	yieldNS  int64           // CPU in yields
	spinNS   int64           // CPU on the atomic lines
	callers  map[string]bool // immediate callers
	// dump figures: goroutines on CPU at the function or about to call it.
	running, parked int
	states          map[string]int
}

func detectGoSpin(a *core.Output, g *Data) {
	funcs := map[string]*spinFunc{}
	for _, s := range g.cpu {
		if s.sc.Class != core.ClassNone || s.key.Fn == "(runtime)" {
			continue // mutex spinning, idle scheduler work: not a user busy-wait
		}
		sf := funcs[s.key.Fn]
		if sf == nil {
			sf = &spinFunc{fn: s.key.Fn, lineNS: map[int]int64{}, atomicAt: map[int]bool{}, callers: map[string]bool{}, states: map[string]int{}}
			funcs[s.key.Fn] = sf
		}
		sf.cpuNS += s.value
		sf.lineNS[s.key.Line] += s.value
		sf.yieldNS += s.yieldNS
		if s.atomicNS > 0 {
			sf.atomicAt[s.key.Line] = true
		}
		if s.value > sf.topNS {
			sf.topNS, sf.point = s.value, s.point
		}
	}
	var cands []*spinFunc
	for _, sf := range funcs {
		for line := range sf.atomicAt {
			sf.spinNS += sf.lineNS[line]
		}
		if sf.spinNS == 0 || g.cpuTotal == 0 {
			continue
		}
		if float64(sf.spinNS) < core.SpinMinCPUShare*float64(g.cpuTotal) || float64(sf.spinNS) < core.SpinMinLoopShare*float64(sf.cpuNS) {
			continue
		}
		cands = append(cands, sf)
	}
	if len(cands) == 0 {
		cands = g.dumpSpinners()
	} else {
		g.spinCallers(cands)
		g.spinGoroutines(cands)
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].fn < cands[j].fn })
	for _, sf := range cands {
		if f, ok := g.judgeSpin(sf); ok {
			a.Res.Findings = append(a.Res.Findings, f)
		}
	}
}

// spinCallers fills the immediate callers of each candidate from the CPU
// samples.
func (g *Data) spinCallers(cands []*spinFunc) {
	byFn := map[string]*spinFunc{}
	for _, sf := range cands {
		byFn[sf.fn] = sf
	}
	g.cpuWalk(func(frames []recording.Frame, _ int64) {
		pi := core.PointIndex(frames)
		if pi < 0 || pi+1 >= len(frames) {
			return
		}
		if sf := byFn[frames[pi].Func]; sf != nil {
			sf.callers[frames[pi+1].Func] = true
		}
	})
}

// onCPU reports whether a dumped goroutine group is running or runnable
// (not parked).
func onCPU(gr *gGroup) bool {
	return gr.sc.Class == core.ClassNone && (gr.state == "running" || gr.state == "runnable" || gr.state == "preempted")
}

// spinGoroutines counts the dumped goroutines on CPU inside each
// candidate, or stopped in one of its callers (a dump stops goroutines at
// safe points, often right at the call into the loop).
func (g *Data) spinGoroutines(cands []*spinFunc) {
	for _, gr := range g.groups {
		if gr.pi < 0 {
			continue
		}
		for _, sf := range cands {
			in := gr.frames[gr.pi].Func == sf.fn || sf.callers[gr.frames[gr.pi].Func]
			if !in {
				continue
			}
			sf.states[gr.state] += gr.count
			if onCPU(gr) {
				sf.running += gr.count
			} else {
				sf.parked += gr.count
			}
		}
	}
}

// dumpSpinners finds busy-waits from a goroutine dump alone: a crowd of
// running or runnable goroutines stopped on an atomic operation at one
// function.
func (g *Data) dumpSpinners() []*spinFunc {
	funcs := map[string]*spinFunc{}
	for _, gr := range g.groups {
		if gr.pi < 0 || !onCPU(gr) || !core.HasAtomic(gr.frames, gr.pi) {
			continue
		}
		fn := gr.frames[gr.pi].Func
		sf := funcs[fn]
		if sf == nil {
			sf = &spinFunc{fn: fn, point: core.NewPoint(gr.frames, gr.pi), states: map[string]int{}}
			funcs[fn] = sf
		}
		sf.running += gr.count
		sf.states[gr.state] += gr.count
	}
	var out []*spinFunc
	for _, sf := range funcs {
		if sf.running >= core.MinConvoyParticipants {
			out = append(out, sf)
		}
	}
	return out
}

func (g *Data) judgeSpin(sf *spinFunc) (core.Finding, bool) {
	var ev []core.Evidence
	sources := 0
	cpuSpin := sf.spinNS > 0
	mean := 0.0
	if cpuSpin {
		sources++
		share := float64(sf.spinNS) / float64(g.cpuTotal)
		if g.duration > 0 {
			mean = float64(sf.spinNS) / float64(g.duration)
		}
		ev = append(ev, core.Fact("go-cpu", core.EvGoSpinCPU, "spin_s", core.Seconds(sf.spinNS), "share", share,
			"function_share", float64(sf.spinNS)/float64(sf.cpuNS), "cpus", mean, "dur_s", g.duration, "function", core.ShortFuncName(sf.fn)))
		ev = append(ev, core.Fact("go-cpu", core.EvGoSpinYield, "yield_share", float64(sf.yieldNS)/float64(sf.cpuNS)))
	}
	counted := sf.running > 0
	n := sf.running
	if est := int(math.Ceil(mean)); est > n {
		n, counted = est, false
	}
	if n < core.MinSpinners && (len(g.groups) > 0 || g.duration > 0) {
		return core.Finding{}, false
	}
	if sf.running > 0 {
		sources++
		ev = append(ev, core.Fact("goroutines", core.EvGoSpinDump, "running", sf.running, "population", g.population,
			"parked", sf.parked, "callers", len(sf.callers), "function", core.ShortFuncName(sf.fn), "source", g.gorSource,
			"items", countItems(sf.states)))
	}
	f := core.Verdict{
		Kind: core.KindSpinConvoy, Point: sf.point, Participants: n, Population: g.population,
		Unit: "goroutines", CPUSeconds: core.Seconds(sf.spinNS), Counted: counted, Duration: g.duration,
	}
	// The goroutines in the loop that are not on a CPU sit runnable,
	// waiting for one: time lost as surely as a lock wait, and the part
	// a parking lock gives back to the holder. The dump counts them at one
	// instant, so the figure is an estimate over the profiled duration.
	if counted && g.duration > 0 {
		inLoop := float64(sf.running) * g.duration.Seconds()
		if wait := inLoop - f.CPUSeconds; wait > 0 {
			f.WaitSeconds = wait
			ev = append(ev, core.Fact("goroutines", core.EvGoSpinRunnable, "wait_s", wait, "running", sf.running, "dur_s", g.duration, "cpu_s", f.CPUSeconds))
		}
	}
	who := core.Participants(n, g.population, "goroutines", counted, 0)
	if !counted && mean > 0 {
		who = fmt.Sprintf("%d goroutines (at least, from %s CPUs busy on average)", n, units.Float(mean))
	}
	f.Headline = core.OnePoint(who, "spin", "busy-wait in "+core.PointString(sf.point))
	f.Remedy, f.Sugg = core.RemedyPark, core.Sugg{GoLang: true, Whom: "goroutine", Fn: core.ShortFuncName(sf.fn), CPUs: g.numCPU, CPUSeconds: f.CPUSeconds}
	f.Evidence = ev
	f.Confidence = core.ConfidenceOf(sources, !cpuSpin)
	return core.Judge(f), true
}
