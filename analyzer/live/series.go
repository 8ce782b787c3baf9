package live

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
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
	// Note says why a series is missing when the recording holds its data
	// but the windows were refused (too many of them, or a timeline that
	// fails validation); empty otherwise.
	Note string
}

// LockSeries returns, per window, the average number of threads blocked
// on the futex words in addrs, scaled so that the windows add up to
// totalWait seconds; nil when the event log holds none of their waits, or
// when the recording would need more than maxSeriesWindows windows
// (seriesWindows says so). With four windows or more, the first and the
// last are left out. Its cost is one pass over the events and one over the
// windows, however many windows a wait spans.
func LockSeries(rec *recording.Recording, addrs []uint64, totalWait float64, window time.Duration) []float64 {
	if rec == nil {
		return nil
	}
	n, err := seriesWindows(rec.Meta.Duration, window)
	if err != nil || n == 0 {
		return nil
	}
	want := map[uint64]bool{}
	for _, a := range addrs {
		want[a] = true
	}
	w := int64(window)
	// limit is the end of the last window, n*w without overflow.
	limit := int64(math.MaxInt64)
	if w <= math.MaxInt64/int64(n) {
		limit = int64(n) * w
	}
	sums := make([]float64, n)
	// full[i] counts, as a difference array, the waits that cover all of
	// window i: a wait spanning a million windows costs two entries.
	full := make([]int32, n+1)
	var logged float64
	for _, e := range rec.Events {
		if e.Kind != recording.EventWait || !want[e.Addr] || e.Dur <= 0 || e.T < 0 {
			continue
		}
		// Spread the wait over the windows it spans.
		t0, t1 := e.T, limit
		if e.Dur < limit-t0 {
			t1 = t0 + e.Dur
		}
		if t0 >= t1 {
			continue
		}
		i0, i1 := int(t0/w), int((t1-1)/w)
		logged += float64(t1 - t0)
		if i0 == i1 {
			sums[i0] += float64(t1 - t0)
			continue
		}
		sums[i0] += float64(int64(i0+1)*w - t0)
		sums[i1] += float64(t1 - int64(i1)*w)
		full[i0+1]++
		full[i1]--
	}
	if logged == 0 {
		return nil
	}
	var covering int64
	for i := range sums {
		covering += int64(full[i])
		sums[i] += float64(covering) * float64(w)
	}
	scale := totalWait * 1e9 / logged
	for i := range sums {
		sums[i] = sums[i] * scale / 1e9 / WindowSeconds(rec, i, window)
	}
	if len(sums) >= 4 {
		// The first and last windows are cut by the probes' attach and
		// detach (a wait in progress at either end is not logged): leave
		// them out of the spread.
		sums = sums[1 : len(sums)-1]
	}
	return sums
}

// seriesWindows returns how many windows of length window cover d, and an
// error giving the figure when that is more than maxSeriesWindows.
func seriesWindows(d, window time.Duration) (int, error) {
	if window <= 0 || d <= 0 {
		return 0, nil
	}
	n := d / window
	if d%window != 0 {
		n++
	}
	if n > core.MaxSeriesWindows {
		return 0, fmt.Errorf("%s in windows of %s is %d windows, more than the %d a series holds: give a longer --window", d, window, int64(n), core.MaxSeriesWindows)
	}
	return int(n), nil
}

// WindowSeconds returns the length of window i in seconds (the last one
// may be cut short by the end of the recording).
func WindowSeconds(rec *recording.Recording, i int, window time.Duration) float64 {
	end := min(time.Duration(i+1)*window, rec.Meta.Duration)
	d := end - time.Duration(i)*window
	if d <= 0 {
		return window.Seconds()
	}
	return d.Seconds()
}

// SeriesOf cuts a live recording and its analysis into windows. The lock
// waiting covers the locks res lists as not idle. Its cost is linear in
// the event log, the timeline and the number of windows (at most
// maxSeriesWindows; Note says when that refused a series).
func SeriesOf(rec *recording.Recording, res *core.Result, window time.Duration) Series {
	s := Series{Window: window}
	if rec == nil || res == nil || window <= 0 {
		return s
	}
	if _, err := seriesWindows(rec.Meta.Duration, window); err != nil {
		s.Note = "lock waiting per window left out: " + err.Error()
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
	if err := tl.Validate(); err != nil {
		s.Note = "CPU and runnable threads per window left out: thread timeline: " + err.Error()
		return s
	}
	per := min(max(int(window/tl.Interval), 1), tl.Samples)
	from0 := Settled(tl)
	if from0+1 >= tl.Samples {
		return s
	}
	// Window k runs from instant from0+k*per to min(from0+(k+1)*per,
	// Samples-1): nw windows (at most Samples, bounded by Validate).
	nw := (tl.Samples - 1 - from0 + per - 1) / per
	bounds := func(k int) (from, to int) {
		from = from0 + k*per
		return from, min(from+per, tl.Samples-1)
	}
	ticks := make([]uint64, nw)
	for j := range tl.Threads {
		th := &tl.Threads[j]
		if len(th.States) == 0 {
			continue
		}
		// Only the windows that overlap the thread's instants: a pass
		// over the timeline, not threads times windows.
		for k := max((th.First-from0)/per-1, 0); k < nw; k++ {
			from, to := bounds(k)
			if from > th.Last() {
				break
			}
			ticks[k] += threadTicks(th, from, to)
		}
	}
	runnable := tl.RunnableSeries()
	for k := range nw {
		from, to := bounds(k)
		wall := (time.Duration(to-from) * tl.Interval).Seconds()
		s.CPUs = append(s.CPUs, tl.Seconds(ticks[k])/wall)
		r := 0
		for i := from; i < to; i++ {
			r += runnable[i]
		}
		s.Runnable = append(s.Runnable, float64(r)/float64(to-from))
	}
	return s
}

// threadTicks returns the CPU ticks thread s used between sample instants
// from and to (from < to), as recording.Timeline.Usage counts them; 0 when
// it was not alive in the window.
func threadTicks(s *recording.ThreadSeries, from, to int) uint64 {
	u, _ := s.Usage(from, to)
	return u.Ticks()
}

// Settled returns the first sample instant at which the timeline has found
// nearly all the threads it will find (nine in ten of the most it saw at
// once). A thread first seen later than the process started is counted
// from its first sample, so windows before that instant would miss its
// CPU and the window of its first sample would hold all it had used.
// The counts per instant come from a difference array: one pass over the
// threads and one over the instants.
func Settled(tl *recording.Timeline) int {
	diff := make([]int, tl.Samples+1)
	for j := range tl.Threads {
		th := &tl.Threads[j]
		if len(th.States) == 0 || th.First < 0 || th.First >= tl.Samples {
			continue
		}
		diff[th.First]++
		diff[min(th.First+len(th.States), tl.Samples)]--
	}
	counts := make([]int, tl.Samples)
	most, alive := 0, 0
	for i := range counts {
		alive += diff[i]
		counts[i] = alive
		most = max(most, alive)
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
func LockAddrs(id core.LockID) []uint64 {
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
