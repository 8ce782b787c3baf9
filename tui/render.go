package tui

import (
	"fmt"
	"sort"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/contend-dev/contend/internal/termsafe"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// Screen layout: four header lines, the body, a status line and the help
// line.
const (
	headerLines = 4
	footerLines = 2
	// Below this size the views cannot show a single useful row; the
	// screen then says so instead of drawing a mangled layout.
	minWidth  = 30
	minHeight = headerLines + footerLines + 2
)

// View draws the whole screen, full screen (the alternate screen, left
// when the program ends).
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	return v
}

// render draws the whole screen as text.
func (m Model) render() string {
	w, h := m.width, m.height
	if m.quitting || w <= 0 || h <= 0 {
		return ""
	}
	if w < minWidth || h < minHeight {
		return screen([]string{"terminal too small", fmt.Sprintf("need %dx%d", minWidth, minHeight)}, w, h)
	}
	lines := m.headerView(w)
	bh := m.bodyHeight()
	var body []string
	switch {
	case m.overlay:
		body = m.overlayView(w, bh)
	case m.frame == nil && m.err != nil:
		body = wrap(termsafe.String(m.err.Error()), w, "  ", "  ")
	case m.frame == nil:
		body = []string{"", "  " + m.st.dim.Render("taking the first snapshot…")}
	case m.detail != nil:
		all := m.detailLines(w)
		off := clampInt(m.detail.offset, 0, max(len(all)-bh, 0))
		body = all[off:min(off+bh, len(all))]
	default:
		body = m.listView(m.tab, w, bh)
	}
	for len(body) < bh {
		body = append(body, "")
	}
	lines = append(lines, body[:bh]...)
	lines = append(lines, m.statusView(w), m.helpLine())
	return screen(lines, w, h)
}

// helpLine is the help line for what is on screen.
func (m *Model) helpLine() string {
	switch {
	case m.editing:
		return m.help.ShortHelpView(m.keys.filterHelp())
	case m.detail != nil:
		return m.help.ShortHelpView(m.keys.detailHelp())
	}
	return m.help.ShortHelpView(m.keys.ShortHelp())
}

// screen clips every line to w cells and the whole to exactly h lines, so
// nothing ever wraps or scrolls the terminal whatever the views produced.
func screen(lines []string, w, h int) string {
	out := make([]string, h)
	for i := 0; i < h && i < len(lines); i++ {
		out[i] = clipStyled(lines[i], w)
	}
	return strings.Join(out, "\n")
}

// clipStyled truncates a possibly styled line to w cells without an
// ellipsis (a cut at the screen edge is not a cut in the data).
func clipStyled(s string, w int) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "")
}

func (m *Model) bodyHeight() int { return max(m.height-headerLines-footerLines, 0) }

// visibleRows is how many rows of tab t fit in the body.
func (m *Model) visibleRows(t tab) int {
	h := m.bodyHeight() - 1 // column titles
	if t == tabIdle {
		h -= len(m.notesLines(m.width, m.bodyHeight()/2))
	}
	return max(h/specs[t].rowLines, 0)
}

// headerView draws the four header lines: target, probes and drops, thread
// states with the runnable sparkline, and the tabs.
func (m *Model) headerView(w int) []string {
	return []string{m.titleLine(w), m.probeLine(w), m.stateLine(w), m.tabLine(w)}
}

