package symbolize

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"io"
	"sort"
	"time"
)

// dwarfInfo answers "which functions are inlined at this address, and at
// which lines" from .debug_info and .debug_line. Compilation units are
// indexed by address once; each unit's function tree and line table are
// read the first time an address inside it is looked up.
type dwarfInfo struct {
	// d is the parsed DWARF, needed only to load a unit not loaded yet
	// (see data); nil once dropped (trimData).
	d      *dwarf.Data
	budget *objBudget
	cus    []cuRange
	units  map[dwarf.Offset]*cuInfo
	names  map[dwarf.Offset]string
	// reload parses the DWARF again after a drop, charging its inflated
	// sections to a part of the object's budget that dataBudget holds;
	// used is when d was last needed, idle how long it may then stay
	// unused (doubled at each idle drop, see dwarfIdleMax); parses
	// counts the parses (see dwarfQuickParses).
	reload     func(*objBudget) *dwarf.Data
	dataBudget *objBudget
	used       time.Time
	idle       time.Duration
	parses     int
	// reloadUnit builds, while the parsed DWARF is dropped, a dwarf.Data
	// holding the unit at an offset alone (see loadUnitDWARF); unitLoads
	// counts the units so loaded, dropLoads those since the last drop
	// (see dwarfUnitLoads).
	reloadUnit func(dwarf.Offset, *objBudget) (d *dwarf.Data, start, end dwarf.Offset)
	unitLoads  int
	dropLoads  int
}

// unitData is the DWARF a unit is being loaded from: the whole parsed
// DWARF (hi 0), or a dwarf.Data that holds the unit at [lo, hi) alone, in
// which an entry outside that range must not be read.
type unitData struct {
	d      *dwarf.Data
	lo, hi dwarf.Offset
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

// dwarfSections lists the sections debug/dwarf reads, in dwarf.New's order
// (nil where not needed), then the DWARF 5 ones added by name.
var (
	dwarfNewSections = []string{".debug_abbrev", ".debug_aranges", "", ".debug_info", ".debug_line", "", ".debug_ranges", ".debug_str"}
	dwarf5Sections   = []string{".debug_addr", ".debug_line_str", ".debug_str_offsets", ".debug_rnglists"}
)

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
		if d := loadDWARF(src.ef, src.data, part); d != nil {
			o.dw = newDwarfInfo(d, o.budget)
			o.dw.dataBudget = part
			o.dw.used = time.Now()
			o.dw.parses = 1
			o.dw.reload = func(b *objBudget) *dwarf.Data { return loadDWARF(src.ef, src.data, b) }
			o.dw.reloadUnit = func(off dwarf.Offset, b *objBudget) (*dwarf.Data, dwarf.Offset, dwarf.Offset) {
				return loadUnitDWARF(src.ef, src.data, off, b)
			}
			return o.dw
		}
	}
	return nil
}

// When the parsed DWARF behind an index goes (see TrimDebugInfo). It is
// the largest table a symbolizer holds (glibc's: 20 MB of live heap,
// 11.5 MB of it debug/dwarf's abbreviation tables for its 2,063 units and
// 8.5 MB the inflated sections), and
// it is needed only to load a unit not loaded yet: the units an address
// was looked up in keep their functions, inline trees and lines, and a
// recording's addresses fall in the same few units within seconds of
// attaching. Parsing it again costs about 0.09 s of CPU for glibc (and
// 20 MB of live heap; getrusage and MemStats around the parse).
//
// Each drop doubles how long it must then stay unused before it goes
// again (TrimDebugInfo, every second in a session), up to dwarfIdleMax:
// an object whose addresses keep reaching new units is reparsed a few
// times and then kept.
//
// A caller about to use much memory for a moment drops it at once
// (DropDebugInfo: a session after building each snapshot, before it is
// analyzed). Held for its idle time, it sat under contend top's
// analyses: on the stripe fixture glibc's units were loaded in one batch
// at attaching and one more unit 36 s later, while the 20 MB stayed in 4
// of 5 analyses' live heap (heap profiles taken at each), the largest
// part of top's memory above its 100 MB goal. Those drops are at most
// dwarfQuickParses per object (0.7 s of CPU for glibc, once per session);
// after that the DWARF stays until it is idle. Dropped at every trim
// instead, the reparses' CPU on a recorder of the churn fixture (threads
// and stacks new every second) made the test that counts its waits lose
// 0.1-0.16 % of them in 3 of 4 runs (TestChurnNothingLost).
//
// While it is dropped, a unit not loaded yet is read alone
// (loadUnitDWARF), at a fraction of a parse's memory, up to dwarfUnitLoads
// units per drop; the next parses the whole DWARF again, which then
// serves the rest of the burst until the next drop. One unit of glibc
// costs about 29 ms of CPU (1,937 units loaded one by one in 57 s: the
// inflation of .debug_info up to the unit and of the line, string and
// abbreviation sections), a whole parse about 90 ms: three unit loads cost
// about what a parse does, so a burst never costs much more than before.
// At the rate top meets new units after its first seconds (one glibc unit
// in 117 s in the 10-minute run) every load is a unit load.
const (
	dwarfQuickParses = 8
	dwarfIdleFirst   = 5 * time.Second
	dwarfIdleMax     = 10 * time.Minute
	dwarfUnitLoads   = 3
)

