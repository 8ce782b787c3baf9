package goprof

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/contend-dev/contend/internal/boundedio"
)

// The text forms parsed here are written by the Go runtime:
//
// debug=1 (runtime/pprof printCountProfile): a "goroutine profile: total N"
// header, then per distinct stack a "COUNT @ 0xPC 0xPC …" line, an optional
// "# labels: {"k":"v", …}" line, and one "#\t0xPC\tfunc+0xOFF\tfile:line"
// line per frame (columns padded with tabs by a tabwriter), then a blank
// line. Leading runtime frames are hidden.
//
// debug=2 (runtime.Stack(buf, true), and every Go traceback): per goroutine
// a header "goroutine ID [STATUS(, N minutes)(, locked to thread)]:" —
// GOTRACEBACK=system and crashes add "gp=0x… m=…" fields before the
// bracket and Go 1.26 may append " labels:{…}" inside it — then per frame
// "func(args)" and "\tfile:line( +0xOFF)", optionally
// "...N frames elided..." (older Go: "...additional frames elided..."),
// then "created by F( in goroutine N)" with its own file:line, then a blank
// line.

var (
	debug1HeaderRE = regexp.MustCompile(`^goroutine profile: total (\d+)$`)
	debug1CountRE  = regexp.MustCompile(`^(\d+) @((?: 0x[0-9a-fA-F]+)*)$`)
	headerRE       = regexp.MustCompile(`^goroutine (\d+)((?: [^\[\]]*)?) \[(.*)\]:$`)
	fileLineRE     = regexp.MustCompile(`^\t(.+):(\d+)(?: .*)?$`)
	elidedRE       = regexp.MustCompile(`^\.\.\.(?:additional|\d+) frames elided\.\.\.$`)
	minutesRE      = regexp.MustCompile(`^(\d+) minutes?$`)
	createdByRE    = regexp.MustCompile(`^created by (.+?)(?: in goroutine (\d+))?$`)
	// registerRE matches the register dump ("rax    0xca") a signal
	// traceback ends with.
	registerRE = regexp.MustCompile(`^[a-z][a-z0-9]*\s+0x[0-9a-fA-F]+$`)
)

// stackUnavailable is what a traceback prints in place of the frames of a
// goroutine running on another thread.
const stackUnavailable = "goroutine running on other thread; stack unavailable"

// tracebackPreambles start texts that hold a debug=2 style traceback after
// a message: panics, fatal errors and signal dumps (SIGQUIT, SIGSEGV …).
var tracebackPreambles = []string{"panic: ", "fatal error: ", "SIG", "unexpected signal", "runtime: "}

// ParseDump parses a goroutine dump in debug=1 or debug=2 text form. A Go
// traceback (a panic, a fatal error, a SIGQUIT dump) is read as a debug=2
// dump: the message before the first goroutine is skipped. The returned
// Dump keeps data as Raw.
func ParseDump(data []byte) (*Dump, error) {
	return ParseDumpWithin(data, nil)
}

// ParseDumpWithin is ParseDump charging the memory of the parsed dump to
// b (see SetInputBudget): for dumps read from files.
func ParseDumpWithin(data []byte, b *boundedio.Budget) (*Dump, error) {
	return withSlot(func() (*Dump, error) { return parseDump(data, b) })
}

func parseDump(data []byte, b *boundedio.Budget) (*Dump, error) {
	if err := checkTextBudget(data, b); err != nil {
		return nil, err
	}
	lines := splitLines(data)
	first := 0
	for first < len(lines) && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	if first == len(lines) {
		return nil, badf("empty goroutine dump")
	}
	var d *Dump
	var err error
	switch l := lines[first]; {
	case strings.HasPrefix(l, "goroutine profile:"):
		d, err = parseDebug1(lines, first)
	case strings.HasPrefix(l, "goroutine "):
		d, err = parseDebug2(lines, first)
	case hasAnyPrefix(l, tracebackPreambles):
		start := first
		for start < len(lines) && !headerRE.MatchString(lines[start]) {
			start++
		}
		if start == len(lines) {
			return nil, lineErrorf(first+1, "traceback without any goroutine header (%q)", "goroutine N [state]:")
		}
		d, err = parseDebug2(lines, start)
	default:
		return nil, lineErrorf(first+1, "expected %q or %q, got %s", "goroutine profile: total N", "goroutine N [state]:", quoteShort(l))
	}
	if err != nil {
		return nil, err
	}
	d.Raw = data
	return d, nil
}

