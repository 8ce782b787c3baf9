package javadump

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The text parsed here is what HotSpot's Thread.print writes (jcmd,
// jstack, SIGQUIT): an optional "PID:" line (jcmd), a timestamp line, a
// "Full thread dump <VM>:" line, an optional "Threads class SMR info:"
// block, then per thread a header
//
//	"name" #12 daemon prio=5 os_prio=0 cpu=1.2ms elapsed=3.4s tid=0x… nid=0x3a9f waiting for monitor entry  [0x…]
//
// (JDK 8 has no cpu= and elapsed=; JDK 19 and later print nid in decimal
// and the tid in brackets after #id), a "   java.lang.Thread.State: …"
// line for Java threads, one "\tat Class.method(File.java:40)" line per
// frame with "\t- waiting to lock <0x…> (a Foo)" style lines under the
// frame they belong to, and with -l a "   Locked ownable synchronizers:"
// list. The dump closes with "JNI global refs: …" (JDK 8: "JNI global
// references: …"); a deadlock report and, from SIGQUIT, a heap summary may
// follow.

var (
	timestampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`)
	pidLineRE   = regexp.MustCompile(`^\d+:$`)
	stateRE     = regexp.MustCompile(`^\s+java\.lang\.Thread\.State: ([A-Z_]+)(?: \((.+)\))?$`)
	frameRE     = regexp.MustCompile(`^\s+at (.+?)\((.*)\)$`)
	lockRE      = regexp.MustCompile(`^\s+- (waiting to lock|locked|parking to wait for|waiting on|waiting to re-lock in wait\(\)|eliminated)\s+<([^>]*)>(?: \(a (.+)\))?$`)
	ownableRE   = regexp.MustCompile(`^\s+- <(0x[0-9a-fA-F]+)> \(a (.+)\)$`)
	deadlockRE  = regexp.MustCompile(`^Found (one|\d+) (?:Java-level )?deadlocks?[.:]`)
	// headerLikeRE recognises a thread header for Looks.
	headerLikeRE = regexp.MustCompile(`(?m)^".*" .*tid=0x[0-9a-fA-F]+ nid=(?:0x[0-9a-fA-F]+|\d+)`)
)

// indentedKnown are the other indented lines of a thread block: compiler
// threads' task, a carrier's virtual thread.
var indentedKnown = []string{"No compile task", "Compiling:", "Carrying virtual thread"}

// Looks reports whether data looks like a Java thread dump: a "Full
// thread dump" line or a thread header in its first 64 KiB. Parse decides
// whether it is a complete one.
func Looks(data []byte) bool {
	head := data[:min(len(data), 64<<10)]
	return bytes.Contains(head, []byte("\nFull thread dump ")) || bytes.HasPrefix(head, []byte("Full thread dump ")) ||
		headerLikeRE.Match(head)
}

// Parse reads a Java thread dump. Text before the first thread header is
// skipped (a log's lines before a SIGQUIT dump, jcmd's "PID:" line), and
// so is everything after the closing "JNI global refs" line except the
// count of deadlocks. A line inside the dump that no JVM writes there, or
// a dump that ends before its closing line (truncated), is an error that
// names the line. The returned Dump keeps data as Raw.
func Parse(data []byte) (*Dump, error) {
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r")
	}
	d := &Dump{Raw: data}
	i := 0
	for ; i < len(lines); i++ {
		l := lines[i]
		switch {
		case timestampRE.MatchString(l):
			if t, err := time.ParseInLocation("2006-01-02 15:04:05", l, time.Local); err == nil {
				d.Taken = t
			}
		case strings.HasPrefix(l, "Full thread dump "):
			d.VM = strings.TrimSuffix(strings.TrimPrefix(l, "Full thread dump "), ":")
		}
		if strings.HasPrefix(l, `"`) {
			if _, ok := parseHeader(l); ok {
				break
			}
		}
	}
	if i == len(lines) {
		return nil, badf("no thread header (%s) in %d lines: not a Java thread dump", `"name" … tid=0x… nid=0x… state`, countLines(lines))
	}
	p := &parser{d: d}
	for ; i < len(lines); i++ {
		if done, err := p.line(i+1, lines[i]); err != nil {
			if i == len(lines)-1 && p.t != nil {
				// The text stops in the middle of its last line.
				return nil, badf("truncated: the dump ends at line %d inside the thread of line %d, in the middle of %s", i+1, p.headerLine, quoteShort(lines[i]))
			}
			return nil, err
		} else if done {
			d.Deadlocks = countDeadlocks(lines[i+1:])
			return d, nil
		}
	}
	where := "after the last thread"
	if p.t != nil {
		where = fmt.Sprintf("inside the thread of line %d", p.headerLine)
	}
	return nil, badf("truncated: the dump ends at line %d %s, without its closing %q line", countLines(lines), where, "JNI global refs: N, weak refs: N")
}

