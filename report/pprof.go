package report

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// Sample types and labels of the pprof rendering.
const (
	// PprofWait and PprofCPU name the two values of every sample:
	// wait/nanoseconds (time lost waiting) and cpu/nanoseconds (CPU
	// burned), as the findings report them.
	PprofWait = "wait"
	PprofCPU  = "cpu"
	// LabelKind carries the finding's kind ("lock-convoy"), LabelFinding
	// its rank ("1" is the first finding), LabelRole "point" for the stack
	// where the participants sit or "releaser" for the stack that releases
	// the lock (values 0: the time is counted once, at the point).
	LabelKind    = "kind"
	LabelFinding = "finding"
	LabelRole    = "role"
	// LabelLockKey and LabelPointKey carry the lock's and the program
	// point's stable keys, the same in every recording of the program
	// (-tagfocus lock_key=... selects one lock across profiles).
	LabelLockKey  = "lock_key"
	LabelPointKey = "point_key"
)

// Pprof writes the findings' stacks as a gzipped pprof profile, so
// `go tool pprof` can show them (-top, -traces, -tagfocus kind=lock-convoy).
func Pprof(w io.Writer, r *analyzer.Result) error {
	p, err := PprofProfile(r)
	if err != nil {
		return err
	}
	return p.Write(w)
}

// PprofProfile builds the pprof profile of r's findings: one sample per
// finding at its program point's stack with values [wait ns, cpu ns], and
// one zero-valued sample at the releaser's stack when it is known.
func PprofProfile(r *analyzer.Result) (*profile.Profile, error) {
	b := &pprofBuilder{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{
				{Type: PprofWait, Unit: "nanoseconds"},
				{Type: PprofCPU, Unit: "nanoseconds"},
			},
			DefaultSampleType: PprofWait,
			PeriodType:        &profile.ValueType{Type: PprofWait, Unit: "nanoseconds"},
			Period:            1,
			DurationNanos:     int64(r.Target.Duration),
			Comments:          []string{"contend findings, JSON schema " + r.Schema},
			// One mapping that says the functions are already resolved,
			// so pprof neither looks for the binary nor symbolizes.
			Mapping: []*profile.Mapping{{ID: 1, File: "contend-findings", HasFunctions: true, HasFilenames: true, HasLineNumbers: true}},
		},
		funcs: map[funcKey]*profile.Function{},
		locs:  map[locKey]*profile.Location{},
	}
	for i, f := range r.Findings {
		labels := map[string][]string{
			LabelKind:    {string(f.Kind)},
			LabelFinding: {strconv.Itoa(i + 1)},
			LabelRole:    {"point"},
		}
		if f.Lock != nil && f.Lock.Key != "" {
			labels[LabelLockKey] = []string{f.Lock.Key}
		}
		if f.Point.Key != "" {
			labels[LabelPointKey] = []string{f.Point.Key}
		}
		b.sample(f.Point, []int64{nanos(f.WaitSeconds), nanos(f.CPUSeconds)}, labels)
		if f.Releaser != nil && len(f.Releaser.Stack) > 0 {
			rl := map[string][]string{
				LabelKind:    {string(f.Kind)},
				LabelFinding: {strconv.Itoa(i + 1)},
				LabelRole:    {"releaser"},
			}
			b.sample(*f.Releaser, []int64{0, 0}, rl)
		}
	}
	if err := b.p.CheckValid(); err != nil {
		return nil, fmt.Errorf("pprof rendering: %w", err)
	}
	return b.p, nil
}

func nanos(s float64) int64 {
	if s <= 0 || math.IsNaN(s) {
		return 0
	}
	return int64(math.Round(s * 1e9))
}

type funcKey struct{ name, file string }

type locKey struct {
	fn   *profile.Function
	line int
	addr uint64
}

type pprofBuilder struct {
	p     *profile.Profile
	funcs map[funcKey]*profile.Function
	locs  map[locKey]*profile.Location
}

func (b *pprofBuilder) function(f recording.Frame) *profile.Function {
	k := funcKey{f.Func, f.File}
	fn := b.funcs[k]
	if fn == nil {
		fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: f.Func, SystemName: f.Func, Filename: f.File}
		b.funcs[k] = fn
		b.p.Function = append(b.p.Function, fn)
	}
	return fn
}

func (b *pprofBuilder) location(f recording.Frame) *profile.Location {
	fn := b.function(f)
	k := locKey{fn, f.Line, f.Addr}
	loc := b.locs[k]
	if loc == nil {
		loc = &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: b.p.Mapping[0], Address: f.Addr, Line: []profile.Line{{Function: fn, Line: int64(f.Line)}}}
		b.locs[k] = loc
		b.p.Location = append(b.p.Location, loc)
	}
	return loc
}

func (b *pprofBuilder) sample(pt analyzer.ProgramPoint, values []int64, labels map[string][]string) {
	stack := pt.Stack
	if len(stack) == 0 {
		stack = []recording.Frame{{Func: pt.Function, File: pt.File, Line: pt.Line}}
	}
	s := &profile.Sample{Value: values, Label: labels}
	for _, f := range stack {
		s.Location = append(s.Location, b.location(f))
	}
	b.p.Sample = append(b.p.Sample, s)
}