func (m *Model) titleLine(w int) string {
	parts := []string{m.st.title.Render(m.opts.Title)}
	if f := m.frame; f != nil {
		meta := f.rec.Meta
		switch {
		case meta.PID > 0:
			t := fmt.Sprintf("pid %d", meta.PID)
			if meta.Comm != "" {
				t += " " + meta.Comm
			}
			parts = append(parts, t)
		case len(meta.Inputs) > 0:
			parts = append(parts, plural(len(meta.Inputs), "files"))
		}
		switch {
		case f.sum.timeline:
			parts = append(parts, plural(f.sum.states.Threads, "threads"))
		case f.res.Target.Population > 0:
			parts = append(parts, plural(f.res.Target.Population, unitOr(f.res.Target.Unit)))
		}
		if f.sum.cpuOK {
			parts = append(parts, "CPU "+units.Percent(f.sum.cpuPct/100))
		}
	}
	var right string
	if m.src.Live() {
		state := "LIVE"
		switch {
		case m.exited && m.stats.TargetExited:
			state = m.st.warn.Render("EXITED")
		case m.exited:
			state = m.st.warn.Render("ENDED")
		case m.paused:
			state = m.st.warn.Render("PAUSED")
		}
		right = fmt.Sprintf("%s · %s · %s", fmtWindow(m.curWindow()), fmtClock(m.stats.Elapsed), state)
	} else if m.stats.Elapsed > 0 {
		right = "recorded " + units.CompactSeconds(m.stats.Elapsed.Seconds())
	} else {
		right = "saved"
	}
	// When it does not fit, the program name goes first (the screen says
	// what it is anyway), then whole figures from the end: never a figure
	// cut in the middle.
	rw := ansi.StringWidth(right)
	fits := func() bool { return ansi.StringWidth(strings.Join(parts, " · "))+rw+2 <= w }
	if !fits() && len(parts) > 1 {
		parts = parts[1:]
	}
	for len(parts) > 1 && !fits() {
		parts = parts[:len(parts)-1]
	}
	return spread(strings.Join(parts, " · "), right, w)
}

// spread puts left and right on one line of width w, cutting left first.
func spread(left, right string, w int) string {
	rw := ansi.StringWidth(right)
	if rw+2 > w {
		return clipStyled(right, w)
	}
	left = clipStyled(left, w-rw-2)
	gap := w - ansi.StringWidth(left) - rw
	return left + strings.Repeat(" ", gap) + right
}

func (m *Model) probeLine(w int) string {
	if m.frame == nil {
		return ""
	}
	meta := m.frame.rec.Meta
	var parts []string
	if len(meta.Probes) > 0 {
		parts = append(parts, "probes "+strings.Join(meta.Probes, ","))
	} else if len(meta.Inputs) > 0 {
		seen := map[string]bool{}
		var kinds []string
		for _, in := range meta.Inputs {
			if k := string(in.Kind); !seen[k] {
				seen[k] = true
				kinds = append(kinds, k)
			}
		}
		parts = append(parts, "inputs "+strings.Join(kinds, ","))
	} else {
		parts = append(parts, "no probes")
	}
	if m.stats.Events > 0 {
		parts = append(parts, "events "+units.CompactCount(m.stats.Events))
	}
	// Drops are shown only when they could move a figure on the screen
	// by 1 % (the analyzer's rule for its loss note): a few lost events in
	// a million are noise in the header, and stay in meta.json.
	if dropsMatter(m.stats.Events, m.stats.Drops) {
		drops := m.st.warn.Render(fmt.Sprintf("drops %s", units.CompactCount(m.stats.Drops)))
		var names []string
		for k, v := range meta.Counters {
			if v > 0 && strings.HasPrefix(k, recording.CounterDropPrefix) {
				k = strings.TrimPrefix(k, recording.CounterDropPrefix)
				names = append(names, fmt.Sprintf("%s %s", k, units.CompactCount(v)))
			}
		}
		sort.Strings(names)
		if len(names) > 0 {
			drops += " (" + strings.Join(names, ", ") + ")"
		}
		parts = append(parts, drops)
	}
	if meta.Partial {
		p := "partial"
		if meta.PartialReason != "" {
			p += ": " + meta.PartialReason
		}
		parts = append(parts, m.st.warn.Render(p))
	}
	return clipStyled(strings.Join(parts, " · "), w)
}

