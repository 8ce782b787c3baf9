package analyzer

import (
	"errors"
	"sort"

	"github.com/contend-dev/contend/recording"
)

// Options tune the analysis. It has no fields yet: the zero value is the
// one analysis there is, and the type keeps Analyze's signature stable for
// the options to come.
type Options struct{}

// detectors run in this order over one analysis. The model is built
// first (liveData and goData, once, on first use), then the verdicts in
// the order their causes take precedence: lock verdicts, then busy-waits,
// then CPU saturation, which counts only the threads no spin finding
// already explains; then the rows the renderers list, and the notes on
// missing data. Each reads the model, never another detector's helpers.
var detectors = []func(a *analysis){
	liveTargetStep,
	liveLocksStep,
	liveLatchStep,
	goLocksStep,
	javaLocksStep,
	liveSpinStep,
	goSpinStep,
	liveSaturationStep,
	liveRowsStep,
	goRowsStep,
	missingDataStep,
}

// analysis is the state shared by the detectors of one Analyze call.
type analysis struct {
	*output

	ld     *liveData
	ldDone bool
	// locks are the live recording's lock groups.
	locks []*lockGroup

	gd     *goData
	gdDone bool

	// jd is the recording's Java thread dumps (javaData), read on first
	// use.
	jd     *javaData
	jdDone bool

	// spinning holds the threads a live spin finding accounts for.
	spinning map[int]bool
}

// live returns the live recording read for the detectors, building it on
// first use; nil when the recording is not live.
func (a *analysis) live() *liveData {
	if !a.ldDone {
		a.ldDone = true
		if a.rec.IsLive() {
			a.ld = buildLiveData(a.rec)
			a.locks = a.ld.jvmLocks(a.ld.lockGroups(), a.javaData())
		}
	}
	return a.ld
}

// goData returns the recording's Go profiles folded for the Go detectors,
// building them on first use; nil when the recording has no Go data.
func (a *analysis) goData() *goData {
	if !a.gdDone {
		a.gd, a.gdDone = buildGoData(a.rec), true
	}
	return a.gd
}

func liveTargetStep(a *analysis) {
	if ld := a.live(); ld != nil {
		liveTarget(a.output, ld)
	}
}

func liveLocksStep(a *analysis) {
	if ld := a.live(); ld != nil {
		liveLockVerdicts(a.output, ld, a.locks)
	}
}

func liveLatchStep(a *analysis) {
	if ld := a.live(); ld != nil {
		liveLatch(a.output, ld)
	}
}

func liveSpinStep(a *analysis) {
	if ld := a.live(); ld != nil {
		a.spinning = liveSpin(a.output, ld)
		liveYield(a.output, ld, a.spinning)
	}
}

func liveSaturationStep(a *analysis) {
	if ld := a.live(); ld != nil {
		liveSaturation(a.output, ld, a.locks, a.spinning)
	}
}

func liveRowsStep(a *analysis) {
	if ld := a.live(); ld != nil {
		liveRows(a.output, ld, a.locks)
	}
}

func goLocksStep(a *analysis) {
	if g := a.goData(); g != nil {
		detectGoLocks(a.output, g)
	}
}

func goSpinStep(a *analysis) {
	if g := a.goData(); g != nil {
		detectGoSpin(a.output, g)
	}
}

func goRowsStep(a *analysis) {
	if g := a.goData(); g != nil {
		goPoints(a.output, g)
	}
}

// javaData returns the recording's Java thread dumps read for the
// detectors, building them on first use; nil when there are none.
func (a *analysis) javaData() *javaData {
	if !a.jdDone {
		a.jd, a.jdDone = buildJavaData(a.rec), true
	}
	return a.jd
}

func javaLocksStep(a *analysis) {
	javaLocks(a.output, a.javaData())
}

// missingDataStep lists the data the analysis needed and did not have.
// Each entry is a blind spot: a convoy of that kind cannot be seen in this
// input, so "no finding" must not be read as "no contention".
func missingDataStep(a *analysis) {
	rec := a.rec
	if rec.IsLive() {
		liveMissing(a.output, rec)
	}
	if g := a.goData(); g != nil {
		goMissing(a.output, g)
	}
}

// ErrNoRecording is returned by Analyze when given no recording.
var ErrNoRecording = errors.New("analyze: no recording")

// Analyze runs every detector over rec and returns the ranked result. A
// recording whose fields would make the analysis unbounded (see
// checkBounds) is refused with an error wrapping recording.ErrInvalid.
func Analyze(rec *recording.Recording, opts Options) (*Result, error) {
	if rec == nil {
		return nil, ErrNoRecording
	}
	if err := checkBounds(rec); err != nil {
		return nil, err
	}
	a := &analysis{output: &output{rec: rec, res: &Result{Schema: SchemaVersion, Findings: []Finding{}}}}
	a.res.Target = targetOf(rec)
	for _, w := range rec.Meta.Warnings {
		a.note(w)
	}
	if rec.IsLive() && rec.Meta.Duration == 0 {
		a.note("the recording gives no duration (duration_ns 0): its rates and windows cannot be computed")
	}
	for _, d := range detectors {
		d(a)
	}
	a.noteCut()
	mergeArrayLocks(a.res)
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

// rank orders findings by score (time lost plus CPU burned), highest
// first; findings without measured time (a single goroutine dump) follow by
// participants; the headline breaks ties so output is deterministic. Idle
// groups, points and locks are ordered the same way.
//
// The rule between a lock and CPU saturation, when both hold: each is
// weighed by the time it alone explains. A lock weighs its waiting (its
// waiters' hand-off run-queue time included); saturation weighs the
// run-queue time outside lock waits that the process's own threads
// beyond its CPUs explain (satRankSeconds), not the time its threads
// queue behind other processes. So a lock whose waiting is most of the
// lost time comes first, and saturation leads only when the process's
// own runnable-without-a-CPU time is the larger part; a busier machine
// adds to neither side.
func rank(r *Result) {
	sortBy(r.Findings, func(fi, fj Finding) bool {
		if fi.Score != fj.Score {
			return fi.Score > fj.Score
		}
		if fi.Participants != fj.Participants {
			return fi.Participants > fj.Participants
		}
		return fi.Headline < fj.Headline
	})
	sortBy(r.Idle, func(a, b IdleGroup) bool {
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.WaitSeconds != b.WaitSeconds {
			return a.WaitSeconds > b.WaitSeconds
		}
		return pointString(a.Point)+a.Reason < pointString(b.Point)+b.Reason
	})
	sortBy(r.Points, func(a, b PointRow) bool {
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if sa, sb := a.WaitSeconds+a.CPUSeconds, b.WaitSeconds+b.CPUSeconds; sa != sb {
			return sa > sb
		}
		return pointString(a.Point) < pointString(b.Point)
	})
	sortBy(r.Locks, func(a, b LockRow) bool {
		if a.WaitSeconds != b.WaitSeconds {
			return a.WaitSeconds > b.WaitSeconds
		}
		if a.DistinctWaiters != b.DistinctWaiters {
			return a.DistinctWaiters > b.DistinctWaiters
		}
		return a.Lock.Name < b.Lock.Name
	})
}

// sortBy sorts s stably by less.
func sortBy[T any](s []T, less func(a, b T) bool) {
	sort.SliceStable(s, func(i, j int) bool { return less(s[i], s[j]) })
}
