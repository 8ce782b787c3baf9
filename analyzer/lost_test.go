package analyzer

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
