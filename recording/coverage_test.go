package recording

import (
	"testing"
	"time"
)

// timeline returns a timeline of n instants 100 ms apart with one thread
// sampled at instants [first, first+len(states)).
func timeline(n, first int, states string) *Timeline {
	return &Timeline{Interval: 100 * time.Millisecond, Samples: n, Threads: []ThreadSeries{{TID: 1, First: first, States: states}}}
}

func TestCoverage(t *testing.T) {
	ms := int64(time.Millisecond)
	// every 50 ms over d, of duration dur.
	steady := func(d time.Duration, dur int64) []Event {
		var evs []Event
		for t := int64(0); t < int64(d); t += 50 * ms {
			evs = append(evs, Event{Kind: EventWait, T: t, Dur: dur})
		}
		return evs
	}
	full := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'R'
		}
		return string(b)
	}
	for _, tc := range []struct {
		name             string
		rec              Recording
		events, timeline float64
	}{
		{"whole", Recording{Meta: Meta{Duration: 3 * time.Second}, Events: steady(3*time.Second, 0), Threads: timeline(31, 0, full(31))}, 1, 1},
		// The recording this measure was made for: 3.97 s stated, 24
		// events over its last 0.22 s.
		{"events only at the end", Recording{
			Meta:    Meta{Duration: 3973 * time.Millisecond},
			Events:  []Event{{Kind: EventWait, T: 3695 * ms}, {Kind: EventWake, T: 3912 * ms}},
			Threads: timeline(40, 0, full(40)),
		}, 2.0 / 40, 1},
		// One long wait in progress over the whole recording covers it.
		{"one long wait", Recording{Meta: Meta{Duration: time.Second}, Events: []Event{{Kind: EventWait, T: 0, Dur: int64(time.Second)}}}, 1, 0},
		{"first second only", Recording{Meta: Meta{Duration: 3 * time.Second}, Events: steady(time.Second, ms)}, 10.0 / 30, 0},
		{"timeline started late", Recording{Meta: Meta{Duration: time.Second}, Threads: timeline(10, 5, full(5))}, 0, 0.5},
		{"timeline the sampler skipped", Recording{Meta: Meta{Duration: time.Second}, Threads: timeline(10, 0, "RR????????")}, 0, 0.2},
		{"no duration", Recording{Events: steady(time.Second, 0)}, 0, 0},
	} {
		got := tc.rec.Coverage()
		if !near(got.Events, tc.events) || !near(got.Timeline, tc.timeline) {
			t.Errorf("%s: coverage %+v, want events %.3f, timeline %.3f", tc.name, got, tc.events, tc.timeline)
		}
	}
}

func near(a, b float64) bool { return a > b-1e-9 && a < b+1e-9 }
