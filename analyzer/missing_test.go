package analyzer

import (
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// goLiveRec is a live recording of a Go target with every probe and the
// Go data gd.
func goLiveRec(gd *recording.GoData) *recording.Recording {
	return &recording.Recording{Meta: recording.Meta{
		Source: recording.SourceLive, Duration: 2 * time.Second, NumCPU: 2,
		GoVersion: "go1.24.0", GoData: gd,
		Probes: []string{"futex", "sched", "oncpu", "io"},
	}, Threads: &recording.Timeline{}}
}

// missingWhat returns the Missing entry named what, nil when absent.
func missingWhat(res *core.Result, what string) *core.Missing {
	for i := range res.Missing {
		if res.Missing[i].What == what {
			return &res.Missing[i]
		}
	}
	return nil
}

// TestMissingGoKindsWithoutEndpoint checks that a live recording of a Go
// target without a pprof endpoint lists each Go profile absent, with why
// and how to get it.
func TestMissingGoKindsWithoutEndpoint(t *testing.T) {
	why := "the process listens on no TCP socket"
	gd := &recording.GoData{}
	for _, k := range recording.GoKinds {
		gd.Kinds = append(gd.Kinds, recording.GoDataKind{Kind: k, Why: "no pprof endpoint: " + why})
	}
	res := analyze(t, goLiveRec(gd))
	for _, what := range []string{"the Go mutex profile", "the Go block profile", "a goroutine dump with wait states (debug=2)", "the Go CPU profile"} {
		m := missingWhat(res, what)
		if m == nil {
			t.Errorf("Missing lacks %q: %+v", what, res.Missing)
			continue
		}
		if !strings.HasSuffix(m.Decides, ". Not recorded: no pprof endpoint: "+why) {
			t.Errorf("%s: %q does not say why it is absent", what, m.Decides)
		}
	}
	if m := missingWhat(res, "the Go runtime's lock data (mutex and block profiles, a goroutine dump)"); m != nil {
		t.Errorf("the combined entry of old recordings is listed too: %+v", m)
	}
}

// TestMissingGoKindsSome checks that only the kinds absent are listed,
// once each, when an endpoint gave some: the Go analysis's own entries
// do not repeat them.
func TestMissingGoKindsSome(t *testing.T) {
	gd := &recording.GoData{Endpoint: "http://127.0.0.1:6060/debug/pprof", Discovered: true, Kinds: []recording.GoDataKind{
		{Kind: recording.GoKindMutex, Have: true},
		{Kind: recording.GoKindBlock, Have: true},
		{Kind: recording.GoKindGoroutine, Have: true},
		{Kind: recording.GoKindCPU, Why: "the fetch from http://127.0.0.1:6060/debug/pprof failed: 500 Internal Server Error"},
	}}
	r := goLiveRec(gd)
	r.SetProfile(recording.ViewGoMutex, contentionProf(t).add([]int64{10, 1e9}, "sync.(*Mutex).Unlock", "main.work").build())
	r.SetProfile(recording.ViewGoBlock, contentionProf(t).add([]int64{10, 1e9}, "sync.(*Mutex).Lock", "main.work").build())
	res := analyze(t, r)
	var names []string
	for _, m := range res.Missing {
		names = append(names, m.What)
	}
	cpu := missingWhat(res, "the Go CPU profile")
	if cpu == nil || !strings.HasSuffix(cpu.Decides, "Not recorded: the fetch from http://127.0.0.1:6060/debug/pprof failed: 500 Internal Server Error") {
		t.Errorf("CPU profile entry %+v; want the failed fetch", cpu)
	}
	for _, what := range []string{"the Go mutex profile", "the Go block profile", "a CPU profile"} {
		if missingWhat(res, what) != nil {
			t.Errorf("%q listed as missing: %q", what, names)
		}
	}
}
