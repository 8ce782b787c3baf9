package collector

import (
	"time"

	"github.com/contend-dev/contend/recording"
)

// MaxHistory is the longest Options.History a session keeps (see
// maxHistory): a caller that takes consecutive windows with Next must take
// them at least this often.
const MaxHistory = maxHistory

// Next returns the recording of the session from offset since (0 at the
// start; the end a previous call returned after that) to the end of the
// latest complete per-second delta, and that end, for the next call.
// Consecutive calls cover the session without overlap or gap, so that
// counts summed over them are the session's (Snapshot's windows, made for
// a display, overlap by the current second). Once the session has ended
// the last window runs to its end. Deltas older than the history kept
// (Options.History) are gone: the window then starts at the oldest kept,
// which Meta.Start and Meta.Duration say. The recording is nil, with
// since, while no complete delta follows since.
func (s *Session) Next(since time.Duration) (*recording.Recording, time.Duration) {
	ended := false
	select {
	case <-s.done:
		<-s.finished
		ended = true
	default:
		s.poll(-1)
	}
	s.agg.mu.Lock()
	var parts []*delta
	for _, d := range s.agg.deltas {
		if d.from >= since {
			parts = append(parts, d)
		}
	}
	if ended && s.agg.cur.to > s.agg.cur.from && s.agg.cur.from >= since {
		parts = append(parts, s.agg.cur)
	}
	if len(parts) == 0 {
		s.agg.mu.Unlock()
		return nil, since
	}
	first, last := parts[0], parts[len(parts)-1]
	snap := &snapshot{at: last.to, aggregates: newAggregates(), counters: map[string]uint64{}, open: s.agg.open}
	for _, d := range parts {
		snap.add(d.agg)
	}
	for k, v := range last.counters {
		snap.counters[k] = sat(v, first.base[k])
	}
	rec := s.build(snap, first.from, last.to, true)
	s.agg.mu.Unlock()
	s.goWindow(rec)
	return rec, last.to
}

// goWindow stores the Go runtime profiles of rec's span into rec, for a
// session that fetches them (Options.PprofURL), and says which Go data
// the window has.
func (s *Session) goWindow(rec *recording.Recording) {
	if s.gofetch != nil {
		s.gofetch.Live()
		applyGoWindow(rec, s.gofetch.Window(rec.Meta.Start, rec.Meta.Start.Add(rec.Meta.Duration)))
	}
	rec.Meta.GoData = s.goData(rec)
}
