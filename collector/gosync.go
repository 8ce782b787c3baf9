package collector

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

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
	// plans holds what was placed in each process attached, to put it
	// back after a pause.
	plans map[uint32]goPlan
	// windows are the closed spans the probes were attached for, as
	// session offsets; from is when the open one began (while not
	// paused), fromHits the hit count (ev_gosync) then.
	windows  []span
	from     time.Duration
	fromHits uint64
	// paused: taken off past the budget, until resumeAt; pauses counts
	// the pauses.
	paused   bool
	resumeAt time.Duration
	pauses   int
	// hitCost is the measured cost of one counted probe hit (ev_gosync)
	// of the probes attached: goParkWakeHitCost or goEntryReturnHitCost.
	hitCost time.Duration
	// noBudget keeps the probes attached past goProbeBudget
	// (goProbesEnv).
	noBudget bool
}

// goAttach is what attachGo places in one Go process.
type goAttach struct {
	// parkWake selects the park/wake probes: ct_gosync_park at park's
	// entry, ct_gosync_wake at wake's, with rets in ct_gosync_callers.
	// Otherwise the entry/return probes on funcs.
	parkWake   bool
	park, wake goFunc
	rets       []goRet
	funcs      []goFunc
}

// goPlan is what the Go lock probes place in one process: attachGo's
// arguments.
type goPlan struct {
	exe string
	a   goAttach
}

// goRet is a return address in a lock wrapper (goCaller) where the
// process maps it, and the kind of lock the wrapper waits for.
type goRet struct {
	Addr uint64
	Kind uint32
}

// goProbesEnv tunes the Go lock probes for make bench, a comma-separated
// list: "entry-return" places the single-stepped RET probes instead of
// the park/wake ones, "no-budget" keeps the probes attached whatever
// they cost (goProbeBudget), so that a benchmark measures them and not
// the budget. Unset, the park/wake probes are placed, falling back to
// entry/return for a binary whose runtime lacks what park/wake needs.
const goProbesEnv = "CONTEND_GO_PROBES"

// goProbesWant reports whether goProbesEnv lists word.
func goProbesWant(word string) bool {
	return slices.Contains(strings.Split(os.Getenv(goProbesEnv), ","), word)
}

// The Go lock probes cost the target's goroutines, not contend: a probe
// hit runs in the goroutine's thread. The park/wake probes hit twice per
// parked acquisition (park and wake, both on an instruction the kernel
// emulates) and once per blocking channel operation (wake); the
// entry/return probes once at the slow path's entry and once on a RET,
// which the kernel single-steps. ev_gosync counts the hits of the
// park/wake probes, the entries of the entry/return ones. The probes are
// taken off once their estimated cost passes a budget, and the recording
// says so. Figures: docs/cost.md (gomutex rows of make bench, this kind
// of VM, where the trap of any uprobe costs microseconds).
const (
	// goParkWakeHitCost is the cost of one park/wake probe hit, two per
	// parked acquisition, on the VM of docs/cost.md's gomutex rows.
	goParkWakeHitCost = 3400 * time.Nanosecond
	// goEntryReturnHitCost is the measured cost of one entry/return
	// pair, per contended acquisition.
	goEntryReturnHitCost = 17 * time.Microsecond
	// goProbeBudget is the share of one CPU the probes may cost the
	// target: 2 %, about 2,900 parked acquisitions a second with the
	// park/wake probes, 1,200 with the entry/return ones. A convoy worth
	// naming is seen well within the first second at any rate above it
	// (the Go stripe fixture: about 6,000 parked acquisitions a second).
	goProbeBudget = 0.02
	// goProbeJudgeAfter is how long the rate is averaged before it is
	// judged, so that one burst of contention does not take them off.
	goProbeJudgeAfter = time.Second
)

// goProbeMaxPause bounds a pause of the Go lock probes: past it they are
// put back whatever they cost, for goProbeJudgeAfter, so that a program
// whose contention changes is measured again within minutes.
const goProbeMaxPause = 5 * time.Minute