// stateLine draws the thread-state bar of the latest instant and the
// sparkline of the runnable count over the window.
func (m *Model) stateLine(w int) string {
	if m.frame == nil {
		return ""
	}
	s := m.frame.sum
	if !s.timeline {
		return m.st.dim.Render("thread states: no /proc timeline in this recording")
	}
	c := s.states
	type seg struct {
		state string
		n     int
	}
	segs := []seg{
		{"runnable", c.Runnable},
		{"uninterruptible", c.Uninterruptible},
		{"sleeping", c.Sleeping},
		{"other", c.Other},
	}
	legend := fmt.Sprintf("R %d  D %d  S %d", c.Runnable, c.Uninterruptible, c.Sleeping)
	if c.Other > 0 {
		legend += fmt.Sprintf("  other %d", c.Other)
	}
	// A quarter of the width, but at least 8 cells (one per thread of a
	// small pool still shows) and at most 30 (the sparkline needs the rest).
	barW := clampInt(w/4, 8, 30)
	counts := make([]int, len(segs))
	for i, sg := range segs {
		counts[i] = sg.n
	}
	var bar strings.Builder
	for i, n := range apportion(counts, barW) {
		st := segs[i].state
		bar.WriteString(m.st.state[st].Render(strings.Repeat(stateGlyph[st], n)))
	}
	line := legend + " [" + bar.String() + "]"
	rest := w - ansi.StringWidth(line) - len(" runq ")
	if rest >= 4 && len(s.runq) > 0 {
		line += " runq " + m.st.state["runnable"].Render(sparkline(s.runq, rest, s.states.Threads))
	}
	return line
}

// apportion splits width w among counts proportionally, by largest
// remainder, so the parts always add up to w (or to 0 when all counts are
// 0).
func apportion(counts []int, w int) []int {
	total := 0
	for _, c := range counts {
		total += c
	}
	out := make([]int, len(counts))
	if total == 0 || w <= 0 {
		return out
	}
	type rem struct{ i, r int }
	var rems []rem
	used := 0
	for i, c := range counts {
		out[i] = c * w / total
		used += out[i]
		rems = append(rems, rem{i, c * w % total})
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].r > rems[b].r })
	for k := 0; used < w && k < len(rems); k++ {
		out[rems[k].i]++
		used++
	}
	return out
}

func (m *Model) tabLine(w int) string {
	labels := func(long bool) []string {
		out := make([]string, numTabs)
		for t := tab(0); t < numTabs; t++ {
			n := 0
			if m.frame != nil && m.frame.res != nil {
				n = len(specs[t].build(m.frame.res))
			}
			l := fmt.Sprintf("%d %s %d", t+1, specs[t].name, n)
			if !long {
				l = fmt.Sprintf("%d:%d", t+1, n)
			}
			if t == m.tab {
				out[t] = m.st.tabOn.Render("[" + l + "]")
			} else {
				out[t] = m.st.tabOff.Render(" " + l + " ")
			}
		}
		return out
	}
	line := strings.Join(labels(true), " ")
	if ansi.StringWidth(line) > w {
		line = strings.Join(labels(false), " ")
	}
	return clipStyled(line, w)
}

// statusView is the status line: the filter being typed, else the last
// message, else the standing state (exited, paused, filter), with the
// cursor position on the right.
func (m *Model) statusView(w int) string {
	var left string
	ls := m.lists[m.tab]
	switch {
	case m.editing:
		left = "filter: " + ls.filter + "_  (enter keeps, esc clears)"
	case m.status != "":
		switch m.statusK {
		case statusErr:
			left = m.st.bad.Render(m.status)
		case statusWarn:
			left = m.st.warn.Render(m.status)
		default:
			left = m.status
		}
	case m.err != nil:
		left = m.st.bad.Render("refresh: " + termsafe.String(m.err.Error()))
	case m.exited:
		left = m.st.warn.Render(m.endText())
	case m.paused:
		left = m.st.warn.Render("paused: recording goes on (p resumes)")
	case ls.filter != "":
		left = fmt.Sprintf("filter: %q (esc clears)", ls.filter)
	}
	var right string
	// The position shows when no message needs the room.
	if m.frame != nil && !m.overlay && m.status == "" && !m.editing {
		if m.detail != nil {
			n := len(m.detailLines(w))
			if n > m.bodyHeight() {
				right = fmt.Sprintf("%d-%d/%d", m.detail.offset+1, min(m.detail.offset+m.bodyHeight(), n), n)
			}
		} else if n := len(m.rows(m.tab)); n > 0 {
			right = fmt.Sprintf("%d/%d", ls.cursor+1, n)
		}
	}
	if right == "" {
		return clipStyled(left, w)
	}
	return spread(left, m.st.dim.Render(right), w)
}

