package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// memoryLimit is the soft limit of contend's Go heap while it records
// (record; top has topMemoryLimit). Every part of a live recording is
// bounded by design (see package collector), and their sum with the
// symbol tables stays well under it; without a limit Go's collector would
// let the heap grow to twice the live data before collecting. The price
// is more collector CPU near the bounds. GOMEMLIMIT, when set, overrides
// it. Measured: docs/cost.md, "Memory and CPU of contend itself".
const memoryLimit = 64 << 20

// topMemoryLimit is memoryLimit for contend top, whose live heap is
// larger than a recording's between analyses (the symbol tables and its
// converted event cache) and larger again during one (the window's events
// and the analyzer's work on them). What bounds top's memory is that an
// analysis's peak passes: settleMemory collects after
// each, so 64 MiB leaves the collector room for a few cycles per
// analysis over a live heap that peaks near 45-55 MB on the fixtures.
// Measured: docs/cost.md.
const topMemoryLimit = 64 << 20

// settleHeadroom is the limit's least room over the live heap, as a
// factor: an analysis's own memory is 0.5-1 times the live heap between
// analyses (the window's events copied, indexed and analysed), and the
// limit is soft, so a larger analysis costs collections during it, not a
// stall. Go's own pacing (GOGC=100, a factor of 2) holds more at the
// agent's peak: docs/cost.md, "What contend's own limits rest on".
const settleHeadroom = 1.5

// settleMemory runs after each of top's analyses and each of the agent's
// windows (with their floors, topMemoryLimit and agentMemoryLimit): it
// collects, so that the live heap is known, then re-aims the limit at
// settleHeadroom times the live heap when that is above the floor. A live
// heap near the limit (a target with many more threads or stacks than the
// fixtures) would otherwise leave the collector no room for the next
// analysis and run it back to back. The freed pages are left to Go's
// scavenger, which gives back what the limit does not need: handing them
// all back at once (debug.FreeOSMemory) and faulting them in again at the
// next window costs the agent more CPU for the same peak, and lowers only
// the resident size between windows (docs/cost.md, "What contend's own
// limits rest on"). With GOMEMLIMIT set only the collection runs.
func settleMemory(floor int64) func() {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	return func() {
		runtime.GC()
		if os.Getenv("GOMEMLIMIT") != "" {
			return
		}
		metrics.Read(live)
		if live[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		debug.SetMemoryLimit(max(floor, int64(settleHeadroom*float64(live[0].Value.Uint64()))))
	}
}

// limitMemory sets limit (memoryLimit, topMemoryLimit or
// agentMemoryLimit) unless GOMEMLIMIT is set, and has it follow the live
// heap (followLiveHeap).
func limitMemory(limit int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
		go followLiveHeap(time.Tick(followEvery))
	}
}

// followEvery is how often the limit is checked against the live heap: a
// collection under a limit too low comes every few tens of milliseconds,
// so within a second the live heap it measured is current, and a second
// of collections back to back costs at most Go's own cap on them (half
// the CPU) for that second.
const followEvery = time.Second

// followLiveHeap raises the limit to settleHeadroom times the live heap
// whenever that is above it, at each tick. The limits are sized for the
// fixtures and the usual targets; a live heap past them (many processes,
// such as 16 PostgreSQL backends with their symbols, event log and
// aggregates) would otherwise run the collector back to back
// (docs/cost.md, "What contend's own limits rest on"). settleMemory
// lowers the limit again after each window or analysis.
func followLiveHeap(tick <-chan time.Time) {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	for range tick {
		raiseLimit(live)
	}
}

// raiseLimit raises the limit to settleHeadroom times the live heap when
// that is above it.
func raiseLimit(live []metrics.Sample) {
	metrics.Read(live)
	if live[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	want := int64(settleHeadroom * float64(live[0].Value.Uint64()))
	if want > debug.SetMemoryLimit(-1) {
		debug.SetMemoryLimit(want)
	}
}
