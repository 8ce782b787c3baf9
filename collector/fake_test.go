package collector

import (
	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/recording"
)

// fakeStacks is a stackSource with fixed answers.
type fakeStacks struct {
	user   map[uint64][]recording.Frame
	kernel map[uint64][]recording.Frame
	events map[evKey][]recording.Frame
	open   map[evKey][]recording.Frame
	locks  map[uint64]string
	shared map[uint64]*recording.SharedLock
}

func (f *fakeStacks) openStack(pid, tid uint32, ts uint64) (recording.Stack, bool) {
	fr, ok := f.open[evKey{tid, ts}]
	return recording.Stack{Frames: fr}, ok
}

func (f *fakeStacks) userStack(hash uint64) recording.Stack {
	return recording.Stack{Frames: f.user[hash]}
}

func (f *fakeStacks) kernelStack(hash uint64) recording.Stack {
	return recording.Stack{Frames: f.kernel[hash]}
}

func (f *fakeStacks) eventStack(pid, tid uint32, ts uint64, hash uint64) recording.Stack {
	if fr, ok := f.events[evKey{tid, ts}]; ok {
		return recording.Stack{Frames: fr}
	}
	return f.userStack(hash)
}

func (f *fakeStacks) lock(k lockKey) lockInfo {
	li := lockInfo{name: f.locks[k.Addr]}
	if k.Shared != 0 {
		li.shared = f.shared[k.Addr]
	}
	return li
}

// frames builds frames of module m, one per function name, at made-up
// addresses.
func frames(m string, names ...string) []recording.Frame {
	out := make([]recording.Frame, len(names))
	for i, n := range names {
		out[i] = recording.Frame{Func: n, Module: m, Addr: uint64(0x1000 * (i + 1))}
	}
	return out
}

// funcs returns the function names of a sample, leaf first (inlined
// frames included).
// userFuncs is funcs without the kernel's frames.
func userFuncs(s *profile.Sample) []string {
	var out []string
	for _, loc := range s.Location {
		if loc.Mapping != nil && loc.Mapping.File == "[kernel]" {
			continue
		}
		for _, l := range loc.Line {
			out = append(out, l.Function.Name)
		}
	}
	return out
}

func funcs(s *profile.Sample) []string {
	var out []string
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			out = append(out, l.Function.Name)
		}
	}
	return out
}
