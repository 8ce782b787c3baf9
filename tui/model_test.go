package tui

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

func TestOfflineLoadsOnceAndNeverTicks(t *testing.T) {
	h := newHarness(t, offlineSource(), hmResult(), 80, 24)
	if h.m.frame == nil {
		t.Fatal("no frame after Init")
	}
	if h.an.calls != 1 {
		t.Errorf("analyze called %d times, want 1", h.an.calls)
	}
	if len(h.waiting) != 0 {
		t.Errorf("offline model waits for %v, want nothing", h.waiting)
	}
	h.send(tickMsg{})
	h.keys("w", "p")
	if h.an.calls != 1 {
		t.Errorf("analyze called %d times after tick, w and p offline, want 1", h.an.calls)
	}
	if h.m.paused {
		t.Error("p paused an offline view")
	}
	v := h.view()
	for _, want := range []string{"contend tui", "pid 4242 relayd", "recorded 10.0s", "spin-convoy"} {
		if !strings.Contains(v, want) {
			t.Errorf("offline screen lacks %q:\n%s", want, v)
		}
	}
}

func TestLiveTickRefreshesWithWindow(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	if got, want := h.waiting, []string{"tick", "done"}; !reflect.DeepEqual(got, want) {
		t.Errorf("live Init waits for %v, want %v", got, want)
	}
	h.send(tickMsg{})
	h.send(tickMsg{})
	if got, want := src.asked(), []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}; !reflect.DeepEqual(got, want) {
		t.Errorf("windows asked %v, want %v", got, want)
	}
	if n := strings.Count(strings.Join(h.waiting, " "), "tick"); n != 3 {
		t.Errorf("%d ticks scheduled after two ticks, want 3 (each tick schedules the next)", n)
	}
	if h.an.calls != 3 {
		t.Errorf("analyze called %d times, want 3", h.an.calls)
	}
}

func TestWindowKeyCycles(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	var headers []string
	for i := 0; i < 3; i++ {
		h.keys("w")
		headers = append(headers, strings.Split(h.view(), "\n")[0])
	}
	// From the default 10 s: the whole run, then 1 s, then back.
	want := []time.Duration{10 * time.Second, 0, time.Second, 10 * time.Second}
	if got := src.asked(); !reflect.DeepEqual(got, want) {
		t.Errorf("windows asked %v, want %v", got, want)
	}
	for i, w := range []string{"whole run", "last 1s", "last 10s"} {
		if !strings.Contains(headers[i], w) {
			t.Errorf("after %d w presses the header %q lacks %q", i+1, headers[i], w)
		}
	}
}

func TestPauseFreezesScreenButNotStats(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	h.keys("p")
	if !h.m.paused {
		t.Fatal("p did not pause")
	}
	changed := hmResult()
	changed.Findings = changed.Findings[1:]
	h.an.set(changed)
	src.mu.Lock()
	src.stats.Elapsed = 20 * time.Second
	src.mu.Unlock()
	asked := len(src.asked())
	h.send(tickMsg{})
	if len(src.asked()) != asked {
		t.Error("a tick took a snapshot while paused")
	}
	v := h.view()
	if !strings.Contains(v, "spin-convoy") || !strings.Contains(v, "PAUSED") {
		t.Errorf("paused screen should keep the old findings and say PAUSED:\n%s", v)
	}
	if !strings.Contains(v, "0:20") {
		t.Errorf("paused screen should keep counting elapsed time (0:20):\n%s", v)
	}
	h.keys("p")
	v = h.view()
	if strings.Contains(v, "spin-convoy") || strings.Contains(v, "PAUSED") {
		t.Errorf("resumed screen should show the new data:\n%s", v)
	}
}

func TestWindowChangeWhilePausedWaitsForResume(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	h.keys("p", "w")
	if n := len(src.asked()); n != 1 {
		t.Errorf("%d snapshots taken while paused, want only the first", n)
	}
	if v := h.view(); !strings.Contains(v, "whole run") || !strings.Contains(v, "PAUSED") {
		t.Errorf("header should name the new window and stay paused:\n%s", v)
	}
	h.keys("p")
	if got := src.asked(); len(got) != 2 || got[1] != 0 {
		t.Errorf("windows asked %v, want the whole run on resume", got)
	}
}

