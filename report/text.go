// Package report renders an analyzer.Result: as text for people (the
// default), as JSON with a versioned schema for scripts, and as a pprof
// profile of the findings' stacks for `go tool pprof`. It only formats;
// every figure comes from the analyzer.
package report

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/internal/termsafe"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// TextOptions tune the text renderer. The zero value renders 80 columns
// without colour, idle waits summarised in one line.
type TextOptions struct {
	// Width is the line width to wrap at; 0 means 80.
	Width int
	// Color turns on ANSI colour and bold. Callers decide (a terminal,
	// NO_COLOR unset, --color); the renderer never guesses.
	Color bool
	// ShowIdle lists every idle group instead of one summary line.
	ShowIdle bool
	// StackFrames is how many frames of each stack to print; 0 means 12.
	StackFrames int
}

// defaultWidth keeps the output readable in a standard terminal and in
// e-mails and tickets, where it is often pasted.
const defaultWidth = 80

// labelWidth is the width of the label column ("point", "lock", …).
const labelWidth = 12

const (
	ansiBold  = "\x1b[1m"
	ansiDim   = "\x1b[2m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiYell  = "\x1b[33m"
	ansiReset = "\x1b[0m"
)

// textWriter accumulates lines with wrapping and optional colour.
type textWriter struct {
	w     *bufio.Writer
	width int
	color bool
}

func (t *textWriter) style(code, s string) string {
	if !t.color || s == "" {
		return s
	}
	return code + s + ansiReset
}

func (t *textWriter) line(s string) { t.w.WriteString(s + "\n") }

// para writes text wrapped at the width, the first line after first, the
// others after rest (both prefixes count toward the width).
func (t *textWriter) para(first, rest, text string) {
	for _, l := range wrap(text, t.width, ansi.StringWidth(first), ansi.StringWidth(rest)) {
		t.line(first + l)
		first = rest
	}
}

// field writes "  label       value…" with the value wrapped under itself.
func (t *textWriter) field(label, value string) {
	pad := strings.Repeat(" ", labelWidth-ansi.StringWidth(label))
	t.para("  "+t.style(ansiDim, label)+pad, strings.Repeat(" ", 2+labelWidth), value)
}

// wrap splits text into lines of at most width cells, the first line
// having firstIndent cells already used and the others restIndent;
// explicit newlines are kept. It is x/ansi's word wrap (escape sequences
// take no width, wide characters two cells), with two rules of the
// report's: a hyphen joins like a letter, so kinds and paths
// ("lock-convoy", "c-stripe-bad/futex-wait.pb.gz") are never split, and
// a word longer than a line stays whole; and a number keeps its unit on
// its line ("4 s", "340 ms").
func wrap(text string, width, firstIndent, restIndent int) []string {
	glued := !strings.ContainsAny(text, glueSpace+glueHyphen)
	if glued {
		text = unitSpace.ReplaceAllString(text, "${1}"+glueSpace+"${2}")
		text = strings.ReplaceAll(text, "-", glueHyphen)
	}
	unglue := strings.NewReplacer(glueSpace, " ", glueHyphen, "-")
	var out []string
	indent := firstIndent
	for _, para := range strings.Split(text, "\n") {
		para = strings.Join(strings.Fields(para), " ")
		for {
			// The first line at this indent; the rest is wrapped again
			// at the next one. Wordwrap only turns spaces into line
			// breaks, so the line is a prefix of the paragraph.
			line, _, more := strings.Cut(ansi.Wordwrap(para, max(width-indent, 1), ""), "\n")
			line = strings.TrimRight(line, " ")
			if line == "" && more {
				// Never the case for a paragraph without leading
				// spaces; kept from looping forever all the same.
				line, more = para, false
			}
			para = strings.TrimLeft(strings.TrimPrefix(para, line), " ")
			if glued {
				line = unglue.Replace(line)
			}
			out = append(out, line)
			indent = restIndent
			if !more || para == "" {
				break
			}
		}
	}
	return out
}

// glueSpace and glueHyphen stand for a space and a hyphen that must not
// break a line while wrap runs: characters of the private use area, one
// cell wide, that no report text holds (wrap leaves a text that does
// hold them as it is).
const (
	glueSpace  = "\ue000"
	glueHyphen = "\ue001"
)

// unitSpace matches the space between a number and its unit.
var unitSpace = regexp.MustCompile(`([0-9]) (ns|µs|ms|s)\b`)

// Text renders r for people: each finding's headline first, then where,
// which lock, the figures, the evidence, the suggestion with its reasoning
// and the stack; then idle waits, notes and a summary line. Every string
// of r (thread, function, file and lock names come from the target) is
// rendered through termsafe, so control characters show as escapes and
// never reach the terminal.
func Text(w io.Writer, r *analyzer.Result, opts TextOptions) error {
	r = termsafe.Value(r)
	t := &textWriter{w: bufio.NewWriter(w), width: opts.Width, color: opts.Color}
	if t.width <= 0 {
		t.width = defaultWidth
	}
	frames := opts.StackFrames
	if frames <= 0 {
		frames = 12
	}
	switch {
	case len(r.Findings) == 0 && len(r.Missing) > 0:
		t.para("", "", t.style(ansiBold+ansiYell, "No lock contention found in what was recorded, but the data that would show some kinds of it is missing (below).")+" "+checked(r))
		t.line("")
	case len(r.Findings) == 0:
		t.para("", "", t.style(ansiBold+ansiGreen, "No lock contention found.")+" "+checked(r))
		t.line("")
	}
	for i := range r.Findings {
		renderFinding(t, r, i, frames)
		t.line("")
	}
	renderIdle(t, r, opts.ShowIdle)
	if len(r.Missing) > 0 {
		t.line(t.style(ansiBold, "Missing data"))
		for _, m := range r.Missing {
			t.para("  - ", "    ", m.What+": "+m.Decides)
		}
		t.line("")
	}
	if len(r.Notes) > 0 {
		t.line(t.style(ansiBold, "Notes"))
		for _, n := range r.Notes {
			t.para("  - ", "    ", n)
		}
		t.line("")
	}
	t.para("", "", t.style(ansiDim, summary(r)))
	return t.w.Flush()
}

// dataKey matches a lock key that names a data symbol:
// "module:symbol" or "module:symbol+0xOFF" (analyzer/identity.go).
var dataKey = regexp.MustCompile(`^([^\s:]+):([^\s+]+)(\+0x[0-9a-f]+)?$`)

// lockLine words the "lock" field and says whether the key gets a line
// of its own. A lock is named by one address: when its key names a data
// symbol, either the line already names that symbol (the key then only
// adds the structure's offset beside the word's, and stays in the JSON,
// where scripts match locks across recordings), or the line is the key's
// symbol followed by the description, without the raw address of one of
// its words. Any other key (a shared mapping, a Go lock's or a latch's
// wait site) is shown below the line.
func lockLine(l *analyzer.LockID) (line string, showKey bool) {
	m := dataKey.FindStringSubmatch(l.Key)
	switch {
	case m != nil && nameSymbol(l.Name, m[1]) == m[2]:
		line = strings.TrimSpace(l.Address + " " + l.Name)
	case m != nil:
		line = m[2] + m[3] + " (" + m[1] + ")"
		if l.Name != "" {
			line += ": " + l.Name
		}
	default:
		line = strings.TrimSpace(l.Address + " " + l.Name)
		showKey = l.Key != ""
	}
	if l.PairingGuess {
		line += " (pairing is a guess)"
	}
	if l.Owner != 0 {
		line += fmt.Sprintf(", owner %d", l.Owner)
	}
	return line, showKey
}

// nameSymbol returns the symbol a lock name "symbol+0xOFF (module)"
// gives for module, "" when the name is no such form.
func nameSymbol(name, module string) string {
	rest, ok := strings.CutSuffix(name, " ("+module+")")
	if !ok {
		return ""
	}
	sym, _, _ := strings.Cut(rest, "+0x")
	if strings.ContainsAny(sym, " ") {
		return ""
	}
	return sym
}

// checked says what the analysis looked at when it found nothing.
func checked(r *analyzer.Result) string {
	var parts []string
	if n := len(r.Locks); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s below the thresholds", n, units.Plural(n, "lock")))
	}
	if n := len(r.Points); n > 0 {
		parts = append(parts, fmt.Sprintf("%d program %s", n, units.Plural(n, "point")))
	}
	if len(parts) == 0 {
		return "Nothing in the input shows goroutines or threads waiting on a lock."
	}
	return "Looked at " + strings.Join(parts, " and ") + "."
}

