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
	if first == 0 && end == tl.Samples {
		return tl // the whole timeline: no copy
	}
	out := &recording.Timeline{Interval: tl.Interval, ClockTicks: tl.ClockTicks, DroppedThreads: tl.DroppedThreads}
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
			PID:         s.PID,
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

// mergeTimelines joins the timelines of several processes sampled from the
// same origin into one: the series of all, at the coarsest interval among
// them (a timeline that halved its resolution to stay bounded sets it for
// all).
func mergeTimelines(tls []*recording.Timeline) *recording.Timeline {
	if len(tls) == 1 {
		return tls[0]
	}
	out := &recording.Timeline{}
	for _, tl := range tls {
		out.Interval = max(out.Interval, tl.Interval)
		if out.ClockTicks == 0 {
			out.ClockTicks = tl.ClockTicks
		}
	}
	for _, tl := range tls {
		f := 1
		if tl.Interval > 0 {
			f = int(out.Interval / tl.Interval)
		}
		samples := tl.Samples
		for _, s := range tl.Threads {
			if f > 1 {
				s = coarsen(s, f)
			}
			out.Threads = append(out.Threads, s)
		}
		if f > 1 {
			samples = (samples + f - 1) / f
		}
		out.Samples = max(out.Samples, samples)
		out.DroppedThreads += tl.DroppedThreads
	}
	return out
}

// coarsen keeps the samples of s at instants that are multiples of f,
// renumbered i/f.
func coarsen(s recording.ThreadSeries, f int) recording.ThreadSeries {
	out := recording.ThreadSeries{PID: s.PID, TID: s.TID, Comm: s.Comm, First: (s.First + f - 1) / f}
	var st []byte
	for k := 0; k < len(s.States); k++ {
		if (s.First+k)%f != 0 {
			continue
		}
		st = append(st, s.States[k])
		out.UTime = append(out.UTime, at(s.UTime, k))
		out.STime = append(out.STime, at(s.STime, k))
		out.Voluntary = append(out.Voluntary, at(s.Voluntary, k))
		out.Involuntary = append(out.Involuntary, at(s.Involuntary, k))
	}
	out.States = string(st)
	return out
}

// at returns v[k], 0 past its end.
func at(v []uint64, k int) uint64 {
	if k < len(v) {
		return v[k]
	}
	return 0
}