// listView draws the rows of tab t in h lines of width w.
func (m *Model) listView(t tab, w, h int) []string {
	spec := specs[t]
	rows := m.rows(t)
	ls := m.lists[t]
	widths := layout(spec.cols, w-2)
	out := []string{m.st.bold.Render(m.titleRow(spec, widths, ls.sort))}
	if len(rows) == 0 {
		msg := spec.empty
		if t == tabThreads && m.frame.sum.timeline {
			msg = "The analysis returned no thread rows for this window."
		}
		if ls.filter != "" {
			msg = fmt.Sprintf("No rows match %q (esc clears the filter).", ls.filter)
		}
		out = append(out, "", "  "+msg)
		if t == tabFindings && ls.filter == "" {
			if n := len(m.frame.res.Idle); n > 0 {
				out = append(out, "  "+m.st.dim.Render(fmt.Sprintf("%s set aside as not contention (5 Idle).", plural(n, "idle groups"))))
			}
			out = append(out, "")
			out = append(out, m.notesLines(w, h-len(out))...)
		}
		if t == tabIdle {
			out = m.withNotes(out, w, h)
		}
		return out
	}
	vis := m.visibleRows(t)
	for i := ls.offset; i < len(rows) && i < ls.offset+vis; i++ {
		out = append(out, m.rowLines(spec, widths, rows[i], i == ls.cursor, w)...)
	}
	if t == tabIdle {
		out = m.withNotes(out, w, h)
	}
	return out
}

// withNotes pads a list to put the notes at the bottom of the body.
func (m *Model) withNotes(out []string, w, h int) []string {
	notes := m.notesLines(w, h/2)
	for len(out)+len(notes) < h {
		out = append(out, "")
	}
	return append(out, notes...)
}

