package symbolize

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"sort"
	"time"
)

// dwarfInfo answers "which functions are inlined at this address, and at
// which lines" from .debug_info and .debug_line. Compilation units are
// indexed by address once; each unit's function tree and line table are
// read the first time an address inside it is looked up.
//
// The DWARF is never parsed whole: debug/dwarf's dwarf.New parses the
// abbreviation table of every unit it is given, and for glibc those
// tables are 11.5 MB of the 20 MB a whole parse holds (2,063 units; its
// inflated sections are the other 8.5 MB), all of it for the few units a
// recording's addresses fall in. Each unit is read through a dwarf.Data of
// its own over its bytes alone (unitData), which parses its own table.
type dwarfInfo struct {
	// secs are the sections the units are read from (inflated where
	// compressed); nil once dropped (trimData), until a unit not loaded
	// yet needs them again (sections).
	secs   *dwarfSecs
	budget *objBudget
	// spans are the compilation units of .debug_info in order, found
	// once; cus indexes those with code by address.
	spans []unitSpan
	cus   []cuRange
	units map[dwarf.Offset]*cuInfo
	names map[dwarf.Offset]string
	// reload reads the sections again after a drop, charging what it
	// inflates to a part of the object's budget that dataBudget holds;
	// used is when they were last needed, idle how long they may then
	// stay unused (doubled at each idle drop, see dwarfIdleMax); parses
	// counts the reads (see dwarfQuickParses).
	reload     func(*objBudget) *dwarfSecs
	dataBudget *objBudget
	used       time.Time
	idle       time.Duration
	parses     int
}

// dwarfSecs are the DWARF sections of one object, inflated where
// compressed, else slices of the mapped file. whole is, while they are
// held, a dwarf.Data over all of them, made only for a unit that refers
// into another (unitData).
type dwarfSecs struct {
	info, abbrev, line, ranges, str []byte
	v5                              [len(dwarf5Names)][]byte
	order                           binary.ByteOrder
	whole                           *dwarf.Data
	wholeFailed                     bool
}

// unitSpan is one compilation unit of .debug_info: its header at start,
// its first entry at entry, its end, and whether its entries may refer
// outside it (global, see unitData).
type unitSpan struct {
	start, entry, end dwarf.Offset
	global            bool
}

type cuRange struct {
	lo, hi uint64
	off    dwarf.Offset
}

type cuInfo struct {
	entry *dwarf.Entry
	// nodes are the unit's subprograms and inlined subroutines that have
	// code; tops indexes the outermost ones by address range.
	nodes []dnode
	tops  []nodeRange
	lines []lineRow
	files []string
}

type nodeRange struct {
	lo, hi uint64
	node   int32
}

// dnode is a subprogram or inlined subroutine instance.
type dnode struct {
	ranges   [][2]uint64
	name     string
	nameRef  dwarf.Offset // entry to take the name from when name is ""
	callFile int
	callLine int
	children []int32
}

// lineRow is one row of a line table. line < 0 marks the end of a sequence.
type lineRow struct {
	addr uint64
	file uint32
	line int32
}

// dwarf5Names are the DWARF 5 sections handed to dwarf.Data.AddSection.
var dwarf5Names = [...]string{".debug_addr", ".debug_line_str", ".debug_str_offsets", ".debug_rnglists"}

// dwarf returns o's DWARF index from o itself or its debug file, or nil.
func (o *object) dwarf() *dwarfInfo {
	if o.dwLoaded {
		return o.dw
	}
	o.dwLoaded = true
	for _, src := range []struct {
		ef   *elf.File
		data []byte
	}{{o.ef, o.data}, {dbgEF(o.dbg), dbgData(o.dbg)}} {
		if src.ef == nil {
			continue
		}
		part := o.budget.part()
		if s := loadDWARF(src.ef, src.data, part); s != nil {
			o.dw = newDwarfInfo(s, o.budget)
			o.dw.dataBudget = part
			o.dw.used = time.Now()
			o.dw.parses = 1
			o.dw.reload = func(b *objBudget) *dwarfSecs { return loadDWARF(src.ef, src.data, b) }
			return o.dw
		}
	}
	return nil
}

