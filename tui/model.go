// Package tui is contend's interactive view: a Bubble Tea program over a
// live collector session (`contend top`) or a saved recording (`contend
// tui`). It computes nothing itself: every figure comes from the analyzer's
// result or the recording's own helpers; the views only format them.
package tui

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/internal/termsafe"
	"github.com/contend-dev/contend/recording"
)

// DefaultRefresh is the live refresh period. One second is fast enough to
// watch a convoy form and slow enough that taking a snapshot and analyzing
// it (milliseconds for a ten-second window) costs a negligible share of a
// core.
const DefaultRefresh = time.Second

// DefaultAnalyzeEvery is the shortest time between two analyses of a live
// source that `contend top` asks for: the header's figures still follow
// every refresh, while the lists, which summarize windows of one and ten
// seconds, change on a scale of seconds. Half the refreshes is half the
// cost of analyzing at each.
const DefaultAnalyzeEvery = 2 * time.Second

// loadShare bounds the share of a core a live view spends taking
// snapshots and analyzing them: after a load that took d (the longer of
// its wall time and the CPU the process used meanwhile, which counts the
// garbage collections the load's allocations caused on other threads),
// the next starts no sooner than d/loadShare after its start. The goal
// for contend top is 3% of a core in all, and the recording itself takes
// about two thirds of it on paced, the GIL and Go targets (docs/cost.md,
// the per-workload table), so the analyses get a third of the goal; a
// target whose windows take long to analyze (a JVM, a database with many
// backends) is then refreshed less often, up to maxAnalyzeGap, not
// analyzed without pause.
const loadShare = 0.01

// maxAnalyzeGap caps the pause loadShare imposes: however slow a load was
// (a machine short of CPU makes every load slow), the lists are never more
// than this far behind the header.
const maxAnalyzeGap = 10 * time.Second

// minLiveSpan is how long a live source must have recorded before it is
// first analyzed: the view's shortest window. A snapshot taken as the
// session starts covers a few milliseconds, before the probes' maps were
// drained (every 250 ms) or the threads' states sampled more than once or
// twice, and the detectors' shares and rates over it are noise: on the
// spin fixture a 0.14 s window reads as CPU saturation and a 1 s one as
// the spin convoy it is. With the analyses paced, such a first verdict
// would stay on screen until the next load, up to maxAnalyzeGap later.
const minLiveSpan = time.Second

// windows are the time windows `w` cycles through: the last second shows
// what happens now, the last ten seconds smooth out bursts, and the whole
// run accumulates evidence. The middle one is the default.
var windows = []time.Duration{time.Second, 10 * time.Second, 0}

const defaultWindow = 1

// AnalyzeFunc turns a snapshot into the analyzer's result.
type AnalyzeFunc func(*recording.Recording) (*analyzer.Result, error)

// Options configure the TUI.
type Options struct {
	// Title names the program in the header ("contend top").
	Title string
	// Refresh is the live refresh period; 0 means DefaultRefresh.
	Refresh time.Duration
	// ExportDir is the directory `e` writes recordings into; "" means the
	// current directory.
	ExportDir string
	// ExportOwner, when set, is who exported recordings belong to: the
	// user a TUI running as root (contend top under sudo) records for.
	ExportOwner *recording.Owner
	// AnalyzeEvery is the shortest time between the starts of two
	// snapshots of a live source taken at refreshes (DefaultAnalyzeEvery
	// for contend top), and no sooner after the end of the last than
	// loadShare allows; 0 takes one at every refresh. A load never starts
	// while the previous one runs.
	AnalyzeEvery time.Duration
	// Analyze turns a snapshot into a result; nil means analyzer.Analyze
	// with default options.
	Analyze AnalyzeFunc
	// Plain renders without any escape sequence (no colour, bold or
	// reverse video), for tests; otherwise the view is coloured unless
	// NO_COLOR is set.
	Plain bool
	// Now returns the current time, for export directory names; nil means
	// time.Now.
	Now func() time.Time
	// AfterLoad, when set, runs on the loading goroutine after each
	// snapshot was analysed and let go (contend top gives the memory of
	// the snapshot and the analysis back there).
	AfterLoad func()
}

// Messages the model handles besides keys and window sizes.
type (
	// tickMsg asks for a live refresh.
	tickMsg struct{}
	// frameMsg carries a snapshot and its analysis, taken off the UI
	// goroutine.
	frameMsg struct {
		gen   int
		frame *frame
		err   error
		// took is how long taking the snapshot and analyzing it took:
		// the longer of its wall time and the process's CPU time
		// meanwhile.
		took time.Duration
	}
	// exitedMsg says the source's Done channel closed.
	exitedMsg struct{}
	// exportedMsg reports the end of an export.
	exportedMsg struct {
		dir string
		err error
		// trace is the Perfetto trace written into dir, or why none was.
		trace    string
		traceErr error
	}
)

