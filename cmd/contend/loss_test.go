package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/contend-dev/contend/recording"
)

// A loss too small to move a figure stays off stderr unless --verbose is
// given, and then takes one line.
func TestPrintLossOnlyVerbose(t *testing.T) {
	m := recording.Meta{Counters: map[string]uint64{"drop_switch_in_unseen": 26, "ev_futex_wait": 6_000_000}}
	var quiet, loud bytes.Buffer
	printLoss(&quiet, false, m)
	printLoss(&loud, true, m)
	if quiet.Len() != 0 {
		t.Errorf("without --verbose: %q, want nothing", quiet.String())
	}
	if got := loud.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "switch_in_unseen 26") {
		t.Errorf("with --verbose: %q, want one line naming the counter", got)
	}
}