// parser holds the state of one dump's thread section.
type parser struct {
	d *Dump
	t *Thread
	// headerLine is the line of the current thread's header.
	headerLine int
	// ownable is set inside a "Locked ownable synchronizers:" list.
	ownable bool
}

// line reads one line of the thread section; done is set at the closing
// line.
func (p *parser) line(n int, l string) (done bool, err error) {
	trimmed := strings.TrimSpace(l)
	switch {
	case trimmed == "":
		return false, nil
	case strings.HasPrefix(l, "JNI global refs") || strings.HasPrefix(l, "JNI global references"):
		return true, p.close()
	case strings.HasPrefix(l, `"`):
		if err := p.close(); err != nil {
			return false, err
		}
		t, ok := parseHeader(l)
		if !ok {
			return false, lineErrorf(n, "a thread header must read %s, got %s", `"name" #N … tid=0x… nid=0x… state`, quoteShort(l))
		}
		p.d.Threads = append(p.d.Threads, t)
		p.t, p.headerLine, p.ownable = t, n, false
		return false, nil
	case l[0] != ' ' && l[0] != '\t':
		return false, lineErrorf(n, "%s, not part of a Java thread dump (expected a thread header, a stack line or %q)", quoteShort(l), "JNI global refs")
	case p.t == nil:
		return false, lineErrorf(n, "%s before any thread header", quoteShort(l))
	}
	t := p.t
	if m := stateRE.FindStringSubmatch(l); m != nil {
		t.Java, t.State, t.Detail = true, m[1], m[2]
		return false, nil
	}
	if m := frameRE.FindStringSubmatch(l); m != nil {
		if p.ownable {
			return false, lineErrorf(n, "stack frame after the ownable synchronizers of the thread of line %d", p.headerLine)
		}
		t.Frames = append(t.Frames, parseFrame(m[1], m[2]))
		return false, nil
	}
	if trimmed == "Locked ownable synchronizers:" {
		p.ownable = true
		p.d.Ownable = true
		return false, nil
	}
	if p.ownable {
		if trimmed == "- None" {
			return false, nil
		}
		if m := ownableRE.FindStringSubmatch(l); m != nil {
			t.Owns = append(t.Owns, Lock{Op: OpOwns, Addr: m[1], Class: m[2]})
			return false, nil
		}
		return false, lineErrorf(n, "%s in the ownable synchronizers of the thread of line %d (expected %q or %q)", quoteShort(trimmed), p.headerLine, "- <0x…> (a Class)", "- None")
	}
	if m := lockRE.FindStringSubmatch(l); m != nil {
		if len(t.Frames) == 0 {
			return false, lineErrorf(n, "lock line before any frame of the thread of line %d", p.headerLine)
		}
		lk := Lock{Op: LockOp(m[1]), Class: m[3]}
		if strings.HasPrefix(m[2], "0x") {
			lk.Addr = m[2]
		}
		f := &t.Frames[len(t.Frames)-1]
		f.Locks = append(f.Locks, lk)
		return false, nil
	}
	for _, k := range indentedKnown {
		if strings.HasPrefix(trimmed, k) {
			return false, nil
		}
	}
	return false, lineErrorf(n, "%s in the thread of line %d, neither a state, a stack frame nor a lock line", quoteShort(trimmed), p.headerLine)
}

// close checks the thread just read: a Java thread (one with a #id)
// without its state line was cut short.
func (p *parser) close() error {
	t := p.t
	if t != nil && t.ID > 0 && !t.Java && len(t.Frames) > 0 {
		return lineErrorf(p.headerLine, "thread has stack frames but no java.lang.Thread.State line")
	}
	return nil
}

