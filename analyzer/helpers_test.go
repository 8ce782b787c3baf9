package analyzer

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/recording"
	"github.com/google/pprof/profile"
)

// Test helpers: hand-built Go profiles and dumps. A frame is written
// "func@file:line"; stacks are leaf first, as in the runtime's output.

func parseFrame(t testing.TB, s string) (fn, file string, line int) {
	t.Helper()
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return s, "", 0
	}
	fn, rest := s[:at], s[at+1:]
	colon := strings.LastIndexByte(rest, ':')
	if colon < 0 {
		return fn, rest, 0
	}
	n, err := strconv.Atoi(rest[colon+1:])
	if err != nil {
		t.Fatalf("bad frame %q", s)
	}
	return fn, rest[:colon], n
}

// profBuilder builds a pprof profile one sample at a time.
type profBuilder struct {
	t     testing.TB
	p     *profile.Profile
	funcs map[string]*profile.Function
	locs  map[string]*profile.Location
}

func newProf(t testing.TB, types ...string) *profBuilder {
	p := &profile.Profile{}
	for _, ty := range types {
		typ, unit, _ := strings.Cut(ty, "/")
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: typ, Unit: unit})
	}
	return &profBuilder{t: t, p: p, funcs: map[string]*profile.Function{}, locs: map[string]*profile.Location{}}
}

func contentionProf(t testing.TB) *profBuilder {
	return newProf(t, "contentions/count", "delay/nanoseconds")
}

func cpuProf(t testing.TB, d time.Duration) *profBuilder {
	b := newProf(t, "samples/count", "cpu/nanoseconds")
	b.p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	b.p.Period = int64(10 * time.Millisecond)
	b.p.DurationNanos = int64(d)
	return b
}

func (b *profBuilder) add(values []int64, stack ...string) *profBuilder {
	s := &profile.Sample{Value: values}
	for _, fs := range stack {
		loc := b.locs[fs]
		if loc == nil {
			fn, file, line := parseFrame(b.t, fs)
			f := b.funcs[fn+"@"+file]
			if f == nil {
				f = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: fn, SystemName: fn, Filename: file}
				b.funcs[fn+"@"+file] = f
				b.p.Function = append(b.p.Function, f)
			}
			loc = &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: uint64(0x1000 + len(b.p.Location)), Line: []profile.Line{{Function: f, Line: int64(line)}}}
			b.locs[fs] = loc
			b.p.Location = append(b.p.Location, loc)
		}
		s.Location = append(s.Location, loc)
	}
	b.p.Sample = append(b.p.Sample, s)
	return b
}

// cpu adds n samples of 10ms at stack.
func (b *profBuilder) cpu(n int64, stack ...string) *profBuilder {
	return b.add([]int64{n, n * int64(10*time.Millisecond)}, stack...)
}

func (b *profBuilder) build() *profile.Profile {
	b.t.Helper()
	if err := b.p.CheckValid(); err != nil {
		b.t.Fatalf("test profile invalid: %v", err)
	}
	return b.p
}

// dumpBuilder builds a debug=2 goroutine dump.
type dumpBuilder struct {
	t testing.TB
	d *goprof.Dump
}

func newDump(t testing.TB) *dumpBuilder {
	return &dumpBuilder{t: t, d: &goprof.Dump{Kind: goprof.KindGoroutineDump}}
}

func (b *dumpBuilder) add(count int, state string, stack ...string) *dumpBuilder {
	g := &goprof.Group{Count: count, State: state}
	for _, fs := range stack {
		fn, file, line := parseFrame(b.t, fs)
		g.Frames = append(g.Frames, goprof.Frame{Func: fn, File: file, Line: line})
	}
	b.d.Groups = append(b.d.Groups, g)
	b.d.Total += count
	return b
}

// lockedOn sets the argument of the lock slow-path frames of the group
// added last, as a debug=2 dump prints the mutex's address there.
func (b *dumpBuilder) lockedOn(addr string) *dumpBuilder {
	g := b.d.Groups[len(b.d.Groups)-1]
	for i := range g.Frames {
		if strings.HasSuffix(g.Frames[i].Func, ".lockSlow") || strings.HasSuffix(g.Frames[i].Func, "runtime_SemacquireMutex") {
			g.Frames[i].Args = addr + ", 0x0"
		}
	}
	return b
}

func (b *dumpBuilder) build() *goprof.Dump { return b.d }

// rec assembles a recording of Go views.
func rec(views map[recording.View]*profile.Profile, dumps ...*goprof.Dump) *recording.Recording {
	r := &recording.Recording{Meta: recording.Meta{Source: recording.SourceFiles}, Goroutines: dumps}
	for v, p := range views {
		r.SetProfile(v, p)
	}
	return r
}

func analyze(t testing.TB, r *recording.Recording) *core.Result {
	t.Helper()
	res, err := Analyze(r, Options{})
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	return res
}

// kinds lists the findings as "kind@function".
func kinds(res *core.Result) []string {
	var out []string
	for _, f := range res.Findings {
		out = append(out, fmt.Sprintf("%s@%s", f.Kind, f.Point.Function))
	}
	return out
}

// evidenceData lists a finding's evidence as data, one item a line, for
// failure messages.
func evidenceData(f core.Finding) string {
	var b strings.Builder
	for _, e := range f.Evidence {
		fmt.Fprintf(&b, "[%s] %s %v %v %v\n", e.Source, e.Kind, e.Figures, e.Names, e.Items)
	}
	return b.String()
}

// hasFact reports whether f carries evidence of kind whose figures and
// names include kv (alternating keys and values: a string value is a
// name, a number a figure).
func hasFact(f core.Finding, kind core.EvidenceKind, kv ...any) bool {
	want := core.Fact("", kind, kv...)
next:
	for _, e := range f.Evidence {
		if e.Kind != kind {
			continue
		}
		for k, v := range want.Figures {
			got, ok := e.Figures[k]
			if !ok || math.Abs(got-v) > 1e-9*math.Max(1, math.Abs(v)) {
				continue next
			}
		}
		for k, v := range want.Names {
			if e.Names[k] != v {
				continue next
			}
		}
		return true
	}
	return false
}

// Frequently used stacks.
var (
	lockFrames = []string{
		"internal/sync.runtime_SemacquireMutex@/go/src/runtime/sema.go:95",
		"internal/sync.(*Mutex).lockSlow@/go/src/internal/sync/mutex.go:149",
		"internal/sync.(*Mutex).Lock@/go/src/internal/sync/mutex.go:70",
		"sync.(*Mutex).Lock@/go/src/sync/mutex.go:46",
	}
	blockLock  = []string{"sync.(*Mutex).Lock@/go/src/sync/mutex.go:46"}
	unlockLeaf = []string{"sync.(*Mutex).Unlock@/go/src/sync/mutex.go:65"}
)

func stack(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func fr(s ...string) []string { return s }