// splitLines splits data into lines without their line endings (LF or
// CRLF).
func splitLines(data []byte) []string {
	text := string(data)
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

func parseDebug1(lines []string, first int) (*Dump, error) {
	m := debug1HeaderRE.FindStringSubmatch(lines[first])
	if m == nil {
		return nil, lineErrorf(first+1, "expected %q, got %s", "goroutine profile: total N", quoteShort(lines[first]))
	}
	total, err := strconv.Atoi(m[1])
	if err != nil {
		return nil, lineErrorf(first+1, "goroutine total out of range")
	}
	d := &Dump{Kind: KindGoroutineText, Total: total}
	var g *Group
	sum := 0
	for i := first + 1; i < len(lines); i++ {
		l, n := lines[i], i+1
		switch {
		case strings.TrimSpace(l) == "":
			g = nil
		case strings.HasPrefix(l, "# labels:"):
			if g == nil || len(g.Frames) > 0 || g.Labels != nil {
				return nil, lineErrorf(n, "labels outside a stack header")
			}
			labels, err := parseLabels(strings.TrimSpace(strings.TrimPrefix(l, "# labels:")))
			if err != nil {
				return nil, lineErrorf(n, "bad labels: %v", err)
			}
			g.Labels = labels
		case strings.HasPrefix(l, "#"):
			if g == nil {
				return nil, lineErrorf(n, "frame outside a stack (expected %q first)", "N @ 0x…")
			}
			f, err := parseDebug1Frame(l)
			if err != nil {
				return nil, lineErrorf(n, "%v", err)
			}
			g.Frames = append(g.Frames, f)
		default:
			cm := debug1CountRE.FindStringSubmatch(l)
			if cm == nil {
				return nil, lineErrorf(n, "expected %q or a %q frame, got %s", "N @ 0x…", "#\t0x…", quoteShort(l))
			}
			count, err := strconv.Atoi(cm[1])
			if err != nil || count <= 0 {
				return nil, lineErrorf(n, "goroutine count out of range")
			}
			sum += count
			g = &Group{Count: count}
			d.Groups = append(d.Groups, g)
		}
	}
	if sum != total {
		return nil, lineErrorf(len(lines), "header says total %d but the stacks count %d goroutines (truncated dump?)", total, sum)
	}
	return d, nil
}

// parseDebug1Frame parses "#\t0xPC\tfunc+0xOFF\tfile:line" (columns padded
// with any number of tabs) or a bare "#\t0xPC" for a PC without symbol.
func parseDebug1Frame(l string) (Frame, error) {
	var fields []string
	for _, f := range strings.Split(strings.TrimPrefix(l, "#"), "\t") {
		if f = strings.TrimSpace(f); f != "" {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return Frame{}, badf("empty frame line")
	}
	pc, err := parseHex(fields[0])
	if err != nil {
		return Frame{}, badf("bad frame PC (not 0x and hex digits)")
	}
	f := Frame{PC: pc}
	switch len(fields) {
	case 1:
		return f, nil
	case 3:
	default:
		return Frame{}, badf("expected frame %q, got %s", "#\t0xPC\tfunc+0xOFF\tfile:line", quoteShort(l))
	}
	f.Func = fields[1]
	if i := strings.LastIndex(f.Func, "+0x"); i > 0 {
		f.Func = f.Func[:i]
	}
	file, line, ok := splitFileLine(fields[2])
	if !ok {
		return Frame{}, badf("expected frame file:line in the third column")
	}
	f.File, f.Line = file, line
	return f, nil
}

// splitFileLine splits "path/file.go:123" at its last colon.
func splitFileLine(s string) (string, int, bool) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return s[:i], n, true
}

func parseHex(s string) (uint64, error) {
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseUint(s[2:], 16, 64)
}

// goroutine is one parsed debug=2 goroutine before merging.
type goroutine struct {
	id int64
	g  *Group
}

func parseDebug2(lines []string, first int) (*Dump, error) {
	var gs []goroutine
	var cur *Group
	for i := first; i < len(lines); i++ {
		l, n := lines[i], i+1
		if cur == nil {
			// Between goroutines: blank lines, the next header, or the
			// end of a traceback.
			switch {
			case strings.TrimSpace(l) == "":
				continue
			case strings.HasPrefix(l, "exit status "), len(gs) > 0 && registerRE.MatchString(l):
				// The end of a traceback: the exit status `go run`
				// appends, or a signal's register dump.
				i = len(lines)
				continue
			}
			id, g, err := parseHeader(l, n)
			if err != nil {
				return nil, err
			}
			cur = g
			gs = append(gs, goroutine{id: id, g: g})
			continue
		}
		switch {
		case strings.TrimSpace(l) == "":
			cur = nil
		case headerRE.MatchString(l):
			// A header right after a stack, without the blank line.
			i--
			cur = nil
		case strings.HasPrefix(l, "exit status "):
			i = len(lines)
		case strings.TrimSpace(l) == stackUnavailable:
			// Frames are unknown; the goroutine keeps an empty stack.
		case elidedRE.MatchString(l):
			cur.Elided = true
		case strings.HasPrefix(l, "\t"):
			return nil, lineErrorf(n, "expected function call, got file:line %s", quoteShort(l))
		case strings.HasPrefix(l, "created by "):
			m := createdByRE.FindStringSubmatch(l)
			if m == nil {
				return nil, lineErrorf(n, "bad %q line", "created by")
			}
			f := Frame{Func: m[1]}
			if m[2] != "" {
				id, err := strconv.ParseInt(m[2], 10, 64)
				if err != nil {
					return nil, lineErrorf(n, "creator goroutine id out of range")
				}
				cur.CreatorID = id
			}
			if err := fileLine(lines, i+1, &f); err != nil {
				return nil, err
			}
			i++
			cur.CreatedBy = &f
		default:
			f := parseCall(l)
			if f.Func == "" {
				return nil, lineErrorf(n, "expected function call, got %s", quoteShort(l))
			}
			if err := fileLine(lines, i+1, &f); err != nil {
				return nil, err
			}
			i++
			cur.Frames = append(cur.Frames, f)
		}
	}
	if len(gs) == 0 {
		return nil, lineErrorf(first+1, "no goroutine in dump")
	}
	d := &Dump{Kind: KindGoroutineDump, Total: len(gs)}
	d.Groups = mergeGoroutines(gs)
	return d, nil
}

// fileLine parses lines[i] as the "\tfile:line +0xOFF" line of frame f.
func fileLine(lines []string, i int, f *Frame) error {
	if i >= len(lines) {
		return lineErrorf(i, "expected frame file:line after a function call, got end of input")
	}
	m := fileLineRE.FindStringSubmatch(lines[i])
	if m == nil {
		return lineErrorf(i+1, "expected frame file:line, got %s", quoteShort(lines[i]))
	}
	line, err := strconv.Atoi(m[2])
	if err != nil {
		return lineErrorf(i+1, "line number out of range")
	}
	f.File, f.Line = m[1], line
	return nil
}

// parseCall splits "pkg.(*T[...]).Method(0xc000010000, 0x1)" into the
// function name and its argument list. Function names hold parentheses
// (method receivers) but never after the argument list, so the list is the
// last parenthesised group at the end of the line.
func parseCall(l string) Frame {
	l = strings.TrimRight(l, " ")
	if strings.HasSuffix(l, ")") {
		if i := strings.LastIndexByte(l, '('); i > 0 {
			return Frame{Func: l[:i], Args: l[i+1 : len(l)-1]}
		}
	}
	return Frame{Func: l}
}

// parseHeader parses "goroutine 18 [sync.Mutex.Lock, 2 minutes]:".
func parseHeader(l string, n int) (int64, *Group, error) {
	m := headerRE.FindStringSubmatch(l)
	if m == nil {
		return 0, nil, lineErrorf(n, "expected goroutine header %q, got %s", "goroutine N [state]:", quoteShort(l))
	}
	id, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, nil, lineErrorf(n, "goroutine id out of range")
	}
	g := &Group{Count: 1}
	inner := m[3]
	if i := strings.Index(inner, " labels:{"); i >= 0 {
		labels, err := parseLabels(inner[i+len(" labels:"):])
		if err != nil {
			return 0, nil, lineErrorf(n, "bad labels: %v", err)
		}
		g.Labels = labels
		inner = inner[:i]
	}
	parts := strings.Split(inner, ", ")
	state := parts[0]
	for {
		switch {
		case strings.HasSuffix(state, " (scan)"):
			state = strings.TrimSuffix(state, " (scan)")
			continue
		case strings.HasSuffix(state, " (leaked)"):
			state = strings.TrimSuffix(state, " (leaked)")
			g.Leaked = true
			continue
		}
		break
	}
	if state == "" {
		return 0, nil, lineErrorf(n, "goroutine %d has an empty state", id)
	}
	g.State = state
	for _, p := range parts[1:] {
		switch {
		case p == "locked to thread":
			g.LockedToThread = true
		case minutesRE.MatchString(p):
			mins, err := strconv.Atoi(minutesRE.FindStringSubmatch(p)[1])
			if err != nil {
				return 0, nil, lineErrorf(n, "wait time out of range")
			}
			g.WaitMinutes = mins
		default:
			// Annotations added by newer runtimes ("synctest bubble 3")
			// say nothing about contention.
		}
	}
	return id, g, nil
}

