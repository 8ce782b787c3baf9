package symbolize

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestParseMaps(t *testing.T) {
	in := `55afb5461000-55afb5462000 r--p 00000000 fe:00 9982386                    /tmp/ledger
55afb5462000-55afb5463000 r-xp 00001000 fe:00 9982386                    /tmp/ledger
55afb5466000-55afb5566000 rw-p 00000000 00:00 0 
7f9069156000-7f9069157000 r-xp 00002000 08:01 42                         /opt/my lib/libx.so (deleted)
7ffc1a3f2000-7ffc1a3f4000 r-xp 00000000 00:00 0                          [vdso]
`
	got, err := parseMaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{
		{0x55afb5461000, 0x55afb5462000, "r--p", 0, "fe:00", 9982386, "/tmp/ledger"},
		{0x55afb5462000, 0x55afb5463000, "r-xp", 0x1000, "fe:00", 9982386, "/tmp/ledger"},
		{0x55afb5466000, 0x55afb5566000, "rw-p", 0, "00:00", 0, ""},
		{0x7f9069156000, 0x7f9069157000, "r-xp", 0x2000, "08:01", 42, "/opt/my lib/libx.so (deleted)"},
		{0x7ffc1a3f2000, 0x7ffc1a3f4000, "r-xp", 0, "00:00", 0, "[vdso]"},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(mapping{})); d != "" {
		t.Errorf("parseMaps (-want +got):\n%s", d)
	}
	if got[3].filePath() != "/opt/my lib/libx.so" || !got[3].isFile() || got[2].isFile() || got[4].isFile() {
		t.Errorf("filePath/isFile wrong: %q", got[3].filePath())
	}
	for _, bad := range []string{
		"zzzz-1000 r-xp 00000000 00:00 0",
		"1000-0fff r-xp 00000000 00:00 0",
		"1000-2000 r-x 00000000 00:00 0",
		"1000-2000 r-xp 00000000",
		"1000-2000 r-xp 0000000g 00:00 0",
	} {
		if _, err := parseMaps(strings.NewReader(bad + "\n")); err == nil {
			t.Errorf("parseMaps(%q) succeeded", bad)
		}
	}
}

// TestSymTableLookup checks containment: an address is named only by a
// symbol whose [start, end) holds it, the innermost one when they nest.
func TestSymTableLookup(t *testing.T) {
	strtab := []byte("\x00outer\x00inner\x00next\x00")
	tab := &symTable{strtabs: [][]byte{strtab}}
	tab.syms = []symEntry{
		{addr: 0x1000, end: 0x1100, name: 1}, // outer
		{addr: 0x1010, end: 0x1020, name: 7}, // inner, nested in outer
		{addr: 0x1200, end: 0x1210, name: 13},
	}
	tab.index()
	for _, c := range []struct {
		addr uint64
		want string
	}{
		{0x0fff, ""},
		{0x1000, "outer"},
		{0x1010, "inner"},
		{0x101f, "inner"},
		{0x1020, "outer"}, // past inner, still in outer
		{0x10ff, "outer"},
		{0x1100, ""}, // in the gap: never the neighbour
		{0x11ff, ""},
		{0x1200, "next"},
		{0x1210, ""},
	} {
		got := ""
		if e := tab.lookup(c.addr); e != nil {
			got = tab.name(e)
		}
		if got != c.want {
			t.Errorf("lookup(0x%x) = %q, want %q", c.addr, got, c.want)
		}
	}
}

