package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/collector/goendpoint"
	"github.com/contend-dev/contend/collector/goendpoint/goendpointtest"
	"github.com/contend-dev/contend/recording"
)

// TestSessionSnapshotGoProfiles checks that a session's snapshots carry
// the Go profiles fetched so far, and say when a delta covers more than
// the window.
func TestSessionSnapshotGoProfiles(t *testing.T) {
	_, url := goendpointtest.NewGrowing(t)
	f := newFakeTracer()
	s := startFake(t, context.Background(), Options{}, f)
	g, err := goendpoint.Start(t.Context(), goendpoint.Options{URL: url, LiveEvery: 100 * time.Millisecond, CPUChunk: time.Second, DumpEvery: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.gofetch = g
	first := s.Snapshot(0)
	if first.Profile(recording.ViewGoMutex) != nil {
		t.Error("a mutex delta before any live fetch")
	}
	var whole *recording.Recording
	waitUntil(t, "a snapshot with a mutex delta and a dump", func() bool {
		whole = s.Snapshot(0)
		p := whole.Profile(recording.ViewGoMutex)
		return p != nil && totalValue(p, 0) > 0 && len(whole.Goroutines) > 0
	})
	if p := whole.Profile(recording.ViewGoMutex); p == nil || totalValue(p, 0) == 0 {
		t.Fatalf("whole-run snapshot: mutex profile %v, warnings %q", p, whole.Meta.Warnings)
	}
	if len(whole.Goroutines) != 1 {
		t.Errorf("whole-run snapshot: %d dumps, want the latest", len(whole.Goroutines))
	}
	// A 50ms window is shorter than the fetch period: the delta covers
	// more, and the snapshot says so.
	win := s.Snapshot(50 * time.Millisecond)
	// The delta spans two fetches, about 100ms apart.
	if p := win.Profile(recording.ViewGoMutex); p == nil || p.DurationNanos <= 0 {
		t.Errorf("50ms window: mutex delta %v", p)
	}
	// The window the snapshot took can be longer than asked (it ends at
	// the latest poll): the note is there exactly when the delta's span
	// is off the window's by more than a quarter.
	if p := win.Profile(recording.ViewGoMutex); p != nil {
		cover, want := time.Duration(p.DurationNanos), win.Meta.Duration
		off := cover < want*3/4 || cover > want*5/4
		if noted := strings.Contains(strings.Join(win.Meta.Warnings, "\n"), "Go mutex and block profiles cover"); noted != off {
			t.Errorf("50ms window of %s, delta over %s: coverage note %v, want %v (warnings %q)", want, cover, noted, off, win.Meta.Warnings)
		}
	}
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Profile(recording.ViewGoMutex) == nil {
		t.Error("Stop's recording lacks the mutex delta")
	}
}

func totalValue(p *profile.Profile, i int) int64 {
	var n int64
	for _, s := range p.Sample {
		n += s.Value[i]
	}
	return n
}

// TestGoDataOf checks what the recording says of each kind of Go data:
// without an endpoint every kind absent, with the reason; with one, the
// failed fetches' errors.
func TestGoDataOf(t *testing.T) {
	r := &recording.Recording{Meta: recording.Meta{GoVersion: "go1.24.0"}}
	gd := goDataOf(r, goSource{why: "no --pprof was given"}, nil)
	if gd.Endpoint != "" || len(gd.Absent()) != len(recording.GoKinds) {
		t.Fatalf("no endpoint: %+v", gd)
	}
	for _, k := range gd.Kinds {
		if k.Why != "no pprof endpoint: no --pprof was given" {
			t.Errorf("%s: why %q", k.Kind, k.Why)
		}
	}
	r.SetProfile(recording.ViewGoMutex, goendpointtest.Profile(1, 1))
	gd = goDataOf(r, goSource{endpoint: "127.0.0.1:6060", discovered: true}, map[string]string{recording.GoKindBlock: "404 Not Found"})
	want := map[string]string{
		recording.GoKindMutex:     "",
		recording.GoKindBlock:     "the fetch from http://127.0.0.1:6060/debug/pprof failed: 404 Not Found",
		recording.GoKindGoroutine: "not fetched from http://127.0.0.1:6060/debug/pprof before the recording ended",
		recording.GoKindCPU:       "not fetched from http://127.0.0.1:6060/debug/pprof before the recording ended",
	}
	if !gd.Discovered || gd.Endpoint != "http://127.0.0.1:6060/debug/pprof" || len(gd.Kinds) != 4 {
		t.Fatalf("%+v", gd)
	}
	for _, k := range gd.Kinds {
		if k.Why != want[k.Kind] || k.Have != (want[k.Kind] == "") {
			t.Errorf("%s: have %v why %q, want %q", k.Kind, k.Have, k.Why, want[k.Kind])
		}
	}
}
