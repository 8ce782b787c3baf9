package core

import (
	"fmt"
	"path/filepath"

	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/recording"
	"github.com/google/pprof/profile"
)

// PointKey identifies a program point across sources: a goroutine dump, a
// block profile and a CPU profile name the same call site the same way.
type PointKey struct {
	Fn   string
	File string
	Line int
}

func KeyOf(frames []recording.Frame, pi int) PointKey {
	if pi < 0 || pi >= len(frames) {
		return PointKey{Fn: "(runtime)"}
	}
	f := frames[pi]
	return PointKey{Fn: f.Func, File: f.File, Line: f.Line}
}

// String renders the key as "func (file.go:12)".
func (k PointKey) String() string {
	return FuncAt(k.Fn, k.File, k.Line)
}

// FuncAt renders a short function name with its base file name and line:
// "store.(*S).Save (store.go:42)".
func FuncAt(fn, file string, line int) string {
	s := ShortFuncName(fn)
	if file == "" {
		return s
	}
	if line > 0 {
		return fmt.Sprintf("%s (%s:%d)", s, filepath.Base(file), line)
	}
	return fmt.Sprintf("%s (%s)", s, filepath.Base(file))
}

// PointString renders a program point like funcAt.
func PointString(p ProgramPoint) string { return FuncAt(p.Function, p.File, p.Line) }

// NewPoint builds a ProgramPoint from a leaf-first stack and the index of
// its point frame; the stack is copied, at most MaxStackFrames of it (more
// only to reach the point). A runtime-only stack (pi -1) points at its
// leaf.
func NewPoint(frames []recording.Frame, pi int) ProgramPoint {
	if n := max(MaxStackFrames, pi+1); len(frames) > n {
		frames = frames[:n]
	}
	stack := append([]recording.Frame(nil), frames...)
	if pi < 0 {
		pi = 0
	}
	p := ProgramPoint{Stack: stack, PointIndex: pi}
	if pi < len(stack) {
		f := stack[pi]
		p.Function, p.File, p.Line = f.Func, f.File, f.Line
		p.Key = FrameKey(f)
	}
	return p
}

// locationFrames expands a pprof location into frames, leaf first: the
// location's inlined lines come first (Line[0] is the innermost) and are
// marked Inlined; the last line is the physical frame.
func locationFrames(loc *profile.Location) []recording.Frame {
	if len(loc.Line) == 0 {
		module := ""
		if loc.Mapping != nil {
			module = filepath.Base(loc.Mapping.File)
		}
		return []recording.Frame{{Func: fmt.Sprintf("%s+0x%x", module, loc.Address), Module: module, Addr: loc.Address}}
	}
	out := make([]recording.Frame, 0, len(loc.Line))
	for i, ln := range loc.Line {
		f := recording.Frame{Line: int(ln.Line), Addr: loc.Address, Inlined: i < len(loc.Line)-1}
		if ln.Function != nil {
			f.Func, f.File = ln.Function.Name, ln.Function.Filename
		}
		if loc.Mapping != nil {
			f.Module = filepath.Base(loc.Mapping.File)
		}
		out = append(out, f)
	}
	return out
}

// ProfStacks turns samples of profiles into frames, caching each location's
// frames (by location ID when the IDs are dense, as they are in parsed
// profiles, else by pointer). The slice frames returns is reused by the
// next call: copy what must outlive it (newPoint does).
type ProfStacks struct {
	byID map[*profile.Profile][][]recording.Frame
	locs map[*profile.Location][]recording.Frame
	buf  []recording.Frame
	// Cut counts the stacks cut to MaxStackFrames.
	Cut int
}

func NewProfStacks() *ProfStacks {
	return &ProfStacks{byID: map[*profile.Profile][][]recording.Frame{}, locs: make(map[*profile.Location][]recording.Frame)}
}

// index prepares the dense ID cache of p, when its IDs allow one.
func (ps *ProfStacks) index(p *profile.Profile) [][]recording.Frame {
	if c, ok := ps.byID[p]; ok {
		return c
	}
	var maxID uint64
	for _, l := range p.Location {
		maxID = max(maxID, l.ID)
	}
	var c [][]recording.Frame
	if maxID <= uint64(2*len(p.Location)+16) {
		c = make([][]recording.Frame, maxID+1)
		for _, l := range p.Location {
			c[l.ID] = locationFrames(l)
		}
	}
	ps.byID[p] = c
	return c
}

// SampleFrames returns the frames of a sample of p, leaf first, at most
// MaxStackFrames of them (the leaf end; cut counts the stacks cut).
func (ps *ProfStacks) SampleFrames(p *profile.Profile, s *profile.Sample) []recording.Frame {
	c := ps.index(p)
	ps.buf = ps.buf[:0]
	for _, loc := range s.Location {
		var fr []recording.Frame
		if loc.ID < uint64(len(c)) && c[loc.ID] != nil {
			fr = c[loc.ID]
		} else {
			var ok bool
			if fr, ok = ps.locs[loc]; !ok {
				fr = locationFrames(loc)
				ps.locs[loc] = fr
			}
		}
		ps.buf = append(ps.buf, fr...)
		if len(ps.buf) > MaxStackFrames {
			ps.Cut++
			ps.buf = ps.buf[:MaxStackFrames]
			break
		}
	}
	return ps.buf
}

// StackID identifies a sample's stack by its locations (FNV-1a over the
// location pointers' IDs), to count distinct stacks cheaply.
func StackID(s *profile.Sample) uint64 {
	h := uint64(14695981039346656037)
	for _, l := range s.Location {
		h ^= l.ID
		h *= 1099511628211
	}
	return h
}

// DumpFrames converts a goroutine group's stack to frames, leaf first, at
// most MaxStackFrames of them (the leaf end; cut counts the stacks cut).
func (ps *ProfStacks) DumpFrames(g *goprof.Group) []recording.Frame {
	n := len(g.Frames)
	if n > MaxStackFrames {
		n = MaxStackFrames
		ps.Cut++
	}
	out := make([]recording.Frame, n)
	for i, f := range g.Frames[:n] {
		out[i] = recording.Frame{Func: f.Func, File: f.File, Line: f.Line, Addr: f.PC}
	}
	return out
}

// ValueIndex returns the index of the sample type named typ (and, when unit
// is not empty, with that unit), or -1.
func ValueIndex(p *profile.Profile, typ, unit string) int {
	for i, st := range p.SampleType {
		if st.Type == typ && (unit == "" || st.Unit == unit) {
			return i
		}
	}
	return -1
}
