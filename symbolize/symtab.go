package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"sort"

	"github.com/ianlancetaylor/demangle"
)

// symEntry is one sized symbol. Names stay in the string tables they came
// from (slices of the mapped files), so a table of a large library costs
// 24 bytes a symbol plus an 8-byte prefix maximum.
type symEntry struct {
	addr, end uint64
	name      uint32 // offset into strtabs[src]
	src       uint8
	rank      uint8 // binding preference: 0 global, 1 weak, 2 local
}

// symTable holds sized symbols sorted by address. Lookup finds a symbol
// containing an address, never a neighbour.
type symTable struct {
	syms    []symEntry
	maxEnd  []uint64 // maxEnd[i] = max(syms[0..i].end)
	strtabs [][]byte
	// demangled caches display names of mangled symbols by
	// src<<32 | name offset.
	demangled map[uint64]string
	// unsized holds function symbols without a size (hand-written
	// assembly such as glibc's __restore_rt) until sizeFromCFI gives them
	// one.
	unsized []symEntry
}

// rawName returns the symbol's name as stored, cut at maxNameLen.
func (t *symTable) rawName(e *symEntry) []byte {
	tab := t.strtabs[e.src]
	if uint64(e.name) >= uint64(len(tab)) {
		return nil
	}
	return cbytes(tab[e.name:])
}

// name returns the display name: C++ and Rust names demangled without
// parameter lists, others as stored. Demangling costs microseconds a name,
// so demangled names are kept (at most one per symbol).
func (t *symTable) name(e *symEntry) string {
	raw := t.rawName(e)
	if !isMangled(raw) {
		return string(raw)
	}
	key := uint64(e.src)<<32 | uint64(e.name)
	if s, ok := t.demangled[key]; ok {
		return s
	}
	s := displayName(string(raw))
	if t.demangled == nil {
		t.demangled = map[uint64]string{}
	}
	t.demangled[key] = s
	return s
}

func isMangled(b []byte) bool {
	return len(b) > 2 && b[0] == '_' && (b[1] == 'Z' || b[1] == 'R')
}

// displayName demangles C++/Rust symbol names (parameters dropped, as
// pprof's default "simplified" demangling does) and keeps others as is.
func displayName(s string) string {
	if isMangled([]byte(s)) {
		return demangle.Filter(s, demangle.NoParams)
	}
	return s
}

// lookup returns the innermost symbol containing a, or nil.
func (t *symTable) lookup(a uint64) *symEntry {
	if t == nil {
		return nil
	}
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].addr > a }) - 1
	for j := i; j >= 0 && t.maxEnd[j] > a; j-- {
		if t.syms[j].end > a {
			return &t.syms[j]
		}
	}
	return nil
}

// symKind selects which symbols a table holds.
type symKind int

const (
	kindFunc symKind = iota
	kindData
)

// symSource is one ELF symbol table with its file.
type symSource struct {
	ef   *elf.File
	data []byte
	typ  elf.SectionType // SHT_SYMTAB or SHT_DYNSYM
}

// costSymbol is the memory of one kept symbol: its 32-byte entry, its
// maxEnd word, and the room sorting and appending leave.
const costSymbol = 64

// buildSymTable reads every source and keeps sized, defined symbols of the
// kind asked for. Aliases (same start and end) collapse to one entry named
// by preference (see better).
func buildSymTable(srcs []symSource, kind symKind, budget *objBudget) *symTable {
	t := &symTable{}
	ch := &charger{budget: budget, what: "its symbol table", cost: costSymbol}
	for _, s := range srcs {
		symb, strb, ok := s.tables(budget)
		if !ok {
			continue
		}
		if len(t.strtabs) >= 255 {
			break
		}
		src := uint8(len(t.strtabs))
		t.strtabs = append(t.strtabs, strb)
		t.addSymbols(s.ef, symb, src, kind, ch)
	}
	t.finish()
	return t
}

// tables returns the bytes of s's symbol table and of the string table
// it links to; ok is false when either is missing, empty or unreadable.
func (s symSource) tables(budget *objBudget) (symb, strb []byte, ok bool) {
	var sec *elf.Section
	for _, sc := range s.ef.Sections {
		if sc.Type == s.typ {
			sec = sc
			break
		}
	}
	if sec == nil || sec.Link == 0 || int(sec.Link) >= len(s.ef.Sections) {
		return nil, nil, false
	}
	symb, err := sectionBytes(s.data, sec, budget)
	if err != nil || len(symb) == 0 {
		return nil, nil, false
	}
	strb, err = sectionBytes(s.data, s.ef.Sections[sec.Link], budget)
	if err != nil || len(strb) == 0 {
		return nil, nil, false
	}
	return symb, strb, true
}

