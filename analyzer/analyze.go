package analyzer

import (
	"errors"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/analyzer/goprofile"
	"github.com/contend-dev/contend/analyzer/java"
	"github.com/contend-dev/contend/analyzer/live"
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
	*core.Output

	ld     *live.LiveData
	ldDone bool
	// locks are the live recording's lock groups.
	locks []*live.LockGroup

	gd     *goprofile.GoData
	gdDone bool

	// jd is the recording's Java thread dumps (javaData), read on first
	// use.
	jd     *core.JavaData
	jdDone bool

	// spinning holds the threads a live spin finding accounts for.
	spinning map[int]bool
}

// live returns the live recording read for the detectors, building it on
// first use; nil when the recording is not live.
func (a *analysis) live() *live.LiveData {
	if !a.ldDone {
		a.ldDone = true
		if a.Rec.IsLive() {
			a.ld = live.BuildLiveData(a.Rec)
			a.locks = a.ld.JvmLocks(a.ld.LockGroups(), a.javaData())
		}
	}
	return a.ld
}

// goData returns the recording's Go profiles folded for the Go detectors,
// building them on first use; nil when the recording has no Go data.
func (a *analysis) goData() *goprofile.GoData {
	if !a.gdDone {
		a.gd, a.gdDone = goprofile.BuildGoData(a.Rec), true
	}
	return a.gd
}

func liveTargetStep(a *analysis) {
	if ld := a.live(); ld != nil {
		live.LiveTarget(a.Output, ld)
	}
}

func liveLocksStep(a *analysis) {
	if ld := a.live(); ld != nil {
		live.LiveLockVerdicts(a.Output, ld, a.locks)
	}
}

func liveLatchStep(a *analysis) {
	if ld := a.live(); ld != nil {
		live.LiveLatch(a.Output, ld)
	}
}

func liveSpinStep(a *analysis) {
	if ld := a.live(); ld != nil {
		a.spinning = live.LiveSpin(a.Output, ld)
		live.LiveYield(a.Output, ld, a.spinning)
	}
}

func liveSaturationStep(a *analysis) {
	if ld := a.live(); ld != nil {
		live.LiveSaturation(a.Output, ld, a.locks, a.spinning)
	}
}

func liveRowsStep(a *analysis) {
	if ld := a.live(); ld != nil {
		live.LiveRows(a.Output, ld, a.locks)
	}
}

func goLocksStep(a *analysis) {
	if g := a.goData(); g != nil {
		goprofile.DetectGoLocks(a.Output, g)
	}
}

func goSpinStep(a *analysis) {
	if g := a.goData(); g != nil {
		goprofile.DetectGoSpin(a.Output, g)
	}
}

func goRowsStep(a *analysis) {
	if g := a.goData(); g != nil {
		goprofile.GoPoints(a.Output, g)
	}
}

// javaData returns the recording's Java thread dumps read for the
// detectors, building them on first use; nil when there are none.
func (a *analysis) javaData() *core.JavaData {
	if !a.jdDone {
		a.jd, a.jdDone = core.BuildJavaData(a.Rec), true
	}
	return a.jd
}

func javaLocksStep(a *analysis) {
	java.JavaLocks(a.Output, a.javaData())
}

// missingDataStep lists the data the analysis needed and did not have.
// Each entry is a blind spot: a convoy of that kind cannot be seen in this
// input, so "no finding" must not be read as "no contention".
func missingDataStep(a *analysis) {
	rec := a.Rec
	if rec.IsLive() {
		live.LiveMissing(a.Output, rec)
	}
	if g := a.goData(); g != nil {
		goprofile.GoMissing(a.Output, g)
	}
}

// ErrNoRecording is returned by Analyze when given no recording.
var ErrNoRecording = errors.New("analyze: no recording")

// Analyze runs every detector over rec and returns the ranked result. A
// recording whose fields would make the analysis unbounded (see
// checkBounds) is refused with an error wrapping recording.ErrInvalid.
func Analyze(rec *recording.Recording, opts Options) (*core.Result, error) {
	if rec == nil {
		return nil, ErrNoRecording
	}
	if err := core.CheckBounds(rec); err != nil {
		return nil, err
	}
	a := &analysis{Output: &core.Output{Rec: rec, Res: &core.Result{Schema: core.SchemaVersion, Findings: []core.Finding{}}}}
	a.Res.Target = targetOf(rec)
	for _, w := range rec.Meta.Warnings {
		a.Note(w)
	}
	if rec.IsLive() && rec.Meta.Duration == 0 {
		a.Note("the recording gives no duration (duration_ns 0): its rates and windows cannot be computed")
	}
	for _, d := range detectors {
		d(a)
	}
	a.noteCut()
	mergeArrayLocks(a.Res)
	rank(a.Res)
	return a.Res, nil
}

func targetOf(rec *recording.Recording) core.Target {
	t := core.Target{
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
func rank(r *core.Result) {
	core.SortBy(r.Findings, func(fi, fj core.Finding) bool {
		if fi.Score != fj.Score {
			return fi.Score > fj.Score
		}
		if fi.Participants != fj.Participants {
			return fi.Participants > fj.Participants
		}
		return fi.Headline < fj.Headline
	})
	core.SortBy(r.Idle, func(a, b core.IdleGroup) bool {
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.WaitSeconds != b.WaitSeconds {
			return a.WaitSeconds > b.WaitSeconds
		}
		return core.PointString(a.Point)+a.Reason < core.PointString(b.Point)+b.Reason
	})
	core.SortBy(r.Points, func(a, b core.PointRow) bool {
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if sa, sb := a.WaitSeconds+a.CPUSeconds, b.WaitSeconds+b.CPUSeconds; sa != sb {
			return sa > sb
		}
		return core.PointString(a.Point) < core.PointString(b.Point)
	})
	core.SortBy(r.Locks, func(a, b core.LockRow) bool {
		if a.WaitSeconds != b.WaitSeconds {
			return a.WaitSeconds > b.WaitSeconds
		}
		if a.DistinctWaiters != b.DistinctWaiters {
			return a.DistinctWaiters > b.DistinctWaiters
		}
		return a.Lock.Name < b.Lock.Name
	})
}
