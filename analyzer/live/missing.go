package live

import (
	"slices"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

func liveMissing(a *core.Output, rec *recording.Recording) {
	m := rec.Meta
	if n := core.LostNote(m); n != "" {
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
