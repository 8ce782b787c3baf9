package tui

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// updating reports whether -update was given. The flag itself is
// registered by charmbracelet/x/exp/golden, which teatest imports; the
// golden helper below reads the same flag rather than defining a second.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// fakeSource is a Source whose data, errors and progress a test sets.
type fakeSource struct {
	mu      sync.Mutex
	rec     *recording.Recording
	err     error
	live    bool
	done    chan struct{}
	stats   Stats
	windows []time.Duration // every window asked for, in order
}

func (f *fakeSource) Snapshot(w time.Duration) (*recording.Recording, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.windows = append(f.windows, w)
	return f.rec, f.err
}

func (f *fakeSource) Live() bool            { return f.live }
func (f *fakeSource) Done() <-chan struct{} { return f.done }
func (f *fakeSource) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *fakeSource) set(rec *recording.Recording, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec, f.err = rec, err
}

func (f *fakeSource) asked() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.windows...)
}

// waitingMsg stands for a command that would wait (the refresh clock, the
// end of the target): tests deliver tickMsg and exitedMsg themselves.
type waitingMsg string

// fakeAnalyzer returns the result a test sets and counts its calls.
type fakeAnalyzer struct {
	mu    sync.Mutex
	res   *analyzer.Result
	err   error
	calls int
}

func (a *fakeAnalyzer) analyze(*recording.Recording) (*analyzer.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	return a.res, a.err
}

func (a *fakeAnalyzer) set(res *analyzer.Result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.res = res
}

// harness drives a Model with messages and runs its commands at once, in
// the test goroutine; hold keeps commands aside until release.
type harness struct {
	t       *testing.T
	m       Model
	an      *fakeAnalyzer
	waiting []string
	quit    bool
	hold    bool
	held    []tea.Cmd
}

var fixedNow = time.Date(2025, 3, 14, 9, 27, 3, 0, time.UTC)

func newHarness(t *testing.T, src Source, res *analyzer.Result, w, h int) *harness {
	t.Helper()
	an := &fakeAnalyzer{res: res}
	title := "contend tui"
	if src.Live() {
		title = "contend top"
	}
	m := New(src, Options{
		Title:     title,
		Analyze:   an.analyze,
		Plain:     true,
		Now:       func() time.Time { return fixedNow },
		ExportDir: t.TempDir(),
	})
	m.after = func(time.Duration) tea.Cmd { return func() tea.Msg { return waitingMsg("tick") } }
	m.waitDone = func(<-chan struct{}) tea.Cmd { return func() tea.Msg { return waitingMsg("done") } }
	hs := &harness{t: t, m: m, an: an}
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	hs.run(hs.m.Init())
	return hs
}

func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	nm, cmd := h.m.Update(msg)
	h.m = nm.(Model)
	h.run(cmd)
}

func (h *harness) run(cmd tea.Cmd) {
	h.t.Helper()
	if cmd == nil {
		return
	}
	if h.hold {
		h.held = append(h.held, cmd)
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			h.run(c)
		}
	case waitingMsg:
		h.waiting = append(h.waiting, string(msg))
	case tea.QuitMsg:
		h.quit = true
	default:
		h.send(msg)
	}
}

// release runs the commands held so far.
func (h *harness) release() {
	h.t.Helper()
	held := h.held
	h.held, h.hold = nil, false
	for _, c := range held {
		h.run(c)
	}
}

// keys sends each key in turn: names such as "enter", "esc", "tab",
// "shift+tab", "up", "down", "pgdown", "backspace", or literal text.
func (h *harness) keys(names ...string) {
	h.t.Helper()
	for _, n := range names {
		h.send(keyMsg(n))
	}
}

func keyMsg(name string) tea.KeyPressMsg {
	codes := map[string]tea.Key{
		"enter": {Code: tea.KeyEnter}, "esc": {Code: tea.KeyEscape}, "tab": {Code: tea.KeyTab},
		"shift+tab": {Code: tea.KeyTab, Mod: tea.ModShift},
		"up":        {Code: tea.KeyUp}, "down": {Code: tea.KeyDown}, "pgdown": {Code: tea.KeyPgDown}, "pgup": {Code: tea.KeyPgUp},
		"backspace": {Code: tea.KeyBackspace}, "home": {Code: tea.KeyHome}, "end": {Code: tea.KeyEnd},
		"ctrl+c": {Code: 'c', Mod: tea.ModCtrl}, "space": {Code: tea.KeySpace, Text: " "},
	}
	if k, ok := codes[name]; ok {
		return tea.KeyPressMsg(k)
	}
	r := []rune(name)
	return tea.KeyPressMsg{Code: r[0], Text: name}
}

// view renders the screen and checks it fits the terminal exactly.
func (h *harness) view() string {
	h.t.Helper()
	v := h.m.render()
	checkScreen(h.t, v, h.m.width, h.m.height)
	return v
}

// checkScreen fails unless v has exactly h lines none wider than w.
func checkScreen(t *testing.T, v string, w, h int) {
	t.Helper()
	if w <= 0 || h <= 0 {
		return
	}
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Errorf("screen %dx%d: %d lines", w, h, len(lines))
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("screen %dx%d: line %d is %d cells wide: %q", w, h, i+1, n, l)
		}
	}
}

// golden compares got with testdata/name.golden (rewritten with -update).
// Trailing spaces are trimmed so the files stay readable.
func golden(t *testing.T, name, got string) {
	t.Helper()
	lines := strings.Split(got, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	got = strings.Join(lines, "\n") + "\n"
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -run %s -update to create it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func liveSource() *fakeSource {
	return &fakeSource{
		rec:   hmRecording(),
		live:  true,
		done:  make(chan struct{}),
		stats: Stats{Elapsed: 12 * time.Second, Events: 183402, Drops: 3},
	}
}

func offlineSource() Source { return NewRecordingSource(hmRecording()) }