// parseLabels parses a label set written as {"k":"v", "k2": "v2"} (keys
// and values Go-quoted, as runtime/pprof and the runtime print them).
func parseLabels(s string) (map[string]string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, badf("expected {…}, got %s", quoteShort(s))
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	labels := map[string]string{}
	for s != "" {
		k, rest, err := cutQuoted(s)
		if err != nil {
			return nil, err
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, ":") {
			return nil, badf("expected ':' after a label key")
		}
		v, rest, err := cutQuoted(strings.TrimSpace(rest[1:]))
		if err != nil {
			return nil, err
		}
		labels[k] = v
		rest = strings.TrimSpace(rest)
		if rest != "" {
			if !strings.HasPrefix(rest, ",") {
				return nil, badf("expected ',' after a label")
			}
			rest = strings.TrimSpace(rest[1:])
		}
		s = rest
	}
	return labels, nil
}

// cutQuoted reads one Go-quoted string from the start of s.
func cutQuoted(s string) (string, string, error) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", badf("expected a quoted string, got %s", quoteShort(s))
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			v, err := strconv.Unquote(s[:i+1])
			if err != nil {
				return "", "", badf("bad quoted string (%d bytes)", i+1)
			}
			return v, s[i+1:], nil
		}
	}
	return "", "", badf("unterminated quoted string %s", quoteShort(s))
}