// checkGoProbeCost pauses the Go lock probes once they have been attached
// for goProbeJudgeAfter and their estimated cost to the target (hits ×
// the probes' hit cost over the time attached) passes goProbeBudget, and
// puts them back after a pause that brings their average cost over the
// window and the pause down to the budget (at most goProbeMaxPause).
// hits is the kernel's count of probe hits so far (ev_gosync).
func (s *Session) checkGoProbeCost(hits uint64, at time.Duration) {
	g := &s.goUp
	g.mu.Lock()
	var resume []uint32
	var note string
	pause := false
	switch {
	case g.paused:
		if at < g.resumeAt {
			break
		}
		g.paused = false
		g.from, g.fromHits = at, hits
		for pid := range g.plans {
			resume = append(resume, pid)
		}
		slices.Sort(resume)
	case len(g.plans) > 0 && !g.noBudget && at-g.from >= goProbeJudgeAfter:
		on := at - g.from
		share := float64(hits-g.fromHits) * g.hitCost.Seconds() / on.Seconds()
		if share <= goProbeBudget {
			break
		}
		pause = true
		g.paused = true
		g.windows = append(g.windows, span{uint64(g.from), uint64(at)})
		wait := min(time.Duration(float64(on)*(share/goProbeBudget-1)), goProbeMaxPause)
		g.resumeAt = at + max(wait, goProbeJudgeAfter)
		g.pauses++
		if g.pauses == 1 {
			rate := float64(hits-g.fromHits) / on.Seconds()
			g.info.Detached = fmt.Sprintf("taken off after %s: %s probe hits a second cost the target about %s of a CPU (%s each), over the %s budget; put back for %s after each pause that brings their average within it (the first: %s), so the Go lock waits cover part of the recording, the go-lockwaits view's duration",
				units.Seconds(on.Seconds()), units.Rate(rate), units.Percent(share), units.Seconds(g.hitCost.Seconds()), units.Percent(goProbeBudget), units.Seconds(goProbeJudgeAfter.Seconds()), units.Seconds((g.resumeAt - at).Seconds()))
			note = "Go lock probes " + g.info.Detached
		}
	}
	plans := maps.Clone(g.plans)
	g.mu.Unlock()
	if pause {
		if err := s.tr.detachGo(); err != nil {
			s.addWarning(err.Error())
		}
	}
	if note != "" {
		s.addWarning(note)
		if s.opts.OnNote != nil {
			s.opts.OnNote(note)
		}
	}
	for _, pid := range resume {
		p := plans[pid]
		if err := s.tr.attachGo(int(pid), p.exe, p.a); err != nil {
			g.mu.Lock()
			delete(g.plans, pid)
			g.mu.Unlock()
			s.addWarning(fmt.Sprintf("Go lock waits no longer measured in pid %d: %v", pid, err))
		}
	}
}

