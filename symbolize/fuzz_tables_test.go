package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Fuzz targets for the tables read from a target's objects. They call the
// parsers directly, not through guarded, so that a panic is a failure
// here instead of a counted warning, and they shrink the budgets so that
// a fuzzed compressed section cannot make a worker inflate hundreds of
// MiB.

// smallBudgets shrinks the table budgets for a fuzz target.
func smallBudgets(f *testing.F) {
	o, p := objectBudget, processBudget
	objectBudget, processBudget = 8<<20, 16<<20
	f.Cleanup(func() { objectBudget, processBudget = o, p })
}

// probePCs are the addresses a fuzz target looks up in an object: each
// section's start, middle and end, and a few fixed ones.
func probePCs(ef *elf.File, extra uint64) []uint64 {
	pcs := []uint64{0, 1, extra, extra + 1}
	for i, s := range ef.Sections {
		if i > 16 {
			break
		}
		pcs = append(pcs, s.Addr, s.Addr+s.Size/2, s.Addr+s.Size)
	}
	return pcs
}

// elfSeeds are crafted objects the ELF fuzz targets start from.
func elfSeeds() [][]byte {
	strtab := []byte("\x00main\x00data\x00")
	symtab := append(make([]byte, 24), symEntry64(1, byte(elf.STT_FUNC)|byte(elf.STB_GLOBAL)<<4, 1, 0x1000, 0x40)...)
	symtab = append(symtab, symEntry64(6, byte(elf.STT_OBJECT), 1, 0x2000, 8)...)
	note := []byte{4, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0, 0xde, 0xad, 0xbe, 0xef}
	pcln := append(pclnHeader(2, 72), make([]byte, 24+44)...)
	binary.LittleEndian.PutUint32(pcln[72+8:], 0x10)  // second function at text+0x10
	binary.LittleEndian.PutUint32(pcln[72+16:], 0x20) // end of text
	binary.LittleEndian.PutUint32(pcln[72+4:], 24)    // first record after the table
	return [][]byte{
		craftELF(true,
			craftSection{name: ".text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, addr: 0x1000, data: make([]byte, 64)},
			craftSection{name: ".symtab", typ: elf.SHT_SYMTAB, data: symtab, link: 3},
			craftSection{name: ".strtab", typ: elf.SHT_STRTAB, data: strtab},
			craftSection{name: ".note.gnu.build-id", typ: elf.SHT_NOTE, data: note},
			craftSection{name: ".gnu_debuglink", typ: elf.SHT_PROGBITS, data: []byte("x.debug\x00\x01\x02\x03\x04")}),
		craftELF(false,
			craftSection{name: ".text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, addr: 0x1000, data: make([]byte, 64)},
			craftSection{name: ".gopclntab", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, data: pcln},
			craftSection{name: ".debug_str", typ: elf.SHT_PROGBITS, flags: elf.SHF_COMPRESSED, data: compressedSection(64, []byte{0x78, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})}),
	}
}

// FuzzELFObject reads any bytes as an object and looks addresses up in
// every table it has: symbols, the Go function table, DWARF, unwind
// tables. Nothing may panic, and a function found must contain the
// address.
func FuzzELFObject(f *testing.F) {
	smallBudgets(f)
	for _, s := range elfSeeds() {
		f.Add(s, uint64(0x1008))
	}
	f.Fuzz(func(t *testing.T, data []byte, pc uint64) {
		o, err := newObject(data, "fuzz.so", newLimits())
		if err != nil {
			return
		}
		for _, p := range probePCs(o.ef, pc) {
			o.codeFrames(p)
			if name, start, end, ok := o.functionBounds(p); ok && (p < start || p >= end) {
				t.Fatalf("functionBounds(0x%x) = %s [0x%x, 0x%x)", p, name, start, end)
			}
			o.cfiAt(p)
			o.fileBytes(p, p+16)
		}
		o.biasCandidates(&mapping{start: 0x400000, end: 0x401000, perms: "r-xp"})
		o.extent()
	})
}

// FuzzNotesAndDebugLink reads any note section and .gnu_debuglink: build
// ids and the debug file's name come out without panicking, and the
// debug file candidates stay where they belong (a link such as ".."
// must not name the object's parent directory).
func FuzzNotesAndDebugLink(f *testing.F) {
	smallBudgets(f)
	f.Add([]byte{4, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0, 1, 2, 3, 4}, []byte("libc.so.6.debug\x00\x00\x00\x12\x34\x56\x78"))
	f.Add([]byte{3, 0, 0, 0, 8, 0, 0, 0, 4, 0, 0, 0, 'G', 'o', 0, 0, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}, []byte("..\x00"))
	f.Fuzz(func(t *testing.T, notes, link []byte) {
		data := craftELF(false,
			craftSection{name: ".note", typ: elf.SHT_NOTE, data: notes},
			craftSection{name: ".gnu_debuglink", typ: elf.SHT_PROGBITS, data: link})
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("crafted object unreadable: %v", err)
		}
		o := &object{path: "/usr/lib/x/libfuzz.so", data: data, ef: ef, budget: newLimits().forObject("fuzz")}
		o.readNotes()
		o.readDebugLink()
		if strings.IndexByte(o.debugLink, 0) >= 0 {
			t.Fatalf("debug link %q holds a NUL", o.debugLink)
		}
		for _, c := range debugCandidates(o, "/proc/1/root", []string{"/usr/lib/debug"}) {
			dir := filepath.Dir(c.path)
			ok := strings.HasPrefix(c.path, "/usr/lib/debug/")
			if c.beside {
				ok = dir == "/proc/1/root/usr/lib/x" || dir == "/proc/1/root/usr/lib/x/.debug"
			}
			if !ok || filepath.Clean(c.path) != c.path {
				t.Fatalf("debug link %q gives candidate %s", o.debugLink, c.path)
			}
		}
	})
}

// FuzzPclntab reads any Go function table and looks pc up: a function
// found starts at or before pc, and its name, position and frame size
// are read without panicking.
func FuzzPclntab(f *testing.F) {
	ok := append(pclnHeader(4, 72), make([]byte, 40+44)...)
	f.Add(ok, uint64(0x1000), uint64(0x1000))
	f.Add(append(pclnHeader(4, 72), make([]byte, 32)...), uint64(0x1000), uint64(0x1004))
	f.Add(elfSeeds()[1], uint64(0), uint64(8))
	f.Fuzz(func(t *testing.T, data []byte, text, pc uint64) {
		if len(data) < 8 {
			return
		}
		tab := newPclntab(data, text)
		if tab == nil || tab.legacy != nil {
			// Go 1.2–1.17 tables are read by debug/gosym.
			return
		}
		for _, p := range []uint64{pc, text, text + 1, pc ^ text} {
			fn, ok := tab.find(p)
			if !ok {
				continue
			}
			if fn.entry > p {
				t.Fatalf("find(0x%x) = function at 0x%x", p, fn.entry)
			}
			tab.name(fn)
			tab.fileLine(fn, p)
			tab.spDelta(fn, p)
			tab.flag(fn)
		}
	})
}

// dwarfSeed compiles a small C program with debug information, when gcc
// is there, and returns its DWARF sections.
func dwarfSeed(f *testing.F) (info, abbrev, line, rnglists []byte) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return nil, nil, nil, nil
	}
	out := filepath.Join(f.TempDir(), "ledger.o")
	if err := exec.Command(gcc, "-c", "-O2", "-g", "-gdwarf-5", "-o", out, filepath.Join("testdata", "ledger.c")).Run(); err != nil {
		return nil, nil, nil, nil
	}
	ef, err := elf.Open(out)
	if err != nil {
		return nil, nil, nil, nil
	}
	defer ef.Close()
	get := func(name string) []byte {
		if s := ef.Section(name); s != nil {
			b, _ := s.Data()
			return b
		}
		return nil
	}
	return get(".debug_info"), get(".debug_abbrev"), get(".debug_line"), get(".debug_rnglists")
}

