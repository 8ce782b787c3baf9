package recording

import (
	"testing"
	"time"
)

func TestCounterTotals(t *testing.T) {
	m := Meta{Counters: map[string]uint64{
		"ev_futex_wait":       5,
		"ev_switch":           7,
		"drop_stack_user":     2,
		"drop_ringbuf_event":  1,
		"info_window_skipped": 100, // neither
		"sampled_window":      30,  // left out by design, not lost
		"sampled_event":       4,
		"evicted":             50, // no known prefix: neither
	}}
	events, drops := m.CounterTotals()
	if events != 12 || drops != 3 {
		t.Errorf("CounterTotals = %d events, %d drops; want 12, 3", events, drops)
	}
	if n := m.SampledOut(); n != 34 {
		t.Errorf("SampledOut = %d, want 34", n)
	}
	if e, d := (Meta{}).CounterTotals(); e != 0 || d != 0 {
		t.Errorf("no counters: %d, %d", e, d)
	}
}

func TestDirName(t *testing.T) {
	at := time.Date(2025, 3, 14, 9, 27, 3, 0, time.UTC)
	for _, c := range []struct {
		m    Meta
		want string
	}{
		{Meta{Comm: "relayd", PID: 4242}, "contend-relayd-4242-20250314-092703"},
		{Meta{Comm: "../we ird/", PID: 7}, "contend-..weird-7-20250314-092703"},
		{Meta{Comm: "..", PID: 7}, "contend-7-20250314-092703"},
		{Meta{}, "contend-20250314-092703"},
	} {
		if got := DirName(c.m, at); got != c.want {
			t.Errorf("DirName(%q, %d) = %q, want %q", c.m.Comm, c.m.PID, got, c.want)
		}
	}
}
