package collector

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
)

// lyingGoBinary returns a copy of the golock test program built with -s -w
// (no symbol table: the Go lock probes are found through pclntab) whose
// pclntab header claims nfunc functions, and the size of its .gopclntab.
func lyingGoBinary(t *testing.T, nfunc uint64) (string, uint64) {
	t.Helper()
	src := testbin.Go(t, "collector/testdata/golock", "-ldflags=-s -w")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.SectionByType(elf.SHT_SYMTAB) != nil {
		t.Fatal("-s -w left a symbol table")
	}
	pcln := f.Section(".gopclntab")
	if pcln == nil {
		t.Fatal("no .gopclntab")
	}
	// The header: magic, two zero bytes, quantum, pointer size, then the
	// function count.
	binary.LittleEndian.PutUint64(data[pcln.Offset+8:], nfunc)
	out := filepath.Join(t.TempDir(), "golock-lying")
	if err := os.WriteFile(out, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return out, pcln.Size
}

// TestFindGoFuncsLyingCount rebuilds issue 33's row 4: a Go program built
// -s -w whose pclntab header claims 2^63-1 functions. It runs (the
// runtime reads its function table from moduledata, not from the
// header), and finding its lock functions must refuse the table with the
// count in the error, having allocated about the table's size, not the
// count's (debug/gosym asked for 2^32 records and the process died of
// "out of memory").
func TestFindGoFuncsLyingCount(t *testing.T) {
	bin, size := lyingGoBinary(t, math.MaxInt64)
	p := testbin.Start(t, bin, "-threads", "2")
	if _, err := p.Value("tid", 10*time.Second); err != nil {
		t.Fatalf("the program with the lying header does not run: %v", err)
	}
	var err error
	alloc := testbin.Allocated(func() { _, err = findGoFuncs(bin) })
	if err == nil || !strings.Contains(err.Error(), "claims 9223372036854775807 functions") {
		t.Errorf("err %v, want the table refused for its count", err)
	}
	if limit := 2*size + 1<<20; alloc > limit {
		t.Errorf("allocated %d bytes for a %d-byte table, want at most %d", alloc, size, limit)
	}

	// One function more than the table has room for is refused too, as
	// is a count that debug/gosym cut to 32 bits (to 0 here); the true
	// count is read.
	clean := testbin.Go(t, "collector/testdata/golock", "-ldflags=-s -w")
	f, err := elf.Open(clean)
	if err != nil {
		t.Fatal(err)
	}
	data, err := f.Section(".gopclntab").Data()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	nfunc := binary.LittleEndian.Uint64(data[8:])
	room := (uint64(len(data)) - binary.LittleEndian.Uint64(data[8+7*8:])) / 4
	room = (room - 1) / 2
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{room + 1, "claims " + strconv.FormatUint(room+1, 10) + " functions"},
		{1 << 32, "claims 4294967296 functions"},
		{nfunc, ""},
	} {
		bin, _ := lyingGoBinary(t, tc.n)
		found, err := findGoFuncs(bin)
		if tc.want == "" {
			// golock's own lock is built on futex(2): lockSlow is
			// linked in for the packages it imports, the RWMutex
			// waits are not.
			if err != nil || found.table != "pclntab" || len(found.funcs) == 0 || found.funcs[0].Name != "internal/sync.(*Mutex).lockSlow" {
				t.Errorf("count %d (true): found %+v, err %v; want lockSlow from pclntab", tc.n, found, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("count %d: err %v, want %q", tc.n, err, tc.want)
		}
	}
}

// craftFunc is one function of a crafted Go function table.
type craftFunc struct {
	name    string
	lo, hi  uint64
	nameOff int64 // when not -1, the name offset written instead of name's
}

// craftPcln writes a little-endian 64-bit Go function table of the
// layout magic selects, for code whose text starts at text, holding
// funcs (contiguous: each ends where the next starts) and claiming nfunc
// functions. Each _func record holds only what pclnFuncs reads: the
// entry and the name offset.
func craftPcln(magic uint32, text uint64, nfunc uint64, funcs []craftFunc) []byte {
	le := binary.LittleEndian
	nwords := map[uint32]int{pclnGo12: 1, pclnGo116: 7, pclnGo118: 8, pclnGo120: 8}[magic]
	field := 8
	if magic == pclnGo118 || magic == pclnGo120 {
		field = 4
	}
	b := make([]byte, 8+8*nwords)
	le.PutUint32(b, magic)
	b[6], b[7] = 1, 8
	le.PutUint64(b[8:], nfunc)
	nameBase := len(b)
	if magic == pclnGo12 {
		nameBase = 0
	}
	// Go 1.2 puts the functab right after the header, names after it.
	var names []byte
	nameOffs := make([]uint64, len(funcs))
	for i, fn := range funcs {
		nameOffs[i] = uint64(len(names))
		if fn.nameOff >= 0 {
			nameOffs[i] = uint64(fn.nameOff)
		}
		names = append(append(names, fn.name...), 0)
	}
	put := func(buf []byte, v uint64) []byte {
		if field == 4 {
			return le.AppendUint32(buf, uint32(v))
		}
		return le.AppendUint64(buf, v)
	}
	pc := func(v uint64) uint64 {
		if field == 4 {
			return v - text
		}
		return v
	}
	var functabOff int
	if magic == pclnGo12 {
		functabOff = len(b)
	} else {
		b = append(b, names...)
		functabOff = len(b)
	}
	// functab: entries, the end of the last function, then the records.
	tabLen := (2*len(funcs) + 1) * field
	recBase := 0
	if magic == pclnGo12 {
		recBase = functabOff
	}
	var tab, recs []byte
	for i, fn := range funcs {
		tab = put(put(tab, pc(fn.lo)), uint64(recBase+tabLen+len(recs)))
		recs = le.AppendUint32(put(recs, pc(fn.lo)), uint32(nameOffs[i]))
	}
	if len(funcs) > 0 {
		tab = put(tab, pc(funcs[len(funcs)-1].hi))
	}
	b = append(append(b, tab...), recs...)
	if magic == pclnGo12 {
		// Go 1.2's name offsets are from the table's start.
		base := uint64(len(b))
		b = append(b, names...)
		for i, fn := range funcs {
			if fn.nameOff < 0 {
				le.PutUint32(b[functabOff+tabLen+i*(field+4)+field:], uint32(base+nameOffs[i]))
			}
		}
		return b
	}
	words := map[uint32][2]int{pclnGo116: {2, 6}, pclnGo118: {3, 7}, pclnGo120: {3, 7}}[magic]
	le.PutUint64(b[8+8*words[0]:], uint64(nameBase))
	le.PutUint64(b[8+8*words[1]:], uint64(functabOff))
	return b
}

// TestPclnFuncsLayouts reads a crafted table of each Go layout, and
// refuses those whose header lies: a count past the functab's bytes, an
// offset past the table's end. Records and names that point nowhere are
// skipped, not read.
func TestPclnFuncsLayouts(t *testing.T) {
	const text = 0x401000
	funcs := []craftFunc{
		{"main.main", text, text + 0x40, -1},
		{"sync.(*Mutex).lockSlow", text + 0x40, text + 0x100, -1},
		{"sync.runtime_SemacquireRWMutex", text + 0x100, text + 0x180, -1},
	}
	names := []string{"sync.(*Mutex).lockSlow", "sync.runtime_SemacquireRWMutex", "sync.runtime_SemacquireRWMutexR"}
	for _, magic := range []uint32{pclnGo12, pclnGo116, pclnGo118, pclnGo120} {
		t.Run(strconv.FormatUint(uint64(magic), 16), func(t *testing.T) {
			got, err := pclnFuncs(craftPcln(magic, text, 3, funcs), text, names)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]span{names[0]: {text + 0x40, text + 0x100}, names[1]: {text + 0x100, text + 0x180}}
			if len(got) != len(want) || got[names[0]] != want[names[0]] || got[names[1]] != want[names[1]] {
				t.Errorf("found %v, want %v", got, want)
			}
			// The functab runs to the table's end (the records and,
			// in Go 1.2, the names follow it): a count is refused
			// once its entries would pass the end.
			size := uint64(len(craftPcln(magic, text, 3, funcs)))
			for _, n := range []uint64{size / 8, 1 << 32, math.MaxInt64, math.MaxUint64} {
				if _, err := pclnFuncs(craftPcln(magic, text, n, funcs), text, names); err == nil || !strings.Contains(err.Error(), "claims "+strconv.FormatUint(n, 10)+" functions") {
					t.Errorf("count %d: err %v, want the count refused", n, err)
				}
			}
			if magic != pclnGo12 {
				b := craftPcln(magic, text, 3, funcs)
				functabWord := map[uint32]int{pclnGo116: 6, pclnGo118: 7, pclnGo120: 7}[magic]
				binary.LittleEndian.PutUint64(b[8+8*functabWord:], uint64(len(b)+1))
				if _, err := pclnFuncs(b, text, names); err == nil || !strings.Contains(err.Error(), "past the end") {
					t.Errorf("offset past the end: err %v", err)
				}
			}
			// Every name offset past the names: nothing found, no
			// error (the count fits), nothing read out of bounds.
			bad := []craftFunc{{"x", text, text + 0x40, 1 << 31}, {"y", text + 0x40, text + 0x80, math.MaxUint32}}
			if got, err := pclnFuncs(craftPcln(magic, text, 2, bad), text, names); err != nil || len(got) != 0 {
				t.Errorf("names out of bounds: found %v, err %v", got, err)
			}
		})
	}
}

// TestSymtabScanBounds reads names in place: a string table with one NUL
// at its end, which every symbol points into at a different offset (the
// layout that made debug/elf copy the rest of the table per symbol), is
// scanned without allocating per symbol.
func TestSymtabScanBounds(t *testing.T) {
	le := binary.LittleEndian
	strs := append([]byte(strings.Repeat("a", 1<<20)+"sync.runtime_SemacquireRWMutex"), 0)
	syms := make([]byte, elf.Sym64Size)
	for i := range 1 << 16 {
		e := make([]byte, elf.Sym64Size)
		le.PutUint32(e, uint32(i))
		e[4] = byte(elf.STT_FUNC)
		le.PutUint64(e[8:], 0x1000)
		le.PutUint64(e[16:], 0x10)
		syms = append(syms, e...)
	}
	e := make([]byte, elf.Sym64Size)
	le.PutUint32(e, 1<<20)
	e[4] = byte(elf.STT_FUNC)
	le.PutUint64(e[8:], 0x2000)
	le.PutUint64(e[16:], 0x20)
	syms = append(syms, e...)
	var got map[string]span
	alloc := testbin.Allocated(func() { got = symtabScan(syms, strs, []string{"sync.runtime_SemacquireRWMutex"}) })
	if sp := got["sync.runtime_SemacquireRWMutex"]; sp != (span{0x2000, 0x2020}) || len(got) != 1 {
		t.Errorf("found %v, want the one symbol so named", got)
	}
	if alloc > 64<<10 {
		t.Errorf("allocated %d bytes over a %d-byte table", alloc, len(syms)+len(strs))
	}
}

// FuzzPclnFuncs feeds pclnFuncs tables with lying counts and offsets: it
// must not panic, a table it accepts holds the functab its count claims,
// and what it finds are names asked for, each a span of the text.
func FuzzPclnFuncs(f *testing.F) {
	const text = 0x401000
	funcs := []craftFunc{{"a", text, text + 8, -1}, {"sync.(*Mutex).lockSlow", text + 8, text + 0x40, -1}}
	for _, magic := range []uint32{pclnGo12, pclnGo116, pclnGo118} {
		f.Add(craftPcln(magic, text, 2, funcs))
		f.Add(craftPcln(magic, text, math.MaxInt64, funcs))
	}
	names := []string{"sync.(*Mutex).lockSlow", "a"}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := pclnFuncs(data, text, names)
		if err != nil {
			return
		}
		if n := binary.LittleEndian.Uint64(data[8:]); n > uint64(len(data))/8 {
			t.Errorf("accepted a count of %d in %d bytes", n, len(data))
		}
		for n := range got {
			if n != names[0] && n != names[1] {
				t.Errorf("found %q, not asked for", n)
			}
		}
	})
}

