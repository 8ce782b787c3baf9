package tui

import (
	"strings"
	"testing"
)

// hostile is what a target can name its threads, functions and files:
// an OSC retitle, a screen clear and an 8-bit CSI.
const hostile = "\x1b]0;PWNED\x07\x1b[2J\u009b31m"

// TestHostileNamesAreEscaped draws every view and the detail of a
// finding whose names, thread names, warnings and process name carry
// escape sequences: none reaches the screen, each shows escaped, also
// where a long name is truncated to its column.
func TestHostileNamesAreEscaped(t *testing.T) {
	rec := hmRecording()
	rec.Meta.Comm = hostile
	rec.Meta.Warnings = append(rec.Meta.Warnings, "warning "+hostile)
	res := hmResult()
	res.Target.Comm = hostile
	f := &res.Findings[0]
	f.Headline = hostile + " " + f.Headline
	f.Point.Function = hostile + strings.Repeat("x", 60)
	f.Point.Stack[0].Func = hostile
	f.Evidence[0].Text = "evidence " + hostile
	for i := range res.Threads {
		res.Threads[i].Comm = hostile
	}
	res.Notes = append(res.Notes, "note "+hostile)
	h := newHarness(t, NewRecordingSource(rec), res, 100, 30)
	var screens []string
	for _, k := range []string{"1", "2", "3", "4", "5"} {
		h.keys(k)
		screens = append(screens, h.view())
	}
	h.keys("1", "enter")
	screens = append(screens, h.view(), strings.Join(h.m.detailLines(100), "\n"))
	all := strings.Join(screens, "\n")
	if i := strings.IndexAny(all, "\x1b\x07\u009b"); i >= 0 {
		t.Fatalf("a control character reached the screen: %q", all[max(i-60, 0):min(i+60, len(all))])
	}
	if !strings.Contains(all, `\x1b]0;PWNED\x07\x1b[2J\u009b31m`) {
		t.Errorf("the names are not shown escaped:\n%s", all)
	}
}