// addSymbols appends the defined symbols of kind in symb, an Elf64_Sym
// array of ef whose names are in the string table numbered src, to t:
// sized ones to t.syms, unsized functions to t.unsized. It stops when ch
// refuses a symbol.
func (t *symTable) addSymbols(ef *elf.File, symb []byte, src uint8, kind symKind, ch *charger) {
	const entSize = 24 // sizeof(Elf64_Sym)
	for off := entSize; off+entSize <= len(symb); off += entSize {
		e := symb[off : off+entSize]
		nameOff := binary.LittleEndian.Uint32(e[0:])
		info := e[4]
		shndx := binary.LittleEndian.Uint16(e[6:])
		value := binary.LittleEndian.Uint64(e[8:])
		size := binary.LittleEndian.Uint64(e[16:])
		if nameOff == 0 || shndx == uint16(elf.SHN_UNDEF) || shndx >= uint16(elf.SHN_LORESERVE) {
			continue
		}
		if value+size < value {
			continue
		}
		if !wantSymbol(ef, kind, elf.ST_TYPE(info), shndx) {
			continue
		}
		rank := uint8(2)
		switch elf.ST_BIND(info) {
		case elf.STB_GLOBAL:
			rank = 0
		case elf.STB_WEAK:
			rank = 1
		}
		if !ch.add() {
			// Over the budget: the symbols kept so far name
			// what they cover.
			break
		}
		ent := symEntry{addr: value, end: value + size, name: nameOff, src: src, rank: rank}
		if size == 0 {
			if kind == kindFunc {
				t.unsized = append(t.unsized, ent)
			}
			continue
		}
		t.syms = append(t.syms, ent)
	}
}

// wantSymbol reports whether a symbol of type typ in section shndx of ef
// is of kind: functions (or untyped symbols in executable sections) for
// kindFunc, objects for kindData.
func wantSymbol(ef *elf.File, kind symKind, typ elf.SymType, shndx uint16) bool {
	switch kind {
	case kindFunc:
		switch typ {
		case elf.STT_FUNC, elf.STT_GNU_IFUNC:
			return true
		case elf.STT_NOTYPE:
			return int(shndx) < len(ef.Sections) && ef.Sections[shndx].Flags&elf.SHF_EXECINSTR != 0
		}
	case kindData:
		return typ == elf.STT_OBJECT || typ == elf.STT_COMMON
	}
	return false
}

// finish sorts the symbols, collapses aliases and indexes the table.
func (t *symTable) finish() {
	sort.Slice(t.syms, func(i, j int) bool {
		a, b := &t.syms[i], &t.syms[j]
		if a.addr != b.addr {
			return a.addr < b.addr
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return t.better(a, b)
	})
	// Collapse aliases: after sorting, the preferred entry of a run with
	// equal bounds comes first.
	out := t.syms[:0]
	for i := range t.syms {
		if len(out) > 0 && out[len(out)-1].addr == t.syms[i].addr && out[len(out)-1].end == t.syms[i].end {
			continue
		}
		out = append(out, t.syms[i])
	}
	t.syms = append([]symEntry(nil), out...) // drop the excess capacity
	t.index()
}

// index computes maxEnd over syms, which must be sorted by address.
func (t *symTable) index() {
	t.maxEnd = make([]uint64, len(t.syms))
	var m uint64
	for i := range t.syms {
		m = max(m, t.syms[i].end)
		t.maxEnd[i] = m
	}
}

// better reports whether a's name is preferred over b's for the same range:
// the name with fewer leading underscores (the public one: frexp over
// __frexp, pthread_mutex_lock over ___pthread_mutex_lock), then global over
// weak over local binding, then the shorter name.
func (t *symTable) better(a, b *symEntry) bool {
	na, nb := t.rawName(a), t.rawName(b)
	ua := len(na) - len(bytes.TrimLeft(na, "_"))
	ub := len(nb) - len(bytes.TrimLeft(nb, "_"))
	if ua != ub {
		return ua < ub
	}
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if len(na) != len(nb) {
		return len(na) < len(nb)
	}
	return bytes.Compare(na, nb) < 0
}

// loadSymbols builds the function and data symbol tables of o from its own
// .symtab and .dynsym and its debug file's .symtab.
func (o *object) loadSymbols() {
	if o.symsLoaded {
		return
	}
	o.symsLoaded = true
	srcs := []symSource{
		{o.ef, o.data, elf.SHT_SYMTAB},
		{o.ef, o.data, elf.SHT_DYNSYM},
	}
	if o.dbg != nil {
		srcs = append(srcs, symSource{o.dbg.ef, o.dbg.data, elf.SHT_SYMTAB})
	}
	o.funcs = buildSymTable(srcs, kindFunc, o.budget)
	o.objs = buildSymTable(srcs, kindData, o.budget)
	o.sizeFromCFI(o.funcs)
}

// sizeFromCFI gives function symbols without a size the extent of the FDE
// that starts at them: the unwind table states where that code ends, so an
// address inside it is inside the function. Symbols that no FDE starts at
// stay unnamed ranges.
func (o *object) sizeFromCFI(t *symTable) {
	var add []symEntry
	for _, e := range t.unsized {
		if t.lookup(e.addr) != nil {
			continue
		}
		for _, s := range o.cfiSections() {
			// The FDE may start a byte early, as glibc's signal
			// trampoline's does so that pc-1 lookups find it.
			f := s.find(e.addr)
			if f == nil || f.start+1 < e.addr || f.end <= e.addr {
				continue
			}
			e.end = f.end
			add = append(add, e)
			break
		}
	}
	t.unsized = nil
	if len(add) > 0 {
		t.syms = append(t.syms, add...)
		t.finish()
	}
}
