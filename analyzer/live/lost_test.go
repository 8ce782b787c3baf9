package live

import (
	"strings"
	"testing"

	"github.com/contend-dev/contend/recording"
)

// A ring buffer that overflowed is counted by the probes (drop_*
// counters) and said in the analysis, heaviest loss first; nothing lost
// says nothing.
func TestLostNote(t *testing.T) {
	if n := lostNote(recording.Meta{Counters: map[string]uint64{"drop_ringbuf_events": 0, "ev_wait": 10}}); n != "" {
		t.Errorf("nothing lost, yet %q", n)
	}
	m := recording.Meta{Counters: map[string]uint64{
		"drop_ringbuf_events": 120000, "drop_stack_lookup": 7, "drop_map_full_futex_wait": 300,
		"drop_a": 1, "drop_b": 1, "ev_wait": 5,
	}}
	n := lostNote(m)
	i, j := strings.Index(n, "ringbuf_events 120,000"), strings.Index(n, "map_full_futex_wait 300")
	if i < 0 || j < 0 || i > j || !strings.Contains(n, "1 more") || strings.Contains(n, "ev_wait") {
		t.Errorf("note %q: want the losses heaviest first, four named and the rest counted", n)
	}
}

// A loss too small to move a figure by 1 % (26 switch-ins of 6 million
// events, a routine recording's share) makes no note in the analysis,
// only the one line --verbose prints; from 1 % the note is back.
func TestLostNoteOnlyWhenItMatters(t *testing.T) {
	small := recording.Meta{Counters: map[string]uint64{"drop_switch_in_unseen": 26, "ev_futex_wait": 6_000_000}}
	if n := lostNote(small); n != "" {
		t.Errorf("0.0004%% lost, yet a note: %q", n)
	}
	l := LossLine(small)
	if !strings.Contains(l, "26 of 6,000,026 events") || !strings.Contains(l, "switch_in_unseen 26") || strings.Contains(l, "\n") {
		t.Errorf("verbose line %q: want the loss counted against the events, on one line", l)
	}
	at := recording.Meta{Counters: map[string]uint64{"drop_stack_collision": 101, "ev_futex_wait": 9_899}}
	if n := lostNote(at); !strings.Contains(n, "stack_collision 101") || !strings.Contains(n, "1% of their events") {
		t.Errorf("1.01%% lost: note %q, want it with the share", n)
	}
	below := recording.Meta{Counters: map[string]uint64{"drop_stack_collision": 99, "ev_futex_wait": 9_901}}
	if n := lostNote(below); n != "" {
		t.Errorf("0.99%% lost, yet a note: %q", n)
	}
	if l := LossLine(recording.Meta{Counters: map[string]uint64{"ev_futex_wait": 10}}); l != "" {
		t.Errorf("nothing lost, yet %q", l)
	}
}
