package analyzer_test

import (
	"path/filepath"
	"testing"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// The rwstarve fixture's bad variant (fixtures/HOLDERS.md): 24 readers
// keep a reader-preferring pthread_rwlock_t taken while 2 writers wait
// seconds per acquisition. glibc's writers wait on two futex words of the
// lock (+0x8 and +0xc); they are one lock at the structure's base, waited
// for at the caller of pthread_rwlock_wrlock, with readers and writers
// counted apart.
func TestRWStarveReplay(t *testing.T) {
	res := replay(t, "c-rwstarve-bad")
	if len(res.Findings) != 1 {
		t.Fatalf("%d findings, want 1 (one lock)", len(res.Findings))
	}
	f := res.Findings[0]
	if f.Kind != analyzer.KindWriterStarvation {
		t.Fatalf("kind %s, want writer-starvation", f.Kind)
	}
	if f.Point.Function != "table_update" {
		t.Errorf("point %s, want table_update, the caller of pthread_rwlock_wrlock", f.Point.Function)
	}
	if f.Lock == nil || f.Lock.Key != "rwstarve:table_rw" || f.Lock.Name != "table_rw (rwstarve)" || len(f.Lock.Words) != 2 {
		t.Errorf("lock %+v, want table_rw keyed at its base with both words", f.Lock)
	}
	var ev *analyzer.Evidence
	for i := range f.Evidence {
		if f.Evidence[i].Kind == analyzer.EvWriterStarved {
			ev = &f.Evidence[i]
		}
	}
	if ev == nil {
		t.Fatalf("no %s evidence", analyzer.EvWriterStarved)
	}
	if ev.Figures["writers"] != 2 || ev.Figures["readers"] != 24 || ev.Figures["writer_mean_s"] < 1 {
		t.Errorf("sides %v, want 2 writers waiting over a second per wait, 24 readers", ev.Figures)
	}
}

// The fixed variant prefers writers: writers wait about one read hold
// (16 ms on average, by the fixture's own count, in this recording) and
// the readers stall behind each preferred writer. On a loaded machine
// those stalls add up to contention at table_lookup (8.1 s here, 26
// threads); a crowd of readers is not a convoy (they do not exclude one
// another) and the writers are not starved.
func TestRWStarveFixedReplay(t *testing.T) {
	res := replay(t, "c-rwstarve-fixed")
	for _, f := range res.Findings {
		if f.Kind == analyzer.KindWriterStarvation || f.Kind == analyzer.KindLockConvoy {
			t.Errorf("finding %s at %s, want neither writer-starvation nor a convoy", f.Kind, f.Point.Function)
		}
		if f.Lock != nil && (f.Lock.Key != "rwstarve:table_rw" || f.Point.Function != "table_lookup") {
			t.Errorf("lock %s at %s, want table_rw at table_lookup", f.Lock.Key, f.Point.Function)
		}
	}
	if n := len(res.Locks); n != 1 {
		t.Errorf("%d lock rows, want the one rwlock", n)
	}
}

func replay(t *testing.T, name string) *analyzer.Result {
	t.Helper()
	rec, err := recording.Open(filepath.Join("testdata", "live", name))
	if err != nil {
		t.Fatal(err)
	}
	res, err := analyzer.Analyze(rec, analyzer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
