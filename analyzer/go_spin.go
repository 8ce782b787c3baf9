package analyzer

import (
	"fmt"
	"math"
	"sort"

	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// The Go spin detector: CPU samples concentrated in a busy-wait loop
// (atomic loads or compare-and-swaps, no park, no yield) with goroutines
// running or runnable there, or about to enter it, in the goroutine dump.

const (
	// spinMinCPUShare is the share of all CPU samples a busy-wait must
	// burn to be a finding. A spinning sample does no work at all, so the
	// threshold is one of waste, not of concentration: a tenth of the
	// process's CPU thrown away, the same tenth as minMeanWaiting.
	spinMinCPUShare = 0.10

	// spinMinLoopShare is the share of a function's CPU that must fall on
	// the lines where it executes atomic operations for the function to be
	// a busy-wait: a spin loop is little more than its load or
	// compare-and-swap line, whereas a work loop that also bumps an atomic
	// counter spends most of its time on the other lines.
	spinMinLoopShare = 0.5

	// minSpinners is how many goroutines must take part: with two or more,
	// at least one burns CPU waiting for another; one goroutine in a tight
	// atomic loop is merely a hot loop.
	minSpinners = 2
)

// spinFunc is the CPU and goroutine figures of one function with atomic
// operations.
type spinFunc struct {
	fn       string
	point    ProgramPoint
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

func detectGoSpin(a *output, g *goData) {
	funcs := map[string]*spinFunc{}
	for _, s := range g.cpu {
		if s.sc.class != classNone || s.key.fn == "(runtime)" {
			continue // mutex spinning, idle scheduler work: not a user busy-wait
		}
		sf := funcs[s.key.fn]
		if sf == nil {
			sf = &spinFunc{fn: s.key.fn, lineNS: map[int]int64{}, atomicAt: map[int]bool{}, callers: map[string]bool{}, states: map[string]int{}}
			funcs[s.key.fn] = sf
		}
		sf.cpuNS += s.value
		sf.lineNS[s.key.line] += s.value
		sf.yieldNS += s.yieldNS
		if s.atomicNS > 0 {
			sf.atomicAt[s.key.line] = true
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
		if float64(sf.spinNS) < spinMinCPUShare*float64(g.cpuTotal) || float64(sf.spinNS) < spinMinLoopShare*float64(sf.cpuNS) {
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
			a.res.Findings = append(a.res.Findings, f)
		}
	}
}

// spinCallers fills the immediate callers of each candidate from the CPU
// samples.
func (g *goData) spinCallers(cands []*spinFunc) {
	byFn := map[string]*spinFunc{}
	for _, sf := range cands {
		byFn[sf.fn] = sf
	}
	g.cpuWalk(func(frames []recording.Frame, _ int64) {
		pi := pointIndex(frames)
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
	return gr.sc.class == classNone && (gr.state == "running" || gr.state == "runnable" || gr.state == "preempted")
}

// spinGoroutines counts the dumped goroutines on CPU inside each
// candidate, or stopped in one of its callers (a dump stops goroutines at
// safe points, often right at the call into the loop).
func (g *goData) spinGoroutines(cands []*spinFunc) {
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
func (g *goData) dumpSpinners() []*spinFunc {
	funcs := map[string]*spinFunc{}
	for _, gr := range g.groups {
		if gr.pi < 0 || !onCPU(gr) || !hasAtomic(gr.frames, gr.pi) {
			continue
		}
		fn := gr.frames[gr.pi].Func
		sf := funcs[fn]
		if sf == nil {
			sf = &spinFunc{fn: fn, point: newPoint(gr.frames, gr.pi), states: map[string]int{}}
			funcs[fn] = sf
		}
		sf.running += gr.count
		sf.states[gr.state] += gr.count
	}
	var out []*spinFunc
	for _, sf := range funcs {
		if sf.running >= minConvoyParticipants {
			out = append(out, sf)
		}
	}
	return out
}

func (g *goData) judgeSpin(sf *spinFunc) (Finding, bool) {
	var ev []Evidence
	sources := 0
	cpuSpin := sf.spinNS > 0
	mean := 0.0
	if cpuSpin {
		sources++
		share := float64(sf.spinNS) / float64(g.cpuTotal)
		if g.duration > 0 {
			mean = float64(sf.spinNS) / float64(g.duration)
		}
		ev = append(ev, fact("go-cpu", EvGoSpinCPU, "spin_s", seconds(sf.spinNS), "share", share,
			"function_share", float64(sf.spinNS)/float64(sf.cpuNS), "cpus", mean, "dur_s", g.duration, "function", shortFunc(sf.fn)))
		ev = append(ev, fact("go-cpu", EvGoSpinYield, "yield_share", float64(sf.yieldNS)/float64(sf.cpuNS)))
	}
	counted := sf.running > 0
	n := sf.running
	if est := int(math.Ceil(mean)); est > n {
		n, counted = est, false
	}
	if n < minSpinners && (len(g.groups) > 0 || g.duration > 0) {
		return Finding{}, false
	}
	if sf.running > 0 {
		sources++
		ev = append(ev, fact("goroutines", EvGoSpinDump, "running", sf.running, "population", g.population,
			"parked", sf.parked, "callers", len(sf.callers), "function", shortFunc(sf.fn), "source", g.gorSource,
			"items", countItems(sf.states)))
	}
	f := Finding{
		Kind: KindSpinConvoy, Point: sf.point, Participants: n, Population: g.population,
		Unit: "goroutines", CPUSeconds: seconds(sf.spinNS),
	}
	// The goroutines in the loop that are not on a CPU sit runnable,
	// waiting for one: time lost as surely as a lock wait, and the part
	// a parking lock gives back to the holder. The dump counts them at one
	// instant, so the figure is an estimate over the profiled duration.
	if counted && g.duration > 0 {
		inLoop := float64(sf.running) * g.duration.Seconds()
		if wait := inLoop - f.CPUSeconds; wait > 0 {
			f.WaitSeconds = wait
			ev = append(ev, fact("goroutines", EvGoSpinRunnable, "wait_s", wait, "running", sf.running, "dur_s", g.duration, "cpu_s", f.CPUSeconds))
		}
	}
	who := participants(n, g.population, "goroutines", counted, 0)
	if !counted && mean > 0 {
		who = fmt.Sprintf("%d goroutines (at least, from %s CPUs busy on average)", n, units.Float(mean))
	}
	f.Headline = onePoint(who, "spin", "busy-wait in "+pointString(sf.point))
	f.Suggestion = suggestFor(remedyPark, sugg{goLang: true, whom: "goroutine", fn: shortFunc(sf.fn), cpus: g.numCPU, cpuS: f.CPUSeconds})
	f.Evidence = ev
	f.Confidence = confidenceOf(sources, !cpuSpin)
	finish(&f, g.duration, counted)
	return f, true
}