// When the sections behind an index go (see TrimDebugInfo). They are the
// largest table a symbolizer holds (glibc's: 8.5 MB inflated), and they
// are needed only to load a unit not loaded yet: the units an address was
// looked up in keep their functions, inline trees and lines, and a
// recording's addresses fall in the same few units within seconds of
// attaching. Reading them again costs glibc about 25 ms of CPU, the
// inflation.
//
// Each drop doubles how long they must then stay unused before they go
// again (TrimDebugInfo, every second in a session), up to dwarfIdleMax:
// an object whose addresses keep reaching new units is read a few times
// and then kept.
//
// A caller about to use much memory for a moment drops them at once
// (DropDebugInfo: a session after building each snapshot, before it is
// analyzed): held for their idle time, they would sit under each of
// contend top's analyses, the largest part of its memory. Those drops
// are at most dwarfQuickParses per object; after that the sections stay
// until they are idle, because parsing them again at every trim costs a
// recorder of a program whose threads and stacks are new every second
// enough CPU to lose events (TestChurnNothingLost). Figures: docs/cost.md,
// "What contend's own limits rest on".
const (
	dwarfQuickParses = 8
	dwarfIdleFirst   = 5 * time.Second
	dwarfIdleMax     = 10 * time.Minute
)

// sections returns the DWARF sections, reading them again if they were
// dropped; nil when that fails (over the budget).
func (dw *dwarfInfo) sections() *dwarfSecs {
	dw.used = time.Now()
	if dw.secs == nil && dw.reload != nil {
		dw.parses++
		dw.dataBudget = dw.budget.part()
		dw.secs = dw.reload(dw.dataBudget)
	}
	return dw.secs
}

// trimData drops the sections if they have not been needed for their idle
// time, or, when quick, at once if they have been read at most
// dwarfQuickParses times, and reports whether it did. The loaded units
// stay.
func (dw *dwarfInfo) trimData(now time.Time, quick bool) bool {
	if dw == nil || dw.secs == nil || dw.reload == nil {
		return false
	}
	if dw.idle == 0 {
		dw.idle = dwarfIdleFirst
	}
	if quick {
		if dw.parses > dwarfQuickParses {
			return false
		}
	} else {
		if now.Sub(dw.used) < dw.idle {
			return false
		}
		dw.idle = min(2*dw.idle, dwarfIdleMax)
	}
	dw.secs = nil
	dw.dataBudget.refund()
	dw.dataBudget = nil
	return true
}

func dbgEF(d *debugFile) *elf.File {
	if d == nil {
		return nil
	}
	return d.ef
}

func dbgData(d *debugFile) []byte {
	if d == nil {
		return nil
	}
	return d.data
}

// dwarfSection returns the section name of ef, or its .zdebug_ form; nil
// for "" or neither.
func dwarfSection(ef *elf.File, name string) *elf.Section {
	if name == "" {
		return nil
	}
	s := ef.Section(name)
	if s == nil {
		s = ef.Section(".zdebug_" + name[len(".debug_"):])
	}
	return s
}

