package analyzer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/analyzer/goprofile"
	"github.com/contend-dev/contend/analyzer/java"
	"github.com/contend-dev/contend/analyzer/live"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// This file is the pipeline: the models are read, each path's steps run
// in the verdict order, and the findings of one array of locks are merged
// and everything is ranked. What each step decides, and where, is in
// docs/ARCHITECTURE.md.

// Options tune the analysis. It has no fields yet: the zero value is the
// one analysis there is, and the type keeps Analyze's signature stable for
// the options to come.
type Options struct{}

// ErrNoRecording is returned by Analyze when given no recording.
var ErrNoRecording = errors.New("analyze: no recording")

// Analyze runs every detector over rec and returns the ranked result. A
// recording whose fields would make the analysis unbounded (see
// core.CheckBounds) is refused with an error wrapping recording.ErrInvalid.
func Analyze(rec *recording.Recording, opts Options) (*core.Result, error) {
	if rec == nil {
		return nil, ErrNoRecording
	}
	if err := core.CheckBounds(rec); err != nil {
		return nil, err
	}
	out := &core.Output{Rec: rec, Res: &core.Result{Schema: core.SchemaVersion, Findings: []core.Finding{}}}
	out.Res.Target = targetOf(rec)
	for _, w := range rec.Meta.Warnings {
		out.Note(w)
	}
	if rec.IsLive() && rec.Meta.Duration == 0 {
		out.Note("the recording gives no duration (duration_ns 0): its rates and windows cannot be computed")
	}
	// The models, read once; a path without data is nil and its steps do
	// nothing.
	jd := core.BuildJavaData(rec)
	lv := live.New(rec, jd)
	gp := goprofile.New(rec)
	// The steps, in the verdict order of core/judge.go: the target, the
	// lock verdicts of every path, then busy-waits, then CPU saturation
	// (which leaves out the threads the spin findings claim), then the
	// rows the renderers list, and the data the recording lacks. Each step
	// writes to out; of what others wrote, a step reads only the target's
	// population (filled once), the notes (said once) and the number of
	// lock rows (bounded).
	lv.Target(out)
	lv.Locks(out)
	lv.Latches(out)
	lv.KernelLocks(out)
	gp.Locks(out)
	java.Locks(out, jd)
	lv.Spin(out)
	gp.Spin(out)
	lv.Saturation(out)
	lv.Rows(out)
	gp.Rows(out)
	lv.Missing(out)
	gp.Missing(out)
	noteCut(out, lv.StacksCut()+gp.StacksCut())
	mergeArrayLocks(out.Res)
	rank(out.Res)
	return out.Res, nil
}

// noteCut adds the note on stacks cut to MaxStackFrames, if any were.
func noteCut(out *core.Output, n int) {
	if n > 0 {
		out.Note(fmt.Sprintf("%d stacks were deeper than %d frames: the analysis kept the %d frames nearest the leaf of each (where the thread waits) and left out the callers above them", n, core.MaxStackFrames, core.MaxStackFrames))
	}
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

// mergeArrayLocks folds findings of one kind at one program point whose
// locks are elements of one global array (names "stripes+0x50 (prog)",
// "stripes+0x118 (prog)") into a single finding. A striped lock that still
// contends, because its holders get preempted, would otherwise list one
// finding per stripe; the reader wants one verdict about the array, with
// the figures added up. Locks of different arrays, or on the heap (no
// name), are never merged.
func mergeArrayLocks(r *core.Result) {
	groups, order := arrayGroups(r.Findings)
	drop := map[int]bool{}
	for _, k := range order {
		idx := groups[k]
		if len(idx) < 2 {
			continue
		}
		best := mergeArray(r, idx, k.array)
		for _, i := range idx {
			if i != best {
				drop[i] = true
			}
		}
	}
	if len(drop) == 0 {
		return
	}
	kept := r.Findings[:0]
	for i, f := range r.Findings {
		if !drop[i] {
			kept = append(kept, f)
		}
	}
	r.Findings = kept
}

// arrayKey is what findings share to be merged by mergeArrayLocks: their
// kind, their program point and the global array their lock lies in.
type arrayKey struct {
	kind  core.Kind
	point string
	array string
}

// arrayGroups returns the indexes in findings of the findings whose lock
// lies in a global array, grouped by arrayKey, and the keys in the order
// their first finding comes.
func arrayGroups(findings []core.Finding) (map[arrayKey][]int, []arrayKey) {
	groups := map[arrayKey][]int{}
	var order []arrayKey
	for i, f := range findings {
		base, ok := arrayOf(f.Lock)
		if !ok {
			continue
		}
		k := arrayKey{f.Kind, core.PointString(f.Point), base}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	return groups, order
}

// mergeArray merges the findings of r at indexes idx, whose locks lie in
// array, into the one of them with the highest score, and returns its
// index: the waiting, CPU and participants added up, the words of every
// lock, evidence naming the merged locks and a headline about the array.
// The others are left in place for the caller to drop.
func mergeArray(r *core.Result, idx []int, array string) int {
	best := idx[0]
	for _, i := range idx[1:] {
		if r.Findings[i].Score > r.Findings[best].Score {
			best = i
		}
	}
	merged := r.Findings[best]
	merged.Evidence = append([]core.Evidence(nil), merged.Evidence...)
	lock := *merged.Lock
	lock.Words = nil
	var names []string
	for _, i := range idx {
		f := r.Findings[i]
		if i != best {
			merged.WaitSeconds += f.WaitSeconds
			merged.CPUSeconds += f.CPUSeconds
			merged.Participants += f.Participants
		}
		lock.Words = append(lock.Words, f.Lock.Words...)
		if len(f.Lock.Words) == 0 && f.Lock.Address != "" {
			lock.Words = append(lock.Words, f.Lock.Address)
		}
		word, _ := core.SplitModule(f.Lock.Name)
		names = append(names, word)
	}
	if merged.Population > 0 && merged.Participants > merged.Population {
		merged.Participants = merged.Population
	}
	lock.Name = fmt.Sprintf("%d locks of %s", len(idx), array)
	merged.Lock = &lock
	core.Finish(&merged, r.Target.Duration, !merged.ParticipantsEstimated)
	shown := names
	if len(shown) > 4 {
		shown = append(shown[:4:4], "…")
	}
	var items []core.Item
	for _, n := range shown {
		items = append(items, core.Item{Name: n})
	}
	merged.Evidence = append([]core.Evidence{core.Fact("futex", core.EvArrayMerge, "locks", len(idx), "array", array,
		"point", core.PointString(merged.Point), "items", items)}, merged.Evidence...)
	arr, _ := core.SymbolModule(array)
	what := fmt.Sprintf("%d locks of one array, %s", len(idx), arr)
	if w := core.KindRules[merged.Kind].Merged; w != "" {
		what += " (" + w + ")"
	}
	merged.Headline = fmt.Sprintf("%s lost waiting for %s, at ONE program point: %s",
		units.Seconds(merged.WaitSeconds), what, core.PointString(merged.Point))
	r.Findings[best] = merged
	return best
}

// arrayOf returns "sym (module)" for a lock named "sym+0xoff (module)" or
// "sym (module)": the global object the lock word lies in.
func arrayOf(l *core.LockID) (string, bool) {
	if l == nil {
		return "", false
	}
	sym, mod := core.SymbolModule(l.Name)
	if sym == "" || mod == "" || strings.Contains(sym, " ") {
		return "", false
	}
	return sym + " (" + mod + ")", true
}
