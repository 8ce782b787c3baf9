package tui

import (
	"errors"
	"time"

	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/recording"
)

// errNoData is returned by a live source before its first snapshot holds
// anything.
var errNoData = errors.New("no data recorded yet")

// SessionSource is the Source of `contend top`: a live collector session.
type SessionSource struct {
	s *collector.Session
}

// NewSessionSource returns a Source over the running session s. The caller
// still owns s and calls Stop once the TUI returns.
func NewSessionSource(s *collector.Session) *SessionSource { return &SessionSource{s: s} }

// Snapshot returns the last window of the session (0: all of it).
func (l *SessionSource) Snapshot(window time.Duration) (*recording.Recording, error) {
	rec := l.s.Snapshot(window)
	if rec == nil {
		return nil, errNoData
	}
	return rec, nil
}

// Live is true: the session keeps recording.
func (l *SessionSource) Live() bool { return true }

// Done is closed when the session ends by itself (target exited, duration
// reached, error).
func (l *SessionSource) Done() <-chan struct{} { return l.s.Done() }

// Stats returns the session's progress.
func (l *SessionSource) Stats() Stats {
	st := l.s.Stats()
	return Stats{Elapsed: st.Elapsed, Events: st.Events, Drops: st.Drops, TargetExited: st.TargetExited}
}