// frame is one snapshot as shown: the recording's metadata, its analysis
// and the header figures taken from its timeline.
type frame struct {
	// rec holds the metadata of the recording only.
	rec    *recording.Recording
	res    *analyzer.Result
	sum    summary
	window time.Duration
}

// statusKind says how a status message is styled.
type statusKind int

const (
	statusInfo statusKind = iota
	statusWarn
	statusErr
)

// listState is the cursor, scroll, sort and filter of one list view.
type listState struct {
	cursor int
	offset int
	sort   int
	filter string
	// key identifies the selected row so the cursor follows it across
	// refreshes that reorder the rows.
	key string
}

// detailState is an open detail page.
type detailState struct {
	tab    tab
	key    string
	item   any
	offset int
}

// Model is the Bubble Tea model of the TUI.
type Model struct {
	src     Source
	opts    Options
	analyze AnalyzeFunc
	look    look
	st      styles
	keys    keyMap
	help    help.Model

	width, height int

	tab     tab
	lists   [numTabs]listState
	detail  *detailState
	overlay bool
	editing bool

	frame  *frame
	stats  Stats
	err    error
	gen    int
	loadOn int // generation being loaded, or -1
	// lastLoad is when the last load started and lastTook how long it
	// took: they pace the loads (see loadDue).
	lastLoad time.Time
	lastTook time.Duration
	window   int
	paused   bool
	exited   bool

	exporting bool
	status    string
	statusK   statusKind
	quitting  bool

	// after and waitDone make the commands that wait (for the next
	// refresh, for the end of the target); tests replace them so no test
	// ever sleeps.
	after    func(time.Duration) tea.Cmd
	waitDone func(<-chan struct{}) tea.Cmd
}

// New returns the model over src.
func New(src Source, opts Options) Model {
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Title == "" {
		opts.Title = "contend"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	an := opts.Analyze
	if an == nil {
		an = func(rec *recording.Recording) (*analyzer.Result, error) {
			return analyzer.Analyze(rec, analyzer.Options{})
		}
	}
	lk := look{plain: opts.Plain, colour: !noColor(), dark: true}
	h := help.New()
	h.ShortSeparator = " "
	m := Model{
		src:     src,
		opts:    opts,
		analyze: an,
		look:    lk,
		keys:    newKeyMap(src.Live()),
		help:    h,
		// Init starts loading generation 0 unless the source is live and
		// too young to analyze (see early).
		loadOn: 0,
		window: defaultWindow,
		after: func(d time.Duration) tea.Cmd {
			return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{} })
		},
		waitDone: func(done <-chan struct{}) tea.Cmd {
			return func() tea.Msg { <-done; return exitedMsg{} }
		},
	}
	m.setStyles()
	m.stats = src.Stats()
	if m.early() {
		// The first tick past minLiveSpan loads instead.
		m.loadOn = -1
	}
	return m
}

// setStyles builds the styles for the model's look, and the help line's
// from them.
func (m *Model) setStyles() {
	m.st = newStyles(m.look)
	m.help.Styles = help.Styles{
		Ellipsis:       m.st.dim,
		ShortKey:       m.st.key,
		ShortDesc:      m.st.dim,
		ShortSeparator: m.st.dim,
		FullKey:        m.st.key,
		FullDesc:       lipgloss.NewStyle(),
		FullSeparator:  m.st.dim,
	}
}

