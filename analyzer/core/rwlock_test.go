package core

import (
	"testing"
	"time"
)

// TestWriterStarvedRules holds each branch of WriterStarved to the facts
// that decide it.
func TestWriterStarvedRules(t *testing.T) {
	s, ms := int64(time.Second), int64(time.Millisecond)
	for _, tc := range []struct {
		name string
		f    RWFacts
		want bool
	}{
		{"readers pass the writers over", RWFacts{Readers: 24, Writers: 2, ReaderWaits: 24, ReaderWaitNS: 24 * 98 * ms, WriterWaits: 4, WriterWaitNS: 4 * 2 * s}, true},
		{"writers wait long, but so do the readers", RWFacts{Readers: 24, Writers: 2, ReaderWaits: 24, ReaderWaitNS: 24 * 500 * ms, WriterWaits: 4, WriterWaitNS: 4 * 2 * s}, false},
		{"writers wait briefly", RWFacts{Readers: 24, Writers: 2, ReaderWaits: 24, ReaderWaitNS: 24 * ms, WriterWaits: 40, WriterWaitNS: 40 * 50 * ms}, false},
		// No reader waits: the writers' waits for a read phase decide.
		{"no reader waits, writers kept out by a read phase", RWFacts{Writers: 2, WriterWaits: 2, WriterWaitNS: 6 * s, ReadPhaseWaits: 1, ReadPhaseWaitNS: 3 * s}, true},
		{"no reader waits, writers wait for each other", RWFacts{Writers: 2, WriterWaits: 2, WriterWaitNS: 6 * s}, false},
		{"no reader waits, read phases short", RWFacts{Writers: 2, WriterWaits: 2, WriterWaitNS: 6 * s, ReadPhaseWaits: 100, ReadPhaseWaitNS: 100 * ms}, false},
		{"no writers", RWFacts{Readers: 24, ReaderWaits: 24, ReaderWaitNS: 24 * s}, false},
	} {
		c := &LockCase{RW: &tc.f}
		if got := c.WriterStarved(); got != tc.want {
			t.Errorf("%s: WriterStarved() = %v, want %v (%+v)", tc.name, got, tc.want, tc.f)
		}
	}
	if (&LockCase{}).WriterStarved() {
		t.Error("a lock with no reader-writer facts is starved")
	}
}