func TestStaleWindowFrameIsDropped(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	h.hold = true
	h.send(tickMsg{}) // starts a load of the 10 s window, held
	h.keys("w")       // asks for the whole run while that load is in flight
	if len(h.held) == 0 {
		t.Fatal("tick issued no load")
	}
	whole := hmResult()
	whole.Findings = whole.Findings[:1]
	h.an.set(whole)
	h.release() // the 10 s load lands stale and triggers the whole-run one
	asked := src.asked()
	if got, want := asked, []time.Duration{10 * time.Second, 10 * time.Second, 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("windows asked %v, want %v", got, want)
	}
	if h.m.frame.window != 0 {
		t.Errorf("frame on screen is for window %v, want the whole run", h.m.frame.window)
	}
	if n := len(h.m.frame.res.Findings); n != 1 {
		t.Errorf("%d findings on screen, want the 1 of the whole-run analysis", n)
	}
}

func TestTargetExitKeepsData(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	src.set(nil, errors.New("session closed"))
	src.mu.Lock()
	src.stats.TargetExited = true
	src.mu.Unlock()
	h.send(exitedMsg{})
	v := h.view()
	for _, want := range []string{"EXITED", "target exited after 0:12", "spin-convoy"} {
		if !strings.Contains(v, want) {
			t.Errorf("screen after exit lacks %q:\n%s", want, v)
		}
	}
	asked := len(src.asked())
	h.send(tickMsg{})
	if len(src.asked()) != asked {
		t.Error("a tick after the exit took a snapshot")
	}
	if n := strings.Count(strings.Join(h.waiting, " "), "tick"); n != 1 {
		t.Errorf("%d ticks scheduled, want only Init's (no refresh after exit)", n)
	}
	// Keys still work on the kept data.
	h.keys("enter")
	if h.m.detail == nil || !strings.Contains(strings.Join(h.m.detailLines(80), "\n"), "Suggestion") {
		t.Error("cannot open a finding after the target exited")
	}
}

func TestDurationEndIsNotAnExit(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	h.send(exitedMsg{}) // Done closed, target still alive: the duration ran out
	v := h.view()
	if !strings.Contains(v, "recording ended after 0:12") || !strings.Contains(v, "ENDED") || strings.Contains(v, "exited") {
		t.Errorf("end of the duration reported wrongly:\n%s", v)
	}
}

func TestSnapshotErrorKeepsLastData(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	src.set(nil, errors.New("ring buffer closed"))
	h.send(tickMsg{})
	v := h.view()
	if !strings.Contains(v, "refresh: snapshot: ring buffer closed") {
		t.Errorf("error not shown:\n%s", v)
	}
	if !strings.Contains(v, "spin-convoy") {
		t.Errorf("last data not kept:\n%s", v)
	}
}

func TestFirstLoadErrorIsShown(t *testing.T) {
	src := liveSource()
	src.set(nil, errors.New("no samples yet"))
	h := newHarness(t, src, hmResult(), 80, 24)
	if v := h.view(); !strings.Contains(v, "snapshot: no samples yet") {
		t.Errorf("first load error not shown:\n%s", v)
	}
	src.set(hmRecording(), nil)
	h.send(tickMsg{})
	if v := h.view(); !strings.Contains(v, "spin-convoy") {
		t.Errorf("no data after recovery:\n%s", v)
	}
}

func TestAnalyzeErrorIsShown(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	h.an.mu.Lock()
	h.an.err = errors.New("corrupt profile")
	h.an.mu.Unlock()
	h.send(tickMsg{})
	if v := h.view(); !strings.Contains(v, "analyze: corrupt profile") {
		t.Errorf("analysis error not shown:\n%s", v)
	}
}