// Init loads the first snapshot (a live source's once it has recorded
// minLiveSpan), starts the refresh clock of a live source
// and watches for the end of the target. A coloured view asks the
// terminal for its background (the answer, if any, arrives as a message;
// nothing waits for it, and until then the colours are those for a dark
// background).
func (m Model) Init() tea.Cmd {
	var cmds []tea.Cmd
	if m.loadOn == m.gen {
		cmds = append(cmds, m.loadCmd(m.gen))
	}
	if m.st.colour {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	if m.src.Live() {
		cmds = append(cmds, m.tickCmd())
		if done := m.src.Done(); done != nil {
			cmds = append(cmds, m.waitDone(done))
		}
	}
	return tea.Batch(cmds...)
}

// curWindow is the window of data shown; a saved recording is always shown
// whole.
func (m *Model) curWindow() time.Duration {
	if !m.src.Live() {
		return 0
	}
	return windows[m.window]
}

func (m *Model) tickCmd() tea.Cmd {
	return m.after(m.opts.Refresh)
}

// loadCmd takes a snapshot and analyzes it off the UI goroutine.
func (m *Model) loadCmd(gen int) tea.Cmd {
	m.loadOn = gen
	m.lastLoad = m.opts.Now()
	src, an, window, after := m.src, m.analyze, m.curWindow(), m.opts.AfterLoad
	return func() tea.Msg {
		start, cpu := time.Now(), processCPU()
		msg := load(src, an, window, gen)
		if after != nil {
			// Counted in the load's cost, so paced with it.
			after()
		}
		msg.took = max(time.Since(start), processCPU()-cpu)
		return msg
	}
}

// load takes a snapshot of window and analyzes it.
func load(src Source, an AnalyzeFunc, window time.Duration, gen int) frameMsg {
	rec, err := src.Snapshot(window)
	if err != nil {
		return frameMsg{gen: gen, err: fmt.Errorf("snapshot: %w", err)}
	}
	if rec == nil {
		return frameMsg{gen: gen, err: errors.New("snapshot: no data yet")}
	}
	res, err := an(rec)
	if err == nil && res == nil {
		err = errors.New("no result")
	}
	if err != nil {
		return frameMsg{gen: gen, err: fmt.Errorf("analyze: %w", err)}
	}
	// What is shown goes through termsafe: names and warnings come
	// from the target. Exports take their own snapshot, exact. The
	// frame keeps only the recording's metadata, all the views read of
	// it: its profiles and events, the largest part of the memory of a
	// live view, go once analyzed.
	shown := recording.Recording{Meta: termsafe.Value(rec.Meta)}
	return frameMsg{gen: gen, frame: &frame{rec: &shown, res: termsafe.Value(res), sum: summarize(rec, window), window: window}}
}

// processCPU returns the CPU time the process has used (user and system,
// every thread), 0 if it cannot be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadDue reports whether a refresh may start a load now: when pacing is
// on, Options.AnalyzeEvery and the last load's duration over loadShare
// after the start of the last one.
func (m *Model) loadDue() bool {
	if m.early() {
		return false
	}
	if m.opts.AnalyzeEvery <= 0 {
		return true
	}
	gap := max(m.opts.AnalyzeEvery, min(time.Duration(float64(m.lastTook)/loadShare), maxAnalyzeGap))
	return m.opts.Now().Sub(m.lastLoad) >= gap
}

// early reports whether the source is live and has recorded less than
// minLiveSpan: too little to analyze.
func (m *Model) early() bool {
	return m.src.Live() && !m.exited && m.stats.Elapsed < minLiveSpan
}

// refresh asks for fresh data unless a load is already under way; a load
// of an older generation (another window) is superseded by bumping gen, and
// its result is dropped when it arrives.
func (m *Model) refresh() tea.Cmd {
	if m.loadOn >= 0 {
		return nil
	}
	return m.loadCmd(m.gen)
}

// Update handles one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
	case tea.BackgroundColorMsg:
		if m.look.dark != msg.IsDark() {
			m.look.dark = msg.IsDark()
			m.setStyles()
		}
	case tickMsg:
		cmd = m.onTick()
	case frameMsg:
		cmd = m.onFrame(msg)
	case exitedMsg:
		cmd = m.onExited()
	case exportedMsg:
		m.exporting = false
		if msg.err != nil {
			m.setStatus(statusErr, "export: %v", msg.err)
		} else if msg.traceErr != nil {
			m.setStatus(statusWarn, "exported to %s; no Perfetto trace: %v", msg.dir, msg.traceErr)
		} else {
			m.setStatus(statusInfo, "exported to %s with a Perfetto trace (%s)", msg.dir, filepath.Base(msg.trace))
		}
	case tea.KeyPressMsg:
		cmd = m.onKey(msg)
	}
	m.fixScroll()
	return m, cmd
}

func (m *Model) onTick() tea.Cmd {
	if m.exited || !m.src.Live() {
		return nil
	}
	m.stats = m.src.Stats()
	var cmds []tea.Cmd
	cmds = append(cmds, m.tickCmd())
	if !m.paused && m.loadDue() {
		cmds = append(cmds, m.refresh())
	}
	return tea.Batch(cmds...)
}

