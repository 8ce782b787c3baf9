package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
)

// legacyPcln returns a Go 1.16 function table (read by debug/gosym) of
// len(nameOffs) functions of 16 bytes each from text, whose name offsets
// are nameOffs into names.
func legacyPcln(text uint64, names []byte, nameOffs []uint32) []byte {
	le := binary.LittleEndian
	const hdr = 8 + 7*8
	b := []byte{0xfa, 0xff, 0xff, 0xff, 0, 0, 1, 8}
	n := uint64(len(nameOffs))
	functab := uint64(hdr + len(names))
	for _, v := range []uint64{n, 0, hdr, functab, functab, functab, functab} {
		b = le.AppendUint64(b, v)
	}
	b = append(b, names...)
	// Entries (pc, record offset), the end pc, then 24-byte records:
	// entry, name offset, and the fields gosym reads after it.
	recs := (2*n + 1) * 8
	for i := range n {
		b = le.AppendUint64(le.AppendUint64(b, text+16*i), recs+24*i)
	}
	b = le.AppendUint64(b, text+16*n)
	for i, off := range nameOffs {
		b = le.AppendUint64(b, text+16*uint64(i))
		b = le.AppendUint32(b, off)
		b = append(b, make([]byte, 12)...)
	}
	return b
}

// TestLegacyPclntabNames: a Go 1.16 table read by debug/gosym, which
// copies each function's name up to its NUL. Names are read when they
// are what they claim; entries pointing into one long run of bytes, which
// would cost the run's length each (4 GiB for this 1 MiB table), are
// refused before debug/gosym reads them.
func TestLegacyPclntabNames(t *testing.T) {
	const text = 0x1000
	obj := func(pcln []byte) *object {
		data := craftELF(false,
			craftSection{name: ".text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, addr: text, data: make([]byte, 16)},
			craftSection{name: ".gopclntab", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, data: pcln})
		o, err := newObject(data, "legacy", newLimits())
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	good := obj(legacyPcln(text, []byte("main.main\x00main.f\x00"), []uint32{0, 10}))
	tab := good.pcln()
	if tab == nil || tab.legacy == nil {
		t.Fatal("a well-formed Go 1.16 table was not read")
	}
	if f, ok := tab.find(text + 20); !ok || tab.name(f) != "main.f" {
		t.Errorf("find(0x%x) = %+v, %v; want main.f", text+20, f, ok)
	}

	long := append([]byte(strings.Repeat("x", 1<<20)), 0)
	offs := make([]uint32, 4096)
	for i := range offs {
		offs[i] = uint32(i)
	}
	want := int64(len(offs))*(1<<20) - int64(len(offs)*(len(offs)-1)/2)
	if got, ok := legacyNameBytes(legacyPcln(text, long, offs)); !ok || got != want {
		t.Errorf("legacyNameBytes = %d, %v; want %d", got, ok, want)
	}
	lying := obj(legacyPcln(text, long, offs))
	var lt *pclntab
	start := time.Now()
	alloc := testbin.Allocated(func() { lt = lying.pcln() })
	if lt != nil {
		t.Error("a table whose names cost 4 GiB was read")
	}
	if limit := uint64(8 << 20); alloc > limit {
		t.Errorf("allocated %d bytes refusing it, want at most %d", alloc, limit)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing it took %s", d)
	}
	if w := lying.budget.pool.warnings(); len(w) == 0 || !strings.Contains(w[0], "reading its Go function table") {
		t.Errorf("warnings %q, want the table said to be over the budget", w)
	}
	// A name past the table's end: debug/gosym drops the table, so it is
	// not read at all.
	if _, ok := legacyNameBytes(legacyPcln(text, []byte("main.main\x00"), []uint32{0, 1 << 30})); ok {
		t.Error("a name past the table's end was accepted")
	}
}

// TestSymbolNamesInPlace: a symbol table whose 65536 function symbols all
// cover one range and point into one long name at different offsets (the
// layout that made debug/elf copy 64 GiB) is read in place: runtime.text
// is found without copying, and each name comes out cut at maxNameLen.
func TestSymbolNamesInPlace(t *testing.T) {
	const n = 1 << 16
	strtab := append([]byte("\x00"+strings.Repeat("y", 1<<20)), "\x00runtime.text\x00"...)
	symtab := make([]byte, 24)
	for i := range n {
		symtab = append(symtab, symEntry64(uint32(1+i), byte(elf.STT_FUNC), 1, 0x1000, 0x10)...)
	}
	symtab = append(symtab, symEntry64(uint32(len(strtab)-13), byte(elf.STT_FUNC), 1, 0x1000, 0)...)
	data := craftELF(false,
		craftSection{name: ".text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, addr: 0x1000, data: make([]byte, 16)},
		craftSection{name: ".symtab", typ: elf.SHT_SYMTAB, data: symtab, link: 3},
		craftSection{name: ".strtab", typ: elf.SHT_STRTAB, data: strtab})
	o, err := newObject(data, "aliases", newLimits())
	if err != nil {
		t.Fatal(err)
	}
	var v uint64
	var ok bool
	if alloc := testbin.Allocated(func() { v, ok = o.elfSymbol("runtime.text") }); alloc > 64<<10 || !ok || v != 0x1000 {
		t.Errorf("runtime.text = 0x%x, %v, allocating %d bytes; want 0x1000 found in place", v, ok, alloc)
	}
	start := time.Now()
	o.loadSymbols()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("loading the symbols took %s", d)
	}
	s := o.funcs.lookup(0x1004)
	if s == nil {
		t.Fatal("no symbol at 0x1004")
	}
	if name := o.funcs.name(s); len(name) != maxNameLen || strings.Trim(name, "y") != "" {
		t.Errorf("name of %d bytes, want the first %d of the long name", len(name), maxNameLen)
	}
}

// FuzzLegacyNameBytes feeds legacyNameBytes tables with lying counts and
// offsets: it must not panic, and for a table it accepts that debug/gosym
// reads, the sum it gives lies between the longest name gosym copied and
// the sum of all of them (gosym copies once per distinct offset).
func FuzzLegacyNameBytes(f *testing.F) {
	f.Add(legacyPcln(0x1000, []byte("main.main\x00main.f\x00"), []uint32{0, 10}))
	f.Add(legacyPcln(0x1000, []byte("aaaa\x00"), []uint32{0, 1, 2, 3, 1}))
	f.Add(append(pclnHeader(4, 72), make([]byte, 40+44)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := legacyNameBytes(data)
		if !ok || got > 1<<20 {
			return
		}
		tab := newPclntab(data, 0x1000)
		if tab == nil || tab.legacy == nil {
			return
		}
		var longest, all int64
		for _, fn := range tab.legacy.Funcs {
			longest = max(longest, int64(len(fn.Name)))
			all += int64(len(fn.Name))
		}
		if got < longest || got > all {
			t.Errorf("names cost %d; gosym copied names of %d bytes at most, %d in all", got, longest, all)
		}
		for _, pc := range []uint64{0x1000, 0x1010, 0x1020} {
			if fn, ok := tab.find(pc); ok {
				tab.name(fn)
				tab.fileLine(fn, pc)
			}
		}
	})
}

// TestDWARFLongStrings: the DWARF of a small C program, its .debug_str
// replaced by one 1 MiB run without a NUL, so that every name attribute
// points into the run at a different offset and debug/dwarf would copy
// the rest of the run for each. The names come out cut at maxNameLen and
// reading them costs a copy of the section, not a MiB per name.
func TestDWARFLongStrings(t *testing.T) {
	bin := buildC(t, t.TempDir(), "ledger.c", "ledger", "-O2", "-g", "-gdwarf-4")
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	var secs []craftSection
	for _, name := range []string{".debug_info", ".debug_abbrev", ".debug_line", ".debug_ranges"} {
		if s := ef.Section(name); s != nil {
			b, err := s.Data()
			if err != nil {
				t.Fatal(err)
			}
			secs = append(secs, craftSection{name: name, typ: elf.SHT_PROGBITS, data: b})
		}
	}
	str := append([]byte(strings.Repeat("z", 1<<20)), 0)
	secs = append(secs, craftSection{name: ".debug_str", typ: elf.SHT_PROGBITS, data: str})
	data := craftELF(false, secs...)
	cef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	budget := newLimits().forObject("ledger")
	var names []string
	alloc := testbin.Allocated(func() {
		s := loadDWARF(cef, data, budget)
		if s == nil {
			return
		}
		dw := newDwarfInfo(s, budget)
		for _, c := range dw.cus {
			for pc := c.lo; pc < c.hi; pc += 4 {
				for _, f := range dw.frames(pc) {
					names = append(names, f.fn)
				}
			}
		}
	})
	if len(names) == 0 {
		t.Fatal("no frame read from the DWARF")
	}
	for _, n := range names {
		if len(n) > maxNameLen {
			t.Fatalf("a name of %d bytes, want at most %d", len(n), maxNameLen)
		}
	}
	if limit := uint64(16 << 20); alloc > limit {
		t.Errorf("reading %d frames allocated %d bytes, want at most %d", len(names), alloc, limit)
	}
}

// TestBuildIDBounded: a GNU build id note of 1 MiB (an id goes into the
// recording and into debug file paths) is not used; a 20-byte one is.
func TestBuildIDBounded(t *testing.T) {
	note := func(desc []byte) []byte {
		b := binary.LittleEndian.AppendUint32(nil, 4)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
		b = binary.LittleEndian.AppendUint32(b, 3) // NT_GNU_BUILD_ID
		return append(append(b, "GNU\x00"...), desc...)
	}
	for _, tc := range []struct {
		desc []byte
		want string
	}{
		{bytes.Repeat([]byte{0xab}, 20), strings.Repeat("ab", 20)},
		{bytes.Repeat([]byte{0xab}, 1<<20), ""},
	} {
		data := craftELF(false, craftSection{name: ".note.gnu.build-id", typ: elf.SHT_NOTE, flags: elf.SHF_ALLOC, data: note(tc.desc)})
		o, err := newObject(data, "noted", newLimits())
		if err != nil {
			t.Fatal(err)
		}
		if o.buildID != tc.want {
			t.Errorf("%d-byte id: build id of %d characters, want %d", len(tc.desc), len(o.buildID), len(tc.want))
		}
	}
}
