package collector

import (
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// goFunc is one function of a Go executable the Go lock probes attach
// to: where it starts in the file and where it returns.
type goFunc struct {
	// Name is the function's symbol name.
	Name string
	// Kind is what it waits for (goSync*), the uprobes' cookie.
	Kind uint32
	// Offset is the file offset of its first instruction.
	Offset uint64
	// Entry is where the entry probe goes, from the first instruction:
	// the PUSH of the frame pointer after the stack-growth check (see
	// entryOffset), or 0.
	Entry uint64
	// Rets holds the offsets of its RET instructions from its first.
	Rets []uint64
}

// goLockFunc is one waiting side of Go's locks, under each name it has
// had across Go versions, newest first.
type goLockFunc struct {
	kind  uint32
	what  string
	names []string
}

// goLockFuncs are the functions a goroutine waits in for a sync.Mutex or
// sync.RWMutex. A Lock that finds the mutex taken calls lockSlow, which
// spins, then parks the goroutine until the mutex is handed over or free
// (Go 1.24 moved sync.Mutex's body into internal/sync); an RLock that
// finds a writer, and a Lock that waits for the readers to leave, park
// through these two runtime functions. The fast paths are inlined into
// the caller and never wait, so entry to return of these functions is the
// wait of one contended acquisition, as the runtime's block profile
// counts it.
var goLockFuncs = []goLockFunc{
	{goSyncMutex, "sync.Mutex", []string{"internal/sync.(*Mutex).lockSlow", "sync.(*Mutex).lockSlow"}},
	{goSyncRLock, "sync.RWMutex readers", []string{"sync.runtime_SemacquireRWMutexR"}},
	{goSyncWLock, "sync.RWMutex writers", []string{"sync.runtime_SemacquireRWMutex"}},
}

// goFuncsFound is what findGoFuncs found in one executable.
type goFuncsFound struct {
	funcs []goFunc
	// table is where the functions were found: "symbol table", or
	// "pclntab" for a binary stripped of its symbol table.
	table string
	// missing says, per lock kind not found, which names were looked for.
	missing []string
}

// errNotGoAMD64 reports an executable the Go lock probes cannot be placed
// in: only amd64 code is disassembled, and g is in r14 only there.
var errNotGoAMD64 = errors.New("not an x86-64 executable")

// findGoFuncs finds the Go lock slow paths (goLockFuncs) in the Go
// executable at path, from its symbol table or, when it was stripped of
// one, from the runtime's own function table (pclntab), which every Go
// binary keeps; and it disassembles each to find its RET instructions.
// A function not found is listed in missing; an error means none can be
// probed.
func findGoFuncs(path string) (*goFuncsFound, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("%s: %w (%s)", path, errNotGoAMD64, f.Machine)
	}
	lookup, table, err := funcTable(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := &goFuncsFound{table: table}
	for _, lf := range goLockFuncs {
		found := false
		for _, name := range lf.names {
			lo, hi, ok := lookup(name)
			if !ok {
				continue
			}
			fn, err := goFuncAt(f, name, lf.kind, lo, hi)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			out.funcs = append(out.funcs, fn)
			found = true
			break
		}
		if !found {
			out.missing = append(out.missing, fmt.Sprintf("%s (%s: not in the %s; renamed or inlined in this Go version)", lf.what, strings.Join(lf.names, ", "), table))
		}
	}
	if len(out.funcs) == 0 {
		return out, fmt.Errorf("%s: none of Go's lock slow paths is in its %s: %s", path, table, strings.Join(out.missing, "; "))
	}
	return out, nil
}

// funcTable returns a lookup of function name -> [lo, hi) virtual
// addresses: from the ELF symbol table, else from .gopclntab.
func funcTable(f *elf.File) (func(string) (lo, hi uint64, ok bool), string, error) {
	syms, err := f.Symbols()
	if err == nil {
		byName := map[string]elf.Symbol{}
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
				byName[s.Name] = s
			}
		}
		return func(name string) (uint64, uint64, bool) {
			s, ok := byName[name]
			return s.Value, s.Value + s.Size, ok
		}, "symbol table", nil
	}
	pcln := f.Section(".gopclntab")
	text := f.Section(".text")
	if pcln == nil || text == nil {
		return nil, "", errors.New("no symbol table and no .gopclntab section: not a Go executable, or stripped beyond what the Go lock probes can place")
	}
	data, err := pcln.Data()
	if err != nil {
		return nil, "", fmt.Errorf("read .gopclntab: %w", err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil, "", fmt.Errorf("parse .gopclntab: %w", err)
	}
	return func(name string) (uint64, uint64, bool) {
		fn := tab.LookupFunc(name)
		if fn == nil {
			return 0, 0, false
		}
		return fn.Entry, fn.End, true
	}, "pclntab", nil
}

