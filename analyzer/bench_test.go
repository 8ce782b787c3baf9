package analyzer

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/contend-dev/contend/recording"
)

// writeBigProfile writes the 100k-stack synthetic block profile of
// fixtures/cmd/bigprofile into a temporary directory.
func writeBigProfile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "block.pb.gz")
	cmd := exec.Command("go", "run", "./fixtures/cmd/bigprofile", "-n", "100000", "-o", path)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("bigprofile: %v\n%s", err, out)
	}
	return path
}

// BenchmarkAnalyzeLarge measures Analyze alone on a 100k-stack block
// profile (parsing excluded); `contend analyze` against `go tool pprof
// -top` is BenchmarkAnalyzeVsPprof in cmd/contend.
func BenchmarkAnalyzeLarge(b *testing.B) {
	rec, err := recording.Open(writeBigProfile(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Analyze(rec, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

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
