package live

import (
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/recording"
)

// A process the /proc sampler reached late (a JVM whose perf map took
// seconds on a loaded machine) has no thread at the instants before: its
// mean runnable count is over the instants it was sampled at, not over
// the whole timeline, at any number of threads per CPU.
func TestMeanRunnableOverSampledInstants(t *testing.T) {
	for _, threads := range []int{4, 16, 128} {
		tl := &recording.Timeline{Interval: 100 * time.Millisecond, ClockTicks: 100, Samples: 31}
		for i := 0; i < threads; i++ {
			tl.Threads = append(tl.Threads, recording.ThreadSeries{TID: 100 + i, Comm: "relay", First: 26,
				States: strings.Repeat("R", 5), UTime: make([]uint64, 5), STime: make([]uint64, 5),
				Voluntary: make([]uint64, 5), Involuntary: make([]uint64, 5)})
		}
		// One thread with an instant the sampler skipped.
		tl.Threads[0].States = "RR" + string(recording.NotSampled) + "RR"
		ld := &Data{rec: &recording.Recording{Threads: tl}, threads: map[int]*liveThread{}}
		ld.readTimeline()
		// 5 instants: 4 with every thread R, 1 with all but one.
		want := float64(5*threads-1) / 5
		if ld.meanRunnable != want {
			t.Errorf("%d threads runnable from instant 26 of 31: mean %.2f, want %.2f", threads, ld.meanRunnable, want)
		}
	}
}
