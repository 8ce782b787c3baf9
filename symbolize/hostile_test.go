package symbolize

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

// TestPclntabCountPastTable: a Go function table whose count leaves no
// room for the end entry is refused; one with room is read, and looking
// up any address in it stays inside it.
func TestPclntabCountPastTable(t *testing.T) {
	short := append(pclnHeader(4, 72), make([]byte, 32)...) // the 104-byte table
	if len(short) != 104 {
		t.Fatalf("table of %d bytes", len(short))
	}
	if tab := newPclntab(short, 0x1000); tab != nil {
		t.Errorf("a table of 4 functions with 4 entries was accepted")
	}
	ok := append(pclnHeader(4, 72), make([]byte, 40+44)...)
	tab := newPclntab(ok, 0x1000)
	if tab == nil {
		t.Fatal("a table with its end entry was refused")
	}
	for _, pc := range []uint64{0, 0x1000, 0x1001, 0x2000, 1 << 40} {
		if err := guarded(func() { tab.find(pc) }); err != nil {
			t.Errorf("find(0x%x) panicked: %v", pc, err)
		}
	}
}

// readyAddr starts the program at bin and returns it and the address it
// prints as "ready NAME=0x…".
func readyAddr(t *testing.T, bin, name string) (*target, uint64) {
	t.Helper()
	tg := startTarget(t, bin)
	for _, f := range strings.Fields(tg.first) {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			a, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return tg, a
		}
	}
	t.Fatalf("%s printed %q, without %s=", bin, tg.first, name)
	return nil, 0
}