func TestViewsByNumberAndTab(t *testing.T) {
	h := newHarness(t, offlineSource(), hmResult(), 80, 24)
	titles := map[tab]string{
		tabFindings: "Finding", tabPoints: "Program point", tabLocks: "Lock",
		tabThreads: "States (newest right)", tabIdle: "Not contention: why",
	}
	for i := tab(0); i < numTabs; i++ {
		h.keys(string(rune('1' + i)))
		if h.m.tab != i {
			t.Errorf("key %d shows tab %d", i+1, h.m.tab)
		}
		if v := h.view(); !strings.Contains(v, titles[i]) {
			t.Errorf("tab %d lacks its column title %q:\n%s", i+1, titles[i], v)
		}
	}
	h.keys("tab")
	if h.m.tab != tabFindings {
		t.Errorf("tab from the last view goes to %d, want 0", h.m.tab)
	}
	h.keys("shift+tab")
	if h.m.tab != tabIdle {
		t.Errorf("shift+tab from the first view goes to %d, want %d", h.m.tab, tabIdle)
	}
}

func TestOpenFindingShowsEvidenceStackSuggestion(t *testing.T) {
	h := newHarness(t, offlineSource(), hmResult(), 80, 24)
	h.keys("down", "enter")
	if h.m.detail == nil {
		t.Fatal("enter opened nothing")
	}
	all := strings.Join(h.m.detailLines(80), "\n")
	for _, want := range []string{
		"Finding #2 · lock-convoy · confidence medium",
		"[futex] 11178 waits by 6 distinct threads",
		"Stripe the lock: a fixed array of 8 locks",
		"Why: Many distinct threads take turns",
		"Expected gain: ≈6× less waiting with 8 stripes",
		"  > stats_add  stats.c:22",
		"      /src/relayd/stats.c:22",
		"Released at  stats_add stats.c:25",
		"owner tid 4247",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("finding detail lacks %q:\n%s", want, all)
		}
	}
	// Only the program point frame is marked.
	if n := strings.Count(all, "  > "); n != 2 { // the wait stack and the release stack
		t.Errorf("%d marked frames, want 2 (point and releaser):\n%s", n, all)
	}
	h.keys("esc")
	if h.m.detail != nil {
		t.Error("esc did not close the detail")
	}
	h.keys("enter", "backspace")
	if h.m.detail != nil {
		t.Error("backspace did not close the detail")
	}
}

func TestDetailScrolls(t *testing.T) {
	h := newHarness(t, offlineSource(), hmResult(), 80, 24)
	h.keys("enter")
	first := h.view()
	h.keys("pgdown")
	second := h.view()
	if first == second {
		t.Fatal("pgdown did not scroll the detail")
	}
	if !strings.Contains(second, "relay_lock  relay.c:88") {
		t.Errorf("second page lacks the stack:\n%s", second)
	}
	h.keys("end")
	n := len(h.m.detailLines(80))
	if got, want := h.m.detail.offset, n-h.m.bodyHeight(); got != want {
		t.Errorf("end scrolled to %d, want %d", got, want)
	}
	h.keys("down", "down")
	if got, want := h.m.detail.offset, n-h.m.bodyHeight(); got != want {
		t.Errorf("scrolled past the end to %d, want %d", got, want)
	}
}

func TestFilterNarrowsRows(t *testing.T) {
	h := newHarness(t, offlineSource(), hmResult(), 80, 24)
	h.keys("2", "/", "s", "t", "a", "t", "s")
	if !h.m.editing {
		t.Fatal("/ did not start a filter")
	}
	rows := h.m.rows(tabPoints)
	if len(rows) != 1 || !strings.HasPrefix(rows[0].cells[0], "stats_add") {
		t.Fatalf("filter \"stats\" keeps %d rows: %+v", len(rows), rows)
	}
	if v := h.view(); !strings.Contains(v, "filter: stats_") {
		t.Errorf("filter being typed not shown:\n%s", v)
	}
	h.keys("backspace", "enter")
	if h.m.editing || h.m.lists[tabPoints].filter != "stat" {
		t.Errorf("after backspace and enter: editing %v filter %q", h.m.editing, h.m.lists[tabPoints].filter)
	}
	// The filter belongs to its view.
	if n := len(h.m.rows(tabLocks)); n != 2 {
		t.Errorf("the points filter hid locks: %d rows", n)
	}
	h.keys("/", "z", "z", "z", "enter")
	if v := h.view(); !strings.Contains(v, `No rows match "statzzz"`) {
		t.Errorf("empty filter result not explained:\n%s", v)
	}
	h.keys("esc")
	if f := h.m.lists[tabPoints].filter; f != "" {
		t.Errorf("esc left filter %q", f)
	}
	if n := len(h.m.rows(tabPoints)); n != 3 {
		t.Errorf("%d rows after clearing the filter, want 3", n)
	}
}