// maxGoFuncBytes bounds the code read of one probed function: lockSlow is
// about 600 bytes and the semaphore waits under 200; a size far beyond
// is a wrong symbol, not code to disassemble.
const maxGoFuncBytes = 64 << 10

// goFuncAt reads the function at virtual addresses [lo, hi) from the
// executable segment that holds it and finds its RET instructions.
func goFuncAt(f *elf.File, name string, kind uint32, lo, hi uint64) (goFunc, error) {
	if hi <= lo || hi-lo > maxGoFuncBytes {
		return goFunc{}, fmt.Errorf("%s: implausible size %d", name, int64(hi-lo))
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || lo < p.Vaddr || hi > p.Vaddr+p.Filesz {
			continue
		}
		code := make([]byte, hi-lo)
		if _, err := p.ReadAt(code, int64(lo-p.Vaddr)); err != nil {
			return goFunc{}, fmt.Errorf("read %s: %w", name, err)
		}
		insts, err := decodeAll(code)
		if err != nil {
			return goFunc{}, fmt.Errorf("disassemble %s: %w", name, err)
		}
		rets := retOffsets(insts)
		if len(rets) == 0 {
			return goFunc{}, fmt.Errorf("%s: no RET instruction", name)
		}
		return goFunc{Name: name, Kind: kind, Offset: lo - p.Vaddr + p.Off, Entry: entryOffset(insts), Rets: rets}, nil
	}
	return goFunc{}, fmt.Errorf("%s at 0x%x: in no executable segment", name, lo)
}

// decoded is one instruction of a function and its offset.
type decoded struct {
	off  uint64
	inst x86asm.Inst
}

// decodeAll decodes code, one function's instructions from its first. Go
// emits no data inside a function's code on amd64 (jump tables live in
// rodata), so a linear sweep decodes every instruction; the padding after
// the last one is INT3. An undecodable byte is an error, never skipped: a
// uprobe placed off an instruction boundary would corrupt the target's
// code.
func decodeAll(code []byte) ([]decoded, error) {
	var out []decoded
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err == nil && inst.Op == 0 {
			// A prefix with nothing after it (code cut short) decodes
			// as a lone prefix without an error.
			err = errors.New("truncated instruction")
		}
		if err != nil {
			return nil, fmt.Errorf("at +0x%x: %w", off, err)
		}
		out = append(out, decoded{uint64(off), inst})
		off += inst.Len
	}
	return out, nil
}

// retOffsets returns the offsets of the RET instructions of insts.
func retOffsets(insts []decoded) []uint64 {
	var rets []uint64
	for _, d := range insts {
		if d.inst.Op == x86asm.RET {
			rets = append(rets, d.off)
		}
	}
	return rets
}

// entryOffset returns where the entry probe of a function goes: at the
// PUSH of the frame pointer that follows Go's stack-growth check (a CMP
// of the stack pointer, or of a register LEA computed from it, with g's
// stack guard, and a conditional jump to the growth path), or at the first
// instruction when the function starts otherwise. The kernel single-steps
// most probed instructions out of line, a second trap per hit, but
// emulates a PUSH: on the machine the benchmark ran on, a uprobe costs
// about 15 µs on the stack check and 0.5 µs on the PUSH (perf probe, no
// BPF program attached). Up to the PUSH, the stack and frame pointers are
// those of the entry, so the stack is walked the same way; a call that
// grows its stack runs the check again and reaches the PUSH once.
func entryOffset(insts []decoded) uint64 {
	for _, d := range insts {
		switch d.inst.Op {
		case x86asm.PUSH:
			if d.inst.Args[0] == x86asm.RBP {
				return d.off
			}
			return 0
		case x86asm.CMP, x86asm.JBE:
		case x86asm.LEA:
			if r, ok := d.inst.Args[0].(x86asm.Reg); !ok || r == x86asm.RSP || r == x86asm.RBP {
				return 0
			}
		default:
			return 0
		}
	}
	return 0
}
