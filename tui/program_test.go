package tui

import (
	"bytes"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// TestProgramRunsOverSavedRecording runs the model in a real Bubble Tea
// program (teatest, 80x24, plain styles): the first snapshot is taken and
// analyzed by the program's own command loop, keys open a finding and q
// ends the program.
func TestProgramRunsOverSavedRecording(t *testing.T) {
	an := &fakeAnalyzer{res: hmResult()}
	m := New(offlineSource(), Options{Title: "contend tui", Analyze: an.analyze, Plain: true})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	waitFor := func(what string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(what)) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	waitFor("spin-convoy")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitFor("Finding #1")
	tm.Type("q")
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(Model)
	if final.detail == nil || final.detail.tab != tabFindings {
		t.Errorf("final model has no finding open: %+v", final.detail)
	}
	if !final.quitting {
		t.Error("program ended without the model quitting")
	}
	if an.calls != 1 {
		t.Errorf("analyze ran %d times over a saved recording, want 1", an.calls)
	}
}