func TestSortCycles(t *testing.T) {
	h := newHarness(t, offlineSource(), hmResult(), 80, 24)
	h.keys("2")
	first := func() string { return h.m.rows(tabPoints)[0].cells[0] }
	if got := first(); !strings.HasPrefix(got, "relay_lock") {
		t.Errorf("points by count start with %q, want relay_lock", got)
	}
	h.keys("s") // wait: stats_add (1.92 s) before relay_lock; the idle pool stays last
	rows := h.m.rows(tabPoints)
	if !strings.HasPrefix(rows[0].cells[0], "stats_add") || !strings.HasPrefix(rows[2].cells[0], "(idle)") {
		t.Errorf("points by wait: %q, %q, %q", rows[0].cells[0], rows[1].cells[0], rows[2].cells[0])
	}
	if v := h.view(); !strings.Contains(v, "Wait▼") || !strings.Contains(v, "Points sorted by wait") {
		t.Errorf("sort not shown:\n%s", v)
	}
	h.keys("s", "s") // cpu, then name
	if got := first(); !strings.HasPrefix(got, "relay_lock") {
		t.Errorf("points by name start with %q, want relay_lock", got)
	}
	h.keys("s")
	if h.m.lists[tabPoints].sort != 0 {
		t.Errorf("sort did not wrap around: %d", h.m.lists[tabPoints].sort)
	}
}

func TestCursorFollowsItemAcrossRefresh(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	h.keys("down") // the lock convoy
	swapped := hmResult()
	swapped.Findings[0], swapped.Findings[1] = swapped.Findings[1], swapped.Findings[0]
	h.an.set(swapped)
	h.send(tickMsg{})
	if got := h.m.lists[tabFindings].cursor; got != 0 {
		t.Errorf("cursor at %d after the selected finding moved to 0", got)
	}
	// An open detail follows its item's newest figures.
	h.keys("enter")
	newer := hmResult()
	newer.Findings[1].Participants = 7
	h.an.set(newer)
	h.send(tickMsg{})
	if all := strings.Join(h.m.detailLines(80), "\n"); !strings.Contains(all, "7 of 12 threads") {
		t.Errorf("detail not refreshed:\n%s", all)
	}
	// A finding gone from the window keeps its last figures on screen.
	gone := hmResult()
	gone.Findings = gone.Findings[:1]
	h.an.set(gone)
	h.send(tickMsg{})
	if all := strings.Join(h.m.detailLines(80), "\n"); !strings.Contains(all, "lock-convoy") {
		t.Errorf("detail of a vanished finding lost its data:\n%s", all)
	}
}

func TestScrollingKeepsCursorVisible(t *testing.T) {
	h := newHarness(t, offlineSource(), hmManyPoints(60), 80, 24)
	h.keys("2")
	vis := h.m.visibleRows(tabPoints)
	h.keys("pgdown")
	if got := h.m.lists[tabPoints].cursor; got != vis {
		t.Errorf("pgdown moved the cursor to %d, want %d", got, vis)
	}
	if !strings.Contains(h.view(), "> handler_"+twoDigits(vis)) {
		t.Errorf("selected row not on screen:\n%s", h.view())
	}
	h.keys("end")
	if !strings.Contains(h.view(), "> handler_59") {
		t.Errorf("last row not on screen after end:\n%s", h.view())
	}
	h.keys("home")
	if h.m.lists[tabPoints].offset != 0 {
		t.Errorf("home left offset %d", h.m.lists[tabPoints].offset)
	}
	// Shrinking the terminal keeps the cursor visible.
	h.keys("end")
	h.send(tea.WindowSizeMsg{Width: 80, Height: 12})
	if !strings.Contains(h.view(), "> handler_59") {
		t.Errorf("last row lost after resize:\n%s", h.view())
	}
}