// FuzzDWARFIndex builds the DWARF index over any .debug_info,
// .debug_abbrev, .debug_line and .debug_rnglists and looks addresses up
// in it: inline chains come out without panicking and end with the
// physical function.
func FuzzDWARFIndex(f *testing.F) {
	smallBudgets(f)
	if info, abbrev, line, rng := dwarfSeed(f); info != nil {
		f.Add(info, abbrev, line, rng, uint64(0x10))
	}
	// A unit with one subprogram over [0x1000, 0x1010).
	f.Add([]byte{0x1c, 0, 0, 0, 4, 0, 0, 0, 0, 0, 8, 1, 0, 0x10, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 2, 0},
		[]byte{1, 0x11, 1, 0x11, 1, 0x12, 6, 0, 0, 2, 0x2e, 0, 0, 0, 0},
		[]byte{}, []byte{}, uint64(0x1004))
	f.Fuzz(func(t *testing.T, info, abbrev, line, rng []byte, pc uint64) {
		data := craftELF(false,
			craftSection{name: ".debug_info", typ: elf.SHT_PROGBITS, data: info},
			craftSection{name: ".debug_abbrev", typ: elf.SHT_PROGBITS, data: abbrev},
			craftSection{name: ".debug_line", typ: elf.SHT_PROGBITS, data: line},
			craftSection{name: ".debug_rnglists", typ: elf.SHT_PROGBITS, data: rng})
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("crafted object unreadable: %v", err)
		}
		budget := newLimits().forObject("fuzz")
		d := loadDWARF(ef, data, budget)
		if d == nil {
			return
		}
		dw := newDwarfInfo(d, budget)
		pcs := []uint64{pc}
		for i, c := range dw.cus {
			if i > 8 {
				break
			}
			pcs = append(pcs, c.lo, c.lo+(c.hi-c.lo)/2, c.hi-1)
		}
		for _, p := range pcs {
			dw.frames(p)
		}
	})
}

