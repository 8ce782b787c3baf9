package analyzer

import (
	"strconv"
	"strings"
	"time"

	"github.com/contend-dev/contend/recording"
)

// Series is a live recording's figures cut into equal windows of time, so
// that a comparison can show how much they vary within one recording.
type Series struct {
	// Window is the length of each window.
	Window time.Duration
	// LockWaiting is, per window, the average number of threads blocked
	// on futex locks that are not idle waits (wait seconds per second).
	// The event log it comes from is sampled, so each window's share of
	// the logged waiting is scaled to the total the kernel counted.
	LockWaiting []float64
	// CPUs is, per window, the CPUs' worth of time the process used
	// (from the /proc timeline).
	CPUs []float64
	// Runnable is, per window, the average number of threads in state R.
	Runnable []float64
}

// LockSeries returns, per window, the average number of threads blocked
// on the futex words in addrs, scaled so that the windows add up to
// totalWait seconds; nil when the event log holds none of their waits.
// With four windows or more, the first and the last are left out.
func LockSeries(rec *recording.Recording, addrs []uint64, totalWait float64, window time.Duration) []float64 {
	if rec == nil || window <= 0 || rec.Meta.Duration <= 0 {
		return nil
	}
	n := int((rec.Meta.Duration + window - 1) / window)
	if n == 0 {
		return nil
	}
	want := map[uint64]bool{}
	for _, a := range addrs {
		want[a] = true
	}
	sums := make([]float64, n)
	var logged float64
	w := int64(window)
	for _, e := range rec.Events {
		if e.Kind != recording.EventWait || !want[e.Addr] || e.Dur <= 0 {
			continue
		}
		// Spread the wait over the windows it spans.
		for t := e.T; t < e.End(); {
			i := int(t / w)
			if i < 0 || i >= n {
				break
			}
			end := min(e.End(), int64(i+1)*w)
			sums[i] += float64(end - t)
			logged += float64(end - t)
			t = end
		}
	}
	if logged == 0 {
		return nil
	}
	scale := totalWait * 1e9 / logged
	for i := range sums {
		sums[i] = sums[i] * scale / 1e9 / windowSeconds(rec, i, window)
	}
	if len(sums) >= 4 {
		// The first and last windows are cut by the probes' attach and
		// detach (a wait in progress at either end is not logged): leave
		// them out of the spread.
		sums = sums[1 : len(sums)-1]
	}
	return sums
}

// windowSeconds returns the length of window i in seconds (the last one
// may be cut short by the end of the recording).
func windowSeconds(rec *recording.Recording, i int, window time.Duration) float64 {
	end := min(time.Duration(i+1)*window, rec.Meta.Duration)
	d := end - time.Duration(i)*window
	if d <= 0 {
		return window.Seconds()
	}
	return d.Seconds()
}

// SeriesOf cuts a live recording and its analysis into windows. The lock
// waiting covers the locks res lists as not idle.
func SeriesOf(rec *recording.Recording, res *Result, window time.Duration) Series {
	s := Series{Window: window}
	if rec == nil || res == nil || window <= 0 {
		return s
	}
	var addrs []uint64
	var total float64
	for _, l := range res.Locks {
		if l.Idle {
			continue
		}
		total += l.WaitSeconds
		addrs = append(addrs, LockAddrs(l.Lock)...)
	}
	s.LockWaiting = LockSeries(rec, addrs, total, window)
	tl := rec.Threads
	if tl == nil || tl.Interval <= 0 || tl.Samples < 2 {
		return s
	}
	per := max(int(window/tl.Interval), 1)
	runnable := tl.RunnableSeries()
	for from := settled(tl); from+1 < tl.Samples; from += per {
		to := min(from+per, tl.Samples-1)
		s.CPUs = append(s.CPUs, tl.CPUPercent(from, to)/100)
		r := 0
		for i := from; i < to; i++ {
			r += runnable[i]
		}
		s.Runnable = append(s.Runnable, float64(r)/float64(to-from))
	}
	return s
}

// settled returns the first sample instant at which the timeline has found
// nearly all the threads it will find (nine in ten of the most it saw at
// once). A thread first seen later than the process started is counted
// from its first sample, so windows before that instant would miss its
// CPU and the window of its first sample would hold all it had used.
func settled(tl *recording.Timeline) int {
	most := 0
	counts := make([]int, tl.Samples)
	for i := range counts {
		counts[i] = tl.ThreadCount(i)
		most = max(most, counts[i])
	}
	for i, c := range counts {
		if float64(c) >= 0.9*float64(most) {
			return i
		}
	}
	return 0
}

// LockAddrs returns the futex addresses of a lock: its folded words, or
// its address; none for a Go mutex.
func LockAddrs(id LockID) []uint64 {
	words := id.Words
	if len(words) == 0 && id.Address != "" {
		words = []string{id.Address}
	}
	var out []uint64
	for _, w := range words {
		if v, err := strconv.ParseUint(strings.TrimPrefix(w, "0x"), 16, 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}