// data returns the parsed DWARF, parsing it again if it was dropped; nil
// when that fails (over the budget).
func (dw *dwarfInfo) data() *dwarf.Data {
	dw.used = time.Now()
	if dw.d == nil && dw.reload != nil {
		dw.parses++
		dw.dataBudget = dw.budget.part()
		dw.d = dw.reload(dw.dataBudget)
	}
	return dw.d
}

// trimData drops the parsed DWARF if it has not been needed for its idle
// time, or, when quick, at once if it has been parsed at most
// dwarfQuickParses times, and reports whether it did. The loaded units
// stay.
func (dw *dwarfInfo) trimData(now time.Time, quick bool) bool {
	if dw == nil || dw.d == nil || dw.reload == nil {
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
	dw.d = nil
	dw.dataBudget.refund()
	dw.dataBudget = nil
	dw.dropLoads = 0
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

// loadDWARF builds a dwarf.Data over the mapped sections, decompressing
// only compressed ones. It returns nil when the file has no usable
// .debug_info. .debug_info and .debug_abbrev are looked at first: without
// both nothing is inflated, and the inflated size of every section
// needed, read from the headers, must fit in the budget before any is
// inflated, so a file of compressed sections that each look small cannot
// inflate one after another past it.
func loadDWARF(ef *elf.File, data []byte, budget *objBudget) *dwarf.Data {
	find := func(name string) *elf.Section { return dwarfSection(ef, name) }
	info, abbrev := find(".debug_info"), find(".debug_abbrev")
	if info == nil || abbrev == nil || info.Type == elf.SHT_NOBITS || abbrev.Type == elf.SHT_NOBITS {
		return nil
	}
	var inflated uint64
	for _, n := range append(append([]string(nil), dwarfNewSections...), dwarf5Sections...) {
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
	var secs [8][]byte
	for i, n := range dwarfNewSections {
		secs[i] = get(n)
	}
	if len(secs[3]) == 0 || len(secs[0]) == 0 {
		return nil
	}
	d, err := dwarf.New(secs[0], secs[1], secs[2], secs[3], secs[4], secs[5], secs[6], secs[7])
	if err != nil {
		return nil
	}
	for _, n := range dwarf5Sections {
		if b := get(n); len(b) > 0 {
			if err := d.AddSection(n, b); err != nil {
				return nil
			}
		}
	}
	return d
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

// loadUnitDWARF builds a dwarf.Data that holds the unit at offset off of
// .debug_info alone, and returns it with the unit's end; nil when it
// cannot. It is how a unit is loaded while the parsed DWARF is dropped:
// dwarf.New parses the abbreviation table of every unit it is given, and
// for glibc those tables are most of the 20 MB a parse takes (its
// inflated sections are 8.5 MB), parsed again for one unit. Here it is
// given one unit's table.
//
// The unit keeps its offset, so that its entries and references read as
// they would in the whole DWARF: the unit's bytes are copied to the same
// offset of a buffer whose start holds a header of a filler unit that
// spans everything before it (with the unit's own abbreviation table, so
// that no other is parsed). An entry outside [off, end) is filler, never
// to be read (unitData). A compressed .debug_info is inflated only up to
// the unit's end; the other sections (lines, strings, ranges, the
// abbreviations) are inflated whole, as loadDWARF does, and all of it is
// charged to budget for the load.
func loadUnitDWARF(ef *elf.File, data []byte, off dwarf.Offset, budget *objBudget) (*dwarf.Data, dwarf.Offset, dwarf.Offset) {
	find := func(name string) *elf.Section { return dwarfSection(ef, name) }
	info, abbrev := find(".debug_info"), find(".debug_abbrev")
	if info == nil || abbrev == nil || info.Type == elf.SHT_NOBITS || abbrev.Type == elf.SHT_NOBITS {
		return nil, 0, 0
	}
	size, compressed, err := inflatedSize(data, info)
	if err != nil || uint64(off) >= size {
		return nil, 0, 0
	}
	var r io.Reader
	if compressed {
		r = info.Open()
	} else {
		end := info.Offset + info.FileSize
		if end < info.Offset || end > uint64(len(data)) {
			return nil, 0, 0
		}
		r = bytes.NewReader(data[info.Offset:end])
	}
	// Walk the unit headers up to the unit holding off (the offset of its
	// first entry, which follows the header), skipping the units before
	// it: their lengths are all that is read of them.
	bo := ef.ByteOrder
	var hdr [12]byte
	var start, end, lenSize uint64
	for {
		if _, err := io.ReadFull(r, hdr[:4]); err != nil {
			return nil, 0, 0
		}
		length := uint64(bo.Uint32(hdr[:4]))
		lenSize = 4
		if length == 0xffffffff {
			if _, err := io.ReadFull(r, hdr[4:12]); err != nil {
				return nil, 0, 0
			}
			length, lenSize = bo.Uint64(hdr[4:12]), 12
		} else if length >= 0xfffffff0 {
			return nil, 0, 0
		}
		if start+lenSize > size || length < 2 || length > size-start-lenSize {
			return nil, 0, 0
		}
		end = start + lenSize + length
		if uint64(off) < end {
			break
		}
		if _, err := io.CopyN(io.Discard, r, int64(length)); err != nil {
			return nil, 0, 0
		}
		start = end
	}
	if uint64(off) < start+lenSize {
		return nil, 0, 0
	}
	const fillerSize = 11 // unit_length 4, version 2, abbrev offset 4, address size 1
	if start != 0 && (start < fillerSize || start-4 >= 0xfffffff0) {
		return nil, 0, 0
	}
	if !budget.take(int64(end), "inflating a DWARF unit") {
		return nil, 0, 0
	}
	buf := make([]byte, end)
	copy(buf[start:], hdr[:lenSize])
	if _, err := io.ReadFull(r, buf[start+lenSize:]); err != nil {
		return nil, 0, 0
	}
	if start != 0 {
		u := buf[start+lenSize:]
		version := bo.Uint16(u)
		at, width := 2, 4 // where the abbreviation offset is, and its size
		switch {
		case version == 5:
			at = 4 // after the unit type and address size
		case version < 2 || version > 5:
			return nil, 0, 0
		}
		if lenSize != 4 {
			width = 8
		}
		if len(u) < at+width {
			return nil, 0, 0
		}
		abbrevOff := uint64(bo.Uint32(u[at:]))
		if width == 8 {
			abbrevOff = bo.Uint64(u[at:])
		}
		if abbrevOff > 0xffffffff {
			return nil, 0, 0
		}
		bo.PutUint32(buf[0:], uint32(start)-4)
		bo.PutUint16(buf[4:], 4)
		bo.PutUint32(buf[6:], uint32(abbrevOff))
		buf[10] = 8
		if ef.Class == elf.ELFCLASS32 {
			buf[10] = 4
		}
	}
	var inflated uint64
	for _, n := range append(append([]string(nil), dwarfNewSections...), dwarf5Sections...) {
		if s := find(n); s != nil && n != ".debug_info" && n != ".debug_aranges" {
			if size, compressed, err := inflatedSize(data, s); err != nil {
				return nil, 0, 0
			} else if compressed {
				inflated += size
			}
		}
	}
	if inflated > 0 && !budget.take(int64(min(inflated, 1<<62)), "inflating its DWARF") {
		return nil, 0, 0
	}
	get := func(name string) []byte {
		b, err := sectionBytes(data, find(name), nil)
		if err != nil {
			return nil
		}
		return b
	}
	d, err := dwarf.New(get(".debug_abbrev"), nil, nil, buf, get(".debug_line"), nil, get(".debug_ranges"), get(".debug_str"))
	if err != nil {
		println("ZZ", err.Error())
		return nil, 0, 0
	}
	for _, n := range dwarf5Sections {
		if b := get(n); len(b) > 0 {
			if err := d.AddSection(n, b); err != nil {
				return nil, 0, 0
			}
		}
	}
	return d, dwarf.Offset(start), dwarf.Offset(end)
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

func newDwarfInfo(d *dwarf.Data, budget *objBudget) *dwarfInfo {
	dw := &dwarfInfo{d: d, budget: budget, units: map[dwarf.Offset]*cuInfo{}, names: map[dwarf.Offset]string{}}
	r := d.Reader()
	ch := &charger{budget: budget, what: "indexing its DWARF units", cost: costCU}
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			rs, err := d.Ranges(e)
			if err == nil {
				for _, rg := range rs {
					if rg[1] > rg[0] && ch.add() {
						dw.cus = append(dw.cus, cuRange{rg[0], rg[1], e.Offset})
					}
				}
			}
		}
		if ch.failed {
			// Over the budget: the units indexed so far keep their
			// inline frames.
			break
		}
		r.SkipChildren()
	}
	sort.Slice(dw.cus, func(i, j int) bool { return dw.cus[i].lo < dw.cus[j].lo })
	return dw
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

func (dw *dwarfInfo) loadUnit(off dwarf.Offset) *cuInfo {
	if u, ok := dw.units[off]; ok {
		return u
	}
	// With the parsed DWARF dropped, the unit is read from a dwarf.Data
	// of its own (see loadUnitDWARF), and only a name held by another
	// unit parses the whole DWARF again.
	ud := unitData{d: dw.d}
	if ud.d == nil && dw.reloadUnit != nil && dw.dropLoads < dwarfUnitLoads {
		part := dw.budget.part()
		defer part.refund()
		if d, start, end := dw.reloadUnit(off, part); d != nil {
			ud = unitData{d: d, lo: start, hi: end}
			dw.unitLoads++
			dw.dropLoads++
		}
	}
	if ud.d == nil {
		ud.d = dw.data()
	}
	d := ud.d
	if d == nil {
		return nil
	}
	u := &cuInfo{}
	dw.units[off] = u
	r := d.Reader()
	r.Seek(off)
	cu, err := r.Next()
	if err != nil || cu == nil {
		return u
	}
	u.entry = cu
	// Walk the unit's entries, tracking the enclosing function node per
	// depth; lexical blocks and other entries pass their parent through.
	parents := []int32{-1}
	if cu.Children {
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
				if rs, err := d.Ranges(e); err == nil && len(rs) > 0 {
					if !dw.budget.take(costNode+costRange*int64(len(rs)), "indexing its DWARF functions") {
						// Over the budget: this unit gives line
						// numbers without inline frames.
						u.nodes, u.tops = nil, nil
						break
					}
					n := dnode{ranges: rs}
					n.name, n.nameRef = entryName(e)
					if v, ok := e.Val(dwarf.AttrCallFile).(int64); ok {
						n.callFile = int(v)
					}
					if v, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
						n.callLine = int(v)
					}
					cur = int32(len(u.nodes))
					u.nodes = append(u.nodes, n)
					if parent >= 0 {
						u.nodes[parent].children = append(u.nodes[parent].children, cur)
					} else {
						for _, rg := range rs {
							u.tops = append(u.tops, nodeRange{rg[0], rg[1], cur})
						}
					}
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
	sort.Slice(u.tops, func(i, j int) bool { return u.tops[i].lo < u.tops[j].lo })
	u.loadLines(d, dw.budget)
	u.entry = nil
	// Names through abstract origins are resolved now, while the parsed
	// DWARF is at hand: the unit must not need it again.
	for i := range u.nodes {
		dw.nodeName(&u.nodes[i], ud)
	}
	return u
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
// reading the entries from ud where it holds them, else from the whole
// parsed DWARF.
func (dw *dwarfInfo) nameAt(off dwarf.Offset, ud unitData) string {
	if s, ok := dw.names[off]; ok {
		return s
	}
	key := off
	name := ""
	for hops := 0; hops < 8 && off != 0; hops++ {
		d := ud.d
		if d == nil || ud.hi != 0 && (off < ud.lo || off >= ud.hi) {
			d = dw.data()
		}
		if d == nil {
			break
		}
		r := d.Reader()
		r.Seek(off)
		e, err := r.Next()
		if err != nil || e == nil {
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

func (dw *dwarfInfo) nodeName(n *dnode, ud unitData) string {
	if n.name != "" || n.nameRef == 0 {
		return n.name
	}
	n.name, n.nameRef = dw.nameAt(n.nameRef, ud), 0
	return n.name
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
		out = append(out, inlFrame{fn: dw.nodeName(n, unitData{d: dw.d}), file: file, line: line})
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
