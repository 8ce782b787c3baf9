package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
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
// larger than a recording's: the symbol tables and its converted event
// cache between analyses, and at each analysis the window's events and
// the analyzer's work on them for a moment. What bounds top's memory is
// that the moment passes: settleMemory collects and gives the pages back
// after each analysis, so the heap climbs back from the live data alone.
// With top's shorter event log (topMaxEvents), views whose samples share
// their label maps and glibc's DWARF dropped after each batch of
// lookups, the live heap on the stripe fixture is 21-26 MB between
// analyses and 40-44 MB at their peak (GODEBUG=gctrace=1): 64 MiB leaves
// the collector room, a few cycles per analysis, where before those
// changes the analyses' 57-63 MB ran into the limit. On the stripe fixture
// top then kept a high-water mark of 95-96 MB (VmHWM over about 25 s, 3 runs
// alternated with the build before: 105-127 MB at 72 MiB), of which
// 30-32 MB is file-backed (the binary's text and data 21 MB, the ring
// buffer 4 MB, glibc's debug file 3.5 MB), and took 8.9-9.5 % of a core
// against 11.0-12.6 %. Over 10 minutes, since DWARF is read unit by unit
// (symbolize) and the mapped objects' pages are given back after each
// build, its VmHWM was 97.8 MB, the live heap at the analyses' peak
// 49-54 MB.
const topMemoryLimit = 64 << 20

// settleHeadroom is the limit's least room over the live heap, as a
// factor: an analysis's own memory came to 0.5-1 times the live heap
// between analyses on the fixtures (20-40 MB over 20-42 MB: the window's
// events copied, indexed and analysed), and the limit is soft, so a
// larger analysis costs collections during it, not a stall. Twice the
// live heap, Go's own pacing (GOGC=100), kept the agent's limit at 80 MB
// for its 40 MB live heap: 100 MB resident at its peak instead of 95.
const settleHeadroom = 1.5

// settleMemory runs after each of top's analyses and each of the agent's
// windows (with their floors, topMemoryLimit and agentMemoryLimit): it
// collects and returns the freed pages to the system at once
// (debug.FreeOSMemory; Go's scavenger would give them back over
// minutes), then re-aims the limit at settleHeadroom times the live heap
// when that is above the floor. A live heap near the limit (a target with
// many more threads or stacks than the fixtures) would otherwise leave
// the collector no room for the next analysis and run it back to back.
// With GOMEMLIMIT set only the collection runs.
func settleMemory(floor int64) func() {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	return func() {
		debug.FreeOSMemory()
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

// limitMemory sets limit (memoryLimit or topMemoryLimit) unless
// GOMEMLIMIT is set.
func limitMemory(limit int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
}
