package analyzer

import (
	"fmt"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/internal/units"
)

// mergeArrayLocks folds findings of one kind at one program point whose
// locks are elements of one global array (names "stripes+0x50 (prog)",
// "stripes+0x118 (prog)") into a single finding. A striped lock that still
// contends, because its holders get preempted, would otherwise list one
// finding per stripe; the reader wants one verdict about the array, with
// the figures added up. Locks of different arrays, or on the heap (no
// name), are never merged.
func mergeArrayLocks(r *core.Result) {
	type key struct {
		kind  core.Kind
		point string
		array string
	}
	groups := map[key][]int{}
	var order []key
	for i, f := range r.Findings {
		base, ok := arrayOf(f.Lock)
		if !ok {
			continue
		}
		k := key{f.Kind, core.PointString(f.Point), base}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	drop := map[int]bool{}
	for _, k := range order {
		idx := groups[k]
		if len(idx) < 2 {
			continue
		}
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
				drop[i] = true
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
		lock.Name = fmt.Sprintf("%d locks of %s", len(idx), k.array)
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
		merged.Evidence = append([]core.Evidence{core.Fact("futex", core.EvArrayMerge, "locks", len(idx), "array", k.array,
			"point", core.PointString(merged.Point), "items", items)}, merged.Evidence...)
		arr, _ := core.SymbolModule(k.array)
		what := fmt.Sprintf("%d locks of one array, %s", len(idx), arr)
		if w := kindWords(merged.Kind); w != "" {
			what += " (" + w + ")"
		}
		merged.Headline = fmt.Sprintf("%s lost waiting for %s, at ONE program point: %s",
			units.Seconds(merged.WaitSeconds), what, core.PointString(merged.Point))
		r.Findings[best] = merged
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

// kindWords describes each lock of a merged finding by its kind, "" for
// plain contention.
func kindWords(k core.Kind) string {
	switch k {
	case core.KindLockConvoy:
		return "a convoy on each"
	case core.KindSerializedWriter:
		return "each handed over at a high rate"
	case core.KindIOUnderLock:
		return "each held across I/O"
	case core.KindSpinConvoy:
		return "each spun on"
	}
	return ""
}
