package tui

import (
	"errors"
	"time"

	"github.com/contend-dev/contend/recording"
)

// Source is what the TUI watches: a live collector session or a recording
// loaded from disk. The model only ever talks to a Source, so every view can
// be driven in tests by a fake one.
type Source interface {
	// Snapshot returns the data of the last window of the run (0 = the
	// whole run). It may be called from any goroutine.
	Snapshot(window time.Duration) (*recording.Recording, error)
	// Live reports whether data keeps arriving: only then do the refresh,
	// window and pause keys apply.
	Live() bool
	// Done is closed when no more data will come (the target exited or the
	// recording duration ended). It may be nil for a source that never
	// ends by itself.
	Done() <-chan struct{}
	// Stats returns the progress of the recording. It is called on the UI
	// goroutine once per refresh and must be cheap.
	Stats() Stats
}

// Stats is the progress of a recording as shown in the header.
type Stats struct {
	// Elapsed is how long the recording has run (or ran).
	Elapsed time.Duration
	// Events counts events seen by the probes.
	Events uint64
	// Drops sums every lost event, full map and failed stack lookup.
	Drops uint64
	// TargetExited is set once the target is gone.
	TargetExited bool
}

// errNoRecording is returned by a RecordingSource built from nil.
var errNoRecording = errors.New("no recording loaded")

// RecordingSource is a Source over a recording already in memory (loaded
// from a directory or from Go profiles): fixed data, never live.
type RecordingSource struct {
	rec *recording.Recording
}

// NewRecordingSource returns a Source showing rec.
func NewRecordingSource(rec *recording.Recording) *RecordingSource {
	return &RecordingSource{rec: rec}
}

// Snapshot returns the whole recording whatever the window: a saved
// recording is not re-cut by time.
func (s *RecordingSource) Snapshot(time.Duration) (*recording.Recording, error) {
	if s.rec == nil {
		return nil, errNoRecording
	}
	return s.rec, nil
}

// Live is false: a saved recording does not change.
func (s *RecordingSource) Live() bool { return false }

// Done returns nil: there is nothing to wait for.
func (s *RecordingSource) Done() <-chan struct{} { return nil }

// Stats derives the header figures from the recording's metadata.
func (s *RecordingSource) Stats() Stats {
	if s.rec == nil {
		return Stats{}
	}
	events, drops := s.rec.Meta.CounterTotals()
	return Stats{Elapsed: s.rec.Meta.Duration, Events: events, Drops: drops}
}
