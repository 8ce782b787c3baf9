package goprof

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/internal/boundedio"
)

// Load reads the file at path, within the budget (see ReadFile), and
// recognises it by content (see Parse).
// The parsed form is charged to the input budget (SetInputBudget).
func Load(path string) (*File, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	return parseWithin(path, data, InputBudget())
}

// Parse recognises data by its content, never by name (which only labels
// errors): gzip or plain; a protobuf profile or Go's legacy contention text
// ("--- mutex:", "--- contention:"), read through
// github.com/google/pprof/profile; or a goroutine dump in debug=1 or
// debug=2 text form (or a Go traceback). Protobuf contention profiles are
// told apart as mutex or block by their stacks (see ClassifyProfile).
// Profiles that say nothing about contention (heap, allocs, threadcreate,
// a non-Go program) are refused. Every error is one line, starts with name
// and wraps ErrBadProfile when the content is at fault.
func Parse(name string, data []byte) (*File, error) {
	return parseWithin(name, data, nil)
}

// ParseWithin is Parse charging the memory of the parsed form to b (see
// SetInputBudget): for inputs read from files.
func ParseWithin(name string, data []byte, b *boundedio.Budget) (*File, error) {
	return parseWithin(name, data, b)
}

func parseWithin(name string, data []byte, b *boundedio.Budget) (*File, error) {
	f, err := withSlot(func() (*File, error) { return parse(name, data, b) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

func parse(name string, data []byte, b *boundedio.Budget) (f *File, err error) {
	if len(data) == 0 {
		return nil, badf("empty file")
	}
	wasGzip := isGzip(data)
	if data, err = decompress(data); err != nil {
		return nil, err
	}
	if len(data) == 0 && wasGzip {
		return nil, badf("empty file (after gzip)")
	}
	text := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case bytes.HasPrefix(text, []byte("goroutine profile:")),
		goroutineHeaderStart.Match(text),
		isTraceback(text):
		d, err := parseDump(data, b)
		if err != nil {
			return nil, err
		}
		return &File{Path: name, Kind: d.Kind, Dump: d}, nil
	case bytes.HasPrefix(text, []byte("--- mutex:")), bytes.HasPrefix(text, []byte("--- contention:")):
		return parseLegacyContention(name, data, b)
	}
	if textKind := textProfileKind(text); textKind != "" {
		return nil, badf("%s: not a contention input", textKind)
	}
	p, err := parseProfile(data, b)
	if err != nil {
		if looksLikeText(data) && !errors.Is(err, ErrTooLarge) {
			return nil, badf("not a Go profile or goroutine dump (text, first line %d bytes long)", len(firstLine(text)))
		}
		return nil, err
	}
	kind, err := ClassifyProfile(p)
	if err != nil {
		return nil, err
	}
	return &File{Path: name, Kind: kind, Profile: p}, nil
}

// goroutineHeaderStart matches the start of a debug=2 dump.
var goroutineHeaderStart = regexp.MustCompile(`^goroutine \d+ `)

// isTraceback reports whether text is a crash traceback holding goroutine
// stacks after a message.
func isTraceback(text []byte) bool {
	for _, p := range tracebackPreambles {
		if bytes.HasPrefix(text, []byte(p)) {
			return bytes.Contains(text, []byte("\ngoroutine "))
		}
	}
	return false
}

// textProfileKind names legacy text profiles Go writes for kinds that are
// not contention inputs ("heap profile: …", "threadcreate profile: total
// N"), or returns "".
func textProfileKind(text []byte) string {
	for _, k := range []string{"heap", "threadcreate", "goroutineleak", "allocs"} {
		if bytes.HasPrefix(text, []byte(k+" profile:")) {
			return k + " profile"
		}
	}
	return ""
}

// looksLikeText reports whether data starts like text: no NUL byte and at
// least 90% printable characters in its first 512 bytes (a protobuf
// profile has control bytes in every field tag).
func looksLikeText(data []byte) bool {
	head := data[:min(len(data), 512)]
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	printable, all := 0, 0
	for _, r := range string(head) {
		all++
		if r == '\n' || r == '\t' || r == '\r' || (r >= ' ' && r != utf8.RuneError && r != 0x7f) {
			printable++
		}
	}
	return printable*10 >= all*9
}

func firstLine(text []byte) string {
	if i := bytes.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	return strings.TrimRight(string(text), "\r")
}

// ClassifyProfile says what a parsed profile holds, from its sample types
// and, for contention profiles, from its stacks: Go writes mutex and block
// profiles with identical sample types (contentions/count, delay/
// nanoseconds), but mutex profile stacks start (leaf) where a critical
// section ended — an Unlock — while block profile stacks start where a
// goroutine waited — a Lock, a channel operation, select, Cond.Wait,
// WaitGroup.Wait, a semaphore. A contention profile with no samples, or
// whose leaves say neither, is KindContention. Kinds that are not
// contention inputs are refused with an error wrapping ErrBadProfile.
func ClassifyProfile(p *profile.Profile) (Kind, error) {
	types := sampleTypes(p)
	switch {
	case hasTypes(types, "contentions/count", "delay/nanoseconds"):
		if !isGoProfile(p) {
			return "", badf("contention profile of a non-Go program (no Go runtime frames): not a contention input")
		}
		return classifyContention(p), nil
	case hasTypes(types, "samples/count", "cpu/nanoseconds"):
		if !isGoProfile(p) {
			return "", badf("cpu profile of a non-Go program (no Go runtime frames): not a contention input")
		}
		return KindCPU, nil
	case len(types) == 1 && types[0] == "goroutine/count":
		return KindGoroutine, nil
	case hasTypes(types, "alloc_objects/count", "alloc_space/bytes"),
		hasTypes(types, "inuse_objects/count", "inuse_space/bytes"):
		if p.DefaultSampleType == "alloc_space" || p.DefaultSampleType == "alloc_objects" {
			return "", badf("allocs profile: not a contention input")
		}
		return "", badf("heap profile: not a contention input")
	case len(types) == 1 && strings.HasSuffix(types[0], "/count"):
		return "", badf("%s profile: not a contention input", printable(strings.TrimSuffix(types[0], "/count")))
	}
	for i, t := range types {
		types[i] = printable(t)
	}
	return "", badf("profile with sample types %s: not a Go contention, CPU or goroutine profile", strings.Join(types, ", "))
}

// printable returns s as is when it has no control character, else
// Go-quoted, so that names read from a file keep an error on one line.
func printable(s string) string {
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}

func sampleTypes(p *profile.Profile) []string {
	var out []string
	for _, st := range p.SampleType {
		if st != nil {
			out = append(out, st.Type+"/"+st.Unit)
		}
	}
	return out
}

// hasTypes reports whether types starts with want, in order.
func hasTypes(types []string, want ...string) bool {
	if len(types) < len(want) {
		return false
	}
	for i, w := range want {
		if types[i] != w {
			return false
		}
	}
	return true
}

// isGoProfile reports whether a profile with samples was written by a Go
// program: one of its functions belongs to the runtime or the sync
// packages (runtime.main, sync.(*Mutex).Unlock …), or comes from a .go
// source file. The second test matters for short CPU profiles, whose few
// samples may all fall in user code (CPU stacks stop above
// runtime.goexit). A profile with no samples says nothing and is accepted.
func isGoProfile(p *profile.Profile) bool {
	if len(p.Sample) == 0 {
		return true
	}
	for _, fn := range p.Function {
		if fn == nil {
			continue
		}
		n := fn.Name
		if strings.HasPrefix(n, "runtime.") || strings.HasPrefix(n, "sync.") || strings.HasPrefix(n, "internal/sync.") || strings.HasPrefix(n, "runtime/") {
			return true
		}
		if strings.HasSuffix(fn.Filename, ".go") {
			return true
		}
	}
	return false
}

// classifyContention votes with each sample's leaf function: an unlock
// leaf says mutex profile, a wait leaf says block profile. The profile is
// whichever kind has more samples; a tie (including no votes) leaves it
// undecided.
func classifyContention(p *profile.Profile) Kind {
	var mutexVotes, blockVotes int
	for _, s := range p.Sample {
		switch leafKind(leafFunc(s)) {
		case KindMutex:
			mutexVotes++
		case KindBlock:
			blockVotes++
		}
	}
	switch {
	case mutexVotes > blockVotes:
		return KindMutex
	case blockVotes > mutexVotes:
		return KindBlock
	}
	return KindContention
}

// leafFunc returns the innermost function of a sample's stack, "" when
// unknown.
func leafFunc(s *profile.Sample) string {
	if s == nil || len(s.Location) == 0 || s.Location[0] == nil {
		return ""
	}
	for _, ln := range s.Location[0].Line {
		if ln.Function != nil && ln.Function.Name != "" {
			// Line[0] is the innermost inlined frame.
			return ln.Function.Name
		}
	}
	return ""
}

// unlockLeaves are functions a Go mutex profile stack starts at: the
// runtime records mutex contention when the lock is released (Go 1.8+ for
// sync, 1.22+ for runtime-internal locks).
var unlockLeaves = map[string]bool{
	"sync.(*Mutex).Unlock":                 true,
	"sync.(*Mutex).unlockSlow":             true,
	"sync.(*RWMutex).Unlock":               true,
	"sync.(*RWMutex).RUnlock":              true,
	"sync.(*RWMutex).rUnlockSlow":          true,
	"internal/sync.(*Mutex).Unlock":        true,
	"internal/sync.(*Mutex).unlockSlow":    true,
	"runtime._LostContendedRuntimeLock":    true,
	"runtime.unlock":                       true,
	"runtime.unlock2":                      true,
	"runtime.unlockWithRank":               true,
	"runtime.semrelease1":                  true,
	"sync.runtime_Semrelease":              true,
	"internal/sync.runtime_Semrelease":     true,
	"runtime.(*mLockProfile).recordUnlock": true,
}

// waitLeaves are functions a Go block profile stack starts at: where a
// goroutine blocked.
var waitLeaves = map[string]bool{
	"sync.(*Mutex).Lock":                    true,
	"sync.(*Mutex).lockSlow":                true,
	"sync.(*RWMutex).Lock":                  true,
	"sync.(*RWMutex).RLock":                 true,
	"internal/sync.(*Mutex).Lock":           true,
	"internal/sync.(*Mutex).lockSlow":       true,
	"sync.(*Cond).Wait":                     true,
	"sync.(*WaitGroup).Wait":                true,
	"runtime.chanrecv":                      true,
	"runtime.chanrecv1":                     true,
	"runtime.chanrecv2":                     true,
	"runtime.chansend":                      true,
	"runtime.chansend1":                     true,
	"runtime.selectgo":                      true,
	"runtime.block":                         true,
	"runtime.semacquire":                    true,
	"runtime.semacquire1":                   true,
	"sync.runtime_Semacquire":               true,
	"sync.runtime_SemacquireMutex":          true,
	"sync.runtime_SemacquireRWMutex":        true,
	"sync.runtime_SemacquireRWMutexR":       true,
	"sync.runtime_SemacquireWaitGroup":      true,
	"internal/sync.runtime_SemacquireMutex": true,
	"sync.runtime_notifyListWait":           true,
	"runtime.notifyListWait":                true,
}

// leafKind says which contention profile a leaf function belongs to:
// KindMutex, KindBlock, or "" when it says neither.
func leafKind(fn string) Kind {
	switch {
	case unlockLeaves[fn]:
		return KindMutex
	case waitLeaves[fn]:
		return KindBlock
	}
	return ""
}
