package symbolize

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"slices"
	"sort"
)

// pclntab reads a Go binary's function table (.gopclntab). Go 1.18 and
// later layouts (magic 0xfffffff0 and 0xfffffff1) are read directly from
// the mapped file, which also gives the stack-pointer delta table used to
// unwind Go code without frame information; older layouts go through
// debug/gosym for names and lines only.
type pclntab struct {
	textStart uint64
	minLC     uint64
	nfunc     int

	funcnametab []byte
	cutab       []byte
	filetab     []byte
	pctab       []byte
	pclntable   []byte // functab followed by the _func records

	legacy *gosym.Table
}

// Magic numbers of the pclntab header, per Go release.
const (
	go12magic  = 0xfffffffb
	go116magic = 0xfffffffa
	go118magic = 0xfffffff0
	go120magic = 0xfffffff1
)

// Go function flags (abi.FuncFlag) stored in _func.flag since Go 1.18.
const (
	// funcFlagTopFrame marks the outermost function of a goroutine or
	// thread stack (runtime.goexit, runtime.mstart, runtime.rt0_go).
	funcFlagTopFrame = 1 << 0
	// funcFlagSPWrite marks functions that write SP arbitrarily (stack
	// switches: runtime.mcall, runtime.systemstack, runtime.morestack);
	// unwinding through them by the SP table is meaningless.
	funcFlagSPWrite = 1 << 1
)

// goFunc is one function of the table.
type goFunc struct {
	entry, end uint64 // ELF virtual addresses
	rec        []byte // the _func record (nil for legacy tables)
	legacy     *gosym.Func
}

// pcln returns o's Go function table, or nil when o is not a Go binary.
func (o *object) pcln() *pclntab {
	if o.goLoaded {
		return o.gotab
	}
	o.goLoaded = true
	sec := o.ef.Section(".gopclntab")
	if sec == nil {
		return nil
	}
	data, err := o.sectionBytes(sec)
	if err != nil || len(data) < 8 {
		return nil
	}
	text := uint64(0)
	if s := o.ef.Section(".text"); s != nil {
		text = s.Addr
	}
	if v, ok := o.elfSymbol("runtime.text"); ok {
		text = v
	}
	if m := binary.LittleEndian.Uint32(data); m != go118magic && m != go120magic {
		names, ok := legacyNameBytes(data)
		if !ok || !o.budget.take(int64(len(data))*legacyTableCost+names, "reading its Go function table") {
			return nil
		}
	}
	o.gotab = newPclntab(data, text)
	return o.gotab
}

// legacyCountFits reports whether a table debug/gosym would read claims
// no more functions than it has bytes for. gosym makes its function list
// at the size the header gives before it reads an entry (and recovers
// from a panic, not from running out of memory): a corrupt count took
// the process down (found by FuzzPclntab: a big-endian Go 1.20 header
// asking for 77 GB). Every version's function table spends at least 8
// bytes on a function (two 4-byte words since Go 1.18, two pointers
// before).
func legacyCountFits(data []byte) bool {
	if len(data) < 16 {
		return false
	}
	var order binary.ByteOrder
	switch known := func(m uint32) bool { return m == go12magic || m == go116magic || m == go118magic || m == go120magic }; {
	case known(binary.LittleEndian.Uint32(data)):
		order = binary.LittleEndian
	case known(binary.BigEndian.Uint32(data)):
		order = binary.BigEndian
	default:
		return false // nothing gosym reads
	}
	var n uint64
	switch data[7] {
	case 4:
		n = uint64(order.Uint32(data[8:]))
	case 8:
		n = order.Uint64(data[8:])
	default:
		return false
	}
	return n <= uint64(len(data))/8
}