func kindColor(k analyzer.Kind) string {
	switch k {
	case analyzer.KindRuntimeLock, analyzer.KindContention:
		return ansiYell
	}
	return ansiRed
}

func renderFinding(t *textWriter, r *analyzer.Result, i, maxFrames int) {
	f := &r.Findings[i]
	tag := fmt.Sprintf("[%d/%d] ", i+1, len(r.Findings))
	t.para(t.style(ansiDim, tag), strings.Repeat(" ", len(tag)), t.style(ansiBold, f.Headline))
	t.line("")
	t.field("kind", t.style(kindColor(f.Kind), string(f.Kind))+fmt.Sprintf(" (confidence %s)", f.Confidence))
	t.field("point", pointLine(f.Point))
	if f.Lock != nil {
		line, key := lockLine(f.Lock)
		t.field("lock", line)
		if key {
			t.field("lock key", f.Lock.Key)
		}
	}
	if f.Releaser != nil && !samePoint(*f.Releaser, f.Point) {
		t.field("released", pointLine(*f.Releaser))
	}
	if fig := figures(r, f); fig != "" {
		t.field("figures", fig)
	}
	if len(f.Evidence) > 0 {
		t.line("")
		t.line("  " + t.style(ansiBold, "Evidence"))
		for _, e := range f.Evidence {
			t.para("    - ", "      ", "["+e.Source+"] "+analyzer.EvidenceText(e))
		}
	}
	t.line("")
	t.line("  " + t.style(ansiBold, "Suggestion"))
	t.para("    ", "    ", f.Suggestion.Action)
	if f.Suggestion.Reasoning != "" {
		t.para("    "+t.style(ansiDim, "why: "), "    ", f.Suggestion.Reasoning)
	}
	if f.Suggestion.ExpectedGain != "" {
		t.para("    "+t.style(ansiDim, "expected: "), "    ", f.Suggestion.ExpectedGain)
	}
	if len(f.Point.Stack) > 0 {
		t.line("")
		t.line("  " + t.style(ansiBold, "Stack") + t.style(ansiDim, " (leaf first, > program point)"))
		renderStack(t, f.Point, maxFrames)
	}
}

