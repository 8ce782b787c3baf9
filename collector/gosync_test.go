package collector

import (
	"strings"
	"testing"
	"time"
)

// goCountTracer counts the Go lock probes' attaches and detaches.
type goCountTracer struct {
	*fakeTracer
	attaches, detaches int
}

func (c *goCountTracer) attachGo(int, string, goAttach) error { c.attaches++; return nil }
func (c *goCountTracer) detachGo() error                      { c.detaches++; return nil }

// TestGoProbePauseResume drives the Go lock probes' budget with probe hit
// counts: under the budget they stay; past it they come off for a pause
// that brings their average cost down to the budget, then are put back
// and judged afresh; the time covered is the sum of the windows they were
// attached for, and no pause runs past goProbeMaxPause.
func TestGoProbePauseResume(t *testing.T) {
	tr := &goCountTracer{}
	s := &Session{tr: tr}
	s.goUp = goProbes{on: true, attached: map[uint32]bool{1: true}, plans: map[uint32]goPlan{1: {exe: "/exe"}}, hitCost: goParkWakeHitCost}
	sec := time.Second
	hitsAt := func(share float64, d time.Duration) uint64 {
		return uint64(share * d.Seconds() / goParkWakeHitCost.Seconds())
	}

	s.checkGoProbeCost(hitsAt(goProbeBudget/2, sec), sec)
	if tr.detaches != 0 {
		t.Fatalf("taken off at half the budget")
	}
	// Twice the budget over the first 2 s: off for 2 s more.
	hits := hitsAt(2*goProbeBudget, 2*sec)
	s.checkGoProbeCost(hits, 2*sec)
	if tr.detaches != 1 || !s.goUp.paused {
		t.Fatalf("detaches %d, paused %v; want the probes off at twice the budget", tr.detaches, s.goUp.paused)
	}
	if got := s.goUp.resumeAt; got < 3900*time.Millisecond || got > 4100*time.Millisecond {
		t.Errorf("put back at %s, want about 4 s: 2 s at twice the budget take a pause of 2 s", got)
	}
	if u := s.goUp.uprobes(); u == nil || !strings.HasPrefix(u.Detached, "taken off after 2 s") {
		t.Errorf("uprobes %+v, want why they were taken off", u)
	}
	s.checkGoProbeCost(hits, 3*sec)
	if tr.attaches != 0 {
		t.Fatal("put back before the pause ended")
	}
	s.checkGoProbeCost(hits, 4*sec)
	if tr.attaches != 1 || s.goUp.paused {
		t.Fatalf("attaches %d, paused %v; want the probes back after the pause", tr.attaches, s.goUp.paused)
	}
	// Judged on the new window alone: a quiet second keeps them on.
	s.checkGoProbeCost(hits+hitsAt(goProbeBudget/4, sec), 5*sec)
	if tr.detaches != 1 {
		t.Error("taken off again under the budget")
	}
	if got := s.goUp.cover(0, 5*sec); got != 3*sec {
		t.Errorf("cover(0, 5 s) = %s, want 3 s (0-2 s and 4-5 s)", got)
	}
	if got := s.goUp.cover(time.Second, 4500*time.Millisecond); got != 1500*time.Millisecond {
		t.Errorf("cover(1 s, 4.5 s) = %s, want 1.5 s", got)
	}
	// A cost far past the budget pauses them for goProbeMaxPause at most.
	s.checkGoProbeCost(hits+hitsAt(1000*goProbeBudget, 2*sec), 7*sec)
	if !s.goUp.paused || s.goUp.resumeAt != 7*sec+goProbeMaxPause {
		t.Errorf("paused %v until %s, want until %s", s.goUp.paused, s.goUp.resumeAt, 7*sec+goProbeMaxPause)
	}
}
