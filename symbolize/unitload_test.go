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

// TestUnitLoadMatchesWholeDWARF: a unit loaded alone while the parsed
// DWARF is dropped (loadUnitDWARF) gives the same functions, inline
// trees, names, call sites and lines as the same unit loaded from the
// whole parse: for a two-unit program in DWARF 4 and 5, compressed (its
// second unit read behind a filler unit), and for glibc's debug file
// (DWARF 5, compressed, 2,063 units; a sample of 60 of them).
func TestUnitLoadMatchesWholeDWARF(t *testing.T) {
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
		t.Run(filepath.Base(path), func(t *testing.T) { compareUnitLoads(t, path) })
	}
}

func compareUnitLoads(t *testing.T, path string) {
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	full := loadDWARF(ef, data, nil)
	if full == nil {
		t.Fatalf("%s: no DWARF", path)
	}
	whole := newDwarfInfo(full, nil)
	// alone cannot parse the whole DWARF again (no reload): a name it
	// would have to look up outside the unit comes out empty, and differs.
	alone := newDwarfInfo(full, nil)
	alone.d = nil
	alone.reloadUnit = func(off dwarf.Offset, b *objBudget) (*dwarf.Data, dwarf.Offset, dwarf.Offset) {
		return loadUnitDWARF(ef, data, off, b)
	}
	var offs []dwarf.Offset
	for _, c := range whole.cus {
		offs = append(offs, c.off)
	}
	slices.Sort(offs)
	offs = slices.Compact(offs)
	if len(offs) < 2 {
		t.Fatalf("%s: %d units with code, want 2 or more (one behind a filler)", path, len(offs))
	}
	step := max(1, len(offs)/60)
	compared, nodes, lines := 0, 0, 0
	for i := 0; i < len(offs); i += step {
		off := offs[i]
		alone.dropLoads = 0
		before := alone.unitLoads
		a, w := alone.loadUnit(off), whole.loadUnit(off)
		if alone.unitLoads != before+1 {
			t.Errorf("unit at %#x: not loaded alone", off)
			continue
		}
		if a == nil || w == nil || len(w.lines) == 0 {
			t.Errorf("unit at %#x: loaded alone %v, from the whole DWARF %v (%d lines)", off, a != nil, w != nil, len(w.lines))
			continue
		}
		if !reflect.DeepEqual(a, w) {
			t.Errorf("unit at %#x differs loaded alone: %d nodes, %d lines, %d files; from the whole DWARF %d, %d, %d",
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
	t.Logf("%d of %d units compared: %d functions and inlined calls, %d line rows", compared, len(offs), nodes, lines)
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