func (m *Model) onFrame(msg frameMsg) tea.Cmd {
	if msg.gen == m.loadOn {
		m.loadOn = -1
	}
	m.lastTook = msg.took
	if msg.gen != m.gen {
		// Data of a window no longer asked for; fetch the current one
		// (a paused screen fetches it when it resumes).
		if m.paused {
			return nil
		}
		return m.refresh()
	}
	if m.paused && m.frame != nil {
		return nil
	}
	if msg.err != nil {
		m.err = msg.err
		return nil
	}
	m.err = nil
	m.frame = msg.frame
	m.stats = m.src.Stats()
	m.follow()
	return nil
}

func (m *Model) onExited() tea.Cmd {
	if m.exited {
		return nil
	}
	m.exited = true
	m.stats = m.src.Stats()
	m.setStatus(statusWarn, "%s (e exports, q quits)", m.endText())
	// One last load picks up what was recorded up to the exit, unless the
	// screen is paused.
	if m.paused {
		return nil
	}
	m.gen++
	return m.refresh()
}

// endText says how the recording ended; the data stays on screen.
func (m *Model) endText() string {
	what := "recording ended"
	if m.stats.TargetExited {
		what = "target exited"
	}
	return fmt.Sprintf("%s after %s; the data stays on screen", what, fmtClock(m.stats.Elapsed))
}

func (m *Model) setStatus(k statusKind, format string, args ...any) {
	m.status = termsafe.String(fmt.Sprintf(format, args...))
	m.statusK = k
}

func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	if msg.String() == "ctrl+c" {
		m.quitting = true
		return tea.Quit
	}
	// A message stays until the next key; standing states (paused,
	// exited, filter) are redrawn from the model by the status line.
	m.status = ""
	if m.editing {
		m.editFilter(msg)
		return nil
	}
	if m.overlay {
		switch {
		case key.Matches(msg, m.keys.Quit):
			m.quitting = true
			return tea.Quit
		case key.Matches(msg, m.keys.Help), key.Matches(msg, m.keys.Back):
			m.overlay = false
		}
		return nil
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		m.quitting = true
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.overlay = true
	case key.Matches(msg, k.Next):
		m.switchTab((m.tab + 1) % numTabs)
	case key.Matches(msg, k.Prev):
		m.switchTab((m.tab + numTabs - 1) % numTabs)
	case key.Matches(msg, k.Views):
		m.switchTab(tab(msg.Code - '1'))
	case key.Matches(msg, k.Up):
		m.move(-1)
	case key.Matches(msg, k.Down):
		m.move(1)
	case key.Matches(msg, k.PageUp):
		m.move(-m.pageRows())
	case key.Matches(msg, k.PageDown):
		m.move(m.pageRows())
	case key.Matches(msg, k.Top):
		m.move(-1 << 30)
	case key.Matches(msg, k.Bottom):
		m.move(1 << 30)
	case key.Matches(msg, k.Open):
		m.open()
	case key.Matches(msg, k.Back):
		m.back()
	case key.Matches(msg, k.Filter):
		if m.detail == nil {
			m.editing = true
		}
	case key.Matches(msg, k.Sort):
		m.cycleSort()
	case key.Matches(msg, k.Pause):
		return m.togglePause()
	case key.Matches(msg, k.Window):
		return m.cycleWindow()
	case key.Matches(msg, k.Export):
		return m.export()
	}
	return nil
}

func (m *Model) switchTab(t tab) {
	if t < 0 || t >= numTabs {
		return
	}
	m.tab = t
	m.detail = nil
}

func (m *Model) togglePause() tea.Cmd {
	if !m.src.Live() {
		return nil
	}
	m.paused = !m.paused
	if m.paused {
		m.setStatus(statusWarn, "paused: the screen is frozen, recording goes on (p resumes)")
		return nil
	}
	m.setStatus(statusInfo, "resumed")
	m.gen++
	return m.refresh()
}

func (m *Model) cycleWindow() tea.Cmd {
	if !m.src.Live() {
		return nil
	}
	m.window = (m.window + 1) % len(windows)
	m.gen++
	m.setStatus(statusInfo, "window: %s", fmtWindow(windows[m.window]))
	if m.paused {
		// The new window applies when the screen resumes.
		return nil
	}
	return m.refresh()
}

func (m *Model) export() tea.Cmd {
	if m.exporting {
		return nil
	}
	m.exporting = true
	m.setStatus(statusInfo, "exporting…")
	src, dir, owner, now := m.src, m.opts.ExportDir, m.opts.ExportOwner, m.opts.Now()
	return func() tea.Msg {
		rec, err := src.Snapshot(0)
		if err != nil {
			return exportedMsg{err: err}
		}
		if rec == nil {
			return exportedMsg{err: errors.New("no data recorded yet")}
		}
		out, err := exportRecording(dir, rec, owner, now)
		if err != nil {
			return exportedMsg{err: err}
		}
		trace, terr := exportTrace(out, rec, owner)
		return exportedMsg{dir: out, trace: trace, traceErr: terr}
	}
}

