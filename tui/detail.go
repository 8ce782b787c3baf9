package tui

import (
	"fmt"
	"strings"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// detailLines draws the open detail page at width w.
func (m *Model) detailLines(w int) []string {
	if m.detail == nil {
		return nil
	}
	spec := specs[m.detail.tab]
	if spec.detail == nil {
		return nil
	}
	return spec.detail(m, m.detail.item, w)
}

// page accumulates the lines of a detail page.
type page struct {
	m     *Model
	w     int
	lines []string
}

// newPage starts a detail page with its title; idle adds the note that
// what the page shows is not contention.
func (m *Model) newPage(w int, title string, idle bool) *page {
	p := &page{m: m, w: w}
	p.add(m.st.title.Render(clip(title, w)))
	if idle {
		p.para("Classified as idle: waiting here is not contention.", "", "")
	}
	return p
}

func (p *page) add(lines ...string) { p.lines = append(p.lines, lines...) }

// para adds text wrapped to the width, its first line starting with first
// and the others with rest.
func (p *page) para(text, first, rest string) {
	p.add(wrap(text, p.w, first, rest)...)
}

// section starts a titled section after a blank line.
func (p *page) section(title string) {
	p.add("", p.m.st.bold.Render(title))
}

// field adds "Label      value", the value wrapped under itself.
func (p *page) field(label, value string) {
	const labelW = 13
	lines := wrap(value, p.w-labelW, "", "")
	for i, l := range lines {
		if i == 0 {
			p.add(fit(label, labelW) + l)
		} else {
			p.add(strings.Repeat(" ", labelW) + l)
		}
	}
}

// stack adds a stack, leaf first, marking the program point frame with
// ">" (and the point style) and giving its full file path below it.
func (p *page) stack(frames []recording.Frame, point int) {
	if len(frames) == 0 {
		p.add("  " + p.m.st.dim.Render("(no stack recorded)"))
		return
	}
	for i, f := range frames {
		text := fmtFrame(f)
		if i == point {
			p.add(p.m.st.point.Render(clip("  > "+text, p.w)))
			if f.File != "" && f.Line > 0 {
				p.add(p.m.st.dim.Render(clip(fmt.Sprintf("      %s:%d", f.File, f.Line), p.w)))
			}
			continue
		}
		p.add(clip("    "+text, p.w))
	}
}

func (m *Model) findingDetail(item any, w int) []string {
	it, ok := item.(findingItem)
	if !ok {
		return nil
	}
	f := it.f
	p := m.newPage(w, fmt.Sprintf("Finding #%d · %s · confidence %s", it.rank, f.Kind, f.Confidence), false)
	p.para(f.Headline, "", "")
	p.add("")
	p.field("Where", fmtPoint(f.Point))
	p.field("Who", participants(f))
	lost := units.CompactSeconds(f.WaitSeconds) + " waiting"
	if f.WaitShare > 0 {
		lost += " (" + units.Percent(f.WaitShare) + " of their time)"
	}
	if f.CPUSeconds > 0 {
		lost += " · " + units.CompactSeconds(f.CPUSeconds) + " CPU burned"
	}
	p.field("Time lost", lost)
	if f.Lock != nil {
		p.field("Lock", lockIDText(*f.Lock))
	}
	if f.Releaser != nil {
		p.field("Released at", fmtPoint(*f.Releaser))
	}

	p.section("Suggestion")
	p.para(f.Suggestion.Action, "  ", "  ")
	if f.Suggestion.Reasoning != "" {
		p.add("")
		p.para("Why: "+f.Suggestion.Reasoning, "  ", "  ")
	}
	if f.Suggestion.ExpectedGain != "" {
		p.add("")
		p.para("Expected gain: "+f.Suggestion.ExpectedGain, "  ", "  ")
	}

	p.section("Evidence")
	if len(f.Evidence) == 0 {
		p.add("  " + m.st.dim.Render("(none given)"))
	}
	for _, e := range f.Evidence {
		p.para(fmt.Sprintf("[%s] %s", e.Source, analyzer.EvidenceText(e)), "  - ", "    ")
	}

	p.section("Stack (leaf first; > marks the program point)")
	p.stack(f.Point.Stack, f.Point.PointIndex)
	if f.Releaser != nil && len(f.Releaser.Stack) > 0 {
		p.section("Release stack")
		p.stack(f.Releaser.Stack, f.Releaser.PointIndex)
	}
	return p.lines
}

// lockIDText describes a lock identity on one (wrapped) line.
func lockIDText(id analyzer.LockID) string {
	parts := []string{lockName(id)}
	if id.Key != "" {
		parts = append(parts, "key "+id.Key)
	}
	if len(id.Words) > 1 {
		parts = append(parts, "words "+strings.Join(id.Words, ", "))
	}
	if id.Owner > 0 {
		parts = append(parts, fmt.Sprintf("owner tid %d", id.Owner))
	}
	if id.PairingGuess {
		parts = append(parts, "identified by pairing lock and unlock sites (a guess)")
	}
	return strings.Join(parts, " · ")
}

func (m *Model) pointDetail(item any, w int) []string {
	pr, ok := item.(analyzer.PointRow)
	if !ok {
		return nil
	}
	p := m.newPage(w, "Program point "+fmtPoint(pr.Point), pr.Idle)
	p.add("")
	p.field("Seen here", plural(pr.Count, unitOr(pr.Unit)))
	if mix := stateMix(pr.States); mix != "" {
		p.field("States", mix)
	}
	p.field("Wait", units.CompactSeconds(pr.WaitSeconds))
	p.field("CPU", units.CompactSeconds(pr.CPUSeconds))
	p.section("Stack (leaf first; > marks the program point)")
	p.stack(pr.Point.Stack, pr.Point.PointIndex)
	return p.lines
}

func (m *Model) lockDetail(item any, w int) []string {
	l, ok := item.(analyzer.LockRow)
	if !ok {
		return nil
	}
	p := m.newPage(w, "Lock "+lockName(l.Lock), l.Idle)
	p.add("")
	p.field("Identity", lockIDText(l.Lock))
	p.field("Waits", fmt.Sprintf("%d by %s", l.Waits, plural(l.DistinctWaiters, "distinct waiters")))
	wait := "total " + units.CompactSeconds(l.WaitSeconds)
	if l.P50 > 0 || l.P99 > 0 {
		wait += fmt.Sprintf(" · p50 %s · p99 %s", fmtQuantile(l.P50), fmtQuantile(l.P99))
	}
	if l.Max > 0 {
		wait += " · max " + units.CompactDuration(l.Max)
	}
	p.field("Wait time", wait)
	if l.Waiter != nil {
		p.field("Waiter site", fmtPoint(*l.Waiter))
	}
	if l.Waker != nil {
		p.field("Waker site", fmtPoint(*l.Waker))
	}

	p.section("Wait-time histogram (waits per power-of-two bucket)")
	p.add(histLines(l.Hist, w)...)

	if l.Waiter != nil {
		p.section("Waiter stack")
		p.stack(l.Waiter.Stack, l.Waiter.PointIndex)
	}
	if l.Waker != nil {
		p.section("Waker stack")
		p.stack(l.Waker.Stack, l.Waker.PointIndex)
	}
	return p.lines
}

// histLines draws a log2 histogram from its first to its last non-empty
// bucket, one line per bucket: lower bound, bar, count.
func histLines(hist []uint64, w int) []string {
	first, last := -1, -1
	var peak uint64
	for i, n := range hist {
		if n == 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		peak = max(peak, n)
	}
	if first < 0 {
		return []string{"  (no per-wait durations in this input)"}
	}
	const labelW, countW = 9, 8
	barW := max(w-labelW-countW-6, 4)
	var out []string
	for i := first; i <= last; i++ {
		out = append(out, fmt.Sprintf("  %s %s %s", fitRight("≥"+log2Label(i), labelW), fit(bar(hist[i], peak, barW), barW), fitRight(fmt.Sprint(hist[i]), countW)))
	}
	return out
}

func (m *Model) threadDetail(item any, w int) []string {
	t, ok := item.(analyzer.ThreadRow)
	if !ok {
		return nil
	}
	p := m.newPage(w, fmt.Sprintf("Thread %d %s", t.TID, t.Comm), false)
	p.add("")
	p.field("CPU", fmt.Sprintf("%s (user %s, system %s)", units.CompactSeconds(t.CPUSeconds), units.CompactSeconds(t.UserSeconds), units.CompactSeconds(t.SysSeconds)))
	p.field("Switches", fmt.Sprintf("%d voluntary, %d involuntary", t.Voluntary, t.Involuntary))
	if t.WaitSeconds > 0 {
		p.field("Lock wait", units.CompactSeconds(t.WaitSeconds))
	}
	p.section("States over time (one /proc letter per sample, oldest first)")
	if t.States == "" {
		p.add("  " + m.st.dim.Render("(no samples)"))
	}
	step := max(w-4, 8)
	for i := 0; i < len(t.States); i += step {
		p.add("  " + m.colourStrip(t.States[i:min(i+step, len(t.States))]))
	}
	p.add("", m.st.dim.Render(clip("  R running or runnable · S sleeping · D uninterruptible · ? not sampled", w)))
	return p.lines
}

func (m *Model) idleDetail(item any, w int) []string {
	g, ok := item.(analyzer.IdleGroup)
	if !ok {
		return nil
	}
	p := m.newPage(w, "Not contention", false)
	p.para(g.Reason, "", "")
	p.add("")
	p.field("Where", fmtPoint(g.Point))
	p.field("Count", plural(g.Count, unitOr(g.Unit)))
	if g.WaitSeconds > 0 {
		p.field("Idle time", units.CompactSeconds(g.WaitSeconds))
	}
	p.section("Stack (leaf first; > marks the program point)")
	p.stack(g.Point.Stack, g.Point.PointIndex)
	return p.lines
}
