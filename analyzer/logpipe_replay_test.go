package analyzer_test

import (
	"strings"
	"testing"

	"github.com/contend-dev/contend/analyzer"
)

// The logpipe fixture's bad variant (fixtures/c/README.md): 8 workers
// log through a pthread mutex around write(2) to a pipe its reader
// drains slowly, so the holder sleeps in pipe_write most of the time and
// every other worker queues on log_mu behind it. Each waiter waits
// through several holds in turn (waits p50 17 ms, holds p50 2 ms); the
// owner a wait read names only the first. Joined to every hold in turn,
// the holders' writes cover most of the waiting: I/O under the lock at
// log_line, with the write moved off the lock, not striping.
func TestLogpipeReplay(t *testing.T) {
	res := replay(t, "c-logpipe-bad")
	var f *analyzer.Finding
	for i := range res.Findings {
		if l := res.Findings[i].Lock; l != nil && strings.HasPrefix(l.Name, "log_mu") {
			f = &res.Findings[i]
			break
		}
	}
	if f == nil {
		t.Fatalf("no finding on log_mu in %d findings", len(res.Findings))
	}
	if f.Kind != analyzer.KindIOUnderLock {
		t.Fatalf("log_mu: kind %s (%s), want io-under-lock", f.Kind, f.Headline)
	}
	if f.Point.Function != "log_line.constprop.0" {
		t.Errorf("point %s, want log_line.constprop.0", f.Point.Function)
	}
	if !strings.Contains(f.Suggestion.Action, "off the lock") || strings.Contains(f.Suggestion.Action, "Stripe") {
		t.Errorf("suggestion %q, want the write moved off the lock", f.Suggestion.Action)
	}
	var holds, io *analyzer.Evidence
	for i := range f.Evidence {
		switch f.Evidence[i].Kind {
		case analyzer.EvHandoffHolds:
			holds = &f.Evidence[i]
		case analyzer.EvHolderIO:
			io = &f.Evidence[i]
		}
	}
	if holds == nil || io == nil {
		t.Fatalf("evidence %v, want %s and %s", f.Evidence, analyzer.EvHandoffHolds, analyzer.EvHolderIO)
	}
	h := holds.Figures
	// Nearly every hand-off of the recording is measured, and the holds
	// are spent in write.
	if h["coverage"] < 0.9 || h["io_share"] < 0.8 {
		t.Errorf("holds %v: want over 90%% of the hand-offs measured, over 80%% of the held time in I/O", h)
	}
	// The owner field is the check: the waits begun inside a hold read
	// its releaser as the owner.
	if h["owner_seen"] < 100 || h["owner_agree"] < 0.95 {
		t.Errorf("owner field named the releaser in %v of %v waits, want nearly all", h["owner_agree"], h["owner_seen"])
	}
	// The first-holder-only join found 15 % of the waiting behind I/O.
	if io.Figures["share"] < 0.5 {
		t.Errorf("waiting behind the holders' I/O %v, want over half", io.Figures["share"])
	}
}

// The fixed variant appends lines to a buffer under log_mu and a flusher
// writes them outside it: nothing may say log_mu is held across I/O.
func TestLogpipeFixedReplay(t *testing.T) {
	res := replay(t, "c-logpipe-fixed")
	for _, f := range res.Findings {
		if f.Kind == analyzer.KindIOUnderLock && f.Lock != nil && strings.HasPrefix(f.Lock.Name, "log_mu") {
			t.Errorf("io-under-lock on log_mu (%s): the write is outside the lock", f.Headline)
		}
	}
}