// cover returns how much of the session interval [from, to) the Go lock
// probes were attached for.
func (g *goProbes) cover(from, to time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	ws := g.windows
	if len(g.attached) > 0 && !g.paused {
		ws = append(slices.Clone(ws), span{uint64(g.from), uint64(to)})
	}
	var d time.Duration
	for _, w := range ws {
		d += max(min(to, time.Duration(w.hi))-max(from, time.Duration(w.lo)), 0)
	}
	return d
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
	if s.goSrc.endpoint != "" || s.run.meta.GoVersion == "" {
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
		g.noBudget = goProbesWant("no-budget")
	}
	on := g.on
	g.mu.Unlock()
	if !on {
		return
	}
	s.run.mu.Lock()
	var goPIDs []uint32
	for pid, p := range s.run.procs {
		if p.alive && p.info.goVersion != "" {
			goPIDs = append(goPIDs, pid)
		}
	}
	s.run.mu.Unlock()
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
	if !g.on || g.attached[pid] {
		g.mu.Unlock()
		return
	}
	if g.attached == nil {
		g.attached = map[uint32]bool{}
		g.plans = map[uint32]goPlan{}
	}
	g.attached[pid] = true
	paused := g.paused
	g.mu.Unlock()

	exe := procPath(s.opts.ProcRoot, strconv.Itoa(int(pid)), "exe")
	found, err := findGoFuncs(exe)
	var a goAttach
	if err == nil {
		a, err = s.goAttachFor(pid, exe, found)
	}
	if err == nil && !paused {
		err = s.tr.attachGo(int(pid), exe, a)
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
	for _, f := range a.probed() {
		g.info.Functions = appendNew(g.info.Functions, f)
	}
	if a.parkWake {
		g.hitCost = max(g.hitCost, goParkWakeHitCost)
	} else {
		g.hitCost = max(g.hitCost, goEntryReturnHitCost)
		g.info.Missing = appendNew(g.info.Missing, found.missing...)
	}
	g.info.Table, g.info.Why = found.table, ""
	if len(g.plans) == 0 && !paused {
		// The first window opens with the first probes placed.
		g.from = s.elapsed()
	}
	g.plans[pid] = goPlan{exe: exe, a: a}
	// Paused while these probes were placed: the pause's detach ran
	// before them, so they come off now, to be put back with the rest.
	stray := !paused && g.paused
	first := !g.noted
	g.noted = true
	g.mu.Unlock()
	if stray {
		if err := s.tr.detachGo(); err != nil {
			s.addWarning(err.Error())
		}
	}
	if first {
		note := goProbesNote(found, a)
		s.addWarning(note)
		if s.opts.OnNote != nil {
			s.opts.OnNote(note)
		}
	}
}

// goAttachFor decides how the Go lock waits of process pid, running the
// executable exe whose functions are found, are measured: with the
// park/wake probes unless goProbesEnv asks for the entry/return ones or
// the runtime lacks what they need. For the park/wake probes it maps the
// lock wrappers' return addresses into the process (a position
// independent executable is mapped anywhere).
func (s *Session) goAttachFor(pid uint32, exe string, found *goFuncsFound) (goAttach, error) {
	if goProbesWant("entry-return") || found.parkMissing != "" {
		if len(found.funcs) == 0 {
			return goAttach{}, fmt.Errorf("%s: no lock slow path to probe (%s)", exe, found.parkMissing)
		}
		return goAttach{funcs: found.funcs}, nil
	}
	st, err := os.Stat(exe)
	if err != nil {
		return goAttach{}, fmt.Errorf("stat %s: %w", exe, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return goAttach{}, fmt.Errorf("stat %s: no inode", exe)
	}
	maps, err := readMaps(s.opts.ProcRoot, pid)
	if err != nil {
		return goAttach{}, fmt.Errorf("read the mappings of pid %d: %w", pid, err)
	}
	a := goAttach{parkWake: true, park: found.park, wake: found.wake}
	for _, c := range found.callers {
		if addr, ok := mappedAt(maps, sys.Ino, c.Off); ok {
			a.rets = append(a.rets, goRet{Addr: addr, Kind: c.Kind})
		}
	}
	if len(a.rets) == 0 {
		return goAttach{}, fmt.Errorf("pid %d: its executable's code is not mapped", pid)
	}
	return a, nil
}

// mappedAt returns the address where file offset off of the file with
// inode ino is mapped executable, per maps.
func mappedAt(maps []*procfs.ProcMap, ino, off uint64) (uint64, bool) {
	for _, m := range maps {
		size := uint64(m.EndAddr - m.StartAddr)
		if m.Inode != ino || m.Perms == nil || !m.Perms.Execute || m.Offset < 0 || off < uint64(m.Offset) || off-uint64(m.Offset) >= size {
			continue
		}
		return uint64(m.StartAddr) + off - uint64(m.Offset), true
	}
	return 0, false
}

// probed returns the names of the functions a places probes on.
func (a goAttach) probed() []string {
	if a.parkWake {
		return []string{a.park.Name, a.wake.Name}
	}
	names := make([]string, len(a.funcs))
	for i, f := range a.funcs {
		names[i] = f.Name
	}
	return names
}

// goProbesNote says how the Go lock waits are measured, for Meta.Warnings
// and stderr.
func goProbesNote(found *goFuncsFound, a goAttach) string {
	if a.parkWake {
		return fmt.Sprintf("Go lock waits measured with uprobes at the entries of %s and %s (found in the executable's %s), park to run again, since no pprof endpoint gives the runtime's profiles", a.park.Name, a.wake.Name, found.table)
	}
	note := fmt.Sprintf("Go lock waits measured with uprobes on the entries and returns of %s (found in the executable's %s), since no pprof endpoint gives the runtime's profiles", strings.Join(a.probed(), ", "), found.table)
	if found.parkMissing != "" {
		note += "; the cheaper park/wake probes cannot be placed: " + found.parkMissing
	}
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
