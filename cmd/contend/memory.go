package main

import (
	"os"
	"runtime/debug"
)

// memoryLimit is the soft limit of contend's Go heap while it records
// (record; top has its own, topMemoryLimit). Every part of a live recording is bounded by design (the
// event log, the aggregates and their history, the stacks, the thread
// timeline; see package collector), and their sum with the symbol tables
// stays well under it; Go's collector would otherwise let the heap grow to
// twice the live data before collecting. With the limit it collects sooner
// as the heap nears it, which keeps contend's resident memory under 100 MB
// at the price of more collector CPU when a recording is near its bounds.
// GOMEMLIMIT, when set, overrides it.
const memoryLimit = 64 << 20

// topMemoryLimit is memoryLimit for contend top, whose live heap is
// larger than a recording's: the symbol tables, its converted event
// cache, and at each analysis the window's snapshot and the analyzer's
// indexes, 45 to 60 MB in all on the stripe fixture (measured with the
// heap profile). Under memoryLimit that left the collector no headroom:
// it ran back to back, 30 to 40 collections a second, a third of a core;
// at 96 MiB it runs about once a second and top takes 8 to 9 % of a core
// (GODEBUG=gctrace=1 and /proc/PID/stat over 30 s, 2 runs each), for
// about 20 MB more resident memory in steady state and the same peak
// (reached while the probes attach and the first analysis loads the
// debug information).
const topMemoryLimit = 96 << 20

// limitMemory sets limit (memoryLimit or topMemoryLimit) unless
// GOMEMLIMIT is set.
func limitMemory(limit int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
}