// loadDWARF reads the DWARF sections of a file, inflating only compressed
// ones. It returns nil when the file has no usable .debug_info.
// .debug_info and .debug_abbrev are looked at first: without both nothing
// is inflated, and the inflated size of every section needed, read from
// the headers, must fit in the budget before any is inflated, so a file
// of compressed sections that each look small cannot inflate one after
// another past it.
func loadDWARF(ef *elf.File, data []byte, budget *objBudget) *dwarfSecs {
	find := func(name string) *elf.Section { return dwarfSection(ef, name) }
	info, abbrev := find(".debug_info"), find(".debug_abbrev")
	if info == nil || abbrev == nil || info.Type == elf.SHT_NOBITS || abbrev.Type == elf.SHT_NOBITS {
		return nil
	}
	names := append([]string{".debug_info", ".debug_abbrev", ".debug_line", ".debug_ranges", ".debug_str"}, dwarf5Names[:]...)
	var inflated uint64
	for _, n := range names {
		s := find(n)
		if s == nil {
			continue
		}
		size, compressed, err := inflatedSize(data, s)
		if err != nil {
			return nil
		}
		if compressed {
			if inflated+size < inflated {
				return nil
			}
			inflated += size
		}
	}
	if inflated > 0 && !budget.take(int64(min(inflated, 1<<62)), "inflating its DWARF") {
		return nil
	}
	get := func(name string) []byte {
		// The inflation was charged above, all at once.
		b, err := sectionBytes(data, find(name), nil)
		if err != nil {
			return nil
		}
		return b
	}
	s := &dwarfSecs{info: get(".debug_info"), abbrev: get(".debug_abbrev"), line: get(".debug_line"),
		ranges: get(".debug_ranges"), str: cutStrings(get(".debug_str"), budget), order: ef.ByteOrder}
	for i, n := range dwarf5Names {
		s.v5[i] = get(n)
		if n == ".debug_line_str" {
			s.v5[i] = cutStrings(s.v5[i], budget)
		}
	}
	if len(s.info) == 0 || len(s.abbrev) == 0 || s.order == nil {
		return nil
	}
	return s
}

// cutStrings returns b, a DWARF string section, with no run of more
// than maxNameLen bytes without a NUL. debug/dwarf copies a string
// attribute up to its NUL, and any number of attributes can point into
// one long run at different offsets, each costing the rest of the run;
// cut, a string read costs maxNameLen at most. A section with a longer
// run is copied (charged to budget: nil when over it) and a NUL put after
// every maxNameLen bytes of each such run; strings that long are no
// name in real programs, so nothing real is cut.
func cutStrings(b []byte, budget *objBudget) []byte {
	long := false
	for rest := b; len(rest) > maxNameLen; {
		i := bytes.IndexByte(rest, 0)
		if i < 0 || i > maxNameLen {
			long = true
			break
		}
		rest = rest[i+1:]
	}
	if !long {
		return b
	}
	if !budget.take(int64(len(b)), "copying its DWARF strings to cut their longest") {
		return nil
	}
	out := bytes.Clone(b)
	run := 0
	for i, c := range out {
		switch {
		case c == 0:
			run = 0
		case run == maxNameLen:
			out[i], run = 0, 0
		default:
			run++
		}
	}
	return out
}

// Forms whose value is an offset anywhere in .debug_info (or in another
// file), or may be one: a unit whose abbreviations use them is read
// through the whole DWARF (unitData).
const (
	formRefAddr    = 0x10
	formIndirect   = 0x16
	formGNURefAlt  = 0x1f20
	formImplicit   = 0x21 // DW_FORM_implicit_const: a value follows in the table
	dwUTCompile    = 1
	dwUTPartial    = 3
	dwUTSkeleton   = 4
	dwUTSplitComp  = 5
	maxUnitsWalked = 1 << 22
)

