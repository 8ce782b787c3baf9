package symbolize

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// TestUnitReadMatchesWholeDWARF: units read each through a dwarf.Data of
// their own (dwarfSecs.unitData) give the same index, functions, inline
// trees, names, call sites and lines as the same units read through one
// dwarf.Data over all of .debug_info, as the symbolizer read them before:
// for a two-unit program in DWARF 4 and 5, compressed, and for glibc's
// debug file (DWARF 5, compressed, 2,063 units; 200 of them compared).
// The units found by walking their headers are those the whole DWARF's
// reader finds.
func TestUnitReadMatchesWholeDWARF(t *testing.T) {
	dir := t.TempDir()
	second := filepath.Join(dir, "second.c")
	src := `static inline __attribute__((always_inline)) int twice(int x) { return 2 * x; }
int second_helper(int x) { return twice(x) + 1; }
`
	if err := os.WriteFile(second, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, v := range []string{"4", "5"} {
		files = append(files, buildC(t, dir, "ledger.c", "ledger-dwarf"+v, "-O2", "-g", "-gdwarf-"+v, "-gz", second))
	}
	files = append(files, glibcDebugFile(t))
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) { compareUnitReads(t, path) })
	}
}

// readDWARF returns the DWARF sections of the ELF file at path.
func readDWARF(t *testing.T, path string) *dwarfSecs {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := loadDWARF(ef, data, nil)
	if s == nil {
		t.Fatalf("%s: no DWARF", path)
	}
	return s
}

func compareUnitReads(t *testing.T, path string) {
	s := readDWARF(t, path)
	alone := newDwarfInfo(s, nil)
	// whole reads every unit through one dwarf.Data over all units.
	whole := newDwarfInfo(s, nil)
	for i := range whole.spans {
		whole.spans[i].global = true
	}
	whole.cus = nil
	whole.indexUnits()
	if !reflect.DeepEqual(alone.cus, whole.cus) {
		t.Fatalf("index: %d unit ranges read alone, %d through the whole DWARF", len(alone.cus), len(whole.cus))
	}
	// The compilation units the whole DWARF's reader finds, by the
	// offset of their first entry.
	var cuOffs, spanOffs []dwarf.Offset
	r := s.wholeData().Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			cuOffs = append(cuOffs, e.Offset)
		}
		r.SkipChildren()
	}
	relative := 0
	for _, sp := range alone.spans {
		spanOffs = append(spanOffs, sp.entry)
		if !sp.global {
			relative++
		}
	}
	if !slices.Equal(cuOffs, spanOffs) {
		t.Fatalf("units by their headers: %d, first entries %v...; the whole DWARF's reader: %d, %v...", len(spanOffs), spanOffs[:min(3, len(spanOffs))], len(cuOffs), cuOffs[:min(3, len(cuOffs))])
	}
	if relative == 0 {
		t.Fatalf("none of the %d units read alone", len(alone.spans))
	}
	var offs []dwarf.Offset
	for _, c := range alone.cus {
		offs = append(offs, c.off)
	}
	slices.Sort(offs)
	offs = slices.Compact(offs)
	if len(offs) < 2 {
		t.Fatalf("%s: %d units with code, want 2 or more (one not at the start)", path, len(offs))
	}
	step := max(1, len(offs)/200)
	compared, nodes, lines := 0, 0, 0
	for i := 0; i < len(offs); i += step {
		off := offs[i]
		a, w := alone.loadUnit(off), whole.loadUnit(off)
		if a == nil || w == nil || len(w.lines) == 0 {
			t.Errorf("unit at %#x: read alone %v, through the whole DWARF %v", off, a != nil, w != nil)
			continue
		}
		if !reflect.DeepEqual(a, w) {
			t.Errorf("unit at %#x differs read alone: %d nodes, %d lines, %d files; through the whole DWARF %d, %d, %d",
				off, len(a.nodes), len(a.lines), len(a.files), len(w.nodes), len(w.lines), len(w.files))
			for j := range min(len(a.nodes), len(w.nodes)) {
				if !reflect.DeepEqual(a.nodes[j], w.nodes[j]) {
					t.Logf("first differing node %d: alone %+v, whole %+v", j, a.nodes[j], w.nodes[j])
					break
				}
			}
			continue
		}
		compared++
		nodes += len(a.nodes)
		lines += len(a.lines)
	}
	t.Logf("%d units (%d read alone), %d of the %d with code compared: %d functions and inlined calls, %d line rows",
		len(alone.spans), relative, compared, len(offs), nodes, lines)
}