// legacyNameBytes returns how many bytes debug/gosym copies for the
// function names of a table legacyCountFits accepts: it copies each
// distinct name offset's bytes up to the NUL, so entries pointing into
// one long run of bytes cost its length each, whatever the table's size.
// The sum is found without that cost: the offsets sorted, and the names
// scanned once from their end for the NUL that ends each. ok is false
// for a table gosym would not read (the count does not fit), or one
// whose names are not NUL-terminated (gosym drops the table then).
func legacyNameBytes(data []byte) (total int64, ok bool) {
	if !legacyCountFits(data) {
		return 0, false
	}
	l, ok := readLegacyLayout(data)
	if !ok {
		return 0, false
	}
	offs, ok := l.nameOffsets()
	if !ok {
		return 0, false
	}
	return sumNameBytes(l.names, offs)
}

// legacyLayout is where legacyNameBytes finds the parts of a Go function
// table that debug/gosym reads the names through.
type legacyLayout struct {
	order binary.ByteOrder
	nfunc uint64
	// names holds the function names, at the name offsets of the _func
	// records; funcdata holds the records, at the offsets that functab's
	// (entry, record offset) pairs give.
	names, funcdata, functab []byte
	field                    uint64 // each functab field: a pointer before Go 1.18, 32 bits since
}

// readLegacyLayout finds the layout of data, a table legacyCountFits
// accepts (so its pointer size is 4 or 8). ok is false when a header
// offset points past the end of data.
func readLegacyLayout(data []byte) (l legacyLayout, ok bool) {
	l.order = binary.LittleEndian
	magic := l.order.Uint32(data)
	if magic != go12magic && magic != go116magic && magic != go118magic && magic != go120magic {
		l.order = binary.BigEndian
		magic = l.order.Uint32(data)
	}
	ps := uint64(data[7])
	word := func(i uint64) ([]byte, bool) {
		off, ok := readUint(l.order, data, 8+i*ps, ps)
		if !ok || off > uint64(len(data)) {
			return nil, false
		}
		return data[off:], true
	}
	l.nfunc, _ = readUint(l.order, data, 8, ps)
	l.field = ps
	ok1, ok2 := true, true
	switch magic {
	case go12magic:
		l.names, l.funcdata, l.functab = data, data, data[min(8+ps, uint64(len(data))):]
	case go116magic:
		l.names, ok1 = word(2)
		l.funcdata, ok2 = word(6)
		l.functab = l.funcdata
	default: // go118magic, go120magic: other pointer sizes or byte orders
		l.names, ok1 = word(3)
		l.funcdata, ok2 = word(7)
		l.functab, l.field = l.funcdata, 4
	}
	return l, ok1 && ok2
}

// readUint reads the size-byte (4 or 8) value at offset at of b; ok is
// false when it does not lie inside b.
func readUint(order binary.ByteOrder, b []byte, at, size uint64) (uint64, bool) {
	if at > uint64(len(b)) || uint64(len(b))-at < size {
		return 0, false
	}
	if size == 4 {
		return uint64(order.Uint32(b[at:])), true
	}
	return order.Uint64(b[at:]), true
}

// nameOffsets returns the name offset of each function's _func record,
// in table order; ok is false when an entry or a record lies past the
// end of the table.
func (l *legacyLayout) nameOffsets() ([]uint32, bool) {
	// nfunc <= len(data)/8 (legacyCountFits): the offsets take half the
	// table's size at most.
	offs := make([]uint32, 0, l.nfunc)
	for i := range l.nfunc {
		rec, ok := readUint(l.order, l.functab, (2*i+1)*l.field, l.field)
		if !ok {
			return nil, false
		}
		// The _func record: its entry (a pointer, 32 bits since Go
		// 1.18), then the name offset.
		nameOff, ok := readUint(l.order, l.funcdata, rec+l.field, 4)
		if !ok {
			return nil, false
		}
		offs = append(offs, uint32(nameOff))
	}
	return offs, true
}

// sumNameBytes returns the bytes from each distinct offset in offs up to
// the NUL that ends its name in names, scanning names once from the end.
// ok is false when an offset lies past names or a name has no NUL.
// It sorts offs in place.
func sumNameBytes(names []byte, offs []uint32) (total int64, ok bool) {
	slices.Sort(offs)
	offs = slices.Compact(offs)
	nul, scanned := -1, len(names)
	for j := len(offs) - 1; j >= 0; j-- {
		o := int(offs[j])
		if o >= len(names) {
			return 0, false
		}
		for scanned > o {
			scanned--
			if names[scanned] == 0 {
				nul = scanned
			}
		}
		if nul < 0 {
			return 0, false
		}
		total += int64(nul - o)
	}
	return total, true
}