// notes returns the analyzer's notes followed by the recording's warnings
// that the notes do not already repeat.
func (m *Model) notes() []string {
	if m.frame == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range m.frame.res.Notes {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range m.frame.rec.Meta.Warnings {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// notesLines wraps the notes under a title in at most h lines.
func (m *Model) notesLines(w, h int) []string {
	notes := m.notes()
	if len(notes) == 0 || h < 2 {
		return nil
	}
	out := []string{m.st.bold.Render("Notes")}
	for _, n := range notes {
		out = append(out, wrap(n, w, "  - ", "    ")...)
	}
	if len(out) > h {
		out = out[:h]
		out[h-1] = "  " + m.st.dim.Render(fmt.Sprintf("… %d more lines", len(notes)))
	}
	return out
}

// layout sizes the columns to width w: fixed columns keep their width, the
// flexible ones share the rest (at least 4 cells each); one space separates
// columns.
//
// The lists are drawn here rather than with bubbles/table, which draws
// one line per row, cuts every cell at its right end with "…" and marks
// the selection only by its style. These lists need a second line under
// a row (a finding's kind and place), a thread's state strip cut at its
// left end (the newest samples are on the right), numbers aligned right,
// cells of two parts (fitSplit), a selection marked with ">" so it shows
// without colour, and a cursor that follows its row by key across
// refreshes that reorder the rows.
func layout(cols []column, w int) []int {
	out := make([]int, len(cols))
	fixed, flex := 0, 0
	for i, c := range cols {
		if c.width > 0 {
			out[i] = c.width
			fixed += c.width
		} else {
			flex++
		}
	}
	fixed += len(cols) - 1
	if flex > 0 {
		each := max((w-fixed)/flex, 4)
		for i, c := range cols {
			if c.width == 0 {
				out[i] = each
			}
		}
	}
	return out
}

func (m *Model) titleRow(spec tabSpec, widths []int, sortIdx int) string {
	mark := -1
	if sortIdx >= 0 && sortIdx < len(spec.sorts) {
		mark = spec.sorts[sortIdx].col
	}
	cells := make([]string, len(spec.cols))
	for i, c := range spec.cols {
		title := c.title
		if i == mark {
			title += "▼"
		}
		if c.right {
			cells[i] = fitRight(title, widths[i])
		} else {
			cells[i] = fit(title, widths[i])
		}
	}
	return "  " + strings.Join(cells, " ")
}

// rowLines draws one row (and its sub line); the selected row is marked
// with ">" as well as reverse video, so it shows without colour.
func (m *Model) rowLines(spec tabSpec, widths []int, r row, selected bool, w int) []string {
	cells := make([]string, len(spec.cols))
	for i, c := range spec.cols {
		v := ""
		if i < len(r.cells) {
			v = r.cells[i]
		}
		switch {
		case c.tail:
			if n := ansi.StringWidth(v); n > widths[i] {
				v = ansi.TruncateLeft(v, n-widths[i], "")
			}
			v = fit(v, widths[i])
			if !selected {
				v = m.colourStrip(v)
			}
		case c.split:
			v = fitSplit(v, widths[i])
		case c.right:
			v = fitRight(v, widths[i])
		default:
			v = fit(v, widths[i])
		}
		cells[i] = v
	}
	line := strings.Join(cells, " ")
	gutter := "  "
	if selected {
		gutter = "> "
		line = m.st.selected.Render(line)
	} else if r.dim {
		line = m.st.dim.Render(line)
	}
	out := []string{gutter + line}
	if spec.rowLines > 1 {
		out = append(out, "    "+m.st.dim.Render(clip(r.sub, w-4)))
	}
	return out
}

// colourStrip colours each /proc state letter of a strip by its state.
func (m *Model) colourStrip(s string) string {
	if !m.st.colour {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		st := recording.StateCategory(s[i])
		if st == "" {
			b.WriteByte(s[i])
			continue
		}
		b.WriteString(m.st.state[st].Render(s[i : i+1]))
	}
	return b.String()
}

// overlayView is the `?` help: every key, and how to read the bars.
func (m *Model) overlayView(w, h int) []string {
	hm := m.help
	hm.SetWidth(max(w-6, 10))
	lines := []string{
		m.st.bold.Render("Keys"),
		hm.FullHelpView(m.keys.FullHelp()),
		"Views: 1 Findings  2 Points  3 Locks  4 Threads  5 Idle",
		"Bar: " + stateGlyph["runnable"] + " R running/runnable  " + stateGlyph["uninterruptible"] + " D uninterruptible  " +
			stateGlyph["sleeping"] + " S sleeping",
		"runq: runnable threads per /proc sample over the window",
	}
	if m.src.Live() {
		lines = append(lines, "w: last 1s, last 10s, whole run · p freezes the screen")
	}
	lines = append(lines, m.st.dim.Render("? or esc closes"))
	// The width counts the border (two cells) as well.
	box := m.st.overlay.Width(min(w-2, 78) + 2).Render(strings.Join(lines, "\n"))
	placed := lipgloss.Place(w, h, lipgloss.Center, lipgloss.Center, box)
	return strings.Split(placed, "\n")
}

// dropsWorthShowing is the share of the probes' events lost from which
// the header shows the drops. A figure summed over events moves by at
// most the share of events lost, so below 1 % none moves by 1 %.
const dropsWorthShowing = 0.01

// dropsMatter says whether drops out of events+drops reach
// dropsWorthShowing.
func dropsMatter(events, drops uint64) bool {
	return drops > 0 && float64(drops) >= dropsWorthShowing*float64(events+drops)
}