// editFilter handles a key while the filter is being typed: the rows
// narrow as each character arrives.
func (m *Model) editFilter(msg tea.KeyPressMsg) {
	ls := &m.lists[m.tab]
	switch {
	case msg.Code == tea.KeyEnter:
		m.editing = false
	case msg.Code == tea.KeyEscape:
		m.editing = false
		ls.filter = ""
	case msg.Code == tea.KeyBackspace:
		if r := []rune(ls.filter); len(r) > 0 {
			ls.filter = string(r[:len(r)-1])
		}
	case msg.Text != "" && msg.Mod&^tea.ModShift == 0:
		ls.filter += msg.Text
	}
	m.follow()
}

func (m *Model) back() {
	switch {
	case m.detail != nil:
		m.detail = nil
	case m.lists[m.tab].filter != "":
		m.lists[m.tab].filter = ""
		m.follow()
	}
}

func (m *Model) cycleSort() {
	if m.detail != nil {
		return
	}
	spec := specs[m.tab]
	if len(spec.sorts) < 2 {
		return
	}
	ls := &m.lists[m.tab]
	ls.sort = (ls.sort + 1) % len(spec.sorts)
	m.setStatus(statusInfo, "%s sorted by %s", spec.name, spec.sorts[ls.sort].name)
	m.follow()
}

// move moves the cursor of the current list, or scrolls the open detail.
func (m *Model) move(delta int) {
	if m.detail != nil {
		m.detail.offset += delta
		m.clampDetail()
		return
	}
	rows := m.rows(m.tab)
	ls := &m.lists[m.tab]
	if len(rows) == 0 {
		ls.cursor, ls.key = 0, ""
		return
	}
	ls.cursor = clampInt(ls.cursor+delta, 0, len(rows)-1)
	ls.key = rows[ls.cursor].key
}

// open shows the detail page of the selected row.
func (m *Model) open() {
	if m.detail != nil || specs[m.tab].detail == nil {
		return
	}
	rows := m.rows(m.tab)
	ls := m.lists[m.tab]
	if ls.cursor < 0 || ls.cursor >= len(rows) {
		return
	}
	r := rows[ls.cursor]
	m.detail = &detailState{tab: m.tab, key: r.key, item: r.item}
}

// follow re-finds every list's selected row (by key) after the rows
// changed, and refreshes an open detail page with the newest figures of
// its item; a detail whose item vanished from the window keeps its last
// figures.
func (m *Model) follow() {
	for t := tab(0); t < numTabs; t++ {
		rows := m.rows(t)
		ls := &m.lists[t]
		found := false
		if ls.key != "" {
			for i, r := range rows {
				if r.key == ls.key {
					ls.cursor, found = i, true
					break
				}
			}
		}
		if !found {
			ls.cursor = clampInt(ls.cursor, 0, max(len(rows)-1, 0))
			ls.key = ""
			if len(rows) > 0 {
				ls.key = rows[ls.cursor].key
			}
		}
		if m.detail != nil && m.detail.tab == t {
			for _, r := range rows {
				if r.key == m.detail.key {
					m.detail.item = r.item
				}
			}
		}
	}
}

// pageRows is how many rows one page of the current list shows.
func (m *Model) pageRows() int {
	if m.detail != nil {
		return max(m.bodyHeight()-1, 1)
	}
	return max(m.visibleRows(m.tab), 1)
}

// fixScroll keeps the cursor of the current list inside its visible rows
// and the detail offset inside its text. It runs after every message, the
// one that switches lists included, so only the list on screen needs it:
// building the rows of every list on each key press costs milliseconds on
// a target with thousands of threads.
func (m *Model) fixScroll() {
	ls := &m.lists[m.tab]
	vis := max(m.visibleRows(m.tab), 1)
	if ls.cursor < ls.offset {
		ls.offset = ls.cursor
	}
	if ls.cursor >= ls.offset+vis {
		ls.offset = ls.cursor - vis + 1
	}
	n := len(m.rows(m.tab))
	ls.offset = clampInt(ls.offset, 0, max(n-vis, 0))
	m.clampDetail()
}

func (m *Model) clampDetail() {
	if m.detail == nil {
		return
	}
	n := len(m.detailLines(m.width))
	m.detail.offset = clampInt(m.detail.offset, 0, max(n-m.bodyHeight(), 0))
}

func clampInt(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}
