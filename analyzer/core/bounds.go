package core

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/contend-dev/contend/recording"
	"github.com/google/pprof/profile"
)

// The analysis works on what a recording claims, and a recording can lie:
// a meta.json duration of 2^63-1 ns, a timeline of millions of instants, a
// profile whose few hundred KiB of gzip hold stacks of 100,000 frames. The
// readers bound what they parse (goprof's budget); these bound what the
// analysis derives from it, so that its memory and time stay a small
// multiple of the input's, whatever the fields say.
const (
	// MaxRecordingDuration is the longest recording the analysis accepts.
	// contend records for minutes (the agent cuts windows of its own); a
	// month is far beyond any real recording and keeps every series cut
	// from the duration within maxSeriesWindows at the default 1 s
	// window of compare. A longer duration_ns is a damaged or crafted
	// meta.json, refused.
	MaxRecordingDuration = 31 * 24 * time.Hour

	// MaxStackFrames is how many frames of one stack the analysis keeps,
	// counted from the leaf: the verdict is about where a thread waits,
	// which is at the leaf end. Every source contend reads stops earlier
	// by default (the kernel's stack maps at 127 frames, Go's runtime
	// profiles at 128, goroutine dumps at 100 before "additional frames
	// elided"); deeper stacks are recursion or crafted, and keeping them
	// whole made a 370 KB profile cost gigabytes. Cut stacks are counted
	// in a note.
	MaxStackFrames = 512

	// MaxAnalysisFrames bounds the frames the analysis expands from all
	// the profiles of one recording (each sample counts its frames up to
	// MaxStackFrames, and at least one): about 64 bytes each once
	// expanded, 4M frames are at most a few hundred MiB, the order of
	// goprof's parse budget. The fixtures' largest recording expands
	// under 100,000. A recording over it is refused with the figure.
	MaxAnalysisFrames = 1 << 22

	// MaxSeriesWindows bounds the windows of one series (LockSeries,
	// SeriesOf): 8 bytes each, 32 MiB a series. A month in 1 s windows
	// fits; a series that would need more is left out with a note.
	MaxSeriesWindows = 1 << 22
)

// CheckBounds refuses a recording whose fields would make the analysis
// unbounded or panic: a duration outside 0…MaxRecordingDuration, a thread
// timeline that fails its own validation, an event log out of time order
// or pointing at stacks that do not exist, a profile that is not valid
// pprof, or more frames than MaxAnalysisFrames. The error gives the figure
// and wraps recording.ErrInvalid.
func CheckBounds(rec *recording.Recording) error {
	if d := rec.Meta.Duration; d < 0 || d > MaxRecordingDuration {
		return invalid("duration_ns %d is outside 0…%d (%s, the longest recording the analysis accepts)", int64(d), int64(MaxRecordingDuration), MaxRecordingDuration)
	}
	if tl := rec.Threads; tl != nil {
		if err := tl.Validate(); err != nil {
			return invalid("thread timeline: %v", err)
		}
	}
	if err := checkEvents(rec); err != nil {
		return err
	}
	views := make([]string, 0, len(rec.Profiles))
	for v, p := range rec.Profiles {
		if p != nil {
			views = append(views, string(v))
		}
	}
	sort.Strings(views)
	var frames int64
	for _, v := range views {
		p := rec.Profiles[recording.View(v)]
		if err := p.CheckValid(); err != nil {
			return invalid("profile %s: %v", v, err)
		}
		frames += profileFrames(p)
		if frames > MaxAnalysisFrames {
			return invalid("the profiles up to %s hold %d frames (stacks cut at %d), more than the %d the analysis reads", v, frames, MaxStackFrames, MaxAnalysisFrames)
		}
	}
	return nil
}

// checkEvents checks what the event readers rely on: times not negative,
// an end that does not overflow, times in order, and stack references
// inside rec.Stacks. A negative duration is taken as none: recordings
// made before the collector clamped them carry a few of tens of ns
// (a wait's start and end read on two CPUs' clocks), which are no lie.
func checkEvents(rec *recording.Recording) error {
	maxT := int64(MaxRecordingDuration)
	var last int64
	for i := range rec.Events {
		if rec.Events[i].Dur < 0 {
			rec.Events[i].Dur = 0
		}
		e := rec.Events[i]
		switch {
		case e.T < 0:
			return invalid("event %d: negative time %d", i, e.T)
		case e.T > maxT || e.Dur > math.MaxInt64-e.T:
			return invalid("event %d: time %d or duration %d beyond the longest recording (%s)", i, e.T, e.Dur, MaxRecordingDuration)
		case e.T < last:
			return invalid("event %d: time %d before the previous event's %d: the log is written in time order", i, e.T, last)
		case e.Stack < -1 || e.Stack >= len(rec.Stacks):
			return invalid("event %d: stack %d out of range (%d stacks)", i, e.Stack, len(rec.Stacks))
		}
		last = e.T
	}
	return nil
}

// profileFrames counts the frames the analysis expands from p: per
// sample, one per location line (at least one per location), cut at
// MaxStackFrames, and at least one per sample.
func profileFrames(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		var k int64
		for _, l := range s.Location {
			k += int64(max(len(l.Line), 1))
			if k >= MaxStackFrames {
				k = MaxStackFrames
				break
			}
		}
		n += max(k, 1)
	}
	return n
}

// invalid returns an error about a recording the analysis refuses.
func invalid(format string, args ...any) error {
	return fmt.Errorf("analyze: "+format+": %w", append(args, recording.ErrInvalid)...)
}

// cutStack returns the MaxStackFrames frames of frames nearest the leaf
// (frames are leaf first), and whether it cut any.
func cutStack(frames []recording.Frame) ([]recording.Frame, bool) {
	if len(frames) <= MaxStackFrames {
		return frames, false
	}
	return frames[:MaxStackFrames], true
}