// unitSpans walks the unit headers of .debug_info and returns its
// compilation units (DWARF 5 type units left out); nil when the first
// header is unreadable. Units after an unreadable header are left out.
// Charged to budget as unit ranges are.
func unitSpans(s *dwarfSecs, budget *objBudget) []unitSpan {
	var spans []unitSpan
	ch := &charger{budget: budget, what: "indexing its DWARF units", cost: costCU}
	info, bo := s.info, s.order
	for start := uint64(0); start+4 <= uint64(len(info)) && len(spans) < maxUnitsWalked; {
		length, lenSize := uint64(bo.Uint32(info[start:])), uint64(4)
		if length == 0xffffffff {
			if start+12 > uint64(len(info)) {
				break
			}
			length, lenSize = bo.Uint64(info[start+4:]), 12
		} else if length >= 0xfffffff0 {
			break
		}
		if length < 2 || length > uint64(len(info))-start-lenSize {
			break
		}
		end := start + lenSize + length
		u := info[start+lenSize : end]
		version := bo.Uint16(u)
		offSize := uint64(4)
		if lenSize == 12 {
			offSize = 8
		}
		var hdr, abbrevAt uint64 // header size after the length; where the abbreviation offset is in it
		ok := true
		switch {
		case version >= 2 && version <= 4:
			hdr, abbrevAt = 2+offSize+1, 2
		case version == 5 && len(u) >= 3:
			abbrevAt = 4
			switch u[2] {
			case dwUTCompile, dwUTPartial:
				hdr = 4 + offSize
			case dwUTSkeleton, dwUTSplitComp:
				hdr = 4 + offSize + 8
			default:
				ok = false // a type unit
			}
		default:
			ok = false
		}
		if ok && hdr < uint64(len(u)) && abbrevAt+offSize <= uint64(len(u)) {
			abbrevOff := uint64(bo.Uint32(u[abbrevAt:]))
			if offSize == 8 {
				abbrevOff = bo.Uint64(u[abbrevAt:])
			}
			if !ch.add() {
				break
			}
			spans = append(spans, unitSpan{start: dwarf.Offset(start), entry: dwarf.Offset(start + lenSize + hdr),
				end: dwarf.Offset(end), global: abbrevGlobalRefs(s.abbrev, abbrevOff)})
		}
		start = end
	}
	return spans
}

// abbrevGlobalRefs reports whether the abbreviation table at off uses a
// form whose value may be an offset outside its unit (or cannot be read:
// then it is assumed to).
func abbrevGlobalRefs(abbrev []byte, off uint64) bool {
	if off >= uint64(len(abbrev)) {
		return true
	}
	c := &cursor{b: abbrev, pos: int(off)}
	for !c.bad {
		if code := c.uleb(); code == 0 {
			return c.bad
		}
		c.uleb() // tag
		c.u8()   // children flag
		for !c.bad {
			attr, form := c.uleb(), c.uleb()
			if attr == 0 && form == 0 {
				break
			}
			switch form {
			case formRefAddr, formIndirect, formGNURefAlt:
				return true
			case formImplicit:
				c.sleb() // its value
			}
		}
	}
	return true
}

// unitData returns the dwarf.Data a unit is read from, with the offset
// that its entries' offsets (and the references among them) are shifted
// by: a dwarf.Data over the unit's bytes alone, whose entries read at
// their offset less the unit's start, for a unit whose entries refer only
// within it (unit-relative reference forms); for one that may refer
// elsewhere (global), the whole DWARF, shift 0. nil when it cannot be
// read.
func (s *dwarfSecs) unitData(sp unitSpan) (*dwarf.Data, dwarf.Offset) {
	if sp.global {
		return s.wholeData(), 0
	}
	d, err := dwarf.New(s.abbrev, nil, nil, s.info[sp.start:sp.end], s.line, nil, s.ranges, s.str)
	if err != nil || s.addV5(d) != nil {
		return nil, 0
	}
	return d, sp.start
}

// wholeData returns a dwarf.Data over every unit, made once while the
// sections are held; nil when it cannot be made.
func (s *dwarfSecs) wholeData() *dwarf.Data {
	if s.whole == nil && !s.wholeFailed {
		d, err := dwarf.New(s.abbrev, nil, nil, s.info, s.line, nil, s.ranges, s.str)
		if err == nil && s.addV5(d) == nil {
			s.whole = d
		} else {
			s.wholeFailed = true
		}
	}
	return s.whole
}

