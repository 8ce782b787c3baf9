package goprofile

import (
	"fmt"
	"math"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// runtimeLocks reports contention on the Go runtime's internal locks (the
// mutex profile's runtime.unlock and runtime._LostContendedRuntimeLock
// stacks) as its own kind, grouped by the runtime function that released
// the lock.
func (g *Data) runtimeLocks(a *core.Output, totalUser int64) {
	var total int64
	for _, s := range g.mutex {
		if s.sc.Class == core.ClassRuntimeLock {
			total += s.value
		}
	}
	for _, s := range g.mutex {
		if s.sc.Class != core.ClassRuntimeLock {
			continue
		}
		name := "Go runtime lock released in " + core.ShortFuncName(s.key.Fn)
		if s.key.Fn == "(runtime)" {
			name = "Go runtime locks (contention recorded without stacks: runtime._LostContendedRuntimeLock)"
		}
		a.Res.Locks = append(a.Res.Locks, core.LockRow{Lock: core.LockID{Name: name}, Waits: uint64(s.count), WaitSeconds: core.Seconds(s.value), Waker: &s.point})
		if !core.Significant(s.value, total+totalUser, g.duration, 0) {
			continue
		}
		mean := g.meanWaiting(s.value)
		v := core.Verdict{
			Kind: core.KindRuntimeLock, Unit: "goroutines", Population: g.population,
			Point: s.point, Lock: &core.LockID{Name: name}, WaitSeconds: core.Seconds(s.value),
			Participants: int(math.Ceil(mean)), Duration: g.duration,
		}
		where := core.ShortFuncName(s.key.Fn)
		if s.key.Fn == "(runtime)" {
			where = "the runtime"
		}
		v.Headline = fmt.Sprintf("%s lost on a lock internal to the Go runtime in %s", units.Seconds(v.WaitSeconds), where)
		if s.user != "" {
			v.Headline += fmt.Sprintf(" (reached from %s)", core.ShortFuncName(s.user))
		}
		v.Evidence = []core.Evidence{core.Fact("go-mutex", core.EvRuntimeLock, "contentions", s.count, "delay_s", v.WaitSeconds, "mean", mean, "where", where)}
		if s.user != "" {
			v.Evidence = append(v.Evidence, core.Fact("go-mutex", core.EvRuntimeLockUser, "user", s.user))
		}
		v.Confidence = core.ConfidenceMedium
		v.Remedy, v.Sugg = core.RemedyRuntimeLock, core.Sugg{Hint: runtimeHint(s.point.Stack)}
		a.Res.Findings = append(a.Res.Findings, core.Judge(v))
	}
}

// runtimeHint suggests what reduces the runtime work behind a runtime lock,
// from the runtime functions on its stack.
func runtimeHint(stack []recording.Frame) string {
	for _, fr := range stack {
		fn := fr.Func
		switch {
		case strings.HasPrefix(fn, "runtime.chan"), strings.HasPrefix(fn, "runtime.sel"), fn == "runtime.closechan":
			return "many goroutines operate on one channel; give each worker its own channel or batch the messages."
		case strings.HasPrefix(fn, "runtime.sem"):
			return "the runtime's semaphore table is contended by sync primitives on hot addresses; fewer, less shared sync.Mutex/WaitGroup operations reduce it."
		case strings.Contains(fn, "mheap") || strings.Contains(fn, "mcentral") || strings.HasPrefix(fn, "runtime.malloc") || strings.Contains(fn, "gcStart") || strings.Contains(fn, "sweep"):
			return "the allocator or the garbage collector takes it; allocate less (reuse buffers) or raise GOGC/GOMEMLIMIT."
		case strings.Contains(fn, "timer"):
			return "timers take it; create fewer timers (reuse a time.Timer rather than time.After in loops)."
		case strings.Contains(fn, "sched") || strings.Contains(fn, "globrunq") || strings.HasPrefix(fn, "runtime.newproc"):
			return "the scheduler takes it; start fewer short-lived goroutines (use a worker pool)."
		}
	}
	return "reduce the runtime work that takes it (allocation, goroutine churn, channel traffic, timers)."
}