func twoDigits(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }

func TestHelpOverlay(t *testing.T) {
	h := newHarness(t, liveSource(), hmResult(), 80, 24)
	h.keys("?")
	v := h.view()
	for _, want := range []string{"Keys", "next view", "filter", "window", "export", "quit", "? or esc closes"} {
		if !strings.Contains(v, want) {
			t.Errorf("help overlay lacks %q:\n%s", want, v)
		}
	}
	h.keys("2") // keys other than ?, esc and q do nothing under the overlay
	if h.m.tab != tabFindings || !h.m.overlay {
		t.Error("a key went through the overlay")
	}
	h.keys("esc")
	if h.m.overlay {
		t.Error("esc did not close the overlay")
	}
}

func TestQuit(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		h := newHarness(t, liveSource(), hmResult(), 80, 24)
		h.keys(k)
		if !h.quit {
			t.Errorf("%s did not quit", k)
		}
		if v := h.m.render(); v != "" {
			t.Errorf("view after %s is not blank: %q", k, v)
		}
	}
	// q quits from the overlay too; while typing a filter it is a letter.
	h := newHarness(t, liveSource(), hmResult(), 80, 24)
	h.keys("/", "q")
	if h.quit || h.m.lists[tabFindings].filter != "q" {
		t.Errorf("q while filtering: quit %v filter %q", h.quit, h.m.lists[tabFindings].filter)
	}
}

func TestExportWritesRecording(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	h.keys("e")
	if got := src.asked(); got[len(got)-1] != 0 {
		t.Errorf("export asked for window %v, want the whole run", got[len(got)-1])
	}
	dir := filepath.Join(h.m.opts.ExportDir, "contend-relayd-4242-20250314-092703")
	if !recording.IsRecording(dir) {
		t.Fatalf("no recording at %s", dir)
	}
	back, err := recording.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Meta.PID != hmPID || back.Threads == nil || len(back.Threads.Threads) != len(hmThreads) {
		t.Errorf("exported recording differs: pid %d threads %v", back.Meta.PID, back.Threads)
	}
	if h.m.status != "exported to "+dir+" with a Perfetto trace ("+TraceFile+")" || !strings.Contains(h.view(), "exported to /") {
		t.Errorf("status does not say where: %q", h.m.status)
	}
	if st, err := os.Stat(filepath.Join(dir, TraceFile)); err != nil || st.Size() == 0 {
		t.Errorf("no Perfetto trace in the exported recording: %v", err)
	}
	// A second export in the same second gets its own directory.
	h.keys("e")
	if !recording.IsRecording(dir + "-2") {
		t.Errorf("second export not at %s-2", dir)
	}
}

func TestExportErrorIsShown(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.m.opts.ExportDir = blocker // a file: nothing can be created under it
	h.keys("e")
	if v := h.view(); !strings.Contains(v, "export: ") {
		t.Errorf("export error not shown:\n%s", v)
	}
}

func TestEmptyResultSaysSoWithNotes(t *testing.T) {
	res := &analyzer.Result{
		Idle:  hmResult().Idle,
		Notes: []string{"mutex profile empty: the program never called runtime.SetMutexProfileFraction"},
	}
	h := newHarness(t, offlineSource(), res, 80, 24)
	v := h.view()
	for _, want := range []string{"No contention found in this window.", "1 idle group set aside", "mutex profile empty"} {
		if !strings.Contains(v, want) {
			t.Errorf("empty findings screen lacks %q:\n%s", want, v)
		}
	}
}

func TestNoTimelineHeader(t *testing.T) {
	rec := hmRecording()
	rec.Threads = nil
	rec.Meta.PID = 0
	rec.Meta.Probes = nil
	rec.Meta.Source = recording.SourceFiles
	rec.Meta.Inputs = []recording.Input{{Path: "mutex.pb.gz", Kind: "mutex"}, {Path: "goroutines.txt", Kind: "goroutine-dump"}}
	res := hmResult()
	res.Target.Population, res.Target.Unit = 64, "goroutines"
	h := newHarness(t, NewRecordingSource(rec), res, 80, 24)
	v := h.view()
	for _, want := range []string{"2 files · 64 goroutines", "inputs mutex,goroutine-dump", "no /proc timeline"} {
		if !strings.Contains(v, want) {
			t.Errorf("header lacks %q:\n%s", want, v)
		}
	}
}