// glibcDebugFile returns the path of glibc's separate debug file, found
// by the build ID of the libc.so.6 this machine runs (libc6-dbg, which
// make deps installs).
func glibcDebugFile(t *testing.T) string {
	t.Helper()
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	ef, err := elf.Open(libc)
	if err != nil {
		t.Fatalf("%s: %v", libc, err)
	}
	defer ef.Close()
	s := ef.Section(".note.gnu.build-id")
	if s == nil {
		t.Fatalf("%s has no build ID", libc)
	}
	note, err := s.Data()
	if err != nil || len(note) < 16 || !bytes.Equal(note[12:16], []byte("GNU\x00")) {
		t.Fatalf("%s: unreadable build ID note", libc)
	}
	id := hex.EncodeToString(note[16:])
	path := filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("glibc's debug file: %v (install libc6-dbg: make deps)", err)
	}
	return path
}

// TestDWZFramesMatchAddr2line: a program whose DWARF went through dwz, as
// Debian's debug packages do (dh_dwz). dwz moves what two units repeat
// (types, the always-inline credit()) into a partial unit both import,
// and their references into it become DW_FORM_ref_addr. dwz also gives
// all units one abbreviation table, so every unit is read through the
// whole DWARF (unitSpan.global), the path no other test's file takes.
// Every byte of the three functions gets the frames binutils' addr2line
// -f -i gives for the same build before dwz (dwz rewrites only the debug
// sections; binutils 2.40's addr2line itself loses the inlined frames of
// a dwz'd file), credit()'s inlined frames named through the partial
// unit; DWARF 4 and 5.
func TestDWZFramesMatchAddr2line(t *testing.T) {
	requireTool(t, "dwz")
	dir := t.TempDir()
	for _, v := range []string{"4", "5"} {
		t.Run("dwarf"+v, func(t *testing.T) {
			bin := buildC(t, dir, "dwz_main.c", "dwz-dwarf"+v, "-O2", "-g", "-gdwarf-"+v,
				"-I", "testdata", filepath.Join("testdata", "dwz_book.c"))
			orig := bin + ".orig"
			run(t, "cp", bin, orig)
			run(t, "dwz", bin)
			s := readDWARF(t, bin)
			dw := newDwarfInfo(s, nil)
			global := 0
			for _, sp := range dw.spans {
				if sp.global {
					global++
				}
			}
			partial := false
			for r := s.wholeData().Reader(); ; r.SkipChildren() {
				e, err := r.Next()
				if err != nil || e == nil {
					break
				}
				partial = partial || e.Tag == dwarf.TagPartialUnit
			}
			if global == 0 || !partial {
				t.Fatalf("dwz left %d units with references out of them and partial unit %v; the test lost its point", global, partial)
			}

			var addrs []uint64
			for _, fn := range []string{"book_a", "book_b", "main"} {
				v, size := nmValue(t, bin, fn, false)
				for a := v; a < v+size; a++ {
					addrs = append(addrs, a)
				}
			}
			want := addr2line(t, orig, addrs)
			inlined := 0
			for i, a := range addrs {
				got := dw.frames(a)
				if !reflect.DeepEqual(baseFiles(got), want[i]) {
					t.Errorf("0x%x: %v, addr2line %v", a, got, want[i])
					continue
				}
				if len(got) > 1 && got[0].fn == "credit" {
					inlined++
				}
			}
			if inlined == 0 {
				t.Fatal("no address showed the inlined credit(); the test lost its point")
			}
			t.Logf("%d units, %d read through the whole DWARF; %d addresses as addr2line gives them, %d in the inlined credit()",
				len(dw.spans), global, len(addrs), inlined)
		})
	}
}

// baseFiles returns frames with their files' base names, as addr2line
// gives them in the tests.
func baseFiles(fr []inlFrame) []inlFrame {
	out := make([]inlFrame, len(fr))
	for i, f := range fr {
		out[i] = inlFrame{fn: f.fn, file: filepath.Base(f.file), line: f.line}
	}
	return out
}