func (s *dwarfSecs) addV5(d *dwarf.Data) error {
	for i, n := range dwarf5Names {
		if len(s.v5[i]) > 0 {
			if err := d.AddSection(n, s.v5[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// Memory of the DWARF index, charged to the object's budget as it grows:
// a unit range, a function node (with its range list), a line row.
const (
	costCU       = 48
	costNode     = 160
	costRange    = 32
	costLineRow  = 32
	chargeEvery  = 1024 // entries charged at a time
	costFileName = 64
)

// charger charges an object's budget for entries as they are added, in
// batches of chargeEvery.
type charger struct {
	budget  *objBudget
	what    string
	cost    int64
	pending int
	failed  bool
}

// add accounts for one more entry and reports false once the budget is
// exhausted.
func (c *charger) add() bool {
	if c.failed {
		return false
	}
	if c.pending == 0 {
		if !c.budget.take(c.cost*chargeEvery, c.what) {
			c.failed = true
			return false
		}
		c.pending = chargeEvery
	}
	c.pending--
	return true
}

func newDwarfInfo(s *dwarfSecs, budget *objBudget) *dwarfInfo {
	dw := &dwarfInfo{secs: s, budget: budget, units: map[dwarf.Offset]*cuInfo{}, names: map[dwarf.Offset]string{}}
	dw.spans = unitSpans(s, budget)
	dw.indexUnits()
	return dw
}

// indexUnits indexes the units' address ranges (cus).
func (dw *dwarfInfo) indexUnits() {
	s := dw.secs
	ch := &charger{budget: dw.budget, what: "indexing its DWARF units", cost: costCU}
	for _, sp := range dw.spans {
		d, shift := s.unitData(sp)
		if d == nil {
			continue
		}
		r := d.Reader()
		r.Seek(sp.entry - shift)
		e, err := r.Next()
		if err != nil || e == nil || (e.Tag != dwarf.TagCompileUnit && e.Tag != dwarf.TagPartialUnit) {
			continue
		}
		rs, err := d.Ranges(e)
		if err != nil {
			continue
		}
		for _, rg := range rs {
			if rg[1] > rg[0] && ch.add() {
				dw.cus = append(dw.cus, cuRange{rg[0], rg[1], sp.entry})
			}
		}
		if ch.failed {
			// Over the budget: the units indexed so far keep their
			// inline frames.
			break
		}
	}
	sort.Slice(dw.cus, func(i, j int) bool { return dw.cus[i].lo < dw.cus[j].lo })
}

// unit returns the compilation unit covering pc, loading it on first use.
func (dw *dwarfInfo) unit(pc uint64) *cuInfo {
	i := sort.Search(len(dw.cus), func(i int) bool { return dw.cus[i].lo > pc }) - 1
	// Unit ranges may nest or overlap in odd toolchains; look back a little.
	for j := i; j >= 0 && j > i-8; j-- {
		c := dw.cus[j]
		if pc >= c.lo && pc < c.hi {
			return dw.loadUnit(c.off)
		}
	}
	return nil
}

// spanAt returns the unit holding offset off of .debug_info.
func (dw *dwarfInfo) spanAt(off dwarf.Offset) (unitSpan, bool) {
	i := sort.Search(len(dw.spans), func(i int) bool { return dw.spans[i].end > off })
	if i < len(dw.spans) && off >= dw.spans[i].start {
		return dw.spans[i], true
	}
	return unitSpan{}, false
}

// unitReader reads the entries of one unit (at their offsets in
// .debug_info: the reader shifts them, see dwarfSecs.unitData).
type unitReader struct {
	span  unitSpan
	d     *dwarf.Data
	shift dwarf.Offset
}

// readerAt returns a reader of the unit holding off, reusing ur when it
// is that unit's; nil when the unit cannot be read.
func (dw *dwarfInfo) readerAt(off dwarf.Offset, ur *unitReader) *unitReader {
	if ur != nil && off >= ur.span.start && off < ur.span.end {
		return ur
	}
	sp, ok := dw.spanAt(off)
	if !ok {
		return nil
	}
	s := dw.sections()
	if s == nil {
		return nil
	}
	d, shift := s.unitData(sp)
	if d == nil {
		return nil
	}
	return &unitReader{span: sp, d: d, shift: shift}
}

// entry reads the entry at off (global) and returns it with its offset
// and references made global again.
func (ur *unitReader) entry(off dwarf.Offset) *dwarf.Entry {
	r := ur.d.Reader()
	r.Seek(off - ur.shift)
	e, err := r.Next()
	if err != nil || e == nil {
		return nil
	}
	ur.globalize(e)
	return e
}

// globalize shifts an entry's offset and its references back to offsets
// in .debug_info.
func (ur *unitReader) globalize(e *dwarf.Entry) {
	if ur.shift == 0 {
		return
	}
	e.Offset += ur.shift
	for i := range e.Field {
		if e.Field[i].Class == dwarf.ClassReference {
			if v, ok := e.Field[i].Val.(dwarf.Offset); ok {
				e.Field[i].Val = v + ur.shift
			}
		}
	}
}

// loadUnit returns the unit whose entry is at off, indexing its
// functions and its line table on first use and caching the result; nil
// when the unit cannot be read. A unit whose entry cannot be parsed is
// cached empty.
func (dw *dwarfInfo) loadUnit(off dwarf.Offset) *cuInfo {
	if u, ok := dw.units[off]; ok {
		return u
	}
	ur := dw.readerAt(off, nil)
	if ur == nil {
		return nil
	}
	d := ur.d
	u := &cuInfo{}
	dw.units[off] = u
	r := d.Reader()
	r.Seek(off - ur.shift)
	cu, err := r.Next()
	if err != nil || cu == nil {
		return u
	}
	u.entry = cu
	if cu.Children {
		dw.indexFunctions(u, ur, r)
	}
	sort.Slice(u.tops, func(i, j int) bool { return u.tops[i].lo < u.tops[j].lo })
	u.loadLines(d, dw.budget)
	u.entry = nil
	// Names through abstract origins are resolved now, while the parsed
	// DWARF is at hand: the unit must not need it again.
	for i := range u.nodes {
		dw.nodeName(&u.nodes[i], ur)
	}
	return u
}

// indexFunctions reads the entries of u's unit after its unit entry,
// where r stands, into u.nodes and u.tops. Over the budget it leaves u
// with no functions, so the unit gives line numbers without inline
// frames.
func (dw *dwarfInfo) indexFunctions(u *cuInfo, ur *unitReader, r *dwarf.Reader) {
	// Walk the unit's entries, tracking the enclosing function node per
	// depth; lexical blocks and other entries pass their parent through.
	parents := []int32{-1}
	for len(parents) > 0 && len(parents) <= maxDIEDepth {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			parents = parents[:len(parents)-1]
			if len(parents) == 0 {
				break
			}
			continue
		}
		parent := parents[len(parents)-1]
		cur := parent
		if e.Tag == dwarf.TagSubprogram || e.Tag == dwarf.TagInlinedSubroutine {
			var ok bool
			if cur, ok = dw.addFunction(u, ur, e, parent); !ok {
				u.nodes, u.tops = nil, nil
				break
			}
		}
		if e.Children {
			if descend[e.Tag] {
				parents = append(parents, cur)
			} else {
				// Types, variables and parameters hold no code.
				r.SkipChildren()
			}
		}
	}
}

// addFunction adds e, a subprogram or inlined subroutine, to u as a child
// of the node at parent (-1: at the top, indexed by its ranges) and
// returns its index. An entry without code adds nothing and returns
// parent; ok is false when the budget refuses the node.
func (dw *dwarfInfo) addFunction(u *cuInfo, ur *unitReader, e *dwarf.Entry, parent int32) (int32, bool) {
	rs, err := ur.d.Ranges(e)
	if err != nil || len(rs) == 0 {
		return parent, true
	}
	if !dw.budget.take(costNode+costRange*int64(len(rs)), "indexing its DWARF functions") {
		return parent, false
	}
	n := dnode{ranges: rs}
	ur.globalize(e)
	n.name, n.nameRef = entryName(e)
	dw.chargeName(&n.name)
	if v, ok := e.Val(dwarf.AttrCallFile).(int64); ok {
		n.callFile = int(v)
	}
	if v, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
		n.callLine = int(v)
	}
	cur := int32(len(u.nodes))
	u.nodes = append(u.nodes, n)
	if parent >= 0 {
		u.nodes[parent].children = append(u.nodes[parent].children, cur)
	} else {
		for _, rg := range rs {
			u.tops = append(u.tops, nodeRange{rg[0], rg[1], cur})
		}
	}
	return cur, true
}

// maxDIEDepth bounds the nesting of the entries walked in one unit: real
// code nests namespaces, functions, blocks and inlined calls a few dozen
// deep; a crafted unit nested millions deep would grow the walk's stack.
const maxDIEDepth = 1024

// descend lists the entries whose children may be functions with code or
// inlined instances; the children of any other entry are skipped.
var descend = map[dwarf.Tag]bool{
	dwarf.TagSubprogram:        true,
	dwarf.TagInlinedSubroutine: true,
	dwarf.TagLexDwarfBlock:     true,
	dwarf.TagNamespace:         true,
	dwarf.TagModule:            true,
	dwarf.TagTryDwarfBlock:     true,
	dwarf.TagCatchDwarfBlock:   true,
	dwarf.TagCompileUnit:       true,
	dwarf.TagPartialUnit:       true,
}

// entryName returns the entry's own name (linkage name preferred, for C++)
// or the entry that holds it.
func entryName(e *dwarf.Entry) (string, dwarf.Offset) {
	if s, ok := e.Val(dwarf.AttrLinkageName).(string); ok && s != "" {
		return displayName(s), 0
	}
	if s, ok := e.Val(dwarf.AttrName).(string); ok && s != "" {
		return s, 0
	}
	if ref, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
		return "", ref
	}
	if ref, ok := e.Val(dwarf.AttrSpecification).(dwarf.Offset); ok {
		return "", ref
	}
	return "", 0
}

// nameAt resolves a name through abstract origins and specifications,
// reading the entries through ur while they are in its unit.
func (dw *dwarfInfo) nameAt(off dwarf.Offset, ur *unitReader) string {
	if s, ok := dw.names[off]; ok {
		return s
	}
	key := off
	name := ""
	for hops := 0; hops < 8 && off != 0; hops++ {
		ur = dw.readerAt(off, ur)
		if ur == nil {
			break
		}
		e := ur.entry(off)
		if e == nil {
			break
		}
		var next dwarf.Offset
		name, next = entryName(e)
		if name != "" {
			break
		}
		off = next
	}
	dw.names[key] = name
	return name
}

func (dw *dwarfInfo) nodeName(n *dnode, ur *unitReader) string {
	if n.name != "" || n.nameRef == 0 {
		return n.name
	}
	n.name, n.nameRef = dw.nameAt(n.nameRef, ur), 0
	dw.chargeName(&n.name)
	return n.name
}

// chargeName charges the bytes of a name a node keeps to the budget
// (costNode covers the node, not its name, which may be maxNameLen long),
// and drops the name when they do not fit.
func (dw *dwarfInfo) chargeName(name *string) {
	if !dw.budget.take(int64(len(*name)), "indexing its DWARF function names") {
		*name = ""
	}
}

func (u *cuInfo) loadLines(d *dwarf.Data, budget *objBudget) {
	lr, err := d.LineReader(u.entry)
	if err != nil || lr == nil {
		return
	}
	fileIdx := map[*dwarf.LineFile]uint32{}
	var le dwarf.LineEntry
	rows := &charger{budget: budget, what: "indexing its DWARF line tables", cost: costLineRow}
	files := &charger{budget: budget, what: "indexing its DWARF file names", cost: costFileName}
	for {
		if err := lr.Next(&le); err != nil {
			break
		}
		if !rows.add() {
			// Over the budget: the rows read so far stay.
			break
		}
		fi, ok := fileIdx[le.File]
		if !ok {
			if !files.add() {
				break
			}
			fi = uint32(len(u.files))
			fileIdx[le.File] = fi
			name := ""
			if le.File != nil {
				name = le.File.Name
			}
			u.files = append(u.files, name)
		}
		line := int32(le.Line)
		if le.EndSequence {
			line = -1
		}
		u.lines = append(u.lines, lineRow{le.Address, fi, line})
	}
	// Call-site file indices refer to the unit's file table.
	callFiles := lr.Files()
	sort.SliceStable(u.lines, func(i, j int) bool {
		a, b := u.lines[i], u.lines[j]
		if a.addr != b.addr {
			return a.addr < b.addr
		}
		return a.line < 0 && b.line >= 0 // ends of sequences first
	})
	// Translate call_file numbers of nodes to names now that the table
	// is complete.
	for i := range u.nodes {
		n := &u.nodes[i]
		if n.callFile > 0 || (n.callFile == 0 && n.callLine > 0) {
			if n.callFile < len(callFiles) && callFiles[n.callFile] != nil {
				n.callFile = u.fileIndex(callFiles[n.callFile].Name)
				continue
			}
		}
		n.callFile = -1
	}
}

// fileIndex returns the index of name in u.files, adding it if needed.
func (u *cuInfo) fileIndex(name string) int {
	for i, f := range u.files {
		if f == name {
			return i
		}
	}
	u.files = append(u.files, name)
	return len(u.files) - 1
}

// lineAt returns the file and line of pc from the unit's line table.
func (u *cuInfo) lineAt(pc uint64) (string, int, bool) {
	i := sort.Search(len(u.lines), func(i int) bool { return u.lines[i].addr > pc }) - 1
	if i < 0 || u.lines[i].line < 0 {
		return "", 0, false
	}
	return u.files[u.lines[i].file], int(u.lines[i].line), true
}

// inlFrame is one frame found in DWARF, innermost first.
type inlFrame struct {
	fn, file string
	line     int
}

// frames returns the inline chain at pc, innermost first, ending with the
// physical function. The last frame's name may be "" when DWARF has line
// information for pc but no function entry.
func (dw *dwarfInfo) frames(pc uint64) []inlFrame {
	u := dw.unit(pc)
	if u == nil {
		return nil
	}
	file, line, hasLine := u.lineAt(pc)
	var chain []int32
	i := sort.Search(len(u.tops), func(i int) bool { return u.tops[i].lo > pc }) - 1
	if i >= 0 && pc < u.tops[i].hi {
		n := u.tops[i].node
		for depth := 0; depth < 64; depth++ {
			chain = append(chain, n)
			next := int32(-1)
			for _, c := range u.nodes[n].children {
				if inRanges(u.nodes[c].ranges, pc) {
					next = c
					break
				}
			}
			if next < 0 {
				break
			}
			n = next
		}
	}
	if len(chain) == 0 {
		if !hasLine {
			return nil
		}
		return []inlFrame{{file: file, line: line}}
	}
	out := make([]inlFrame, 0, len(chain))
	for k := len(chain) - 1; k >= 0; k-- {
		n := &u.nodes[chain[k]]
		out = append(out, inlFrame{fn: dw.nodeName(n, nil), file: file, line: line})
		// The caller's position is this instance's call site.
		if n.callFile >= 0 && n.callFile < len(u.files) {
			file = u.files[n.callFile]
		} else {
			file = ""
		}
		line = n.callLine
	}
	return out
}

func inRanges(rs [][2]uint64, pc uint64) bool {
	for _, r := range rs {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}
