package live

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

func liveMissing(a *core.Output, rec *recording.Recording) {
	m := rec.Meta
	if n := lostNote(m); n != "" {
		a.Note(n)
	}
	probe := func(p string) bool { return slices.Contains(m.Probes, p) }
	if m.GoData != nil {
		liveGoMissing(a, m.GoData)
	} else if m.GoVersion != "" && !hasGoData(rec) {
		// A recording made before Meta.GoData existed.
		a.Missing("the Go runtime's lock data (mutex and block profiles, a goroutine dump)",
			"the target is a Go program ("+m.GoVersion+"): goroutines that wait on a sync.Mutex or sync.RWMutex park inside the Go runtime and never reach a futex, so a convoy between goroutines is invisible to the kernel probes; record again with --pprof http://HOST:PORT where the program serves net/http/pprof")
	}
	if !probe("futex") {
		a.Missing("futex waits and wakes", "which locks threads block on and for how long: lock convoys, I/O under a lock and serialized writers cannot be judged")
	}
	if !probe("sched") {
		a.Missing("scheduler events (off-CPU time by state, wake-ups)", "whether threads wait for a CPU: CPU saturation and lock-holder preemption cannot be judged")
	}
	if !probe("oncpu") {
		a.Missing("on-CPU samples", "where threads burn CPU: busy-wait (spin) convoys cannot be seen")
	}
	if rec.Threads == nil {
		a.Missing("the /proc thread timeline", "thread states and CPU times: runnable and running threads cannot be told apart")
	}
}

// goKindMissing names each kind of a Go target's runtime data
// (recording.GoKinds) and what it decides, for the Missing list.
var goKindMissing = map[string]core.Missing{
	recording.GoKindMutex: {What: "the Go mutex profile",
		Decides: "which sync.Mutex and sync.RWMutex unlock sites made goroutines wait, and for how long: goroutines that wait on a Go mutex park inside the Go runtime and never reach a futex, so a convoy between goroutines is invisible to the kernel probes"},
	recording.GoKindBlock: {What: "the Go block profile",
		Decides: "where goroutines waited (Lock calls, channel operations, select) and for how long, so locks are ranked by time lost"},
	recording.GoKindGoroutine: {What: "a goroutine dump with wait states (debug=2)",
		Decides: "who waits right now and on which mutex, and what the goroutine holding it does (a system call, another lock)"},
	recording.GoKindCPU: {What: "the Go CPU profile",
		Decides: "busy-waits between goroutines and what runs inside critical sections, in the runtime's own stacks"},
}

// liveGoMissing lists the kinds of Go runtime data a live recording of a
// Go target lacks, each with why (no endpoint, a failed fetch).
func liveGoMissing(a *core.Output, gd *recording.GoData) {
	for _, k := range gd.Absent() {
		if m, ok := goKindMissing[k.Kind]; ok {
			why := m.Decides + ". Not recorded: " + k.Why
			if k.Kind == recording.GoKindBlock && gd.Uprobes.Have() {
				why += "; the goroutines' waits for a sync.Mutex or sync.RWMutex were measured with uprobes instead (" + string(recording.ViewGoLockWaits) + "), their channel and select waits were not"
				if gd.Uprobes.Detached != "" {
					why += "; the uprobes were " + gd.Uprobes.Detached
				}
			}
			a.Missing(m.What, why)
		}
	}
	u := gd.Uprobes
	switch {
	case u == nil:
	case !u.Have():
		a.Missing(GoUprobesMissing, "where goroutines waited for a sync.Mutex or sync.RWMutex, measured from the process alone when it serves no pprof endpoint. Not measured: "+u.Why)
	case len(u.Missing) > 0:
		a.Missing(GoUprobesMissing, "the waits for these locks: "+strings.Join(u.Missing, "; "))
	}
}

// GoUprobesMissing names the Go lock waits the collector's uprobes did
// not measure, in the Missing list.
const GoUprobesMissing = "the goroutines' lock waits through uprobes"

// hasGoData reports whether a recording holds any Go runtime data.
func hasGoData(rec *recording.Recording) bool {
	if len(rec.Goroutines) > 0 {
		return true
	}
	for _, v := range recording.GoViews {
		if rec.Profile(v) != nil {
			return true
		}
	}
	return false
}

// maxLostNamed is how many drop counters the lost-data note names; the
// rest are counted.
const maxLostNamed = 4

// lossWorthNoting is the share of the probes' events lost (drop_* against
// ev_*) from which the analysis carries a note. Each lost event or stack
// is at most one event's part of a figure, so a loss below 1 % of the
// events cannot move a figure summed over them by 1 %; below it the
// counters stay in meta.json and LossLine gives one line for --verbose.
const lossWorthNoting = 0.01

// lossCounts returns the drop_* counters that are not zero, heaviest
// first, and the events (ev_*) and drops of m.
func lossCounts(m recording.Meta) (parts []string, events, drops uint64) {
	type lost struct {
		name string
		n    uint64
	}
	var all []lost
	for k, v := range m.Counters {
		if name, ok := strings.CutPrefix(k, recording.CounterDropPrefix); ok && v > 0 {
			all = append(all, lost{name, v})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].name < all[j].name
	})
	for i, l := range all {
		if i == maxLostNamed {
			parts = append(parts, fmt.Sprintf("%d more", len(all)-i))
			break
		}
		parts = append(parts, l.name+" "+units.Count(int64(l.n)))
	}
	events, drops = m.CounterTotals()
	return parts, events, drops
}

// lossShare is drops against everything the probes counted, kept or not.
func lossShare(events, drops uint64) float64 {
	if events+drops == 0 {
		return 0
	}
	return float64(drops) / float64(events+drops)
}

// lossPercent renders a loss share with two significant digits below
// 1 %, where units.Percent would round a few lost events to "0.0%".
func lossPercent(x float64) string {
	if p := x * 100; p > 0 && p < 1 {
		return strconv.FormatFloat(p, 'g', 2, 64) + "%"
	}
	return units.Percent(x)
}

// lostNote says what the probes lost, from the drop_* counters: events
// and stack windows the full ring buffer turned away, stack lookups that
// failed, entries full maps refused. "" when nothing was lost, or too
// little to move a figure by 1 % (lossWorthNoting).
func lostNote(m recording.Meta) string {
	parts, events, drops := lossCounts(m)
	if len(parts) == 0 || lossShare(events, drops) < lossWorthNoting {
		return ""
	}
	return "the probes lost " + lossPercent(lossShare(events, drops)) + " of their events (drop_* counters in meta.json): " + strings.Join(parts, ", ") +
		"; ringbuf_* are events and stack windows turned away by a full ring buffer, stack_* failed stack lookups, map_full_* entries a full map refused, wake_unseen futex waits whose wake the probes did not see and the scheduler kept no run-queue record of (counted as waits, but neither as timeouts nor as woken by a call), switch_in_unseen switches back onto a CPU that no probe saw (that time off CPU is missing from the off-CPU view): the figures rest on what was kept"
}

// LossLine is one line on what the probes of a live recording lost, for
// --verbose: "" when nothing was lost. The analysis itself carries a note
// only when the loss could move a figure (lostNote).
func LossLine(m recording.Meta) string {
	parts, events, drops := lossCounts(m)
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("the probes lost %s of %s events (%s; %s): drop_* counters in meta.json",
		units.Count(int64(drops)), units.Count(int64(events+drops)), lossPercent(lossShare(events, drops)), strings.Join(parts, ", "))
}
