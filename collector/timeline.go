package collector

import (
	"time"

	"github.com/contend-dev/contend/recording"
)

// sliceTimeline returns the part of tl sampled in [from, to) (offsets from
// the timeline's origin), re-indexed so that instant 0 is the first
// instant at or after from. The window's recording starts at from, so its
// instants are offset from Meta.Start by less than one interval.
func sliceTimeline(tl *recording.Timeline, from, to time.Duration) *recording.Timeline {
	if tl == nil || tl.Interval <= 0 {
		return tl
	}
	first := int((from + tl.Interval - 1) / tl.Interval)
	end := int((to + tl.Interval - 1) / tl.Interval)
	if end > tl.Samples {
		end = tl.Samples
	}
	out := &recording.Timeline{Interval: tl.Interval, ClockTicks: tl.ClockTicks}
	if end <= first {
		return out
	}
	out.Samples = end - first
	for _, s := range tl.Threads {
		lo := max(first, s.First)
		hi := min(end, s.First+len(s.States))
		if hi <= lo {
			continue
		}
		a, b := lo-s.First, hi-s.First
		out.Threads = append(out.Threads, recording.ThreadSeries{
			TID:         s.TID,
			Comm:        s.Comm,
			First:       lo - first,
			States:      s.States[a:b],
			UTime:       clip(s.UTime, a, b),
			STime:       clip(s.STime, a, b),
			Voluntary:   clip(s.Voluntary, a, b),
			Involuntary: clip(s.Involuntary, a, b),
		})
	}
	return out
}

// clip returns a copy of v[a:b], tolerating a v shorter than b.
func clip(v []uint64, a, b int) []uint64 {
	if a >= len(v) {
		return nil
	}
	return append([]uint64(nil), v[a:min(b, len(v))]...)
}
