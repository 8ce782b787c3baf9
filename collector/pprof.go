package collector

import (
	"sort"
	"strconv"
	"time"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/recording"
)

// profileBuilder assembles one pprof profile from symbolized stacks,
// sharing functions, locations and mappings between samples and merging
// samples with the same stack and labels.
type profileBuilder struct {
	p       *profile.Profile
	funcs   map[funcKey]*profile.Function
	locs    map[string]*profile.Location
	maps    map[string]*profile.Mapping
	samples map[string]*profile.Sample
	// labels holds the label maps of the samples by their content: the
	// samples with the same labels (one thread's, or one lock's, across
	// its stacks) share one pair of maps. A window's views hold tens of
	// thousands of samples over a few hundred label sets, and two maps
	// per sample would be two thirds of the views' memory (docs/cost.md).
	// A view's label maps are therefore read-only: code that changes a
	// sample's labels copies the profile first (profile.Copy).
	labels map[string]labelSet
	// key is the buffer the keys of locs and samples are built in: a map
	// looked up with string(key) copies nothing, so only a new entry's
	// key is allocated (building them with fmt would be most of what
	// taking a live snapshot allocates).
	key []byte
}

type funcKey struct{ name, file string }

// labelSet is the label maps samples share.
type labelSet struct {
	str map[string][]string
	num map[string][]int64
}

// newProfileBuilder starts a profile with the given sample types
// ({type, unit} pairs) covering [start, start+dur). The mapping of module
// main (when not "") comes first: pprof takes the first mapping for the
// main binary.
func newProfileBuilder(main string, types [][2]string, start time.Time, dur time.Duration) *profileBuilder {
	p := &profile.Profile{TimeNanos: start.UnixNano(), DurationNanos: int64(dur)}
	for _, t := range types {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: t[0], Unit: t[1]})
	}
	b := &profileBuilder{
		p:       p,
		funcs:   map[funcKey]*profile.Function{},
		locs:    map[string]*profile.Location{},
		maps:    map[string]*profile.Mapping{},
		samples: map[string]*profile.Sample{},
		labels:  map[string]labelSet{},
	}
	if main != "" && main != "." {
		b.mapping(recording.Frame{Module: main})
	}
	return b
}

// sampleLabels are the labels of one sample.
type sampleLabels struct {
	str map[string]string
	num map[string]int64
}

// add adds values for a stack (leaf first) with labels; values of a
// sample with the same stack and labels are summed.
func (b *profileBuilder) add(frames []recording.Frame, values []int64, l sampleLabels) {
	locs := b.locations(frames)
	key := b.key[:0]
	for _, loc := range locs {
		key = strconv.AppendUint(key, loc.ID, 10)
		key = append(key, ',')
	}
	key = append(key, '|')
	labelsAt := len(key)
	for _, k := range sortedKeys(l.str) {
		key = append(append(append(append(key, k...), '='), l.str[k]...), ';')
	}
	for _, k := range sortedKeys(l.num) {
		key = append(append(key, k...), '=')
		key = append(strconv.AppendInt(key, l.num[k], 10), ';')
	}
	b.key = key
	if s := b.samples[string(key)]; s != nil {
		for i := range s.Value {
			s.Value[i] += values[i]
		}
		return
	}
	s := &profile.Sample{Location: locs, Value: append([]int64(nil), values...)}
	ls, ok := b.labels[string(key[labelsAt:])]
	if !ok {
		if len(l.str) > 0 {
			ls.str = make(map[string][]string, len(l.str))
			for k, v := range l.str {
				ls.str[k] = []string{v}
			}
		}
		if len(l.num) > 0 {
			ls.num = make(map[string][]int64, len(l.num))
			for k, v := range l.num {
				ls.num[k] = []int64{v}
			}
		}
		b.labels[string(key[labelsAt:])] = ls
	}
	s.Label, s.NumLabel = ls.str, ls.num
	b.samples[string(key)] = s
	b.p.Sample = append(b.p.Sample, s)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// locations turns frames (leaf first, inlined frames before the physical
// frame they were expanded from, sharing its Addr) into pprof locations:
// one location per physical frame, its Line list innermost first.
func (b *profileBuilder) locations(frames []recording.Frame) []*profile.Location {
	var out []*profile.Location
	for i := 0; i < len(frames); {
		j := i
		for j < len(frames)-1 && frames[j].Inlined && frames[j+1].Addr == frames[i].Addr {
			j++
		}
		out = append(out, b.location(frames[i:j+1]))
		i = j + 1
	}
	return out
}

// location returns the location for one physical frame and the frames
// inlined into it (group[len-1] is the physical one).
func (b *profileBuilder) location(group []recording.Frame) *profile.Location {
	phys := group[len(group)-1]
	key := append(b.key[:0], phys.Module...)
	key = append(key, '|')
	key = strconv.AppendUint(key, phys.Addr, 16)
	key = append(key, '|')
	key = strconv.AppendBool(key, phys.Kernel)
	for _, f := range group {
		key = append(append(append(append(append(key, '|'), f.Func...), ':'), f.File...), ':')
		key = strconv.AppendInt(key, int64(f.Line), 10)
	}
	b.key = key
	if loc := b.locs[string(key)]; loc != nil {
		return loc
	}
	loc := &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: phys.Addr}
	if m := b.mapping(phys); m != nil {
		loc.Mapping = m
	}
	for _, f := range group {
		loc.Line = append(loc.Line, profile.Line{Function: b.function(f), Line: int64(f.Line)})
	}
	b.locs[string(key)] = loc
	b.p.Location = append(b.p.Location, loc)
	return loc
}

func (b *profileBuilder) function(f recording.Frame) *profile.Function {
	k := funcKey{f.Func, f.File}
	if fn := b.funcs[k]; fn != nil {
		return fn
	}
	fn := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: f.Func, SystemName: f.Func, Filename: f.File}
	b.funcs[k] = fn
	b.p.Function = append(b.p.Function, fn)
	return fn
}

// mapping returns a mapping per module (the kernel is "[kernel]"), marked
// as already symbolized so pprof never tries to symbolize it again.
func (b *profileBuilder) mapping(f recording.Frame) *profile.Mapping {
	name := f.Module
	if f.Kernel {
		name = "[kernel]"
	}
	if name == "" {
		return nil
	}
	if m := b.maps[name]; m != nil {
		return m
	}
	m := &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: name, HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true}
	b.maps[name] = m
	b.p.Mapping = append(b.p.Mapping, m)
	return m
}

// build returns the profile with samples in a stable order.
func (b *profileBuilder) build() *profile.Profile {
	return b.p
}

// syntheticFrame is a one-frame stack standing for data without a stack
// ("[short waits]"), shown as such in pprof.
func syntheticFrame(name string) []recording.Frame {
	return []recording.Frame{{Func: name}}
}
