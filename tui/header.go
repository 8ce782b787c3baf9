package tui

import (
	"time"

	"github.com/contend-dev/contend/recording"
)

// summary holds the header's figures of one snapshot, all taken from the
// recording's Timeline helpers.
type summary struct {
	// timeline is false when the recording has no /proc timeline (Go
	// profiles only); the other fields are then zero.
	timeline bool
	// states counts the threads of the latest instant by state (and in
	// all: states.Threads).
	states recording.StateCounts
	// cpuPct is the process's CPU over the window in percent of one CPU;
	// cpuOK is false when the window holds fewer than two samples.
	cpuPct float64
	cpuOK  bool
	// runq is the runnable count at each instant of the window, oldest
	// first.
	runq []int
}

// summarize reads the header figures of rec over the last window (0 = the
// whole timeline). It runs with the analysis, off the UI goroutine.
func summarize(rec *recording.Recording, window time.Duration) summary {
	tl := rec.Threads
	last := tl.LastInstant()
	if tl == nil || last < 0 {
		return summary{}
	}
	s := summary{
		timeline: true,
		states:   tl.StatesAt(last),
	}
	from, to := 0, last
	if window > 0 {
		if f, t, ok := tl.Window(window); ok {
			from, to = f, t
		}
	}
	if from < to {
		s.cpuPct, s.cpuOK = tl.CPUPercent(from, to), true
	}
	if series := tl.RunnableSeries(); to < len(series) {
		s.runq = series[from : to+1]
	}
	return s
}