// parseHeader reads a thread header line.
func parseHeader(l string) (*Thread, bool) {
	at := strings.Index(l, " tid=")
	if at < 0 {
		return nil, false
	}
	q := strings.LastIndexByte(l[:at], '"')
	if q <= 0 {
		return nil, false
	}
	t := &Thread{Name: l[1:q]}
	for _, f := range strings.Fields(l[q+1 : at]) {
		switch {
		case f == "daemon":
			t.Daemon = true
		case strings.HasPrefix(f, "#"):
			if id, err := strconv.ParseInt(f[1:], 10, 64); err == nil {
				t.ID = id
			}
		}
	}
	rest := l[at+len(" tid="):]
	sp := strings.IndexByte(rest, ' ')
	if sp < 0 || !strings.HasPrefix(rest, "0x") {
		return nil, false
	}
	rest = rest[sp+1:]
	nid, ok := strings.CutPrefix(rest, "nid=")
	if !ok {
		return nil, false
	}
	val, status, _ := strings.Cut(nid, " ")
	n, err := strconv.ParseInt(val, 0, 64)
	if err != nil || n <= 0 {
		return nil, false
	}
	t.NID = int(n)
	status = strings.TrimSpace(status)
	if i := strings.LastIndex(status, "["); i >= 0 && strings.HasSuffix(status, "]") {
		status = strings.TrimSpace(status[:i])
	}
	t.Status = status
	return t, true
}

// parseFrame reads "Class.method" and its location
// ("java.base@17.0.15/Thread.java:840", "Native Method", "Unknown Source").
func parseFrame(method, loc string) Frame {
	f := Frame{Func: stripLoader(method)}
	if i := strings.LastIndexByte(loc, '/'); i >= 0 {
		f.Module, loc = loc[:i], loc[i+1:]
	}
	switch loc {
	case "Native Method":
		f.Native = true
		return f
	case "Unknown Source", "Compiled Code", "":
		return f
	}
	file, line, ok := strings.Cut(loc, ":")
	f.File = file
	if ok {
		if n, err := strconv.Atoi(line); err == nil {
			f.Line = n
		}
	}
	return f
}

// stripLoader drops the class loader and module a frame may be prefixed
// with ("app//pkg.Main.run", "loader/mod@1.0/pkg.Main.run") and keeps a
// hidden class's suffix ("pkg.Main$$Lambda$3/0x0000000800c01000.run").
func stripLoader(m string) string {
	if i := strings.Index(m, "//"); i >= 0 {
		m = m[i+2:]
	}
	for {
		i := strings.IndexByte(m, '/')
		if i < 0 || strings.HasPrefix(m[i+1:], "0x") {
			return m
		}
		m = m[i+1:]
	}
}

// countDeadlocks reads the deadlock report after the closing line.
func countDeadlocks(lines []string) int {
	for _, l := range lines {
		if m := deadlockRE.FindStringSubmatch(l); m != nil && strings.HasPrefix(l, "Found ") && !strings.HasSuffix(l, ":") {
			if n, err := strconv.Atoi(m[1]); err == nil {
				return n
			}
			return 1
		}
	}
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "Found one Java-level deadlock") {
			n++
		}
	}
	return n
}

// countLines is the number of lines of the text, not counting the empty
// string after a final newline.
func countLines(lines []string) int {
	if n := len(lines); n > 0 && lines[n-1] == "" {
		return n - 1
	}
	return len(lines)
}

// badInput is an error about the content of a dump: one line, wrapping
// ErrBadDump.
type badInput struct{ msg string }

func (e *badInput) Error() string { return e.msg }
func (e *badInput) Unwrap() error { return ErrBadDump }

func badf(format string, args ...any) error {
	return &badInput{msg: fmt.Sprintf(format, args...)}
}

func lineErrorf(line int, format string, args ...any) error {
	return &badInput{msg: fmt.Sprintf("line %d: ", line) + fmt.Sprintf(format, args...)}
}

// quoteShort describes a line for an error without quoting it: an error
// about an input never repeats its content (the input may be a file the
// user could not read, opened by a more privileged contend); the line
// number beside it says where to look.
func quoteShort(s string) string {
	return fmt.Sprintf("%d bytes of text", len(s))
}

// costLine bounds the memory one line of a dump takes once parsed: its
// string header in the split text (16 bytes) and at most one Frame (about
// 100 bytes with its method, class and file strings' headers) or Lock,
// with slice growth, rounded up to a power of two.
const costLine = 256

// Cost estimates the memory Parse takes for data: a copy of the text and
// a cost per line. Readers of files charge it to their budget before
// parsing.
func Cost(data []byte) int64 {
	return int64(len(data)) + int64(bytes.Count(data, []byte{'\n'})+1)*costLine
}