// openBadPcln starts testdata/badpcln.c and opens it, returning the
// address of its spin_here.
func openBadPcln(t *testing.T) (*Process, uint64) {
	t.Helper()
	bin := buildC(t, t.TempDir(), "badpcln.c", "badpcln", "-O2")
	tg, spin := readyAddr(t, bin, "spin")
	p, err := Open(tg.pid(), Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, spin
}

// TestLiveCraftedPclntab symbolizes a running program that carries the
// 104-byte crafted .gopclntab (testdata/badpcln.c): the table is refused
// and its functions are named from the ELF symbols. Trusting the table's
// count read past it, and the panic killed contend record.
func TestLiveCraftedPclntab(t *testing.T) {
	p, spin := openBadPcln(t)
	for _, pc := range []uint64{spin, spin + 1} {
		fr := p.Frames(pc, true)
		if last := fr[len(fr)-1]; last.Func != "spin_here" {
			t.Errorf("Frames(0x%x) = %s, want spin_here", pc, describe(fr))
		}
	}
	p.Stack([]uint64{spin, spin + 4})
	p.Unwind(Regs{IP: spin, SP: 0x1000}, make([]byte, 64))
	if _, _, ok := p.FunctionAt(spin); !ok {
		t.Error("FunctionAt(spin_here) found nothing")
	}
	if w := p.Warnings(); len(w) != 0 {
		t.Errorf("warnings for a refused table: %q", w)
	}
}

// TestLookupPanicGivesRawFrame: any panic while reading a target's tables
// costs the lookup, never the process: the frame is the raw address, and
// the count shows in Warnings. A function table that slipped past its
// checks stands in for the next bug of that kind.
func TestLookupPanicGivesRawFrame(t *testing.T) {
	p, spin := openBadPcln(t)
	p.impl.mu.Lock()
	r := p.impl.regionAt(spin)
	if r == nil || r.obj == nil {
		p.impl.mu.Unlock()
		t.Fatal("spin_here is in no object")
	}
	r.obj.goLoaded = true
	r.obj.gotab = &pclntab{textStart: 0, minLC: 1, nfunc: 4, pclntable: make([]byte, 32)}
	p.impl.mu.Unlock()

	for i, pc := range []uint64{spin, spin + 2} {
		fr := p.Frames(pc, true)
		if len(fr) != 1 || fr[0].Func != fmt.Sprintf("0x%x", pc) || fr[0].Addr != pc {
			t.Errorf("Frames(0x%x) = %s, want the raw address", pc, describe(fr))
		}
		w := strings.Join(p.Warnings(), "\n")
		if want := fmt.Sprintf("%d lookup", i+1); !strings.Contains(w, want) || !strings.Contains(w, "badpcln") {
			t.Errorf("warnings after %d failed lookups: %q", i+1, w)
		}
	}
	if pcs, _ := p.Unwind(Regs{IP: spin, SP: 0x1000}, make([]byte, 64)); len(pcs) != 1 {
		t.Errorf("Unwind through the bad table: %v", pcs)
	}
	if _, _, ok := p.FunctionAt(spin); ok {
		t.Error("FunctionAt through the bad table found a function")
	}
}

// bombELF returns an object whose DWARF sections are zlib bombs: each
// states mib MiB once inflated and holds a stream that inflates to that.
func bombELF(mib int, names ...string) []byte {
	stream := testbin.ZlibFill(0, mib)
	var secs []craftSection
	for _, n := range names {
		secs = append(secs, craftSection{name: n, typ: elf.SHT_PROGBITS, flags: elf.SHF_COMPRESSED, data: compressedSection(uint64(mib)<<20, stream)})
	}
	return craftELF(false, secs...)
}

// TestDWARFBombStopsAtBudget: compressed DWARF sections that each stay
// under any per-section cap but together inflate to gigabytes are
// refused from their headers, before anything is inflated.
func TestDWARFBombStopsAtBudget(t *testing.T) {
	data := bombELF(300, ".debug_info", ".debug_abbrev", ".debug_line", ".debug_str")
	lim := newLimits()
	o, err := newObject(data, "bomb.so", lim)
	if err != nil {
		t.Fatal(err)
	}
	var dw *dwarfInfo
	alloc := testbin.Allocated(func() { dw = o.dwarf() })
	if dw != nil {
		t.Error("DWARF of 1.2 GiB inflated was loaded")
	}
	if alloc > 16<<20 {
		t.Errorf("refusing the DWARF allocated %d MiB", alloc>>20)
	}
	w := strings.Join(lim.warnings(), "\n")
	if !strings.Contains(w, "bomb.so: inflating its DWARF needs more than its 512 MiB budget") {
		t.Errorf("warnings %q do not say what was refused", w)
	}
	// A .zdebug section states its size in its own header.
	z := craftELF(false,
		craftSection{name: ".zdebug_info", typ: elf.SHT_PROGBITS, data: zdebugSection(100<<30, testbin.ZlibFill(0, 64))},
		craftSection{name: ".zdebug_abbrev", typ: elf.SHT_PROGBITS, data: zdebugSection(1<<10, testbin.ZlibFill(0, 1))})
	o, err = newObject(z, "zbomb.so", newLimits())
	if err != nil {
		t.Fatal(err)
	}
	alloc = testbin.Allocated(func() { dw = o.dwarf() })
	if dw != nil || alloc > 16<<20 {
		t.Errorf(".zdebug bomb: dwarf %v, %d MiB allocated", dw != nil, alloc>>20)
	}
}

// TestDWARFNeedsInfoFirst: without .debug_info and .debug_abbrev nothing
// is inflated, however much the other sections state.
func TestDWARFNeedsInfoFirst(t *testing.T) {
	o, err := newObject(bombELF(300, ".debug_line", ".debug_str", ".debug_ranges"), "noinfo.so", newLimits())
	if err != nil {
		t.Fatal(err)
	}
	var dw *dwarfInfo
	if alloc := testbin.Allocated(func() { dw = o.dwarf() }); dw != nil || alloc > 1<<20 {
		t.Errorf("DWARF without .debug_info: loaded %v, %d KiB allocated", dw != nil, alloc>>10)
	}
}

// TestProcessBudget: objects that each fit their own budget still share
// one per process.
func TestProcessBudget(t *testing.T) {
	defer func(o, p int64) { objectBudget, processBudget = o, p }(objectBudget, processBudget)
	objectBudget, processBudget = 4<<20, 6<<20
	lim := newLimits()
	data := bombELF(1, ".debug_info", ".debug_abbrev", ".debug_line") // 3 MiB each object
	for i := 0; i < 3; i++ {
		o, err := newObject(data, fmt.Sprintf("lib%d.so", i), lim)
		if err != nil {
			t.Fatal(err)
		}
		o.dwarf()
	}
	w := strings.Join(lim.warnings(), "\n")
	if strings.Contains(w, "lib0.so") || strings.Contains(w, "lib1.so") || !strings.Contains(w, "lib2.so: inflating its DWARF does not fit in what is left of the process's 6 MiB budget") {
		t.Errorf("warnings %q: want only the third object refused", w)
	}
}

// TestSectionInflatesOnlyWhatItStates: a section that states a small size
// but holds a stream of gigabytes costs what it states.
func TestSectionInflatesOnlyWhatItStates(t *testing.T) {
	data := craftELF(false, craftSection{name: ".debug_str", typ: elf.SHT_PROGBITS, flags: elf.SHF_COMPRESSED, data: compressedSection(4096, testbin.ZlibFill(0, 1024))})
	o, err := newObject(data, "liar.so", newLimits())
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	alloc := testbin.Allocated(func() { b, err = o.sectionBytes(o.ef.Section(".debug_str")) })
	if err != nil || len(b) != 4096 || alloc > 1<<20 {
		t.Errorf("got %d bytes, %v, %d KiB allocated", len(b), err, alloc>>10)
	}
}

// secretBinary builds a C program with symbols into a private directory,
// standing for a root-only file the target wants contend to read.
func secretBinary(t *testing.T) (bin string, teller uint64) {
	dir := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	bin = buildC(t, dir, "ledger.c", "secret", "-O2", "-g")
	if err := os.Chmod(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	teller, _ = nmValue(t, bin, "teller", false)
	return bin, teller
}

// copyFile copies src to a new file dst (a new inode).
func copyFile(t *testing.T, src, dst string) {
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestMappedPathRedirected: when map_files cannot be used, the object is
// opened by the path in maps under the target's root, which the target
// controls. A symbolic link planted there, or another file, must not be
// read in place of the mapped file (they named the secret file's
// functions); only the file with the mapping's device and inode is.
func TestMappedPathRedirected(t *testing.T) {
	secret, teller := secretBinary(t)
	decoy := filepath.Join(t.TempDir(), "decoy")
	copyFile(t, secret, decoy) // what the target mapped: same layout, its own inode
	const base = 0x10000000
	for _, c := range []struct {
		name  string
		plant func(prog string)
		named bool
	}{
		{"symlink to another file", func(prog string) {
			if err := os.Symlink(secret, prog); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"another file", func(prog string) {
			if err := os.Link(secret, prog); err != nil {
				copyFile(t, secret, prog)
			}
		}, false},
		{"the mapped file", func(prog string) {
			if err := os.Link(decoy, prog); err != nil {
				testbin.Skip(t, fmt.Sprintf("cannot hard-link across file systems: %v", err))
			}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Open(4242, Options{ProcRoot: fakeProcPlant(t, decoy, base, c.plant), DebugDirs: []string{}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			fr := p.Frames(base+teller+1, true)
			last := fr[len(fr)-1]
			if named := last.Func == "teller"; named != c.named {
				t.Errorf("Frames(teller+1) = %s; named from the file: %v, want %v", describe(fr), named, c.named)
			}
			if !c.named && last.Func != fmt.Sprintf("prog+0x%x", teller+1) {
				t.Errorf("Frames(teller+1) = %s, want prog+0x%x", describe(fr), teller+1)
			}
		})
	}
}

// TestMappedFIFO: a FIFO planted at the mapped path under the target's
// root would block the open forever; it is refused at once.
func TestMappedFIFO(t *testing.T) {
	secret, _ := secretBinary(t)
	root := fakeProcPlant(t, secret, 0x10000000, func(prog string) {
		if err := syscall.Mkfifo(prog, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	err := testbin.NoBlock(t, "Open with a FIFO at the mapped path", func() error {
		p, err := Open(4242, Options{ProcRoot: root, DebugDirs: []string{}})
		if err == nil {
			p.Close()
		}
		return err
	})
	if err != nil {
		t.Errorf("Open: %v", err)
	}
}

// TestOpenFileRegularOnly: OpenFile (the analyzer opens the recording's
// Meta.Exe with it) refuses a FIFO at once and a directory, instead of
// blocking or reading them.
func TestOpenFileRegularOnly(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "exe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	err := testbin.NoBlock(t, "OpenFile(FIFO)", func() error {
		_, err := OpenFile(fifo, Options{DebugDirs: []string{}})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("OpenFile(FIFO): %v", err)
	}
	if _, err := OpenFile(dir, Options{DebugDirs: []string{}}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("OpenFile(directory): %v", err)
	}
}