// fakeProc builds a /proc tree by hand for pid 4242 (maps plus
// root/bin/prog, a hard link to exe or a copy of it, with its device and
// inode in maps, as the kernel writes them) that maps exe at base, and
// returns the root.
func fakeProc(t *testing.T, exe string, base uint64) string {
	return fakeProcPlant(t, exe, base, func(prog string) {
		if err := os.Link(exe, prog); err != nil {
			data, err := os.ReadFile(exe)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(prog, data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// fakeProcPlant builds the /proc tree of fakeProc with plant making
// root/bin/prog, and maps naming exe's device and inode: plant may put
// something else there, as a target that replaced its file after mapping
// it can.
func fakeProcPlant(t *testing.T, exe string, base uint64, plant func(prog string)) string {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	root := t.TempDir()
	pidDir := filepath.Join(root, "4242")
	if err := os.MkdirAll(filepath.Join(pidDir, "root", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(pidDir, "root", "bin", "prog")
	plant(prog)
	var st unix.Stat_t
	if err := unix.Stat(exe, &st); err != nil {
		t.Fatal(err)
	}
	devIno := fmt.Sprintf("%02x:%02x %d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	var maps strings.Builder
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		perm := []byte("---p")
		if p.Flags&elf.PF_R != 0 {
			perm[0] = 'r'
		}
		if p.Flags&elf.PF_W != 0 {
			perm[1] = 'w'
		}
		if p.Flags&elf.PF_X != 0 {
			perm[2] = 'x'
		}
		start := base + p.Vaddr&^0xfff
		end := (base + p.Vaddr + p.Filesz + 0xfff) &^ 0xfff
		fmt.Fprintf(&maps, "%x-%x %s %08x %s /bin/prog\n", start, end, perm, p.Off&^0xfff, devIno)
	}
	if err := os.WriteFile(filepath.Join(pidDir, "maps"), []byte(maps.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// goFuncEntry returns the entry of a Go function of exe, from its pclntab
// through debug/gosym (test binaries have no .symtab).
func goFuncEntry(t *testing.T, exe, name string) uint64 {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pcln, err := f.Section(".gopclntab").Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(pcln, f.Section(".text").Addr))
	if err != nil {
		t.Fatal(err)
	}
	fn := tab.LookupFunc(name)
	if fn == nil {
		t.Fatalf("%s not in %s", name, exe)
	}
	return fn.Entry
}

// TestFakeProcRoot symbolizes through a hand-made /proc tree around this
// test binary, placed at another base than its link address, without any
// process or privilege.
func TestFakeProcRoot(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x10000000
	p, err := Open(4242, Options{ProcRoot: fakeProc(t, exe, base), DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, name := range []string{"main.main", "runtime.main", "testing.tRunner"} {
		fr := p.Frames(base+goFuncEntry(t, exe, name)+1, true)
		last := fr[len(fr)-1]
		if last.Func != name || last.Module != "prog" {
			t.Errorf("%s+1: %s", name, describe(fr))
		}
	}
	if fr := p.Frames(0x42, true); fr[0].Func != "0x42" || fr[0].Module != "" {
		t.Errorf("unmapped address: %s", describe(fr))
	}
}

// TestTruncatedObject truncates an object file after it was mapped:
// reading it then faults, and lookups must fail softly instead of
// crashing.
func TestTruncatedObject(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(cp, data, 0o755); err != nil {
		t.Fatal(err)
	}
	const base = 0x10000000
	p, err := Open(4242, Options{ProcRoot: fakeProc(t, cp, base), DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := os.Truncate(cp, 4096); err != nil {
		t.Fatal(err)
	}
	pc := base + goFuncEntry(t, exe, "main.main") + 1
	if fr := p.Frames(pc, true); len(fr) != 1 || fr[0].Func != fmt.Sprintf("0x%x", pc) {
		t.Errorf("Frames on a truncated object: %s", describe(fr))
	}
	if pcs, complete := p.Unwind(Regs{IP: pc, SP: 0x1000}, make([]byte, 256)); len(pcs) != 1 || complete {
		t.Errorf("Unwind on a truncated object: %v, %v", pcs, complete)
	}
	if _, _, ok := p.FunctionAt(pc); ok {
		t.Errorf("FunctionAt on a truncated object succeeded")
	}
}