// FuzzSymtabScan feeds symtabScan symbol and string tables of any
// content: it must not panic, and a name it finds is stored, NUL
// terminated, where a function symbol points.
func FuzzSymtabScan(f *testing.F) {
	le := binary.LittleEndian
	e := make([]byte, 2*elf.Sym64Size)
	le.PutUint32(e[elf.Sym64Size:], 1)
	e[elf.Sym64Size+4] = byte(elf.STT_FUNC)
	le.PutUint64(e[elf.Sym64Size+8:], 0x1000)
	le.PutUint64(e[elf.Sym64Size+16:], 0x10)
	f.Add(e, []byte("\x00main.main\x00"))
	f.Add(e[:elf.Sym64Size+5], []byte("main.main"))
	names := []string{"main.main", "main.x"}
	f.Fuzz(func(t *testing.T, syms, strs []byte) {
		got := symtabScan(syms, strs, names)
		for n, sp := range got {
			if n != names[0] && n != names[1] {
				t.Errorf("found %q, not asked for", n)
			}
			if sp.hi <= sp.lo {
				t.Errorf("%s: span %v", n, sp)
			}
			if !bytes.Contains(strs, append([]byte(n), 0)) {
				t.Errorf("%s: not in the string table", n)
			}
		}
	})
}

// TestFindGoFuncsSectionNames: an executable whose 4,096 section headers
// all point into one 1 MiB name (debug/elf copies the rest of the name
// for each, a byte at a time: it did not open this 1.3 MB file in a
// minute) is refused at once, before debug/elf reads it.
func TestFindGoFuncsSectionNames(t *testing.T) {
	const n, nameLen = 4096, 1 << 20
	le := binary.LittleEndian
	hdr := make([]byte, 64)
	copy(hdr, "\x7fELF\x02\x01\x01")
	le.PutUint16(hdr[16:], uint16(elf.ET_EXEC))
	le.PutUint16(hdr[18:], uint16(elf.EM_X86_64))
	le.PutUint32(hdr[20:], 1)
	le.PutUint64(hdr[40:], 64+nameLen+1)
	le.PutUint16(hdr[52:], 64)
	le.PutUint16(hdr[58:], 64)
	le.PutUint16(hdr[60:], n)
	le.PutUint16(hdr[62:], n-1)
	b := append(append(hdr, bytes.Repeat([]byte("a"), nameLen)...), 0)
	for i := range n {
		sh := make([]byte, 64)
		le.PutUint32(sh, uint32(i*16))
		le.PutUint32(sh[4:], uint32(elf.SHT_PROGBITS))
		if i == n-1 {
			le.PutUint32(sh[4:], uint32(elf.SHT_STRTAB))
			le.PutUint64(sh[24:], 64)
			le.PutUint64(sh[32:], nameLen+1)
		}
		b = append(b, sh...)
	}
	path := filepath.Join(t.TempDir(), "names")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := findGoFuncs(path)
	if err == nil || !strings.Contains(err.Error(), "section headers beyond what a real ELF file has") {
		t.Errorf("err %v, want the section headers refused", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refused in %s", d)
	}
}