func samePoint(a, b analyzer.ProgramPoint) bool {
	return a.Function == b.Function && a.File == b.File && a.Line == b.Line
}

// pointLine renders "func file:line".
func pointLine(p analyzer.ProgramPoint) string {
	if p.File == "" {
		return p.Function
	}
	if p.Line > 0 {
		return fmt.Sprintf("%s %s:%d", p.Function, p.File, p.Line)
	}
	return p.Function + " " + p.File
}

// figures renders the finding's numbers in one sentence.
func figures(r *analyzer.Result, f *analyzer.Finding) string {
	var parts []string
	if f.WaitSeconds > 0 {
		s := units.Seconds(f.WaitSeconds) + " waiting"
		if f.WaitShare > 0 {
			s += fmt.Sprintf(" (%s of the participants' time", units.Percent(f.WaitShare))
			if r.Target.Duration > 0 {
				s += " over " + units.Seconds(r.Target.Duration.Seconds())
			}
			s += ")"
		}
		parts = append(parts, s)
	}
	if f.CPUSeconds > 0 {
		parts = append(parts, units.Seconds(f.CPUSeconds)+" CPU burned")
	}
	if f.Participants > 0 {
		unit := f.Unit
		if f.Participants == 1 {
			unit = strings.TrimSuffix(unit, "s")
		}
		s := fmt.Sprintf("%d %s", f.Participants, unit)
		if f.Population > 0 {
			s = fmt.Sprintf("%d of %d %s", f.Participants, f.Population, f.Unit)
		}
		if f.ParticipantsEstimated {
			s = "at least " + s + " (estimated from the wait)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func renderStack(t *textWriter, p analyzer.ProgramPoint, maxFrames int) {
	n := len(p.Stack)
	// Always show the program point and at least two frames above it.
	limit := maxFrames
	if p.PointIndex+3 > limit {
		limit = p.PointIndex + 3
	}
	for i, fr := range p.Stack {
		if i >= limit {
			t.line(t.style(ansiDim, fmt.Sprintf("      … %d more %s", n-i, units.Plural(n-i, "frame"))))
			break
		}
		mark := "  "
		if i == p.PointIndex {
			mark = "> "
		}
		loc := frameLoc(fr)
		text := fr.Func
		if loc != "" {
			text += "  " + loc
		}
		if i == p.PointIndex {
			text = t.style(ansiBold, text)
		}
		t.para("    "+mark, "        ", text)
	}
}

func frameLoc(f recording.Frame) string {
	if f.File == "" {
		return ""
	}
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
	}
	return filepath.Base(f.File)
}

func renderIdle(t *textWriter, r *analyzer.Result, show bool) {
	if len(r.Idle) == 0 {
		return
	}
	total := analyzer.IdleCount(r.Idle)
	byReason := map[string]int{}
	for _, g := range r.Idle {
		byReason[g.Reason] += g.Count
	}
	if !show {
		reasons := make([]string, 0, len(byReason))
		for k := range byReason {
			reasons = append(reasons, k)
		}
		sort.Slice(reasons, func(i, j int) bool {
			if byReason[reasons[i]] != byReason[reasons[j]] {
				return byReason[reasons[i]] > byReason[reasons[j]]
			}
			return reasons[i] < reasons[j]
		})
		var parts []string
		for _, k := range reasons {
			if byReason[k] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", byReason[k], k))
			}
		}
		var text string
		if total > 0 {
			unit := unitOf(r)
			verb := "wait"
			if total == 1 {
				unit, verb = strings.TrimSuffix(unit, "s"), "waits"
			}
			text = fmt.Sprintf("%d %s %s without contention", total, unit, verb)
			if len(parts) > 0 {
				text += " (" + strings.Join(parts, "; ") + ")"
			}
		}
		if blockOnly, secs := blockIdle(r); blockOnly > 0 {
			if text != "" {
				text += "; "
			}
			text += fmt.Sprintf("%d idle %s in the block profile (%s)", blockOnly, units.Plural(blockOnly, "wait"), units.Seconds(secs))
		}
		text += ". --show-idle lists them."
		t.para(t.style(ansiBold, "Not contention: "), "  ", text)
		t.line("")
		return
	}
	t.line(t.style(ansiBold, "Not contention (idle waits, never reported as findings)"))
	for _, g := range r.Idle {
		head := g.Reason
		if g.Count > 0 {
			unit := g.Unit
			if g.Count == 1 {
				unit = strings.TrimSuffix(unit, "s")
			}
			head = fmt.Sprintf("%d %s: %s", g.Count, unit, g.Reason)
		}
		if g.WaitSeconds > 0 {
			head += fmt.Sprintf(" (%s waited)", units.Seconds(g.WaitSeconds))
		}
		t.para("  - ", "    ", head)
		t.para("    at ", "       ", pointLine(g.Point))
	}
	t.line("")
}

