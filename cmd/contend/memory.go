package main

import (
	"os"
	"runtime/debug"
)

// memoryLimit is the soft limit of contend's Go heap while it records
// (record, top). Every part of a live recording is bounded by design (the
// event log, the aggregates and their history, the stacks, the thread
// timeline; see package collector), and their sum with the symbol tables
// stays well under it; Go's collector would otherwise let the heap grow to
// twice the live data before collecting. With the limit it collects sooner
// as the heap nears it, which keeps contend's resident memory under 100 MB
// at the price of more collector CPU when a recording is near its bounds.
// GOMEMLIMIT, when set, overrides it.
const memoryLimit = 64 << 20

// limitMemory sets memoryLimit unless GOMEMLIMIT is set.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
}