// TestEverySizeFits renders every view, detail and the overlay at sizes
// from nothing to large: no panic, never a line too wide or too many.
func TestEverySizeFits(t *testing.T) {
	sizes := [][2]int{{0, 0}, {1, 1}, {10, 3}, {29, 7}, {30, 8}, {40, 10}, {80, 24}, {100, 30}, {120, 40}, {250, 70}}
	keys := [][]string{
		{}, {"enter"}, {"enter", "end"}, {"2"}, {"2", "enter"}, {"3"}, {"3", "enter"},
		{"4"}, {"4", "enter"}, {"5"}, {"5", "enter"}, {"?"}, {"/", "x"},
	}
	for _, sz := range sizes {
		for _, ks := range keys {
			h := newHarness(t, liveSource(), hmResult(), sz[0], sz[1])
			h.keys(ks...)
			h.view()
			// and after a resize in the middle of it
			h.send(tea.WindowSizeMsg{Width: sz[1] + 20, Height: sz[0]/3 + 5})
			h.view()
		}
	}
}

func TestNoColorDropsColoursKeepsBold(t *testing.T) {
	render := func() string {
		src := liveSource()
		m := New(src, Options{Analyze: (&fakeAnalyzer{res: hmResult()}).analyze})
		m.after = func(time.Duration) tea.Cmd { return nil }
		m.waitDone = func(<-chan struct{}) tea.Cmd { return nil }
		nm, _ := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
		m = nm.(Model)
		nm, _ = m.Update(m.loadCmd(0)())
		m = nm.(Model)
		nm, _ = m.Update(keyMsg("4"))
		return nm.(Model).render()
	}
	// An SGR sequence with a foreground or background colour parameter.
	colourSGR := regexp.MustCompile(`\x1b\[([0-9]+;)*(3[0-8]|4[0-8])[;m]`)
	t.Setenv("NO_COLOR", "")
	if v := render(); !colourSGR.MatchString(v) {
		t.Fatal("a true-colour render has no colour: the NO_COLOR check below would prove nothing")
	}
	t.Setenv("NO_COLOR", "1")
	v := render()
	if colourSGR.MatchString(v) {
		t.Errorf("NO_COLOR render has colour sequences: %q", v)
	}
	if !strings.Contains(v, "\x1b[1m") {
		t.Errorf("NO_COLOR render lost bold: %q", v)
	}
}