// blockIdle counts idle groups seen only in the block profile (no
// goroutine sits there now) and the time they waited.
func blockIdle(r *analyzer.Result) (int, float64) {
	n, secs := 0, 0.0
	for _, g := range r.Idle {
		if g.Count == 0 {
			n++
			secs += g.WaitSeconds
		}
	}
	return n, secs
}

func unitOf(r *analyzer.Result) string {
	if r.Target.Unit != "" {
		return r.Target.Unit
	}
	return "goroutines"
}

// summary is the closing line: what was analyzed.
func summary(r *analyzer.Result) string {
	parts := []string{fmt.Sprintf("%d %s", len(r.Findings), units.Plural(len(r.Findings), "finding"))}
	if n := len(r.Target.Inputs); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", n, units.Plural(n, "input")))
	}
	if r.Target.PID != 0 {
		parts = append(parts, fmt.Sprintf("pid %d %s", r.Target.PID, r.Target.Comm))
	}
	if r.Target.Duration > 0 {
		parts = append(parts, units.Seconds(r.Target.Duration.Seconds())+" profiled")
	}
	if r.Target.Population > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", r.Target.Population, r.Target.Unit))
	}
	if r.Target.Partial {
		parts = append(parts, "partial recording")
	}
	return strings.Join(parts, " · ")
}