// FuzzSymbolTable reads any .symtab and .strtab: a symbol found for an
// address contains it, and its name comes out without panicking.
func FuzzSymbolTable(f *testing.F) {
	smallBudgets(f)
	strtab := []byte("\x00main\x00_ZN3foo3barEv\x00data\x00")
	symtab := append(make([]byte, 24), symEntry64(1, byte(elf.STT_FUNC)|byte(elf.STB_GLOBAL)<<4, 1, 0x1000, 0x40)...)
	symtab = append(symtab, symEntry64(6, byte(elf.STT_FUNC), 1, 0x1010, 0)...)
	symtab = append(symtab, symEntry64(21, byte(elf.STT_OBJECT), 1, 0x2000, 8)...)
	f.Add(symtab, strtab, uint64(0x1004))
	f.Fuzz(func(t *testing.T, symtab, strtab []byte, addr uint64) {
		data := craftELF(false,
			craftSection{name: ".text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, addr: 0x1000, data: make([]byte, 16)},
			craftSection{name: ".symtab", typ: elf.SHT_SYMTAB, data: symtab, link: 3},
			craftSection{name: ".strtab", typ: elf.SHT_STRTAB, data: strtab})
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("crafted object unreadable: %v", err)
		}
		o := &object{data: data, ef: ef, budget: newLimits().forObject("fuzz")}
		o.loadSymbols()
		for _, tab := range []*symTable{o.funcs, o.objs} {
			for _, a := range []uint64{addr, 0x1000, 0x1004, 0x1010, 0x2000} {
				if s := tab.lookup(a); s != nil {
					if a < s.addr || a >= s.end {
						t.Fatalf("lookup(0x%x) = [0x%x, 0x%x)", a, s.addr, s.end)
					}
					tab.name(s)
				}
			}
		}
	})
}