// legacyTableCost bounds what debug/gosym allocates per byte of a Go 1.2
// to 1.17 table: a Func and its Sym for each 16-byte function entry.
const legacyTableCost = 8

// elfSymbol returns the value of the first symbol named name in o's
// .symtab (a linear scan, done once per object). The mapped table is read
// in place, names compared where they are stored: debug/elf's Symbols
// copies every symbol and each name up to its NUL, which a table of
// entries pointing into one long name makes cost the string table's size
// per symbol.
func (o *object) elfSymbol(name string) (uint64, bool) {
	s := o.ef.SectionByType(elf.SHT_SYMTAB)
	if s == nil || s.Link == 0 || int(s.Link) >= len(o.ef.Sections) {
		return 0, false
	}
	syms, err := o.sectionBytes(s)
	if err != nil {
		return 0, false
	}
	strs, err := o.sectionBytes(o.ef.Sections[s.Link])
	if err != nil {
		return 0, false
	}
	const entSize = 24 // sizeof(Elf64_Sym)
	for off := entSize; off+entSize <= len(syms); off += entSize {
		n := uint64(binary.LittleEndian.Uint32(syms[off:]))
		if end := n + uint64(len(name)); end < uint64(len(strs)) && strs[end] == 0 && string(strs[n:end]) == name {
			return binary.LittleEndian.Uint64(syms[off+8:]), true
		}
	}
	return 0, false
}

func newPclntab(data []byte, text uint64) *pclntab {
	magic := binary.LittleEndian.Uint32(data)
	if magic != go118magic && magic != go120magic {
		if !legacyCountFits(data) {
			return nil
		}
		lt := gosym.NewLineTable(data, text)
		tab, err := gosym.NewTable(nil, lt)
		if err != nil || len(tab.Funcs) == 0 {
			return nil
		}
		return &pclntab{legacy: tab}
	}
	if data[4] != 0 || data[5] != 0 || data[7] != 8 {
		return nil // only 64-bit tables
	}
	const hdr = 8 + 8*8
	if len(data) < hdr {
		return nil
	}
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(data[8+8*i:]) }
	t := &pclntab{textStart: text, minLC: uint64(data[6])}
	nfunc := word(0)
	// word(2) is the text start on Go 1.18/1.19 (unused since); the .text
	// address read from the section headers is what the runtime uses.
	offs := [5]uint64{word(3), word(4), word(5), word(6), word(7)}
	for _, off := range offs {
		if off > uint64(len(data)) {
			return nil
		}
	}
	t.funcnametab = data[offs[0]:]
	t.cutab = data[offs[1]:]
	t.filetab = data[offs[2]:]
	t.pctab = data[offs[3]:]
	t.pclntable = data[offs[4]:]
	// The function table has nfunc+1 entries of 8 bytes: the last one
	// holds the end of the text.
	if nfunc == 0 || nfunc >= uint64(len(t.pclntable))/8 {
		return nil
	}
	t.nfunc = int(nfunc)
	if t.minLC == 0 {
		t.minLC = 1
	}
	return t
}

// functab entry i: entry offset from text start and record offset.
func (t *pclntab) ftab(i int) (entryOff, funcOff uint32) {
	b := t.pclntable[8*i:]
	return binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
}

