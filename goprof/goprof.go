// Package goprof recognises and parses Go runtime profiles: mutex, block,
// CPU and goroutine profiles in protobuf form (gzipped or not, through
// github.com/google/pprof/profile), and goroutine dumps in the debug=1 and
// debug=2 text forms.
package goprof

import (
	"errors"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// ErrBadProfile is wrapped by every error about input that is not a usable
// Go profile: corrupt, truncated, empty, or of a kind that says nothing
// about contention (heap, threadcreate, a non-Go program). The CLI maps it
// to the exit code for bad input.
var ErrBadProfile = errors.New("bad profile")

// File is one profile input recognised by its content.
type File struct {
	// Path is the file name the input was read from (or the name given to
	// Parse); it is only used in messages.
	Path string
	// Kind is what the content was recognised as.
	Kind Kind
	// Profile holds protobuf and legacy-text profiles (KindMutex,
	// KindBlock, KindContention, KindCPU, KindGoroutine); nil for dumps.
	Profile *profile.Profile
	// Dump holds goroutine dumps (KindGoroutineText, KindGoroutineDump);
	// nil for profiles.
	Dump *Dump
}

// Kind is what a profile file holds, recognised by its content.
type Kind string

// Kinds of Go profile input.
const (
	KindMutex         Kind = "mutex"          // protobuf or legacy text, stacks end at Unlock
	KindBlock         Kind = "block"          // protobuf or legacy text, stacks where goroutines waited
	KindContention    Kind = "contention"     // contentions/delay profile whose stacks say neither (e.g. empty)
	KindCPU           Kind = "cpu"            // protobuf CPU profile
	KindGoroutine     Kind = "goroutine"      // protobuf goroutine profile (counts, no wait states)
	KindGoroutineText Kind = "goroutine-text" // debug=1 text
	KindGoroutineDump Kind = "goroutine-dump" // debug=2 text (or a panic traceback)
)

// Dump is one goroutine dump: every goroutine with its stack and, for
// debug=2 dumps, its wait state.
type Dump struct {
	// Kind is KindGoroutineText (debug=1: grouped stacks, no states) or
	// KindGoroutineDump (debug=2: one entry per goroutine, with states).
	Kind Kind
	// Taken is when the dump was taken, zero when unknown.
	Taken time.Time
	// Total is the total number of goroutines the dump reports (the
	// "goroutine profile: total N" header for debug=1, the number of
	// goroutines for debug=2).
	Total int
	// Raw is the dump's text as read, kept so a recording can store it
	// unchanged; nil when the dump was built in memory.
	Raw []byte
	// Groups holds goroutines with identical stacks and states, in the
	// order of their first appearance. ParseDump merges the goroutines of a
	// debug=2 dump that share state, stack (functions, files and lines,
	// arguments aside), creator, labels and flags into one group whose IDs
	// lists them all.
	Groups []*Group
}

// Group is a set of goroutines that share a stack and a state.
type Group struct {
	// Count is the number of goroutines in the group.
	Count int
	// IDs lists goroutine ids (debug=2 only).
	IDs []int64
	// State is the wait reason in brackets ("sync.Mutex.Lock", "semacquire",
	// "select", "chan receive", "IO wait", "running", "runnable", "syscall"
	// …) without the duration; empty for debug=1.
	State string
	// WaitMinutes is the "N minutes" annotation of a debug=2 header, 0 when
	// absent. In a merged group it is the longest wait of its members.
	WaitMinutes int
	// LockedToThread is set for "locked to thread" goroutines.
	LockedToThread bool
	// Labels are pprof labels ("# labels: {...}" in debug=1).
	Labels map[string]string
	// Frames is the stack, leaf first.
	Frames []Frame
	// CreatedBy is the "created by" frame, when present.
	CreatedBy *Frame
	// CreatorID is the goroutine id in "created by F in goroutine N" (Go
	// 1.21 and later), 0 when absent. In a merged group it is the first
	// member's creator.
	CreatorID int64
	// Leaked is set for goroutines the runtime reported as leaked
	// ("[chan receive (leaked)]", goroutine leak profile).
	Leaked bool
	// Elided is true when the runtime elided frames.
	Elided bool
}

// Frame is one frame of a goroutine stack.
type Frame struct {
	Func string
	File string
	Line int
	// PC is the program counter when the dump gives one (debug=1), else 0.
	PC uint64
	// Args is the argument list as printed in a debug=2 dump, without the
	// parentheses ("0xc000010000, 0x1", "..." for inlined frames, "" for
	// none). In a merged group it is kept only where every member printed
	// the same arguments, else it is "".
	Args string
}

// CanonicalFunc returns a function name with the type arguments of generic
// instantiations written as "[...]". Goroutine dumps print instantiated
// functions as "pkg.(*T[...]).m" while protobuf profiles name them by
// their shape, "pkg.(*T[go.shape.int]).m"; compare names through
// CanonicalFunc to match one with the other.
func CanonicalFunc(name string) string {
	open := strings.IndexByte(name, '[')
	if open < 0 {
		return name
	}
	var b strings.Builder
	b.Grow(len(name))
	depth := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '[':
			if depth == 0 {
				b.WriteString("[...]")
			}
			depth++
		case c == ']' && depth > 0:
			depth--
		case depth == 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// lockWaitFuncs are the functions of a goroutine parked on a sync lock
// whose first argument names the lock (the mutex, or a semaphore field
// inside the RWMutex).
var lockWaitFuncs = map[string]bool{
	"internal/sync.(*Mutex).lockSlow":       true,
	"sync.(*Mutex).lockSlow":                true,
	"internal/sync.runtime_SemacquireMutex": true,
	"sync.runtime_SemacquireMutex":          true,
	"sync.runtime_SemacquireRWMutex":        true,
	"sync.runtime_SemacquireRWMutexR":       true,
}

// LockAddr returns the address of the lock a goroutine waits on, read from
// the first argument of its lock slow path in a debug=2 dump
// ("internal/sync.(*Mutex).lockSlow(0xc0000a6010)"), or "" when the stack
// shows none, or only arguments the runtime marked unreliable ("0x70?").
func LockAddr(frames []Frame) string {
	for _, f := range frames {
		if !lockWaitFuncs[f.Func] {
			continue
		}
		// The runtime marks a value it could not read reliably with
		// "?": such an argument is no address.
		arg, _, _ := strings.Cut(f.Args, ",")
		arg = strings.TrimSpace(arg)
		if strings.HasPrefix(arg, "0x") && len(arg) > 2 && !strings.HasSuffix(arg, "?") {
			return arg
		}
	}
	return ""
}
