package analyzer

import (
	"sort"

	"github.com/contend-dev/contend/recording"
)

// Options tune the analysis. The zero value is the default analysis.
type Options struct {
	// Window restricts a live recording's event-based analysis to its last
	// Window of time; 0 analyzes everything.
	// (Profiles and locks in a windowed recording are already windowed by
	// the collector.)
}

// detector inspects the recording and appends findings, idle groups, rows
// and notes to the result. Detectors run in registration order; each file
// of detectors registers itself in an init function.
type detector struct {
	name string
	run  func(a *analysis)
}

var detectors []detector

// register adds a detector; called from init functions.
func register(name string, run func(a *analysis)) {
	detectors = append(detectors, detector{name: name, run: run})
}

// analysis is the state shared by the detectors of one Analyze call.
type analysis struct {
	rec  *recording.Recording
	opts Options
	res  *Result
}

// Analyze runs every detector over rec and returns the ranked result.
func Analyze(rec *recording.Recording, opts Options) (*Result, error) {
	a := &analysis{rec: rec, opts: opts, res: &Result{Schema: SchemaVersion}}
	a.res.Target = targetOf(rec)
	for _, d := range detectors {
		d.run(a)
	}
	rank(a.res)
	return a.res, nil
}

func targetOf(rec *recording.Recording) Target {
	t := Target{
		PID:      rec.Meta.PID,
		Comm:     rec.Meta.Comm,
		Source:   rec.Meta.Source,
		Partial:  rec.Meta.Partial,
		Duration: rec.Meta.Duration,
		NumCPU:   rec.Meta.NumCPU,
	}
	for _, in := range rec.Meta.Inputs {
		t.Inputs = append(t.Inputs, in.Path)
	}
	return t
}

// rank orders findings by score, highest first, with a stable tie-break on
// the headline so output is deterministic.
func rank(r *Result) {
	sort.SliceStable(r.Findings, func(i, j int) bool {
		fi, fj := r.Findings[i], r.Findings[j]
		if fi.Score != fj.Score {
			return fi.Score > fj.Score
		}
		return fi.Headline < fj.Headline
	})
}
