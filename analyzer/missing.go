package analyzer

import (
	"slices"

	"github.com/contend-dev/contend/recording"
)

// missingDataStep lists the data the analysis needed and did not have.
// Each entry is a blind spot: a convoy of that kind cannot be seen in this
// input, so "no finding" must not be read as "no contention".
func missingDataStep(a *analysis) {
	rec := a.rec
	if rec.IsLive() {
		liveMissing(a, rec)
	}
	if g := a.goData(); g != nil {
		goMissing(a, g)
	}
}

// goMissing lists what Go inputs lack.
func goMissing(a *analysis, g *goData) {
	if len(g.groups) == 0 || g.stateInferred {
		a.missing("a goroutine dump with wait states (debug=2)",
			"who waits right now and on which mutex, and what the goroutine holding it does (a system call, another lock): I/O under a lock is seen then even without a mutex profile. Fetch /debug/pprof/goroutine?debug=2")
	}
	if !g.blockSamples && !g.mutexSamples {
		a.missing("a block or mutex profile with samples",
			"how long goroutines waited for each lock, so locks are ranked by time lost and the number waiting on average is known; a single dump is one instant. Call runtime.SetBlockProfileRate and runtime.SetMutexProfileFraction, then fetch /debug/pprof/block and /debug/pprof/mutex")
	}
	if !g.cpuGiven {
		a.missing("a CPU profile", "busy-waits (spinning goroutines) and what runs inside critical sections; fetch /debug/pprof/profile?seconds=10")
	}
}

func liveMissing(a *analysis, rec *recording.Recording) {
	m := rec.Meta
	probe := func(p string) bool { return slices.Contains(m.Probes, p) }
	if m.GoVersion != "" && !hasGoData(rec) {
		a.missing("the Go runtime's lock data (mutex and block profiles, a goroutine dump)",
			"the target is a Go program ("+m.GoVersion+"): goroutines that wait on a sync.Mutex or sync.RWMutex park inside the Go runtime and never reach a futex, so a convoy between goroutines is invisible to the kernel probes; record again with --pprof http://HOST:PORT where the program serves net/http/pprof")
	}
	if !probe("futex") {
		a.missing("futex waits and wakes", "which locks threads block on and for how long: lock convoys, I/O under a lock and serialized writers cannot be judged")
	}
	if !probe("sched") {
		a.missing("scheduler events (off-CPU time by state, wake-ups)", "whether threads wait for a CPU: CPU saturation and lock-holder preemption cannot be judged")
	}
	if !probe("oncpu") {
		a.missing("on-CPU samples", "where threads burn CPU: busy-wait (spin) convoys cannot be seen")
	}
	if rec.Threads == nil {
		a.missing("the /proc thread timeline", "thread states and CPU times: runnable and running threads cannot be told apart")
	}
}

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

// missing records a blind spot once.
func (a *analysis) missing(what, decides string) {
	for _, m := range a.res.Missing {
		if m.What == what {
			return
		}
	}
	a.res.Missing = append(a.res.Missing, Missing{What: what, Decides: decides})
}
