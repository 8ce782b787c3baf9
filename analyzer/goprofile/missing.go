package goprofile

import (
	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// goMissing lists what Go inputs lack. Kinds a live recording's
// Meta.GoData names as absent are listed by liveGoMissing already.
func goMissing(a *core.Output, g *Data) {
	absent := map[string]bool{}
	for _, k := range a.Rec.Meta.GoData.Absent() {
		absent[k.Kind] = true
	}
	if (len(g.groups) == 0 || g.stateInferred) && !absent[recording.GoKindGoroutine] {
		a.Missing("a goroutine dump with wait states (debug=2)",
			"who waits right now and on which mutex, and what the goroutine holding it does (a system call, another lock): I/O under a lock is seen then even without a mutex profile. Fetch /debug/pprof/goroutine?debug=2")
	}
	if !g.blockSamples && !g.mutexSamples && !(absent[recording.GoKindMutex] && absent[recording.GoKindBlock]) {
		a.Missing("a block or mutex profile with samples",
			"how long goroutines waited for each lock, so locks are ranked by time lost and the number waiting on average is known; a single dump is one instant. Call runtime.SetBlockProfileRate and runtime.SetMutexProfileFraction, then fetch /debug/pprof/block and /debug/pprof/mutex")
	}
	if !g.cpuGiven && !absent[recording.GoKindCPU] {
		a.Missing("a CPU profile", "busy-waits (spinning goroutines) and what runs inside critical sections; fetch /debug/pprof/profile?seconds=10")
	}
}
