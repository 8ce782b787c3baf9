package live

import (
	"slices"
	"testing"

	"github.com/contend-dev/contend/recording"
)

// BenchmarkIndexEvents indexes a full event log (the collector keeps
// 120,000 events) of the paced bench target's shape: pairs of threads
// handing a futex word back and forth, each hand-off a wait, a wake and
// a wakeup, with some run-queue waits, in the log's arrival order.
func BenchmarkIndexEvents(b *testing.B) {
	const n = 120000
	evs := make([]recording.Event, 0, n)
	for i := 0; len(evs) < n; i++ {
		pair := i % 4
		tid, peer := 100+2*pair, 101+2*pair
		t := int64(i) * 20000
		evs = append(evs,
			recording.Event{Kind: recording.EventWake, T: t, TID: peer, Addr: uint64(0x1000 + pair*64), Stack: -1},
			recording.Event{Kind: recording.EventWakeup, T: t + 100, TID: peer, Peer: tid, Stack: -1},
			recording.Event{Kind: recording.EventWait, T: t - 15000, Dur: 15500, TID: tid, Addr: uint64(0x1000 + pair*64), Stack: -1})
		if i%8 == 0 {
			evs = append(evs, recording.Event{Kind: recording.EventRunq, T: t + 200, Dur: 3000, TID: tid, Stack: -1})
		}
	}
	// A live window and a recording come in time order (SessionSource's
	// between, the collector's conversion); unsorted input is cloned first.
	slices.SortStableFunc(evs, byStart)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if x := indexEvents(evs); len(x.waits) != 4 {
			b.Fatalf("%d words", len(x.waits))
		}
	}
}
