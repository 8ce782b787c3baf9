package collector

import (
	"cmp"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/symbolize"
)

// The analyzer confirms a busy-wait by disassembling the loop the CPU
// samples fall in. It reads no binary: the collector copies the machine
// code of the hottest native functions into the recording
// (recording.NativeCode), with the object's build ID and the load bias
// they ran at.
//
// The bytes come from the object the symbolizer opened for the mapping
// when it first saw it (symbolize.Process.FunctionAt): through
// /proc/PID/map_files, the kernel's own reference to the mapped file,
// which a rename or a FIFO left at the old path cannot redirect, or
// else through the process's root without following links or blocking,
// and only when the regular file found has the mapping's device and
// inode. The copy opens nothing new and needs the target no longer: it
// works after the target exited, which reading /proc/PID/mem at the end
// of the recording would not (the JIT's code, in no file, has to be read
// from memory while the target runs; see jvm.go).

// kernelMapping is the profile mapping of kernel frames
// (profileBuilder.mapping).
const kernelMapping = "[kernel]"

// functionReader is what copying native code needs of a process's
// symbols (symbolize.Process).
type functionReader interface {
	FunctionAt(pc uint64) (symbolize.Function, []byte, bool)
}

// minNativeShare is the share of the sampled CPU a function needs for
// its code to be copied: half the spin detector's threshold (a tenth of
// the CPU, analyzer's spinMinCPUShare), so that a function near it is
// never missing for want of a copy, while the many lukewarm functions of
// a large program cost nothing.
const minNativeShare = 0.05

// nativeKey identifies one copy: the same function of the same object
// at the same load address, whichever process ran it.
type nativeKey struct {
	module, buildID string
	start, bias     uint64
}

// nativeFunc is a function found for sampled addresses, with the CPU
// sampled in it per process.
type nativeFunc struct {
	fn   symbolize.Function
	code []byte
	cpu  int64
	pid  int
	top  int64
}

// nativeCode copies the machine code of the native functions that took
// the most of the on-CPU view p (samples in user space only: a sample
// inside a system call is the kernel's CPU), at most
// recording.MaxNativeFunctions of them, each at most
// recording.MaxNativeCode bytes. It returns nil when p is nil (no on-CPU
// probe: nothing to disassemble) and an empty slice when no function
// qualified, which tells the analyzer that the code was looked for.
func (r *resolver) nativeCode(p *profile.Profile) []recording.NativeCode {
	if p == nil {
		return nil
	}
	cpu, total := leafCPU(p)
	out := []recording.NativeCode{}
	if total <= 0 {
		return out
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range hotFuncs(r.nativeFuncs(cpu), total) {
		out = append(out, recording.NativeCode{
			Module: f.fn.Module, BuildID: f.fn.BuildID, Name: f.fn.Name, PID: f.pid,
			Start: f.fn.Start - f.fn.Bias, Bias: f.fn.Bias, Code: f.code,
		})
	}
	return out
}

// pidAddr is a user address in a process.
type pidAddr struct {
	pid  uint32
	addr uint64
}

// leafCPU returns the CPU time of the on-CPU view p per innermost user
// address (see userLeaf), and the CPU time of every sample, in user space
// or not, which the shares of the addresses are taken of.
func leafCPU(p *profile.Profile) (cpu map[pidAddr]int64, total int64) {
	cpu = map[pidAddr]int64{}
	for _, s := range p.Sample {
		if len(s.Value) < 2 {
			continue
		}
		total += s.Value[1]
		pids := s.NumLabel[recording.LabelPID]
		if len(pids) == 0 || pids[0] <= 0 {
			continue
		}
		if loc := userLeaf(s); loc != nil {
			cpu[pidAddr{uint32(pids[0]), loc.Address}] += s.Value[1]
		}
	}
	return cpu, total
}

// nativeFuncs looks up the function around each address of cpu, hottest
// address first, with its code, and sums the CPU of its addresses; an
// address with no function the symbolizer can read is left out. r.mu
// must be held.
func (r *resolver) nativeFuncs(cpu map[pidAddr]int64) map[nativeKey]*nativeFunc {
	addrs := make([]pidAddr, 0, len(cpu))
	for k := range cpu {
		addrs = append(addrs, k)
	}
	slices.SortFunc(addrs, func(a, b pidAddr) int {
		return cmp.Or(cmp.Compare(cpu[b], cpu[a]), cmp.Compare(a.pid, b.pid), cmp.Compare(a.addr, b.addr))
	})
	funcs := map[nativeKey]*nativeFunc{}
	// found holds, per process, the functions already looked up, so
	// that the addresses of one function cost one lookup and one copy.
	found := map[uint32][]*nativeFunc{}
	for _, k := range addrs {
		var f *nativeFunc
		for _, g := range found[k.pid] {
			if k.addr >= g.fn.Start && k.addr < g.fn.End {
				f = g
				break
			}
		}
		if f == nil {
			fr, ok := r.sym(k.pid).(functionReader)
			if !ok {
				continue
			}
			fn, code, ok := fr.FunctionAt(k.addr)
			if !ok {
				continue
			}
			key := nativeKey{fn.Module, fn.BuildID, fn.Start - fn.Bias, fn.Bias}
			if f = funcs[key]; f == nil {
				f = &nativeFunc{fn: fn, code: code}
				funcs[key] = f
			}
			found[k.pid] = append(found[k.pid], f)
		}
		f.cpu += cpu[k]
		if cpu[k] > f.top {
			f.top, f.pid = cpu[k], int(k.pid)
		}
	}
	return funcs
}

// hotFuncs returns the functions of funcs worth a copy, hottest first, at
// most recording.MaxNativeFunctions: those with at least minNativeShare
// of total and whose whole code, at most recording.MaxNativeCode bytes,
// was read.
func hotFuncs(funcs map[nativeKey]*nativeFunc, total int64) []*nativeFunc {
	hot := make([]*nativeFunc, 0, len(funcs))
	for _, f := range funcs {
		n := f.fn.End - f.fn.Start
		if float64(f.cpu) >= minNativeShare*float64(total) && n > 0 && n <= recording.MaxNativeCode && uint64(len(f.code)) == n {
			hot = append(hot, f)
		}
	}
	slices.SortFunc(hot, func(a, b *nativeFunc) int {
		return cmp.Or(cmp.Compare(b.cpu, a.cpu), cmp.Compare(a.fn.Start, b.fn.Start))
	})
	return hot[:min(len(hot), recording.MaxNativeFunctions)]
}

// userLeaf returns the location of a sample's innermost user frame, nil
// when the sample was taken inside a system call (its CPU is the
// kernel's), in generated Java code (jvm.go copies that) or has no user
// address.
func userLeaf(s *profile.Sample) *profile.Location {
	for _, loc := range s.Location {
		if loc.Mapping == nil {
			return nil
		}
		switch loc.Mapping.File {
		case kernelMapping:
			for _, l := range loc.Line {
				if l.Function != nil && (strings.HasPrefix(l.Function.Name, "entry_SYSCALL") || strings.HasPrefix(l.Function.Name, "do_syscall")) {
					return nil
				}
			}
			continue
		case recording.ModuleJava:
			return nil
		}
		if loc.Address == 0 {
			return nil
		}
		return loc
	}
	return nil
}
