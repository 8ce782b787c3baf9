package recording

import "time"

// CoverageBin is the grid on which Coverage measures a recording: the
// collector's default /proc sampling interval, so that a timeline sampled
// at that interval covers every bin it spans, and an event log covers a
// bin as soon as it holds one event there. A coarser grid would let a log
// that stops early still cover the last bin; a finer one would count the
// gaps between the samples of an intact timeline as holes.
const CoverageBin = 100 * time.Millisecond

// Coverage is how much of a recording's stated duration its time-resolved
// parts cover, each as a share of the CoverageBin bins of
// [0, Meta.Duration): Events, the bins in which the event log holds an
// event (begun, ended or in progress); Timeline, the bins spanned by /proc
// sample instants at which at least one thread was really sampled. A part
// the recording lacks covers nothing.
type Coverage struct {
	Events, Timeline float64
}

// Coverage measures r; see the type. A recording without a duration
// covers nothing.
func (r *Recording) Coverage() Coverage {
	n := int((r.Meta.Duration + CoverageBin - 1) / CoverageBin)
	if n <= 0 {
		return Coverage{}
	}
	bin := int64(CoverageBin)
	// mark sets the bins that [from, to] touches, clamped to the duration.
	mark := func(hit []bool, from, to int64) {
		lo, hi := max(from/bin, 0), min(to/bin, int64(n-1))
		for i := lo; i <= hi; i++ {
			hit[i] = true
		}
	}
	share := func(hit []bool) float64 {
		k := 0
		for _, h := range hit {
			if h {
				k++
			}
		}
		return float64(k) / float64(n)
	}
	var c Coverage
	events := make([]bool, n)
	for _, e := range r.Events {
		mark(events, e.T, e.End())
	}
	c.Events = share(events)
	if t := r.Threads; t != nil && t.Interval > 0 {
		samples := make([]bool, n)
		for i := range t.Samples {
			if t.sampledAt(i) {
				from := int64(i) * int64(t.Interval)
				// A sample stands for the interval up to the next one.
				mark(samples, from, from+int64(t.Interval)-1)
			}
		}
		c.Timeline = share(samples)
	}
	return c
}

// sampledAt reports whether at least one thread was really sampled at
// instant i.
func (t *Timeline) sampledAt(i int) bool {
	for k := range t.Threads {
		s := &t.Threads[k]
		if j, ok := s.At(i); ok && s.States[j] != NotSampled {
			return true
		}
	}
	return false
}