// mergeGoroutines folds goroutines with identical state, stack, creator,
// labels and flags into groups, in order of first appearance.
func mergeGoroutines(gs []goroutine) []*Group {
	byKey := map[string]*Group{}
	var out []*Group
	var key bytes.Buffer
	for _, x := range gs {
		g := x.g
		key.Reset()
		groupKey(&key, g)
		if m, ok := byKey[key.String()]; ok {
			m.Count++
			m.IDs = append(m.IDs, x.id)
			m.WaitMinutes = max(m.WaitMinutes, g.WaitMinutes)
			for i := range m.Frames {
				if m.Frames[i].Args != g.Frames[i].Args {
					m.Frames[i].Args = ""
				}
			}
			continue
		}
		g.IDs = []int64{x.id}
		byKey[key.String()] = g
		out = append(out, g)
	}
	return out
}

func groupKey(b *bytes.Buffer, g *Group) {
	b.WriteString(g.State)
	b.WriteByte(0)
	for _, f := range []bool{g.LockedToThread, g.Leaked, g.Elided} {
		if f {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	keys := make([]string, 0, len(g.Labels))
	for k := range g.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(strconv.Quote(k))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(g.Labels[k]))
	}
	b.WriteByte(0)
	for _, f := range g.Frames {
		writeFrameKey(b, f)
	}
	// Goroutines parked on different locks stay apart: which lock each
	// waits on tells one hot lock from many (a striped array).
	b.WriteString(LockAddr(g.Frames))
	b.WriteByte(0)
	if g.CreatedBy != nil {
		writeFrameKey(b, *g.CreatedBy)
	}
}

func writeFrameKey(b *bytes.Buffer, f Frame) {
	b.WriteString(f.Func)
	b.WriteByte('\x01')
	b.WriteString(f.File)
	b.WriteByte('\x01')
	b.WriteString(strconv.Itoa(f.Line))
	b.WriteByte('\x02')
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// quoteShort describes s for an error message without quoting it: an
// error about an input never repeats its content (the input may be a file
// the user could not read, opened by a more privileged contend), the line
// number beside it says where to look.
func quoteShort(s string) string {
	return fmt.Sprintf("%d bytes of text", len(s))
}
