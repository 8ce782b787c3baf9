package core

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/contend-dev/contend/internal/units"
)

// This file holds what every detector (Go or live) shares to build a
// finding: the thresholds that make a wait significant or a convoy, the
// confidence rule, headline and figure formatting, and the scoring.

// SignificantWait reports whether waitNS of lock waiting over duration d
// (0 when unknown) is worth a finding on its own (see minMeanWaiting and
// minWaitUnknownDuration).
func SignificantWait(waitNS int64, d time.Duration) bool {
	if d > 0 {
		return float64(waitNS)/float64(d) >= minMeanWaiting
	}
	return time.Duration(waitNS) >= minWaitUnknownDuration
}

// Significant is the one gate a lock's waiting passes to be worth a
// verdict: worth a finding on its own (SignificantWait), at least
// MinShareOfAllWaiting of all the lock waiting in the input
// (totalWaitNS), and, when the duration and the working population in
// thread or goroutine equivalents (active, 0 when unknown) are known, at
// least MinShareOfActive of the workers' time.
func Significant(waitNS, totalWaitNS int64, d time.Duration, active float64) bool {
	if !SignificantWait(waitNS, d) || float64(waitNS) < MinShareOfAllWaiting*float64(totalWaitNS) {
		return false
	}
	return d <= 0 || active <= 0 || float64(waitNS)/float64(d) >= MinShareOfActive*active
}

// ConfidenceOf turns the evidence behind a verdict into a confidence.
// High: at least two independent sources (e.g. a lock profile and a
// goroutine dump, or a dump and a CPU profile) agree and nothing rests on a
// guess. Medium: one strong source, or two with a guess in between (a
// Lock/Unlock pairing through a shared caller). Low: the verdict rests on
// an inference only (one source and a guess, a single snapshot, no
// duration and no goroutine counts).
func ConfidenceOf(sources int, guess bool) Confidence {
	switch {
	case sources >= 2 && !guess:
		return ConfidenceHigh
	case sources >= 2 || (sources == 1 && !guess):
		return ConfidenceMedium
	}
	return ConfidenceLow
}

// Finish fills the derived fields of f: Score (seconds lost waiting plus
// CPU seconds burned) and WaitShare, the share of the participants' wall
// time spent waiting, which is only meaningful when the participants were
// counted (not estimated from the wait itself) and the duration is known.
func Finish(f *Finding, d time.Duration, counted bool) {
	f.Score = f.WaitSeconds + f.CPUSeconds
	f.ParticipantsEstimated = !counted && f.Participants > 0
	if d > 0 && counted && f.Participants > 0 && f.WaitSeconds > 0 {
		f.WaitShare = math.Min(1, f.WaitSeconds/(d.Seconds()*float64(f.Participants)))
	}
}

// Participants renders who takes part: "37 of 52 goroutines" when counted,
// "on average 28.3 goroutines" when estimated from Little's law. A count
// of one uses the singular of unit ("1 goroutine").
func Participants(n, population int, unit string, counted bool, mean float64) string {
	if n == 1 && population == 0 && strings.HasSuffix(unit, "s") && (counted || mean == 0) {
		unit = strings.TrimSuffix(unit, "s")
	}
	if !counted {
		if mean > 0 {
			return fmt.Sprintf("on average %s %s", units.Float(mean), unit)
		}
		return fmt.Sprintf("%d %s", n, unit)
	}
	if population > 0 {
		return fmt.Sprintf("%d of %d %s", n, population, unit)
	}
	return fmt.Sprintf("%d %s", n, unit)
}

// OnePoint builds the classic headline: "<who> <verb> at ONE program
// point: <what>".
func OnePoint(who, verb, what string) string {
	return fmt.Sprintf("%s %s at ONE program point: %s", who, verb, what)
}

// stateMix renders a state count map, largest first: "48 sync.Mutex.Lock,
// 2 runnable".
func stateMix(states map[string]int) string {
	keys := ByCount(states)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", states[k], k)
	}
	return strings.Join(parts, ", ")
}

// ByCount returns the keys of m, largest value first, ties by key.
func ByCount[V int | int64](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	SortBy(keys, func(a, b string) bool {
		if m[a] != m[b] {
			return m[a] > m[b]
		}
		return a < b
	})
	return keys
}

// ShortFunc shortens a function name as the headlines do: a Go name keeps
// only its package's last path element ("github.com/a/b/store.(*S).Save"
// → "store.(*S).Save"); native names stay whole.
func ShortFunc(fn string) string { return ShortFuncName(fn) }
