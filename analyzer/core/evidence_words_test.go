package core

import (
	"strings"
	"testing"
)

// Every evidence kind the analyzer can emit is worded, with its figures
// filled in (no fmt error markers, no raw dump of an unknown kind).
func TestEvidenceTextCoversEveryKind(t *testing.T) {
	for _, k := range EvidenceKinds {
		if _, ok := evidenceWords[k]; !ok {
			t.Errorf("no words for evidence kind %s", k)
			continue
		}
		e := Evidence{Kind: k, Figures: map[string]float64{"waits": 10, "threads": 4, "wait_s": 2, "dur_s": 1, "share": 0.5, "points": 2},
			Names: map[string]string{"lock": "l", "function": "f", "site": "s"}, Items: []Item{{Name: "a", Value: 1}, {Name: "b", Value: 2}}}
		got := EvidenceText(e)
		if got == "" || strings.Contains(got, "%!") || strings.HasPrefix(got, string(k)+":") {
			t.Errorf("%s: %q", k, got)
		}
	}
}
