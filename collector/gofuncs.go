package collector

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/contend-dev/contend/symbolize"
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
	// Calls holds the offsets, from its first instruction, of the
	// instruction after each of its CALLs: its return addresses.
	Calls []uint64
}

// goCaller is a return address in a Go executable, as a file offset, after
// a call in one of the runtime's lock wait wrappers (goLockWrappers).
type goCaller struct {
	Off  uint64
	Kind uint32
}

// The park/wake probes (bpf/gosync.bpf.c): the runtime function a
// goroutine queues its sudog on a semaphore in just before it parks, and
// the one it calls first when it runs again with the semaphore (both in
// semacquire1, runtime/sema.go, the same since before Go 1.21).
const (
	goParkFunc = "runtime.(*semaRoot).queue"
	goWakeFunc = "runtime.releaseSudog"
)

// goLockWrappers are the runtime functions that call semacquire1 for a
// lock, one per waiting side, under each name across Go versions: the
// return address of semacquire1 into one of them tells the park probe
// which lock a semaphore belongs to. Every name found is used: a Go 1.24
// binary may keep both Mutex wrappers.
var goLockWrappers = []goLockFunc{
	{goSyncMutex, "sync.Mutex", []string{"internal/sync.runtime_SemacquireMutex", "sync.runtime_SemacquireMutex"}},
	{goSyncRLock, "sync.RWMutex readers", []string{"sync.runtime_SemacquireRWMutexR"}},
	{goSyncWLock, "sync.RWMutex writers", []string{"sync.runtime_SemacquireRWMutex"}},
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
	// park and wake are goParkFunc and goWakeFunc, callers the return
	// addresses in the lock wrappers: what the park/wake probes need.
	// parkMissing says why they cannot be placed ("" when they can).
	park, wake  goFunc
	callers     []goCaller
	parkMissing string
}

// errNotGoAMD64 reports an executable the Go lock probes cannot be placed
// in: only amd64 code is disassembled, and g is in r14 only there.
var errNotGoAMD64 = errors.New("not an x86-64 executable")

