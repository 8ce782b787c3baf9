package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"sort"
)

// This file reads DWARF call frame information: .eh_frame (GCC's variant
// with augmentations 'z', 'R', 'P', 'L', 'S') and .debug_frame (DWARF
// versions 1, 3 and 4), and runs the CFA program of the FDE covering a pc to
// get the unwind rules at that pc. The layout follows the DWARF 5 standard,
// section 6.4, and the Linux Standard Base's description of .eh_frame and
// .eh_frame_hdr.

// Number of x86-64 DWARF registers tracked: 0-15 are the general purpose
// registers (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15) and 16 is the
// return address column (rip). Rules for other registers (SSE, x87) are
// parsed and ignored.
const numRegs = 17

// x86-64 DWARF register numbers used by the unwinder.
const (
	regBP = 6
	regSP = 7
	regRA = 16
)

// Pointer encodings (DW_EH_PE_*) used in .eh_frame and .eh_frame_hdr.
const (
	peAbsptr  = 0x00
	peUleb128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSleb128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c
	pePCRel   = 0x10
	peDataRel = 0x30
	peOmit    = 0xff
)

// cursor reads little-endian values and LEB128 numbers; any read past the
// end sets bad and returns zero, so parsers check bad once at the end.
type cursor struct {
	b   []byte
	pos int
	bad bool
}

func (c *cursor) need(n int) bool {
	if c.bad || n < 0 || c.pos+n > len(c.b) || c.pos+n < c.pos {
		c.bad = true
		return false
	}
	return true
}

// fixed returns the next n bytes, or nil past the end.
func (c *cursor) fixed(n int) []byte {
	if !c.need(n) {
		return nil
	}
	b := c.b[c.pos : c.pos+n]
	c.pos += n
	return b
}

func (c *cursor) u8() uint8 {
	if b := c.fixed(1); b != nil {
		return b[0]
	}
	return 0
}

