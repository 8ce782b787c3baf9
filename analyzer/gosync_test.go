package analyzer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/analyzer/live"
	"github.com/contend-dev/contend/recording"
)

// lockWaitsRec is a live recording of a Go target without an endpoint
// whose lock waits were measured with uprobes: 2 s, waits at one call
// path spread over locks (lock address -> delay).
func lockWaitsRec(t *testing.T, locks map[string]int64) *recording.Recording {
	gd := &recording.GoData{Uprobes: &recording.GoUprobes{Functions: []string{"internal/sync.(*Mutex).lockSlow"}, Table: "symbol table"}}
	for _, k := range recording.GoKinds {
		gd.Kinds = append(gd.Kinds, recording.GoDataKind{Kind: k, Why: "no pprof endpoint: the process listens on no TCP socket"})
	}
	r := goLiveRec(gd)
	b := contentionProf(t)
	st := stack(fr("internal/sync.(*Mutex).lockSlow@/go/src/internal/sync/mutex.go:95",
		"internal/sync.(*Mutex).Lock@/go/src/internal/sync/mutex.go:70",
		"sync.(*Mutex).Lock@/go/src/sync/mutex.go:46",
		"app.(*Sub).handle@/src/app/sub.go:20",
		"app.worker@/src/app/worker.go:9"))
	for addr, ns := range locks {
		b.add([]int64{ns / 50_000, ns}, st...)
		b.p.Sample[len(b.p.Sample)-1].Label = map[string][]string{recording.LabelLock: {addr}}
	}
	r.SetProfile(recording.ViewGoLockWaits, b.build())
	return r
}

// TestGoLockWaitsConvoy reads the uprobes' go-lockwaits view as a block
// profile: 60 goroutines waiting on average on one mutex, taken at one
// point, is a convoy there, with the evidence's source and how it was
// measured; the block profile is listed missing, said to be stood in for.
func TestGoLockWaitsConvoy(t *testing.T) {
	res := analyze(t, lockWaitsRec(t, map[string]int64{"0xc000010000": int64(120 * time.Second)}))
	if len(res.Findings) == 0 {
		t.Fatalf("no finding; missing %+v", res.Missing)
	}
	f := res.Findings[0]
	if f.Kind != core.KindLockConvoy || f.Point.Function != "app.(*Sub).handle" {
		t.Fatalf("first finding %s at %s, want a lock convoy at app.(*Sub).handle", f.Kind, f.Point.Function)
	}
	if !hasFact(f, core.EvBlockWaits, "probed", "internal/sync.(*Mutex).lockSlow") {
		t.Errorf("evidence does not say the waits were measured with uprobes: %s", evidenceData(f))
	}
	for _, e := range f.Evidence {
		if e.Kind == core.EvBlockWaits && e.Source != string(recording.ViewGoLockWaits) {
			t.Errorf("block-waits evidence from %q, want %q", e.Source, recording.ViewGoLockWaits)
		}
	}
	if f.Lock == nil || f.Lock.Address != "0xc000010000" {
		t.Errorf("lock %+v, want the one mutex the waits name", f.Lock)
	}
	m := missingWhat(res, "the Go block profile")
	if m == nil || !strings.Contains(m.Decides, "measured with uprobes instead (go-lockwaits)") {
		t.Errorf("block profile entry %+v does not say what stands in for it", m)
	}
	if m := missingWhat(res, live.GoUprobesMissing); m != nil {
		t.Errorf("uprobes listed missing though they measured: %+v", m)
	}
}

// TestGoLockWaitsSpread checks that waits the uprobes measured at one
// point but spread evenly over 32 mutexes (a striped table) are not read
// as one shared lock: no convoy, and the spread is evidence.
func TestGoLockWaitsSpread(t *testing.T) {
	locks := map[string]int64{}
	for i := 0; i < 32; i++ {
		locks[fmt.Sprintf("0xc0000%02x000", i)] = int64(4 * time.Second)
	}
	res := analyze(t, lockWaitsRec(t, locks))
	if len(res.Findings) == 0 {
		t.Fatal("no finding for 64 goroutines waiting on average")
	}
	for _, f := range res.Findings {
		if f.Kind == core.KindLockConvoy || f.Kind == core.KindHotStripe {
			t.Errorf("%s at %s for waits spread over 32 mutexes", f.Kind, f.Point.Function)
		}
	}
	if f := res.Findings[0]; !hasFact(f, core.EvWaitSpread, "distinct", 32) {
		t.Errorf("no wait-spread evidence over 32 mutexes: %s", evidenceData(f))
	}
}

// TestGoUprobesMissing checks that uprobes that could not be placed are
// listed missing with why, beside the Go profiles.
func TestGoUprobesMissing(t *testing.T) {
	why := "pid 7: /proc/7/exe: none of Go's lock slow paths is in its pclntab"
	gd := &recording.GoData{Uprobes: &recording.GoUprobes{Why: why}}
	for _, k := range recording.GoKinds {
		gd.Kinds = append(gd.Kinds, recording.GoDataKind{Kind: k, Why: "no pprof endpoint: x"})
	}
	res := analyze(t, goLiveRec(gd))
	m := missingWhat(res, live.GoUprobesMissing)
	if m == nil || !strings.HasSuffix(m.Decides, "Not measured: "+why) {
		t.Errorf("Missing %+v, want the uprobes listed with why", res.Missing)
	}
	if b := missingWhat(res, "the Go block profile"); b == nil || strings.Contains(b.Decides, "uprobes") {
		t.Errorf("block profile entry %+v claims a stand-in that did not measure", b)
	}
}