// findGoFuncs finds what the Go lock probes need in the Go executable at
// path: for the park/wake probes, goParkFunc, goWakeFunc and the return
// addresses of goLockWrappers' calls; for the entry/return ones, the lock
// slow paths (goLockFuncs) and their RET instructions. It reads the
// symbol table or, when the binary was stripped of one, the runtime's own
// function table (pclntab), which every Go binary keeps, and disassembles
// each function found. A lock slow path not found is listed in missing,
// what park/wake lacks in parkMissing; an error means nothing can be
// probed.
func findGoFuncs(path string) (*goFuncsFound, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := symbolize.CheckELF(file, st.Size()); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	f, err := elf.NewFile(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("%s: %w (%s, %s)", path, errNotGoAMD64, f.Machine, f.Class)
	}
	names := []string{goParkFunc, goWakeFunc}
	for _, lfs := range [][]goLockFunc{goLockFuncs, goLockWrappers} {
		for _, lf := range lfs {
			for _, n := range lf.names {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	spans, table, err := funcTable(f, st.Size(), names)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := &goFuncsFound{table: table}
	for _, lf := range goLockFuncs {
		found := false
		for _, name := range lf.names {
			sp, ok := spans[name]
			if !ok {
				continue
			}
			fn, err := goFuncAt(f, name, lf.kind, sp.lo, sp.hi)
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
	if err := out.findParkWake(f, spans); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out.funcs) == 0 && out.parkMissing != "" {
		return out, fmt.Errorf("%s: none of Go's lock slow paths is in its %s: %s", path, table, strings.Join(out.missing, "; "))
	}
	return out, nil
}

// findParkWake fills in what the park/wake probes need from spans, the
// functions found in f, or says in parkMissing what is not there.
func (out *goFuncsFound) findParkWake(f *elf.File, spans map[string]span) error {
	var absent []string
	for _, name := range []string{goParkFunc, goWakeFunc} {
		sp, ok := spans[name]
		if !ok {
			absent = append(absent, name)
			continue
		}
		fn, err := goFuncAt(f, name, 0, sp.lo, sp.hi)
		if err != nil {
			return err
		}
		if name == goParkFunc {
			out.park = fn
		} else {
			out.wake = fn
		}
	}
	for _, lf := range goLockWrappers {
		for _, name := range lf.names {
			sp, ok := spans[name]
			if !ok {
				continue
			}
			fn, err := goFuncAt(f, name, lf.kind, sp.lo, sp.hi)
			if err != nil {
				return err
			}
			for _, c := range fn.Calls {
				out.callers = append(out.callers, goCaller{Off: fn.Offset + c, Kind: lf.kind})
			}
		}
	}
	if len(out.callers) == 0 {
		absent = append(absent, "the lock wrappers (sync.runtime_SemacquireMutex and kin)")
	}
	if len(absent) > 0 {
		out.parkMissing = fmt.Sprintf("%s not in the %s", strings.Join(absent, ", "), out.table)
	}
	return nil
}

// goBuildVersion returns the Go version that built the executable at
// path, "" when it is not a Go executable or cannot be read. The file is
// the target's: its section headers are checked (symbolize.CheckELF)
// before debug/buildinfo opens it with debug/elf.
func goBuildVersion(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || symbolize.CheckELF(f, st.Size()) != nil {
		return ""
	}
	bi, err := buildinfo.Read(f)
	if err != nil {
		return ""
	}
	return bi.GoVersion
}

// span is a function's virtual addresses, [lo, hi).
type span struct{ lo, hi uint64 }

// funcTable finds the functions named in f, an executable of size bytes:
// in the ELF symbol table, else (none, or one that does not parse) in
// .gopclntab. It returns where each name found starts and ends, and
// which table they came from.
//
// Both tables are the target's bytes, read without debug/elf's Symbols
// or debug/gosym: those allocate a record per entry the header claims
// and copy every name, each up to its NUL, so a table that lies about
// its count (a Go binary runs with any count in its pclntab header: the
// runtime reads its own copy from moduledata) or points many entries
// into one long name costs far more than its size, past any machine's
// memory. Here a count is checked against the bytes of the table it
// describes before it drives a loop, names are compared in place, and
// nothing is allocated per entry: the cost is the table's bytes, read
// once.
func funcTable(f *elf.File, size int64, names []string) (map[string]span, string, error) {
	if s := f.SectionByType(elf.SHT_SYMTAB); s != nil {
		if spans, err := symtabFuncs(f, s, size, names); err == nil {
			return spans, "symbol table", nil
		}
	}
	pcln := f.Section(".gopclntab")
	text := f.Section(".text")
	if pcln == nil || text == nil {
		return nil, "", errors.New("no symbol table and no .gopclntab section: not a Go executable, or stripped beyond what the Go lock probes can place")
	}
	data, err := sectionBytes(pcln, size)
	if err != nil {
		return nil, "", err
	}
	spans, err := pclnFuncs(data, text.Addr, names)
	if err != nil {
		return nil, "", fmt.Errorf("parse .gopclntab: %w", err)
	}
	return spans, "pclntab", nil
}

// maxGoTableBytes bounds the bytes read of one table (symbol table, its
// strings, pclntab) of an executable: the same 512 MiB that symbolize
// allows all of one object's tables. The pclntab of a Go binary of a few
// hundred MB is tens of MB; a table beyond the bound is a crafted one.
const maxGoTableBytes = 512 << 20

// sectionBytes reads section s of an ELF file of size bytes. The section
// header is the target's word: a section with no bytes in the file
// (SHT_NOBITS reads as zeros of whatever size it claims), stored
// compressed (inflating to a size it claims), reaching past the end of
// the file, or over maxGoTableBytes is refused before anything is
// allocated.
func sectionBytes(s *elf.Section, size int64) ([]byte, error) {
	switch {
	case s.Type == elf.SHT_NOBITS:
		return nil, fmt.Errorf("section %s: no bytes in the file", s.Name)
	case s.Flags&elf.SHF_COMPRESSED != 0:
		return nil, fmt.Errorf("section %s: compressed, which no Go linker does to it", s.Name)
	case size < 0 || s.Offset > uint64(size) || s.FileSize > uint64(size)-s.Offset:
		return nil, fmt.Errorf("section %s: %d bytes at offset %d, past the end of a file of %d", s.Name, s.FileSize, s.Offset, size)
	case s.FileSize > maxGoTableBytes:
		return nil, fmt.Errorf("section %s: %d bytes, over the %d MiB a table of an executable may take", s.Name, s.FileSize, maxGoTableBytes>>20)
	}
	b := make([]byte, s.FileSize)
	if _, err := s.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("read section %s: %w", s.Name, err)
	}
	return b, nil
}

// symtabFuncs finds the named functions among the sized STT_FUNC symbols
// of the 64-bit symbol table s, the first of each name.
func symtabFuncs(f *elf.File, s *elf.Section, size int64, names []string) (map[string]span, error) {
	if int(s.Link) <= 0 || int(s.Link) >= len(f.Sections) {
		return nil, fmt.Errorf("symbol table: string table %d of %d sections", s.Link, len(f.Sections))
	}
	syms, err := sectionBytes(s, size)
	if err != nil {
		return nil, err
	}
	if len(syms)%elf.Sym64Size != 0 {
		return nil, fmt.Errorf("symbol table: %d bytes, not a whole number of %d-byte symbols", len(syms), elf.Sym64Size)
	}
	strs, err := sectionBytes(f.Sections[s.Link], size)
	if err != nil {
		return nil, err
	}
	return symtabScan(syms, strs, names), nil
}

// symtabScan finds the named functions among the sized STT_FUNC symbols
// of syms, the entries of a 64-bit little-endian symbol table whose names
// are in strs: the first of each name.
func symtabScan(syms, strs []byte, names []string) map[string]span {
	out := map[string]span{}
	// Symbol 0 is the undefined symbol.
	for off := elf.Sym64Size; off+elf.Sym64Size <= len(syms) && len(out) < len(names); off += elf.Sym64Size {
		e := syms[off : off+elf.Sym64Size]
		value, sz := binary.LittleEndian.Uint64(e[8:]), binary.LittleEndian.Uint64(e[16:])
		if elf.ST_TYPE(e[4]) != elf.STT_FUNC || sz == 0 || value+sz < value {
			continue
		}
		if name, ok := nameAt(strs, binary.LittleEndian.Uint32(e), names, out); ok {
			out[name] = span{value, value + sz}
		}
	}
	return out
}

// nameAt returns the name of names, not yet in found, that is stored at
// offset off of tab (followed by its NUL), comparing in place.
func nameAt(tab []byte, off uint32, names []string, found map[string]span) (string, bool) {
	if uint64(off) >= uint64(len(tab)) {
		return "", false
	}
	at := tab[off:]
	for _, n := range names {
		if _, dup := found[n]; !dup && len(at) > len(n) && at[len(n)] == 0 && string(at[:len(n)]) == n {
			return n, true
		}
	}
	return "", false
}

// Magic numbers of the pclntab header (internal/abi.PCLnTabMagic), per
// Go release.
const (
	pclnGo12  = 0xfffffffb
	pclnGo116 = 0xfffffffa
	pclnGo118 = 0xfffffff0
	pclnGo120 = 0xfffffff1
)

// pclnFuncs finds the named functions, the first of each name, in data,
// the Go function table of a little-endian 64-bit executable whose text
// starts at text; Go 1.2 to 1.17 layouts and those since 1.18 (the
// layouts debug/gosym reads). A table whose header claims more functions
// than its bytes hold is refused.
func pclnFuncs(data []byte, text uint64, names []string) (map[string]span, error) {
	t, err := parsePclnHeader(data)
	if err != nil {
		return nil, err
	}
	return t.funcSpans(text, names), nil
}

// pclnTable is where a Go function table keeps what pclnFuncs reads.
type pclnTable struct {
	// funcnames holds the function names, at the name offsets of the
	// _func records; recs holds the records, at the offsets functab
	// gives; functab holds nfunc (entry pc, record offset) pairs and the
	// end of the last function.
	funcnames, recs, functab []byte
	nfunc                    uint64
	// field is the width of each of a function's two functab fields
	// (entry pc and _func record offset): a pointer before Go 1.18, a
	// 32-bit offset from text since; the record's name offset follows
	// its entry field.
	field int
}

// parsePclnHeader reads the header of data, the Go function table of a
// little-endian 64-bit executable, and checks that the offsets it gives
// lie inside data and that its functab holds the functions it claims.
func parsePclnHeader(data []byte) (pclnTable, error) {
	var t pclnTable
	// 4-byte magic, two zero bytes, the instruction size quantum, the
	// pointer size; then the header's words.
	if len(data) < 16 || data[4] != 0 || data[5] != 0 || data[7] != 8 {
		return t, fmt.Errorf("%d bytes: not the table of a 64-bit Go executable", len(data))
	}
	le := binary.LittleEndian
	var nwords int
	t.field = 8
	// functabWord, nameWord: which header words give the offsets of the
	// functab (which the _func record offsets are relative to) and the
	// function names; -1 for Go 1.2's, where all offsets are from the
	// start of the table.
	functabWord, nameWord := -1, -1
	switch m := le.Uint32(data); m {
	case pclnGo12:
		nwords = 1
	case pclnGo116:
		nwords, nameWord, functabWord = 7, 2, 6
	case pclnGo118, pclnGo120:
		nwords, nameWord, functabWord, t.field = 8, 3, 7, 4
	default:
		return t, fmt.Errorf("magic 0x%x: not a Go function table this version reads", m)
	}
	if len(data) < 8+8*nwords {
		return t, fmt.Errorf("%d bytes: shorter than its header", len(data))
	}
	word := func(i int) uint64 { return le.Uint64(data[8+8*i:]) }
	at := func(i int) ([]byte, error) {
		if i < 0 {
			return data, nil
		}
		if off := word(i); off > uint64(len(data)) {
			return nil, fmt.Errorf("header word %d: offset %d past the end of the table's %d bytes", i, off, len(data))
		}
		return data[word(i):], nil
	}
	var err error
	if t.funcnames, err = at(nameWord); err != nil {
		return t, err
	}
	if t.recs, err = at(functabWord); err != nil {
		return t, err
	}
	t.functab = t.recs
	if functabWord < 0 {
		t.functab = data[16:]
	}
	// The functab holds nfunc entries of two fields, then the end of the
	// last function: 2*nfunc+1 fields.
	fields := uint64(len(t.functab) / t.field)
	if t.nfunc = word(0); fields == 0 || t.nfunc > (fields-1)/2 {
		return t, fmt.Errorf("header claims %d functions, its function table's %d bytes hold at most %d", t.nfunc, len(t.functab), (max(fields, 1)-1)/2)
	}
	return t, nil
}

// funcSpans returns the addresses of the named functions in t, the first
// of each name, for a table whose text starts at text. Entries whose
// record lies past the end of the table are skipped.
func (t *pclnTable) funcSpans(text uint64, names []string) map[string]span {
	le := binary.LittleEndian
	pc := func(i uint64) uint64 {
		if t.field == 4 {
			return text + uint64(le.Uint32(t.functab[8*i:]))
		}
		return le.Uint64(t.functab[16*i:])
	}
	out := map[string]span{}
	for i := uint64(0); i < t.nfunc && len(out) < len(names); i++ {
		var rec uint64
		if t.field == 4 {
			rec = uint64(le.Uint32(t.functab[8*i+4:]))
		} else {
			rec = le.Uint64(t.functab[16*i+8:])
		}
		if rec > uint64(len(t.recs)) || uint64(len(t.recs))-rec < uint64(t.field)+4 {
			continue
		}
		if name, ok := nameAt(t.funcnames, le.Uint32(t.recs[rec+uint64(t.field):]), names, out); ok {
			out[name] = span{pc(i), pc(i + 1)}
		}
	}
	return out
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
		return goFunc{Name: name, Kind: kind, Offset: lo - p.Vaddr + p.Off, Entry: entryOffset(insts), Rets: rets, Calls: callEnds(insts)}, nil
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

// callEnds returns the offsets of the instructions after the CALLs of
// insts: the return addresses the calls push.
func callEnds(insts []decoded) []uint64 {
	var ends []uint64
	for _, d := range insts {
		if d.inst.Op == x86asm.CALL {
			ends = append(ends, d.off+uint64(d.inst.Len))
		}
	}
	return ends
}

// entryOffset returns where the entry probe of a function goes: at the
// PUSH of the frame pointer that follows Go's stack-growth check (a CMP
// of the stack pointer, or of a register LEA computed from it, with g's
// stack guard, and a conditional jump to the growth path), or at the first
// instruction when the function starts otherwise. The kernel single-steps
// most probed instructions out of line, a second trap per hit, but
// emulates a PUSH: on the machine the benchmark ran on, a uprobe costs
// about 21 µs on a single-stepped instruction and 5 µs on the PUSH (perf
// probe, no BPF program attached; docs/cost.md). Up to the PUSH, the stack and frame pointers are
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
