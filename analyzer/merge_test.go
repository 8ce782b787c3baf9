package analyzer

import (
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
)

func TestMergeArrayLocks(t *testing.T) {
	at := func(fn string, line int) core.ProgramPoint {
		return core.ProgramPoint{Function: fn, File: "s.c", Line: line}
	}
	f := func(kind core.Kind, p core.ProgramPoint, addr, name string, wait float64, who int) core.Finding {
		return core.Finding{Kind: kind, Point: p, Lock: &core.LockID{Address: addr, Name: name}, WaitSeconds: wait,
			Score: wait, Participants: who, Population: 65, Unit: "threads", WaitShare: 0.5}
	}
	p := at("conn_on_message", 39)
	r := &core.Result{Target: core.Target{Duration: 2 * time.Second}, Findings: []core.Finding{
		f(core.KindContention, p, "0x10", "stripes+0x50 (stripe)", 1, 2),
		f(core.KindContention, p, "0x20", "stripes+0x118 (stripe)", 3, 2),
		f(core.KindContention, p, "0x30", "stripes (stripe)", 2, 2),
		// another array, another kind, another point, a heap lock: kept apart
		f(core.KindContention, p, "0x40", "other+0x8 (stripe)", 5, 2),
		f(core.KindLockConvoy, p, "0x50", "stripes+0x188 (stripe)", 4, 9),
		f(core.KindContention, at("reader", 7), "0x60", "stripes+0x1f0 (stripe)", 6, 2),
		f(core.KindContention, p, "0x70", "", 7, 2),
	}}
	mergeArrayLocks(r)
	if len(r.Findings) != 5 {
		t.Fatalf("got %d findings, want 5 (three stripes merged into one): %+v", len(r.Findings), r.Findings)
	}
	var m *core.Finding
	for i := range r.Findings {
		if r.Findings[i].Lock.Name == "3 locks of stripes (stripe)" {
			m = &r.Findings[i]
		}
	}
	if m == nil {
		t.Fatalf("no merged finding: %+v", r.Findings)
	}
	if m.WaitSeconds != 6 || m.Score != 6 || m.Participants != 6 {
		t.Errorf("merged figures wait %v score %v participants %d, want 6, 6, 6", m.WaitSeconds, m.Score, m.Participants)
	}
	if m.WaitShare != 0.5 {
		t.Errorf("wait share %v, want 6 s / (2 s × 6 threads) = 0.5", m.WaitShare)
	}
	if strings.Join(m.Lock.Words, ",") != "0x10,0x20,0x30" {
		t.Errorf("words %v, want every merged lock's address", m.Lock.Words)
	}
	if !strings.Contains(m.Headline, "3 locks of one array, stripes") || !strings.HasPrefix(m.Headline, "6 s lost") {
		t.Errorf("headline %q", m.Headline)
	}
	if len(m.Evidence) == 0 || m.Evidence[0].Kind != core.EvArrayMerge || m.Evidence[0].Figures["locks"] != 3 || m.Evidence[0].Names["array"] != "stripes (stripe)" {
		t.Errorf("first evidence %+v: want the merge explained", m.Evidence)
	}
}
