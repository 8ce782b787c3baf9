package collector

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// goProbes is the state of a session's Go lock probes (the gosync
// family): whether they attach to the Go processes that join, the
// processes they are attached to, and what Meta.GoData.Uprobes says.
type goProbes struct {
	mu       sync.Mutex
	on       bool
	attached map[uint32]bool
	info     recording.GoUprobes
	noted    bool
	// since is when the first probes were attached and until when they
	// were taken off (0 while attached), as session offsets.
	since, until time.Duration
}

// The Go lock probes cost the target's goroutines, not contend: each
// contended acquisition runs the entry probe and one on a RET, which the
// kernel single-steps. make bench measures the pair at +17 µs of CPU per
// contended acquisition (gomutex row, this kind of VM; the RET is most of
// it). A program that contends tens of thousands of times a second would
// lose a large part of a CPU to them, so they are taken off once their
// estimated cost passes a budget, and the recording says so.
const (
	// goProbeHitCost is the measured cost of one probed acquisition.
	goProbeHitCost = 17 * time.Microsecond
	// goProbeBudget is the share of one CPU the probes may cost the target:
	// 2 %, about 1,200 contended acquisitions a second. A convoy worth
	// naming is seen well within the first second at any rate above it
	// (the Go stripe fixture: about 27,000 waits a second).
	goProbeBudget = 0.02
	// goProbeJudgeAfter is how long the rate is averaged before it is
	// judged, so that one burst of contention does not take them off.
	goProbeJudgeAfter = time.Second
)

// checkGoProbeCost takes the Go lock probes off once they have been
// attached for goProbeJudgeAfter and their estimated cost to the target
// (hits × goProbeHitCost over the time attached) passes goProbeBudget.
// hits is the kernel's count of probed slow-path entries so far.
func (s *Session) checkGoProbeCost(hits uint64, at time.Duration) {
	g := &s.goUp
	g.mu.Lock()
	span := at - g.since
	over := len(g.attached) > 0 && g.until == 0 && span >= goProbeJudgeAfter &&
		float64(hits)*goProbeHitCost.Seconds() > goProbeBudget*span.Seconds()
	if over {
		g.until = at
		rate := float64(hits) / span.Seconds()
		g.info.Detached = fmt.Sprintf("taken off after %s: %s contended acquisitions a second cost the target about %s of a CPU in probe hits (%s each), over the %s budget; the Go lock waits cover those %s only",
			units.Seconds(span.Seconds()), units.Rate(rate), units.Percent(rate*goProbeHitCost.Seconds()), units.Seconds(goProbeHitCost.Seconds()), units.Percent(goProbeBudget), units.Seconds(span.Seconds()))
	}
	note := g.info.Detached
	g.mu.Unlock()
	if !over {
		return
	}
	if err := s.tr.detachGo(); err != nil {
		s.addWarning(err.Error())
	}
	note = "Go lock probes " + note
	s.addWarning(note)
	if s.opts.OnNote != nil {
		s.opts.OnNote(note)
	}
}

// cover returns how much of the session interval [from, to) the Go lock
// probes were attached for.
func (g *goProbes) cover(from, to time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	end := to
	if g.until > 0 {
		end = min(end, g.until)
	}
	return max(end-max(from, g.since), 0)
}

// active reports whether the probes are attached to some process: the
// recording then has the go-lockwaits view.
func (g *goProbes) active() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.attached) > 0
}

// uprobes returns a copy of what the probes were placed on, nil when
// they were never tried.
func (g *goProbes) uprobes() *recording.GoUprobes {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.on && g.info.Why == "" {
		return nil
	}
	u := g.info
	u.Functions = slices.Clone(u.Functions)
	u.Missing = slices.Clone(u.Missing)
	return &u
}

// startGoProbes decides, once the Go runtime data's source is known,
// whether the goroutines' lock waits are measured with uprobes: for a Go
// target without a pprof endpoint. It attaches them to every Go process
// recorded now; join attaches them to those that join later.
func (s *Session) startGoProbes() {
	if s.goSrc.endpoint != "" || s.meta.GoVersion == "" {
		return
	}
	g := &s.goUp
	g.mu.Lock()
	switch {
	case s.opts.NoProbes:
		g.info.Why = "no eBPF probes"
	case !s.cfg.probes[ProbeGoSync]:
		g.info.Why = "the " + ProbeGoSync + " probe family was not selected (--probes)"
	default:
		g.on = true
	}
	on := g.on
	g.mu.Unlock()
	if !on {
		return
	}
	s.mu.Lock()
	var goPIDs []uint32
	for pid, p := range s.procs {
		if p.alive && p.info.goVersion != "" {
			goPIDs = append(goPIDs, pid)
		}
	}
	s.mu.Unlock()
	slices.Sort(goPIDs)
	for _, pid := range goPIDs {
		s.attachGoProbes(pid)
	}
}

// attachGoProbes places the Go lock probes in process pid's executable,
// once per process; a failure is a warning, never the end of the
// recording: the recording then says which Go data it lacks.
func (s *Session) attachGoProbes(pid uint32) {
	g := &s.goUp
	g.mu.Lock()
	if !g.on || g.attached[pid] || g.until > 0 {
		g.mu.Unlock()
		return
	}
	if g.attached == nil {
		g.attached = map[uint32]bool{}
		g.since = s.elapsed()
	}
	g.attached[pid] = true
	g.mu.Unlock()

	exe := procPath(s.opts.ProcRoot, strconv.Itoa(int(pid)), "exe")
	found, err := findGoFuncs(exe)
	if err == nil {
		err = s.tr.attachGo(int(pid), exe, found.funcs)
	}
	g.mu.Lock()
	if err != nil {
		delete(g.attached, pid)
		if len(g.info.Functions) == 0 && g.info.Why == "" {
			g.info.Why = fmt.Sprintf("pid %d: %v", pid, err)
		}
		if found != nil {
			g.info.Missing = appendNew(g.info.Missing, found.missing...)
		}
		g.mu.Unlock()
		s.addWarning(fmt.Sprintf("Go lock waits not measured in pid %d: %v", pid, err))
		return
	}
	for _, f := range found.funcs {
		g.info.Functions = appendNew(g.info.Functions, f.Name)
	}
	g.info.Missing = appendNew(g.info.Missing, found.missing...)
	g.info.Table, g.info.Why = found.table, ""
	first := !g.noted
	g.noted = true
	g.mu.Unlock()
	if first {
		note := goProbesNote(found)
		s.addWarning(note)
		if s.opts.OnNote != nil {
			s.opts.OnNote(note)
		}
	}
}

// goProbesNote says how the Go lock waits are measured, for Meta.Warnings
// and stderr.
func goProbesNote(found *goFuncsFound) string {
	names := make([]string, len(found.funcs))
	for i, f := range found.funcs {
		names[i] = f.Name
	}
	note := fmt.Sprintf("Go lock waits measured with uprobes on %s (found in the executable's %s), since no pprof endpoint gives the runtime's profiles", strings.Join(names, ", "), found.table)
	if len(found.missing) > 0 {
		note += "; not measured: " + strings.Join(found.missing, "; ")
	}
	return note
}

// appendNew appends the values of vs not already in list.
func appendNew(list []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}