func TestExportNameIsSafe(t *testing.T) {
	rec := hmRecording()
	rec.Meta.Comm = "../we ird/"
	dir := t.TempDir()
	out, err := exportRecording(dir, rec, nil, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(out) != dir || filepath.Base(out) != "contend-..weird-4242-20250314-092703" {
		t.Errorf("export went to %s", out)
	}
}

func TestNarrowHeaderDropsWholeFigures(t *testing.T) {
	h := newHarness(t, liveSource(), hmResult(), 70, 24)
	h.keys("p")
	line := strings.Split(h.view(), "\n")[0]
	if strings.Contains(line, "contend top") || !strings.Contains(line, "pid 4242 relayd · 12 threads · CPU 187%") {
		t.Errorf("at 70 columns the title should give way to the figures: %q", line)
	}
	h.send(tea.WindowSizeMsg{Width: 50, Height: 24})
	line = strings.Split(h.view(), "\n")[0]
	if strings.Contains(line, "CPU") || !strings.Contains(line, "pid 4242 relayd") || !strings.Contains(line, "PAUSED") {
		t.Errorf("at 50 columns whole figures should go, the target and state stay: %q", line)
	}
}

func TestLiveLoadsArePaced(t *testing.T) {
	src := liveSource()
	h := newHarness(t, src, hmResult(), 80, 24)
	now := fixedNow
	h.m.opts.Now = func() time.Time { return now }
	h.m.opts.AnalyzeEvery = 2 * time.Second
	h.m.lastLoad = now // Init's load
	// step moves the clock by after (took, if not zero, is how long the
	// last load took), delivers a tick and checks the analyses so far.
	step := func(after, took time.Duration, want int, what string) {
		t.Helper()
		if took > 0 {
			h.m.lastTook = took
		}
		now = now.Add(after)
		h.send(tickMsg{})
		if h.an.calls != want {
			t.Errorf("%s: %d analyses, want %d", what, h.an.calls, want)
		}
	}
	step(time.Second, 0, 1, "1 s after a load")
	step(time.Second, 0, 2, "2 s after it")
	// A load that took 6 s × loadShare is followed by 6 s without one,
	// however often the screen refreshes.
	took := time.Duration(float64(6*time.Second) * loadShare)
	step(5*time.Second, took, 2, "5 s after a load that took 6 s × loadShare")
	step(time.Second, 0, 3, "6 s after a load that took 6 s × loadShare")
	// However slow, a load never keeps the lists more than maxAnalyzeGap
	// behind.
	step(maxAnalyzeGap-time.Second, time.Hour, 3, "before maxAnalyzeGap after a slow load")
	step(time.Second, 0, 4, "maxAnalyzeGap after a slow load")
	// The header's figures follow every tick meanwhile.
	if n := strings.Count(strings.Join(h.waiting, " "), "tick"); n != 7 {
		t.Errorf("%d ticks scheduled, want 7 (Init's and one per tick)", n)
	}
}

// TestLiveFirstLoadWaitsForASecond: a live source is not analyzed before
// it has recorded the view's shortest window, neither by Init nor at a
// tick; the first tick past it loads, and a target that exits sooner is
// analyzed as it ends.
func TestLiveFirstLoadWaitsForASecond(t *testing.T) {
	src := liveSource()
	src.stats.Elapsed = 300 * time.Millisecond
	h := newHarness(t, src, hmResult(), 80, 24)
	if h.an.calls != 0 || len(src.windows) != 0 {
		t.Fatalf("Init analyzed %d times (snapshots %v) after 300 ms of recording, want none", h.an.calls, src.windows)
	}
	if !strings.Contains(h.view(), "taking the first snapshot") {
		t.Errorf("before the first analysis the screen should say it is coming:\n%s", h.view())
	}
	src.mu.Lock()
	src.stats.Elapsed = 900 * time.Millisecond
	src.mu.Unlock()
	h.send(tickMsg{})
	if h.an.calls != 0 {
		t.Errorf("a tick at 900 ms analyzed, want none before %s", minLiveSpan)
	}
	src.mu.Lock()
	src.stats.Elapsed = minLiveSpan
	src.mu.Unlock()
	h.send(tickMsg{})
	if h.an.calls != 1 || !strings.Contains(h.view(), "Finding") {
		t.Errorf("the tick at %s: %d analyses, want 1 and the findings shown:\n%s", minLiveSpan, h.an.calls, h.view())
	}

	gone := liveSource()
	gone.stats.Elapsed = 400 * time.Millisecond
	h = newHarness(t, gone, hmResult(), 80, 24)
	h.send(exitedMsg{})
	if h.an.calls != 1 {
		t.Errorf("a target gone after 400 ms: %d analyses, want its last one", h.an.calls)
	}
}

func TestAfterLoadRunsOnceALoadIsDone(t *testing.T) {
	var calls int
	var analysed bool
	an := &fakeAnalyzer{res: hmResult()}
	m := New(liveSource(), Options{
		Analyze: func(rec *recording.Recording) (*analyzer.Result, error) {
			analysed = true
			return an.analyze(rec)
		},
		AfterLoad: func() {
			if !analysed {
				t.Error("AfterLoad ran before the analysis")
			}
			calls++
		},
	})
	msg := m.loadCmd(0)()
	if calls != 1 {
		t.Fatalf("AfterLoad ran %d times for one load, want 1", calls)
	}
	if f, ok := msg.(frameMsg); !ok || f.err != nil || f.frame == nil {
		t.Fatalf("load gave %#v, want a frame", msg)
	}
}