func (c *cursor) u16() uint16 {
	if b := c.fixed(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (c *cursor) u32() uint32 {
	if b := c.fixed(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (c *cursor) u64() uint64 {
	if b := c.fixed(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (c *cursor) uleb() uint64 {
	var v uint64
	var shift uint
	for {
		b := c.u8()
		if c.bad {
			return 0
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			return v
		}
	}
}

func (c *cursor) sleb() int64 {
	var v int64
	var shift uint
	var b uint8
	for {
		b = c.u8()
		if c.bad {
			return 0
		}
		if shift < 64 {
			v |= int64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			break
		}
	}
	if shift < 64 && b&0x40 != 0 {
		v |= -1 << shift
	}
	return v
}

func (c *cursor) bytes(n uint64) []byte {
	if n > uint64(len(c.b)) {
		c.bad = true
		return nil
	}
	return c.fixed(int(n))
}

func (c *cursor) cstr() []byte {
	for i := c.pos; i < len(c.b); i++ {
		if c.b[i] == 0 {
			s := c.b[c.pos:i]
			c.pos = i + 1
			return s
		}
	}
	c.bad = true
	return nil
}

// ptr reads a value in encoding enc. base is the address of the byte at
// position 0 of the cursor (for pc-relative values); dataBase the base of
// data-relative values (the .eh_frame_hdr section).
func (c *cursor) ptr(enc uint8, base, dataBase uint64) (uint64, bool) {
	if enc == peOmit {
		return 0, false
	}
	at := base + uint64(c.pos)
	var v uint64
	switch enc & 0x0f {
	case peAbsptr, peUdata8, peSdata8:
		v = c.u64()
	case peUleb128:
		v = c.uleb()
	case peUdata2:
		v = uint64(c.u16())
	case peUdata4:
		v = uint64(c.u32())
	case peSleb128:
		v = uint64(c.sleb())
	case peSdata2:
		v = uint64(int64(int16(c.u16())))
	case peSdata4:
		v = uint64(int64(int32(c.u32())))
	default:
		c.bad = true
		return 0, false
	}
	switch enc & 0x70 {
	case 0:
	case pePCRel:
		v += at
	case peDataRel:
		v += dataBase
	default:
		// textrel and funcrel are not used on x86-64 Linux.
		c.bad = true
		return 0, false
	}
	// Indirect values (0x80) point at the real pointer; only personality
	// routines use them and their value is never needed here.
	return v, !c.bad
}

// cie is a parsed Common Information Entry.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	fdeEnc    uint8
	hasAug    bool // 'z': FDEs carry an augmentation length
	signal    bool // 'S': FDEs using this CIE describe signal frames
	initial   []byte
}

// fde is a parsed Frame Description Entry.
type fde struct {
	cie        *cie
	start, end uint64
	insns      []byte
}

// fdeRef indexes one FDE by the pc range it covers.
type fdeRef struct {
	start, end uint64
	off        uint64
}

// cfiSection is one .eh_frame or .debug_frame section.
type cfiSection struct {
	data []byte
	addr uint64 // the section's virtual address (for pc-relative values)
	eh   bool
	// hdrTable is the binary search table of .eh_frame_hdr when it has
	// the usual encoding (datarel sdata4 pairs); otherwise index is built
	// by scanning the section once.
	hdrTable []byte
	hdrAddr  uint64
	index    []fdeRef
	cies     map[uint64]*cie
}

// cfiSections returns o's CFI sections, parsed on first use: .eh_frame of
// the object, then .debug_frame of the object or its debug file.
func (o *object) cfiSections() []*cfiSection {
	if o.cfiLoaded {
		return o.cfis
	}
	o.cfiLoaded = true
	if s := newEHFrame(o.ef, o.data, o.budget); s != nil {
		o.cfis = append(o.cfis, s)
	}
	if s := newDebugFrame(o.ef, o.data, o.budget); s != nil {
		o.cfis = append(o.cfis, s)
	} else if o.dbg != nil {
		if s := newDebugFrame(o.dbg.ef, o.dbg.data, o.budget); s != nil {
			o.cfis = append(o.cfis, s)
		}
	}
	return o.cfis
}

// cfiIndexCost bounds the memory of the index of a CFI section per byte
// of the section: the smallest FDE is 8 bytes and costs a 24-byte index
// entry, and each may name its own CIE, cached at 64 bytes and a map
// entry.
const cfiIndexCost = 8

func newEHFrame(ef *elf.File, data []byte, budget *objBudget) *cfiSection {
	sec := ef.Section(".eh_frame")
	b, err := sectionBytes(data, sec, budget)
	if err != nil || len(b) == 0 {
		return nil
	}
	s := &cfiSection{data: b, addr: sec.Addr, eh: true, cies: map[uint64]*cie{}}
	if hs := ef.Section(".eh_frame_hdr"); hs != nil {
		if hb, err := sectionBytes(data, hs, budget); err == nil {
			s.useHeader(hb, hs.Addr)
		}
	}
	if s.hdrTable == nil {
		if !budget.take(int64(len(b))*cfiIndexCost, "indexing .eh_frame") {
			return nil
		}
		s.buildIndex()
	}
	return s
}

func newDebugFrame(ef *elf.File, data []byte, budget *objBudget) *cfiSection {
	sec := ef.Section(".debug_frame")
	b, err := sectionBytes(data, sec, budget)
	if err != nil || len(b) == 0 {
		return nil
	}
	if !budget.take(int64(len(b))*cfiIndexCost, "indexing .debug_frame") {
		return nil
	}
	s := &cfiSection{data: b, cies: map[uint64]*cie{}}
	s.buildIndex()
	return s
}

// useHeader adopts the .eh_frame_hdr search table when it is sorted pairs
// of data-relative 4-byte values, as every GNU linker writes it.
func (s *cfiSection) useHeader(hb []byte, addr uint64) {
	c := &cursor{b: hb}
	if c.u8() != 1 {
		return
	}
	ptrEnc, countEnc, tableEnc := c.u8(), c.u8(), c.u8()
	if _, ok := c.ptr(ptrEnc, addr, addr); !ok {
		return
	}
	n, ok := c.ptr(countEnc, addr, addr)
	if !ok || tableEnc != peDataRel|peSdata4 || n > uint64(len(hb))/8 {
		return
	}
	t := c.bytes(8 * n)
	if c.bad {
		return
	}
	s.hdrTable, s.hdrAddr = t, addr
}

// entry returns the body of the CIE or FDE at off (after the length), the
// offset of the id field, the offset of the next entry, and whether the
// entry uses 64-bit DWARF offsets.
func (s *cfiSection) entry(off uint64) (body []byte, idOff, next uint64, is64 bool, ok bool) {
	if off >= uint64(len(s.data)) {
		return nil, 0, 0, false, false
	}
	c := &cursor{b: s.data, pos: int(off)}
	length := uint64(c.u32())
	if length == 0xffffffff {
		length = c.u64()
		is64 = true
	}
	if c.bad || length == 0 || length > uint64(len(s.data)-c.pos) {
		return nil, 0, 0, false, false
	}
	idOff = uint64(c.pos)
	body = s.data[c.pos : uint64(c.pos)+length]
	return body, idOff, idOff + length, is64, true
}

// parseEntry parses the entry at off: an FDE (with its CIE) or, when it is
// a CIE, nil.
func (s *cfiSection) parseEntry(off uint64) (*fde, uint64, bool) {
	body, idOff, next, is64, ok := s.entry(off)
	if !ok {
		return nil, 0, false
	}
	c := &cursor{b: body}
	var id, cieOff uint64
	if is64 {
		id = c.u64()
	} else {
		id = uint64(c.u32())
	}
	if s.eh {
		if id == 0 {
			return nil, next, true
		}
		if id > idOff {
			return nil, next, false
		}
		cieOff = idOff - id
	} else {
		if (!is64 && id == 0xffffffff) || (is64 && id == ^uint64(0)) {
			return nil, next, true
		}
		cieOff = id
	}
	ci := s.cieAt(cieOff)
	if ci == nil {
		return nil, next, false
	}
	base := s.addr + idOff // address of body[0]
	f := &fde{cie: ci}
	if s.eh {
		start, ok := c.ptr(ci.fdeEnc, base, 0)
		if !ok {
			return nil, next, false
		}
		n, ok := c.ptr(ci.fdeEnc&0x0f, base, 0)
		if !ok {
			return nil, next, false
		}
		f.start, f.end = start, start+n
	} else {
		f.start = c.u64()
		f.end = f.start + c.u64()
	}
	if ci.hasAug {
		c.bytes(c.uleb())
	}
	if c.bad || f.end < f.start {
		return nil, next, false
	}
	f.insns = body[c.pos:]
	return f, next, true
}

// cieAt parses (and caches) the CIE at off.
func (s *cfiSection) cieAt(off uint64) *cie {
	if ci, ok := s.cies[off]; ok {
		return ci
	}
	ci := s.parseCIE(off)
	s.cies[off] = ci
	return ci
}

func (s *cfiSection) parseCIE(off uint64) *cie {
	body, idOff, _, is64, ok := s.entry(off)
	if !ok {
		return nil
	}
	c := &cursor{b: body}
	if is64 {
		c.u64()
	} else {
		c.u32()
	}
	version := c.u8()
	aug := c.cstr()
	if c.bad || (version != 1 && version != 3 && version != 4) {
		return nil
	}
	if version == 4 {
		if addrSize := c.u8(); addrSize != 8 {
			return nil
		}
		c.u8() // segment selector size
	}
	ci := &cie{fdeEnc: peAbsptr}
	ci.codeAlign = c.uleb()
	ci.dataAlign = c.sleb()
	if version == 1 {
		ci.raReg = uint64(c.u8())
	} else {
		ci.raReg = c.uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		ci.hasAug = true
		n := c.uleb()
		augData := c.bytes(n)
		if c.bad {
			return nil
		}
		ac := &cursor{b: augData}
		base := s.addr + idOff + uint64(c.pos) - n
		for _, ch := range aug[1:] {
			switch ch {
			case 'R':
				ci.fdeEnc = ac.u8()
			case 'L':
				ac.u8()
			case 'P':
				enc := ac.u8()
				if _, ok := ac.ptr(enc&0x7f, base, 0); !ok {
					return nil
				}
			case 'S':
				ci.signal = true
			case 'B', 'G':
				// AArch64 pointer authentication and MTE markers.
			default:
				// Unknown augmentations end the string; the
				// augmentation length lets the rest be skipped.
			}
			if ac.bad {
				return nil
			}
		}
	} else if len(aug) > 0 {
		if string(aug) != "eh" {
			return nil
		}
		c.u64() // old GCC "eh" data pointer
	}
	if c.bad || ci.codeAlign == 0 {
		return nil
	}
	ci.initial = body[c.pos:]
	return ci
}

// buildIndex scans the whole section once and indexes its FDEs.
func (s *cfiSection) buildIndex() {
	var off uint64
	for off < uint64(len(s.data)) {
		f, next, ok := s.parseEntry(off)
		if next <= off {
			break
		}
		if ok && f != nil && f.end > f.start {
			s.index = append(s.index, fdeRef{f.start, f.end, off})
		}
		off = next
	}
	sort.Slice(s.index, func(i, j int) bool { return s.index[i].start < s.index[j].start })
	s.index = append([]fdeRef(nil), s.index...)
}

// find returns the FDE covering pc.
func (s *cfiSection) find(pc uint64) *fde {
	if s.hdrTable != nil {
		n := len(s.hdrTable) / 8
		loc := func(i int) uint64 {
			return s.hdrAddr + uint64(int64(int32(binary.LittleEndian.Uint32(s.hdrTable[8*i:]))))
		}
		i := sort.Search(n, func(i int) bool { return loc(i) > pc }) - 1
		if i < 0 {
			return nil
		}
		fdeAddr := s.hdrAddr + uint64(int64(int32(binary.LittleEndian.Uint32(s.hdrTable[8*i+4:]))))
		if fdeAddr < s.addr {
			return nil
		}
		f, _, ok := s.parseEntry(fdeAddr - s.addr)
		if !ok || f == nil || pc < f.start || pc >= f.end {
			return nil
		}
		return f
	}
	i := sort.Search(len(s.index), func(i int) bool { return s.index[i].start > pc }) - 1
	// FDEs do not nest; a few overlapping ones (padding, duplicates) are
	// handled by looking back a little.
	for j := i; j >= 0 && j > i-4; j-- {
		if pc >= s.index[j].start && pc < s.index[j].end {
			f, _, ok := s.parseEntry(s.index[j].off)
			if ok && f != nil {
				return f
			}
		}
	}
	return nil
}

// Rule kinds for a register, DWARF 5 section 6.4.1.
const (
	ruleUnspecified = iota // no rule: callee-saved registers keep their value
	ruleUndefined
	ruleSameValue
	ruleOffset    // saved at CFA+off
	ruleValOffset // value is CFA+off
	ruleRegister  // value is in another register
	ruleExpr      // saved at the address an expression computes
	ruleValExpr   // value is what an expression computes
)

type regRule struct {
	kind uint8
	reg  uint16
	off  int64
	expr []byte
}

type cfaRule struct {
	reg  uint16
	off  int64
	expr []byte // non-nil for DW_CFA_def_cfa_expression
}

// cfiRow is the unwind table row in effect at one pc.
type cfiRow struct {
	cfa  cfaRule
	regs [numRegs]regRule
}

// maxRememberDepth bounds DW_CFA_remember_state nesting; compilers nest at
// most a handful of levels, so deeper nesting means corrupt data.
const maxRememberDepth = 64

// execCFA runs CFA instructions from loc until the row for target is
// reached. initial is the row after the CIE's instructions (nil while
// running them). It reports false on malformed or unsupported input.
func execCFA(insns []byte, ci *cie, loc, target uint64, row *cfiRow, initial *cfiRow) bool {
	c := &cursor{b: insns}
	var stack []cfiRow
	setReg := func(reg uint64, r regRule) {
		if reg < numRegs {
			row.regs[reg] = r
		}
	}
	advance := func(delta uint64) bool {
		loc += delta * ci.codeAlign
		return loc > target
	}
	for c.pos < len(c.b) && !c.bad {
		op := c.u8()
		switch op & 0xc0 {
		case 0x40: // DW_CFA_advance_loc
			if advance(uint64(op & 0x3f)) {
				return true
			}
			continue
		case 0x80: // DW_CFA_offset
			setReg(uint64(op&0x3f), regRule{kind: ruleOffset, off: int64(c.uleb()) * ci.dataAlign})
			continue
		case 0xc0: // DW_CFA_restore
			if initial != nil && op&0x3f < numRegs {
				row.regs[op&0x3f] = initial.regs[op&0x3f]
			}
			continue
		}
		switch op {
		case 0x00: // DW_CFA_nop
		case 0x01: // DW_CFA_set_loc
			v, ok := c.ptr(ci.fdeEnc, 0, 0)
			if !ok || ci.fdeEnc&0x70 != 0 {
				return false
			}
			loc = v
			if loc > target {
				return true
			}
		case 0x02: // DW_CFA_advance_loc1
			if advance(uint64(c.u8())) {
				return true
			}
		case 0x03: // DW_CFA_advance_loc2
			if advance(uint64(c.u16())) {
				return true
			}
		case 0x04: // DW_CFA_advance_loc4
			if advance(uint64(c.u32())) {
				return true
			}
		case 0x05: // DW_CFA_offset_extended
			reg := c.uleb()
			setReg(reg, regRule{kind: ruleOffset, off: int64(c.uleb()) * ci.dataAlign})
		case 0x06: // DW_CFA_restore_extended
			reg := c.uleb()
			if initial != nil && reg < numRegs {
				row.regs[reg] = initial.regs[reg]
			}
		case 0x07: // DW_CFA_undefined
			setReg(c.uleb(), regRule{kind: ruleUndefined})
		case 0x08: // DW_CFA_same_value
			setReg(c.uleb(), regRule{kind: ruleSameValue})
		case 0x09: // DW_CFA_register
			reg := c.uleb()
			setReg(reg, regRule{kind: ruleRegister, reg: uint16(min(c.uleb(), 0xffff))})
		case 0x0a: // DW_CFA_remember_state
			if len(stack) >= maxRememberDepth {
				return false
			}
			stack = append(stack, *row)
		case 0x0b: // DW_CFA_restore_state
			if len(stack) == 0 {
				return false
			}
			*row = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		case 0x0c: // DW_CFA_def_cfa
			reg := c.uleb()
			row.cfa = cfaRule{reg: uint16(min(reg, 0xffff)), off: int64(c.uleb())}
		case 0x0d: // DW_CFA_def_cfa_register
			row.cfa.reg = uint16(min(c.uleb(), 0xffff))
			row.cfa.expr = nil
		case 0x0e: // DW_CFA_def_cfa_offset
			row.cfa.off = int64(c.uleb())
			row.cfa.expr = nil
		case 0x0f: // DW_CFA_def_cfa_expression
			row.cfa = cfaRule{expr: c.bytes(c.uleb())}
		case 0x10: // DW_CFA_expression
			reg := c.uleb()
			setReg(reg, regRule{kind: ruleExpr, expr: c.bytes(c.uleb())})
		case 0x11: // DW_CFA_offset_extended_sf
			reg := c.uleb()
			setReg(reg, regRule{kind: ruleOffset, off: c.sleb() * ci.dataAlign})
		case 0x12: // DW_CFA_def_cfa_sf
			reg := c.uleb()
			row.cfa = cfaRule{reg: uint16(min(reg, 0xffff)), off: c.sleb() * ci.dataAlign}
		case 0x13: // DW_CFA_def_cfa_offset_sf
			row.cfa.off = c.sleb() * ci.dataAlign
			row.cfa.expr = nil
		case 0x14: // DW_CFA_val_offset
			reg := c.uleb()
			setReg(reg, regRule{kind: ruleValOffset, off: int64(c.uleb()) * ci.dataAlign})
		case 0x15: // DW_CFA_val_offset_sf
			reg := c.uleb()
			setReg(reg, regRule{kind: ruleValOffset, off: c.sleb() * ci.dataAlign})
		case 0x16: // DW_CFA_val_expression
			reg := c.uleb()
			setReg(reg, regRule{kind: ruleValExpr, expr: c.bytes(c.uleb())})
		case 0x2d: // DW_CFA_GNU_window_save (SPARC; AArch64 negate_ra_state)
		case 0x2e: // DW_CFA_GNU_args_size
			c.uleb()
		case 0x2f: // DW_CFA_GNU_negative_offset_extended
			reg := c.uleb()
			setReg(reg, regRule{kind: ruleOffset, off: -int64(c.uleb()) * ci.dataAlign})
		default:
			return false
		}
	}
	return !c.bad
}

// rowFor computes the unwind row at pc from f.
func rowFor(f *fde, pc uint64) (cfiRow, bool) {
	if f.cie.raReg != regRA {
		return cfiRow{}, false
	}
	var initial cfiRow
	if !execCFA(f.cie.initial, f.cie, 0, ^uint64(0), &initial, nil) {
		return cfiRow{}, false
	}
	row := initial
	if !execCFA(f.insns, f.cie, f.start, pc, &row, &initial) {
		return cfiRow{}, false
	}
	return row, true
}

// cfiAt returns the unwind row at the ELF virtual address pc, and whether
// the FDE describes a signal frame. Rows are kept per pc (see rowCache):
// a target's stacks pass through the same return addresses again and
// again, and running the FDE's program up to the pc is most of what an
// unwind cost on code without frame pointers.
func (o *object) cfiAt(pc uint64) (row cfiRow, signal, ok bool) {
	if ref, hit := o.rows.at(pc); hit {
		if ref.idx < 0 {
			return cfiRow{}, false, false
		}
		return o.rows.pool[ref.idx], ref.signal, true
	}
	row, signal, ok = o.cfiLookup(pc)
	o.rows.put(pc, &row, signal, ok)
	return row, signal, ok
}

// cfiLookup finds the row at pc from the CFI sections.
func (o *object) cfiLookup(pc uint64) (row cfiRow, signal, ok bool) {
	for _, s := range o.cfiSections() {
		if f := s.find(pc); f != nil {
			row, ok := rowFor(f, pc)
			if ok {
				return row, f.cie.signal, true
			}
		}
	}
	return cfiRow{}, false, false
}

// rowCacheMax bounds the pcs whose unwind rows an object keeps. The pcs
// looked up are a target's return addresses and the leaf pcs its threads
// sleep or are sampled at: a few hundred on the fixtures, about 2,000 on
// 12 CPython threads, a JVM's native frames or a PostgreSQL backend.
// Beyond the bound the cache starts over, so a target whose stacks never
// repeat (generated code) costs a lookup as before, with at most this
// many entries (16 bytes each) and their distinct rows held per object.
const rowCacheMax = 1 << 14

// rowPoolMax bounds the distinct rows an object's cache holds (720 bytes
// each): glibc's 7,362 pcs looked up every 16 bytes of its exported
// functions share 156 rows, so a thousand is far past any compiler's
// output, and an object whose rows never repeat (crafted, or generated
// code) starts the cache over at 0.7 MB instead of growing it to 12 MB.
const rowPoolMax = 1 << 10

// rowCache maps a pc to its unwind row. Rows repeat across pcs (every pc
// past a function's prologue shares one), so each distinct row is held
// once in pool; rows with DWARF expressions are not compared and are
// held per pc.
type rowCache struct {
	byPC  map[uint64]rowRef
	pool  []cfiRow
	index map[rowKey]int32
}

// rowRef is a cached lookup: the row's index in pool, -1 when the pc has
// no usable row.
type rowRef struct {
	idx    int32
	signal bool
}

// rowKey is a row without expressions, as a comparable value.
type rowKey struct {
	cfaReg uint16
	cfaOff int64
	regs   [numRegs]struct {
		kind uint8
		reg  uint16
		off  int64
	}
}

func (c *rowCache) at(pc uint64) (rowRef, bool) {
	ref, ok := c.byPC[pc]
	return ref, ok
}

func (c *rowCache) put(pc uint64, row *cfiRow, signal, ok bool) {
	if c.byPC == nil || len(c.byPC) >= rowCacheMax || len(c.pool) >= rowPoolMax {
		*c = rowCache{byPC: map[uint64]rowRef{}, index: map[rowKey]int32{}}
	}
	if !ok {
		c.byPC[pc] = rowRef{idx: -1}
		return
	}
	key, plain := keyOf(row)
	if plain {
		if idx, found := c.index[key]; found {
			c.byPC[pc] = rowRef{idx: idx, signal: signal}
			return
		}
	}
	idx := int32(len(c.pool))
	c.pool = append(c.pool, *row)
	if plain {
		c.index[key] = idx
	}
	c.byPC[pc] = rowRef{idx: idx, signal: signal}
}

// keyOf returns row as a rowKey, and false when it has an expression.
func keyOf(row *cfiRow) (rowKey, bool) {
	var k rowKey
	if row.cfa.expr != nil {
		return k, false
	}
	k.cfaReg, k.cfaOff = row.cfa.reg, row.cfa.off
	for i := range row.regs {
		r := &row.regs[i]
		if r.expr != nil {
			return k, false
		}
		k.regs[i].kind, k.regs[i].reg, k.regs[i].off = r.kind, r.reg, r.off
	}
	return k, true
}