// find returns the function containing the ELF virtual address pc.
func (t *pclntab) find(pc uint64) (goFunc, bool) {
	if t == nil {
		return goFunc{}, false
	}
	if t.legacy != nil {
		f := t.legacy.PCToFunc(pc)
		if f == nil {
			return goFunc{}, false
		}
		return goFunc{entry: f.Entry, end: f.End, legacy: f}, true
	}
	if pc < t.textStart {
		return goFunc{}, false
	}
	off := pc - t.textStart
	if off >= 1<<32 {
		return goFunc{}, false
	}
	// The table has nfunc+1 entries; the last one marks the end of text.
	i := sort.Search(t.nfunc, func(i int) bool {
		e, _ := t.ftab(i + 1)
		return uint64(e) > off
	})
	if i >= t.nfunc {
		return goFunc{}, false
	}
	entry, rec := t.ftab(i)
	next, _ := t.ftab(i + 1)
	if uint64(entry) > off || uint64(rec)+44 > uint64(len(t.pclntable)) {
		return goFunc{}, false
	}
	return goFunc{
		entry: t.textStart + uint64(entry),
		end:   t.textStart + uint64(next),
		rec:   t.pclntable[rec:],
	}, true
}

// field reads the i-th uint32 of a _func record.
func (f *goFunc) field(i int) uint32 { return binary.LittleEndian.Uint32(f.rec[4*i:]) }

// name returns the function's name.
func (t *pclntab) name(f goFunc) string {
	if f.legacy != nil {
		return f.legacy.Name
	}
	off := f.field(1)
	if uint64(off) >= uint64(len(t.funcnametab)) {
		return ""
	}
	return cstring(t.funcnametab[off:])
}

// flag returns the function's abi.FuncFlag bits (0 for legacy tables).
func (t *pclntab) flag(f goFunc) uint8 {
	if f.legacy != nil {
		return 0
	}
	return f.rec[41]
}

// fileLine returns the source position of pc in f.
func (t *pclntab) fileLine(f goFunc, pc uint64) (string, int) {
	if f.legacy != nil {
		file, line, _ := t.legacy.PCToLine(pc)
		return file, line
	}
	fno, ok := t.pcvalue(f.field(5), f.entry, pc)
	if !ok || fno < 0 {
		return "", 0
	}
	line, ok := t.pcvalue(f.field(6), f.entry, pc)
	if !ok {
		line = 0
	}
	idx := uint64(f.field(8)) + uint64(fno)
	if 4*idx+4 > uint64(len(t.cutab)) {
		return "", int(line)
	}
	foff := binary.LittleEndian.Uint32(t.cutab[4*idx:])
	if foff == ^uint32(0) || uint64(foff) >= uint64(len(t.filetab)) {
		return "", int(line)
	}
	return cstring(t.filetab[foff:]), int(line)
}

// spDelta returns how far SP at pc is below SP at f's entry (after the
// call pushed the return address), from the pcsp table.
func (t *pclntab) spDelta(f goFunc, pc uint64) (int64, bool) {
	if f.legacy != nil {
		return 0, false
	}
	v, ok := t.pcvalue(f.field(4), f.entry, pc)
	return int64(v), ok
}

// pcvalue decodes a pc-value table (zig-zag value deltas and pc deltas as
// varints, as the Go runtime writes them) and returns the value at target.
func (t *pclntab) pcvalue(off uint32, entry, target uint64) (int32, bool) {
	if off == 0 || uint64(off) >= uint64(len(t.pctab)) {
		return 0, false
	}
	p := t.pctab[off:]
	val := int32(-1)
	pc := entry
	first := true
	for {
		uv, n := binary.Uvarint(p)
		if n <= 0 || (uv == 0 && !first) {
			return 0, false
		}
		p = p[n:]
		if uv&1 != 0 {
			val += int32(^(uv >> 1))
		} else {
			val += int32(uv >> 1)
		}
		pcd, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		pc += pcd * t.minLC
		if target < pc {
			return val, true
		}
		first = false
	}
}

// maxNameLen bounds a name read from a target's tables (function,
// symbol and file names): the longest in real programs, C++ template
// instantiations, run to a few KiB. A table can point any number of
// entries into one long run of bytes without a NUL; each name read is cut
// here, so a lookup copies and compares at most this much.
const maxNameLen = 16 << 10

// cstring returns b up to its first NUL, at most maxNameLen bytes.
func cstring(b []byte) string { return string(cbytes(b)) }

// cbytes returns b up to its first NUL, at most maxNameLen bytes.
func cbytes(b []byte) []byte {
	b = b[:min(len(b), maxNameLen)]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return b
}
