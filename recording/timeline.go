package recording

import (
	"fmt"
	"sort"
	"time"
)

// NotSampled is the state letter of an instant at which a thread's series
// has no real sample: the sampler fell behind and skipped that instant. Its
// cumulative counters repeat the previous sample's, so deltas over a window
// stay right; state counts leave it out.
const NotSampled = '?'

// StateCategory maps a /proc state letter to one of the State* constants.
// /proc cannot tell a thread on a CPU from one waiting for a CPU: both are
// 'R', reported as StateRunnable. Idle kernel threads ('I') count as
// sleeping. NotSampled returns "".
func StateCategory(letter byte) string {
	switch letter {
	case 'R':
		return StateRunnable
	case 'S', 'I':
		return StateSleeping
	case 'D':
		return StateUninterruptible
	case NotSampled:
		return ""
	default:
		return StateOther
	}
}

// At returns the position in s's slices of sample instant i, and false when
// the thread has no sample there (not born yet, or gone).
func (s *ThreadSeries) At(i int) (int, bool) {
	k := i - s.First
	if k < 0 || k >= len(s.States) {
		return 0, false
	}
	return k, true
}

// Last returns the index of the last sample instant the thread was seen at.
func (s *ThreadSeries) Last() int { return s.First + len(s.States) - 1 }

// StateCounts counts the threads of one sample instant by state category.
type StateCounts struct {
	// Threads is the number of threads alive at the instant, whether
	// sampled or not.
	Threads         int
	Runnable        int
	Sleeping        int
	Uninterruptible int
	Other           int
	// Unsampled counts threads whose instant is NotSampled.
	Unsampled int
}

// StatesAt counts the threads of sample instant i by state.
func (t *Timeline) StatesAt(i int) StateCounts {
	var c StateCounts
	if t == nil {
		return c
	}
	for j := range t.Threads {
		s := &t.Threads[j]
		k, ok := s.At(i)
		if !ok {
			continue
		}
		c.Threads++
		switch StateCategory(s.States[k]) {
		case StateRunnable:
			c.Runnable++
		case StateSleeping:
			c.Sleeping++
		case StateUninterruptible:
			c.Uninterruptible++
		case StateOther:
			c.Other++
		default:
			c.Unsampled++
		}
	}
	return c
}

// ThreadCount returns the number of threads alive at sample instant i.
func (t *Timeline) ThreadCount(i int) int { return t.StatesAt(i).Threads }

// LastInstant returns the index of the latest sample instant, or -1 when
// the timeline has no samples.
func (t *Timeline) LastInstant() int {
	if t == nil {
		return -1
	}
	return t.Samples - 1
}

// RunnableSeries returns, for each sample instant, how many threads were
// runnable ('R'): the curve that shows a spin convoy or an oversubscribed
// pool.
func (t *Timeline) RunnableSeries() []int {
	if t == nil {
		return nil
	}
	out := make([]int, t.Samples)
	for j := range t.Threads {
		s := &t.Threads[j]
		for k := 0; k < len(s.States); k++ {
			if i := s.First + k; i < len(out) && s.States[k] == 'R' {
				out[i]++
			}
		}
	}
	return out
}

// Window returns the sample instants [from, to] that cover the last d of
// the timeline (at least one interval when two samples exist). ok is false
// when the timeline has fewer than two samples.
func (t *Timeline) Window(d time.Duration) (from, to int, ok bool) {
	if t == nil || t.Samples < 2 || t.Interval <= 0 {
		return 0, 0, false
	}
	to = t.Samples - 1
	n := max(int(d/t.Interval), 1)
	return max(to-n, 0), to, true
}

// ThreadUsage is one thread's CPU time and context switches over a window
// of sample instants. Times stay in clock ticks; Timeline.Seconds converts.
type ThreadUsage struct {
	TID  int
	Comm string
	// UTime and STime are the clock ticks spent in user and kernel mode.
	UTime, STime uint64
	// Voluntary and Involuntary are the context switches made.
	Voluntary, Involuntary uint64
}

// Ticks returns user plus system clock ticks.
func (u ThreadUsage) Ticks() uint64 { return u.UTime + u.STime }

// Usage returns each thread's CPU ticks and context switches between
// sample instants from and to (from < to), busiest first. A thread born
// after from counts from zero (it had used nothing at birth); a thread that
// ended before to counts up to its last sample.
func (t *Timeline) Usage(from, to int) []ThreadUsage {
	if t == nil || from >= to {
		return nil
	}
	var out []ThreadUsage
	for j := range t.Threads {
		if u, ok := t.Threads[j].Usage(from, to); ok {
			out = append(out, u)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Ticks() != out[b].Ticks() {
			return out[a].Ticks() > out[b].Ticks()
		}
		return out[a].TID < out[b].TID
	})
	return out
}

