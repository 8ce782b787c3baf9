package tui

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// This file holds the pure formatting helpers of the views: numbers,
// durations, names, bars and text fitting. None of them computes a figure;
// they only turn the analyzer's and the recording's figures into text.

// stateOrder is the display order of thread states, busiest first.
var stateOrder = []string{
	recording.StateRunning,
	recording.StateRunnable,
	recording.StateUninterruptible,
	recording.StateSleeping,
	recording.StateOther,
}

// stateGlyph is the bar character of each state: the denser the glyph, the
// more the thread wants a CPU, so the bar reads without colour.
var stateGlyph = map[string]string{
	recording.StateRunning:         "█",
	recording.StateRunnable:        "▓",
	recording.StateUninterruptible: "▒",
	recording.StateSleeping:        "░",
	recording.StateOther:           " ",
}

// fmtQuantile formats a wait-time quantile; 0 means the input had no
// per-wait durations (Go profiles), shown as "-".
func fmtQuantile(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return units.CompactDuration(d)
}

// fmtClock formats an elapsed time as m:ss or h:mm:ss.
func fmtClock(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// fmtWindow names a refresh window.
func fmtWindow(w time.Duration) string {
	if w == 0 {
		return "whole run"
	}
	if w%time.Second == 0 {
		return fmt.Sprintf("last %ds", w/time.Second)
	}
	return "last " + w.String()
}

// fmtLoc formats a code location as "file.go:88" (base name only), or ""
// when unknown.
func fmtLoc(file string, line int) string {
	if file == "" {
		return ""
	}
	if line <= 0 {
		return filepath.Base(file)
	}
	return fmt.Sprintf("%s:%d", filepath.Base(file), line)
}

// fmtPoint formats a program point as "pool.(*P).Get pool.go:88".
func fmtPoint(p analyzer.ProgramPoint) string {
	name := analyzer.ShortFunc(p.Function)
	if name == "" {
		name = "?"
	}
	if loc := fmtLoc(p.File, p.Line); loc != "" {
		return name + " " + loc
	}
	return name
}

// locFirst formats a program point as "pool.go:88 in pool.(*P).Get".
func locFirst(p analyzer.ProgramPoint) string {
	loc := fmtLoc(p.File, p.Line)
	if loc == "" {
		return analyzer.ShortFunc(p.Function)
	}
	return loc + " in " + analyzer.ShortFunc(p.Function)
}

// fitSplit fits a "name\tlocation" cell to w cells, cutting the name and
// keeping the location.
func fitSplit(s string, w int) string {
	name, loc, ok := strings.Cut(s, "\t")
	if !ok || loc == "" {
		return fit(name, w)
	}
	lw := ansi.StringWidth(loc)
	if ansi.StringWidth(name)+1+lw <= w || lw+8 > w {
		return fit(name+" "+loc, w)
	}
	return fit(name, w-lw-1) + " " + loc
}

// fmtFrame formats one stack frame compactly: function, then base file
// name and line, else the module of an unresolved or file-less frame.
func fmtFrame(f recording.Frame) string {
	text := analyzer.ShortFunc(f.Func)
	if loc := fmtLoc(f.File, f.Line); loc != "" {
		text += "  " + loc
	} else if f.Module != "" && !strings.HasPrefix(f.Func, f.Module) {
		text += "  (" + f.Module + ")"
	}
	if f.Inlined {
		text += " [inlined]"
	}
	if f.Kernel {
		text += " [kernel]"
	}
	return text
}

// lockName is how a lock is named in a list: its symbol, else its address,
// else "?".
func lockName(id analyzer.LockID) string {
	switch {
	case id.Name != "" && id.Address != "":
		return id.Name + " " + id.Address
	case id.Name != "":
		return id.Name
	case id.Address != "":
		return id.Address
	}
	return "?"
}

// fit pads or truncates s to exactly w cells, with "…" marking a cut.
func fit(s string, w int) string { return pad(s, w, false) }

// fitRight right-aligns s in w cells, truncating like fit.
func fitRight(s string, w int) string { return pad(s, w, true) }

func pad(s string, w int, right bool) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	switch {
	case sw > w:
		return ansi.Truncate(s, w, "…")
	case right:
		return strings.Repeat(" ", w-sw) + s
	}
	return s + strings.Repeat(" ", w-sw)
}

// unitOr returns the unit of a row, "threads" when the analyzer left it
// empty.
func unitOr(unit string) string {
	if unit == "" {
		return "threads"
	}
	return unit
}

// clip truncates s to at most w cells without padding.
func clip(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > w {
		return ansi.Truncate(s, w, "…")
	}
	return s
}

// wrap word-wraps text to width w: the first line of each paragraph
// starts with first, the others with rest. Words longer than the width are
// broken.
func wrap(text string, w int, first, rest string) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		prefix := first
		for {
			lim := max(w-ansi.StringWidth(prefix), 8)
			lines := strings.SplitN(ansi.Wrap(para, lim, ""), "\n", 2)
			out = append(out, prefix+strings.TrimRight(lines[0], " "))
			if len(lines) < 2 {
				break
			}
			para = strings.TrimLeft(lines[1], " ")
			if para == "" {
				break
			}
			prefix = rest
		}
	}
	return out
}

// sparkline draws values as block characters, scaled to the largest value
// (at least top, so a quiet process does not look busy). When there are
// more values than cells, each cell shows the largest value of its share,
// so a short burst is never averaged away.
func sparkline(values []int, w int, top int) string {
	if w <= 0 || len(values) == 0 {
		return ""
	}
	if len(values) > w {
		cells := make([]int, w)
		for i, v := range values {
			c := i * w / len(values)
			cells[c] = max(cells[c], v)
		}
		values = cells
	}
	hi := top
	for _, v := range values {
		hi = max(hi, v)
	}
	glyphs := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, v := range values {
		if hi <= 0 || v <= 0 {
			b.WriteRune(' ')
			continue
		}
		i := min((v*len(glyphs)-1)/hi, len(glyphs)-1)
		b.WriteRune(glyphs[i])
	}
	return b.String()
}

// bar draws n of total as a bar of width w with "#" and ".", for
// histograms.
func bar(n, total uint64, w int) string {
	if w <= 0 {
		return ""
	}
	k := 0
	if total > 0 {
		k = int(math.Round(float64(n) * float64(w) / float64(total)))
	}
	if n > 0 && k == 0 {
		k = 1
	}
	if k > w {
		k = w
	}
	return strings.Repeat("#", k)
}

// log2Label names the lower bound of log2 histogram bucket i (2^i ns).
func log2Label(i int) string {
	if i <= 0 {
		return "0"
	}
	if i >= 63 {
		return ">" + units.CompactDuration(time.Duration(math.MaxInt64))
	}
	return units.CompactDuration(time.Duration(uint64(1) << uint(i)))
}

// plural returns "1 thread" / "3 threads" style counts for unit names
// given in the plural.
func plural(n int, unit string) string {
	return fmt.Sprintf("%d %s", n, units.Plural(n, strings.TrimSuffix(unit, "s")))
}