// Usage returns the CPU ticks and context switches the thread used
// between sample instants from and to (from < to), as Timeline.Usage
// counts them; false when it was not alive in the window.
func (s *ThreadSeries) Usage(from, to int) (ThreadUsage, bool) {
	if s.First > to || s.Last() < from || len(s.States) == 0 {
		return ThreadUsage{}, false
	}
	end := min(to, s.Last()) - s.First
	u := ThreadUsage{
		TID:         s.TID,
		Comm:        s.Comm,
		UTime:       at(s.UTime, end),
		STime:       at(s.STime, end),
		Voluntary:   at(s.Voluntary, end),
		Involuntary: at(s.Involuntary, end),
	}
	if s.First <= from {
		// The thread existed at from: subtract what it had used by then.
		begin := from - s.First
		u.UTime = sub(u.UTime, at(s.UTime, begin))
		u.STime = sub(u.STime, at(s.STime, begin))
		u.Voluntary = sub(u.Voluntary, at(s.Voluntary, begin))
		u.Involuntary = sub(u.Involuntary, at(s.Involuntary, begin))
	}
	return u, true
}

// CPUPercent returns the CPU the whole process used between sample
// instants from and to, in percent of one CPU (200 = two CPUs busy). It is
// 0 for an empty or inverted window.
func (t *Timeline) CPUPercent(from, to int) float64 {
	if t == nil || from >= to || t.Interval <= 0 {
		return 0
	}
	var ticks uint64
	for _, u := range t.Usage(from, to) {
		ticks += u.Ticks()
	}
	wall := time.Duration(to-from) * t.Interval
	return 100 * t.Seconds(ticks) / wall.Seconds()
}

// Seconds converts clock ticks of this timeline to seconds.
func (t *Timeline) Seconds(ticks uint64) float64 {
	hz := t.ClockTicks
	if hz <= 0 {
		// USER_HZ is 100 on every Linux architecture Go supports; a
		// timeline written without the field used it.
		hz = 100
	}
	return float64(ticks) / float64(hz)
}

// at returns v[k], or 0 when a malformed series is shorter than its states.
func at(v []uint64, k int) uint64 {
	if k < 0 || k >= len(v) {
		return 0
	}
	return v[k]
}

// sub returns a-b, or 0 when a counter went backwards (a reused thread id
// read as one series).
func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// MaxTimelineSamples bounds Timeline.Samples in a recording that is read:
// readers allocate per-instant series (RunnableSeries), so the count is
// memory. 1<<22 instants are almost five days at the default 100 ms
// interval, longer than any recording, and cost 32 MiB per series.
const MaxTimelineSamples = 1 << 22

// Validate checks what the readers of t rely on: non-negative settings, a
// sample count within MaxTimelineSamples, and every thread's series
// inside the sample instants, its counters no longer than its states. A
// timeline read from a file passes it before it is used; the error names
// the thread at fault.
func (t *Timeline) Validate() error {
	switch {
	case t.Interval < 0:
		return fmt.Errorf("interval %d is negative", t.Interval)
	case t.ClockTicks < 0:
		return fmt.Errorf("clock_ticks %d is negative", t.ClockTicks)
	case t.Samples < 0 || t.Samples > MaxTimelineSamples:
		return fmt.Errorf("samples %d is outside 0…%d", t.Samples, MaxTimelineSamples)
	}
	for i := range t.Threads {
		s := &t.Threads[i]
		switch {
		case s.First < 0:
			return fmt.Errorf("thread %d (tid %d): first %d is negative", i, s.TID, s.First)
		case s.First > t.Samples || len(s.States) > t.Samples-s.First:
			return fmt.Errorf("thread %d (tid %d): %d states from instant %d run past the %d samples", i, s.TID, len(s.States), s.First, t.Samples)
		}
		for _, c := range []struct {
			name string
			v    []uint64
		}{{"utime", s.UTime}, {"stime", s.STime}, {"voluntary", s.Voluntary}, {"involuntary", s.Involuntary}} {
			if len(c.v) > len(s.States) {
				return fmt.Errorf("thread %d (tid %d): %d %s values for %d states", i, s.TID, len(c.v), c.name, len(s.States))
			}
		}
	}
	return nil
}
