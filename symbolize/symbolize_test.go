package symbolize

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// nmValue returns the value of a symbol in path's .symtab (or .dynsym with
// dynamic set), read with debug/elf as an independent reference.
func nmValue(t *testing.T, path, name string, dynamic bool) (uint64, uint64) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if dynamic {
		syms, err = f.DynamicSymbols()
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value, s.Size
		}
	}
	t.Fatalf("%s has no symbol %s", path, name)
	return 0, 0
}

// biasOf computes the load bias of path in pid the simple way: the
// mapping at file offset 0 minus the lowest PT_LOAD address.
func biasOf(t *testing.T, pid int, path string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lo := ^uint64(0)
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			lo = min(lo, p.Vaddr)
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	maps, err := parseMaps(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if m.path == path && m.offset == 0 {
			return m.start - lo
		}
	}
	t.Fatalf("%s is not mapped by %d", path, pid)
	return 0
}

// TestStrippedStaticFunction checks that an address in a static function
// of a stripped binary is named module+offset, even though an exported
// function (kept in .dynsym by -rdynamic) lies just below it.
func TestStrippedStaticFunction(t *testing.T) {
	dir := t.TempDir()
	full := buildC(t, dir, "ledger.c", "ledger-full", "-O2", "-g", "-rdynamic")
	stripped := filepath.Join(dir, "ledger-stripped")
	requireTool(t, "strip")
	run(t, "strip", "--strip-all", "-o", stripped, full)

	tellerV, tellerSize := nmValue(t, full, "teller", false)
	// The test only means something if an exported function precedes
	// teller: that is the neighbour a nearest-symbol lookup would pick.
	exportedBelow := ""
	transferV, _ := nmValue(t, stripped, "account_transfer", true)
	if transferV < tellerV {
		exportedBelow = "account_transfer"
	}
	if exportedBelow == "" {
		t.Fatalf("account_transfer (0x%x) is not below teller (0x%x); the layout no longer tests the neighbour case", transferV, tellerV)
	}

	tg := startTarget(t, stripped, "2")
	teller := tg.fields(t)["teller"]
	p, err := Open(tg.pid(), Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, k := range []uint64{0, 1, tellerSize / 2, tellerSize - 1} {
		fr := p.Frames(teller+k, true)
		want := fmt.Sprintf("ledger-stripped+0x%x", tellerV+k)
		if len(fr) != 1 || fr[0].Func != want || fr[0].Module != "ledger-stripped" || fr[0].Addr != teller+k {
			t.Errorf("teller+%d: got\n%swant one frame %s", k, describe(fr), want)
		}
	}
	// An exported function keeps its name through .dynsym.
	bias := biasOf(t, tg.pid(), stripped)
	if fr := p.Frames(bias+transferV+4, true); fr[0].Func != "account_transfer" {
		t.Errorf("account_transfer+4 in the stripped binary = %q, want account_transfer", fr[0].Func)
	}
	if _, _, ok := p.FunctionAt(teller + 1); ok {
		t.Errorf("FunctionAt(teller+1) found a function in a stripped binary without a symbol for it")
	}
	fn, code, ok := p.FunctionAt(bias + transferV + 4)
	if !ok || fn.Name != "account_transfer" || fn.Start != bias+transferV || len(code) != int(fn.End-fn.Start) {
		t.Errorf("FunctionAt(account_transfer+4) = %+v, %d bytes, %v", fn, len(code), ok)
	}
	want, err := os.ReadFile(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if ok && !strings.Contains(string(want), string(code)) {
		t.Errorf("FunctionAt returned code that is not in the file")
	}
}

// TestDataSymbol names a mutex inside a global struct in .data and an
// address in the part of .bss that lives in the anonymous mapping.
func TestDataSymbol(t *testing.T) {
	tg, p := openTarget(t, "ledger.c", []string{"-O2", "-g"}, []string{"1"})
	bin := tg.cmd.Path
	f := tg.fields(t)

	name, ok := p.DataSymbol(f["lock"])
	if want := fmt.Sprintf("ledger+0x%x (ledger)", f["lock_off"]); !ok || name != want {
		t.Errorf("DataSymbol(&ledger.lock) = %q, %v; want %q", name, ok, want)
	}
	// The .bss address must really be in an anonymous mapping, or this
	// test checks nothing new.
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", tg.pid()))
	maps, _ := parseMaps(strings.NewReader(string(b)))
	anon := false
	for _, m := range maps {
		if f["bss"] >= m.start && f["bss"] < m.end {
			anon = m.path == "" && m.inode == 0
		}
	}
	if !anon {
		t.Fatalf("scratch[%d] at 0x%x is not in an anonymous mapping", f["bss_off"], f["bss"])
	}
	name, ok = p.DataSymbol(f["bss"])
	if want := fmt.Sprintf("scratch+0x%x (ledger)", f["bss_off"]); !ok || name != want {
		t.Errorf("DataSymbol(&scratch[%d]) = %q, %v; want %q", f["bss_off"], name, ok, want)
	}
	// A RELRO object: its page is mapped read-only at a file offset that
	// also lies in the read-only data segment, which a naive bias
	// computation confuses.
	relroAnon := true
	for _, m := range maps {
		if f["relro"] >= m.start && f["relro"] < m.end {
			relroAnon = !m.isFile() || m.perms != "r--p"
		}
	}
	if relroAnon {
		t.Errorf("account_names at 0x%x is not in a read-only file mapping; the RELRO case is not tested", f["relro"])
	}
	name, ok = p.DataSymbol(f["relro"])
	if want := "account_names+0x8 (ledger)"; !ok || name != want {
		t.Errorf("DataSymbol(&account_names[1]) = %q, %v; want %q", name, ok, want)
	}
	// Past the end of scratch but inside the object: no symbol.
	scratchV, scratchSize := nmValue(t, bin, "scratch", false)
	bias := biasOf(t, tg.pid(), bin)
	if name, ok := p.DataSymbol(bias + scratchV + scratchSize + 0x10000); ok {
		t.Errorf("DataSymbol past scratch = %q, true; want no symbol", name)
	}
	// Heap, stack and unmapped addresses have no name.
	for _, m := range maps {
		if m.path == "[heap]" || m.path == "[stack]" {
			if name, ok := p.DataSymbol(m.start + 16); ok || name != "" {
				t.Errorf("DataSymbol in %s = %q, %v; want nothing", m.path, name, ok)
			}
		}
	}
	if name, ok := p.DataSymbol(0x10); ok || name != "" {
		t.Errorf("DataSymbol(0x10) = %q, %v", name, ok)
	}
}

// addr2line runs binutils' addr2line -f -i on addrs (ELF virtual
// addresses) and returns, per address, its frames innermost first.
func addr2line(t *testing.T, bin string, addrs []uint64) [][]inlFrame {
	t.Helper()
	requireTool(t, "addr2line")
	args := []string{"-a", "-f", "-i", "-e", bin}
	for _, a := range addrs {
		args = append(args, fmt.Sprintf("0x%x", a))
	}
	out := run(t, "addr2line", args...)
	var res [][]inlFrame
	sc := bufio.NewScanner(strings.NewReader(out))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	for i := 0; i < len(lines); {
		if !strings.HasPrefix(lines[i], "0x") {
			t.Fatalf("addr2line output out of step at %q", lines[i])
		}
		i++
		var fr []inlFrame
		for i+1 < len(lines) && !strings.HasPrefix(lines[i], "0x") {
			fn := lines[i]
			pos := lines[i+1]
			if j := strings.Index(pos, " (discriminator"); j >= 0 {
				pos = pos[:j]
			}
			file, ln, _ := strings.Cut(pos, ":")
			n, _ := strconv.Atoi(ln)
			fr = append(fr, inlFrame{fn: fn, file: filepath.Base(file), line: n})
			i += 2
		}
		res = append(res, fr)
	}
	if len(res) != len(addrs) {
		t.Fatalf("addr2line gave %d answers for %d addresses", len(res), len(addrs))
	}
	return res
}

// TestInlineFramesMatchAddr2line compares the frames of every byte of two
// functions of an -O2 -g build (one with an always-inline callee) with
// binutils' addr2line -f -i.
func TestInlineFramesMatchAddr2line(t *testing.T) {
	tg, p := openTarget(t, "ledger.c", []string{"-O2", "-g"}, []string{"1"})
	bin := tg.cmd.Path
	bias := biasOf(t, tg.pid(), bin)
	var addrs []uint64
	for _, fn := range []string{"account_transfer", "teller"} {
		v, size := nmValue(t, bin, fn, false)
		for a := v; a < v+size; a++ {
			addrs = append(addrs, a)
		}
	}
	want := addr2line(t, bin, addrs)
	sawInline := false
	for i, a := range addrs {
		got := p.Frames(a+bias, true)
		if len(got) > 1 {
			sawInline = true
		}
		if len(got) != len(want[i]) {
			t.Errorf("0x%x: %d frames, addr2line %d:\n%s%v", a, len(got), len(want[i]), describe(got), want[i])
			continue
		}
		for j := range got {
			w := want[i][j]
			if got[j].Func != w.fn || filepath.Base(got[j].File) != w.file || got[j].Line != w.line || got[j].Inlined != (j < len(got)-1) {
				t.Errorf("0x%x frame %d: got %s %s:%d inlined=%v, addr2line %s %s:%d", a, j,
					got[j].Func, filepath.Base(got[j].File), got[j].Line, got[j].Inlined, w.fn, w.file, w.line)
			}
		}
	}
	if !sawInline {
		t.Errorf("no address showed the inlined audit(); the test lost its point")
	}
}

// TestSeparateDebugFile strips a binary, keeps its symbols and DWARF in a
// separate file and finds that file by build id and, for a binary without
// a build id, by .gnu_debuglink with its CRC.
func TestSeparateDebugFile(t *testing.T) {
	requireTool(t, "objcopy")
	dir := t.TempDir()
	cases := []struct {
		name  string
		flags []string
		place func(bin, dbgDir, debugFile string) string
	}{
		{"build-id", []string{"-Wl,--build-id"}, func(bin, dbgDir, dbg string) string {
			o, err := openObjectFile(bin, bin, newLimits())
			if err != nil || o.buildID == "" {
				t.Fatalf("no build id in %s: %v", bin, err)
			}
			defer o.close()
			return filepath.Join(dbgDir, ".build-id", o.buildID[:2], o.buildID[2:]+".debug")
		}},
		{"debuglink", []string{"-Wl,--build-id=none"}, func(bin, dbgDir, dbg string) string {
			return filepath.Join(dbgDir, filepath.Dir(bin), filepath.Base(dbg))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sub := filepath.Join(dir, c.name)
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			full := buildC(t, sub, "ledger.c", "ledger-full", append([]string{"-O2", "-g"}, c.flags...)...)
			dbg := filepath.Join(sub, "ledger.debug")
			bin := filepath.Join(sub, "ledger")
			run(t, "objcopy", "--only-keep-debug", full, dbg)
			run(t, "objcopy", "--strip-all", "--add-gnu-debuglink="+dbg, full, bin)
			dbgDir := filepath.Join(sub, "debug")
			dest := c.place(bin, dbgDir, dbg)
			if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dbg, dest); err != nil {
				t.Fatal(err)
			}
			tg := startTarget(t, bin, "1")
			teller := tg.fields(t)["teller"]

			// Without the debug directory the static function has no name.
			p0, err := Open(tg.pid(), Options{DebugDirs: []string{}})
			if err != nil {
				t.Fatal(err)
			}
			defer p0.Close()
			if fr := p0.Frames(teller+1, true); !strings.HasPrefix(fr[0].Func, "ledger+0x") {
				t.Errorf("without debug dirs teller+1 = %q, want ledger+0x…", fr[0].Func)
			}
			p, err := Open(tg.pid(), Options{DebugDirs: []string{dbgDir}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			fr := physical(p.Frames(teller+1, true))
			if fr[0].Func != "teller" || !strings.HasSuffix(fr[0].File, "ledger.c") || fr[0].Line == 0 {
				t.Errorf("with the debug file teller+1 = %s", describe(fr))
			}
			if name, ok := p.DataSymbol(tg.fields(t)["lock"]); !ok || !strings.HasPrefix(name, "ledger+0x") {
				t.Errorf("DataSymbol(&ledger.lock) with debug file = %q, %v", name, ok)
			}
		})
	}
}

// TestExe checks the executable's path and build id.
func TestExe(t *testing.T) {
	dir := t.TempDir()
	bin := buildC(t, dir, "ledger.c", "ledger", "-O2", "-Wl,--build-id")
	tg := startTarget(t, bin, "1")
	p, err := Open(tg.pid(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	path, id := p.Exe()
	o, err := openObjectFile(bin, bin, newLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	if path != bin || id == "" || id != o.buildID {
		t.Errorf("Exe() = %q, %q; want %q, %q", path, id, bin, o.buildID)
	}
}

// TestRefreshSeesDlopen loads a library after Open and checks that its
// addresses resolve after Refresh (and not before).
func TestRefreshSeesDlopen(t *testing.T) {
	tg, p := openTarget(t, "dlopen.c", []string{"-O2", "-ldl"}, nil)
	if _, err := fmt.Fprintln(tg.stdin, "load"); err != nil {
		t.Fatal(err)
	}
	line := waitLine(t, tg)
	addr, err := strconv.ParseUint(strings.TrimPrefix(line, "frexp="), 0, 64)
	if err != nil {
		t.Fatalf("bad line %q", line)
	}
	if fr := p.Frames(addr, true); fr[0].Func == "frexp" {
		t.Fatalf("frexp resolved before Refresh; the library was loaded already")
	}
	if err := p.Refresh(); err != nil {
		t.Fatal(err)
	}
	if fr := p.Frames(addr, true); fr[0].Func != "frexp" || !strings.HasPrefix(fr[0].Module, "libm.so") {
		t.Errorf("after Refresh: %s", describe(fr))
	}
}

func TestOpenMissingProcess(t *testing.T) {
	_, err := Open(1<<30, Options{})
	if err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Errorf("Open(missing) = %v, want an error wrapping ErrNoProcess", err)
	}
	if _, err := Open(-1, Options{}); err == nil {
		t.Errorf("Open(-1) succeeded")
	}
}

// TestUsableAfterExit opens a process, lets it exit and still resolves.
func TestUsableAfterExit(t *testing.T) {
	tg, p := openTarget(t, "ledger.c", []string{"-O2", "-g"}, []string{"1"})
	bin := tg.cmd.Path
	f := tg.fields(t)
	tg.cmd.Process.Kill()
	tg.cmd.Wait()
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if fr := p.Frames(f["teller"]+1, true); fr[0].Func != "teller" {
		t.Errorf("after exit and removal: %s", describe(fr))
	}
	if name, ok := p.DataSymbol(f["lock"]); !ok || !strings.HasPrefix(name, "ledger+") {
		t.Errorf("DataSymbol after exit = %q, %v", name, ok)
	}
	if err := p.Refresh(); err == nil {
		t.Errorf("Refresh of an exited process succeeded")
	}
}

// TestVDSO names an address in the vdso, which has no file: its image is
// copied out of the process's memory.
func TestVDSO(t *testing.T) {
	bin := buildC(t, t.TempDir(), "ledger.c", "ledger", "-O2")
	tg := startTarget(t, bin, "1")
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", tg.pid()))
	if err != nil {
		t.Fatal(err)
	}
	maps, _ := parseMaps(strings.NewReader(string(b)))
	var vdso *mapping
	for i := range maps {
		if maps[i].path == "[vdso]" {
			vdso = &maps[i]
		}
	}
	if vdso == nil {
		testbin.Skip(t, "no vdso mapped in the target")
	}
	img, err := readMem(fmt.Sprintf("/proc/%d/mem", tg.pid()), vdso.start, vdso.end-vdso.start)
	if err != nil {
		testbin.Skip(t, fmt.Sprintf("cannot read the target's memory: %v", err))
	}
	ef, err := elf.NewFile(strings.NewReader(string(img)))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	names := map[uint64][]string{}
	var target uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 2 {
			names[s.Value] = append(names[s.Value], s.Name)
			if strings.Contains(s.Name, "clock_gettime") {
				target = s.Value
			}
		}
	}
	if target == 0 {
		testbin.Skip(t, "the vdso exports no clock_gettime")
	}
	p, err := Open(tg.pid(), Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fr := p.Frames(vdso.start+target+1, true)
	last := fr[len(fr)-1]
	if !slices.Contains(names[target], last.Func) || last.Module != "[vdso]" {
		t.Errorf("vdso clock_gettime+1 = %s, want one of %q in [vdso]", describe(fr), names[target])
	}
}

// TestOpenFile symbolizes and extracts code from a binary on disk, with
// ELF virtual addresses (as "module+0xOFF" frames give them).
func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	full := buildC(t, dir, "ledger.c", "ledger", "-O2", "-g")
	stripped := filepath.Join(dir, "ledger-stripped")
	run(t, "strip", "--strip-all", "-o", stripped, full)
	v, size := nmValue(t, full, "teller", false)

	f, err := OpenFile(full, Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fn, code, ok := f.FunctionAt(v + 2)
	if !ok || fn.Name != "teller" || fn.Start != v || fn.End != v+size || len(code) != int(size) {
		t.Fatalf("FunctionAt(teller+2) = %+v, %d bytes, %v", fn, len(code), ok)
	}
	ef, err := elf.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	want := make([]byte, size)
	if _, err := text.ReadAt(want, int64(v-text.Addr)); err != nil {
		t.Fatal(err)
	}
	if string(code) != string(want) {
		t.Errorf("FunctionAt code differs from .text at 0x%x", v)
	}
	if fr := physical(f.Frames(v+2, true)); fr[0].Func != "teller" || fr[0].Line == 0 {
		t.Errorf("Frames(teller+2) = %s", describe(fr))
	}
	if f.BuildID() == "" {
		t.Errorf("no build id")
	}

	s, err := OpenFile(stripped, Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fr := s.Frames(v+2, true); fr[0].Func != fmt.Sprintf("ledger-stripped+0x%x", v+2) {
		t.Errorf("stripped Frames(teller+2) = %s", describe(fr))
	}
	if _, _, ok := s.FunctionAt(v + 2); ok {
		t.Errorf("stripped FunctionAt(teller+2) found a function")
	}
	if _, err := OpenFile(filepath.Join(dir, "missing"), Options{}); err == nil {
		t.Errorf("OpenFile(missing) succeeded")
	}
	if _, err := OpenFile(filepath.Join("testdata", "ledger.c"), Options{}); err == nil {
		t.Errorf("OpenFile(C source) succeeded")
	}
}

// TestSharedObjects opens two processes of one program through one
// ObjectCache: they share the program's object (one mapping, one set of
// tables), each still resolves its own addresses (PIE loads them at
// different bases), and the object stays usable until the last process
// that maps it is closed.
func TestSharedObjects(t *testing.T) {
	dir := t.TempDir()
	bin := buildC(t, dir, "ledger.c", "ledger", "-O2", "-g")
	cache := NewObjectCache()
	var procs []*Process
	var tellers []uint64
	for range 2 {
		tg := startTarget(t, bin, "1")
		p, err := Open(tg.pid(), Options{Objects: cache})
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
		tellers = append(tellers, tg.fields(t)["teller"])
	}
	a, b := procs[0].impl, procs[1].impl
	if a.exeObj == nil || a.exeObj != b.exeObj {
		t.Fatalf("the two processes' executables are %p and %p, want one shared object", a.exeObj, b.exeObj)
	}
	if a.mu != b.mu {
		t.Fatal("processes sharing objects do not share their lock")
	}
	shared := len(cache.objs)
	if shared == 0 {
		t.Fatal("the cache holds no object")
	}
	for i, p := range procs {
		if fr := p.Frames(tellers[i], true); fr[0].Func != "teller" {
			t.Errorf("process %d: Frames(teller) = %q, want teller", i, fr[0].Func)
		}
	}
	procs[0].Close()
	if fr := procs[1].Frames(tellers[1], true); fr[0].Func != "teller" {
		t.Errorf("after the first process closed: Frames(teller) = %q, want teller", fr[0].Func)
	}
	if len(cache.objs) != shared {
		t.Errorf("closing one of two processes left %d objects of %d", len(cache.objs), shared)
	}
	procs[1].Close()
	if len(cache.objs) != 0 {
		t.Errorf("%d objects left in the cache after every process closed", len(cache.objs))
	}
}

// ledgerDWARF starts the ledger program built with compressed DWARF and
// names its function teller, which parses the DWARF: it returns the
// object cache, the process, its executable's object, teller's address
// and frames.
func ledgerDWARF(t *testing.T) (*ObjectCache, *Process, *object, uint64, []recording.Frame) {
	t.Helper()
	dir := t.TempDir()
	bin := buildC(t, dir, "ledger.c", "ledger", "-O2", "-g", "-gz") // compressed: the parse inflates, and is charged
	cache := NewObjectCache()
	tg := startTarget(t, bin, "1")
	p, err := Open(tg.pid(), Options{Objects: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	teller := tg.fields(t)["teller"]
	first := p.Frames(teller, true)
	if first[0].Func != "teller" || first[0].Line == 0 {
		t.Fatalf("Frames(teller) = %+v, want teller with a line from DWARF", first)
	}
	o := p.impl.exeObj
	if o.dw == nil || o.dw.secs == nil {
		t.Fatal("the executable's DWARF was not loaded")
	}
	return cache, p, o, teller, first
}

// checkDropped calls drop (what names it), which must drop the
// executable's parsed DWARF and give back what its parse took of the
// budget; an address in the unit already loaded is then still named, with
// a line, without parsing it again.
func checkDropped(t *testing.T, what string, drop func() int, p *Process, o *object, teller uint64, first []recording.Frame) {
	t.Helper()
	left, spent := o.budget.left, o.dw.dataBudget.spent
	if spent == 0 {
		t.Fatal("parsing the compressed DWARF charged nothing to the budget")
	}
	if n := drop(); n != 1 || o.dw.secs != nil {
		t.Fatalf("%s dropped %d, executable's DWARF kept %v; want the executable's dropped", what, n, o.dw.secs != nil)
	}
	if o.budget.left != left+spent {
		t.Errorf("budget left %d after the drop, %d before, %d taken by the parse: want it all given back", o.budget.left, left, spent)
	}
	if what != "TrimDebugInfo" && o.mapped {
		// DropDebugInfo gives the mapped file's pages back too.
		if kb := residentKB(t, o.data); kb != 0 {
			t.Errorf("%s: %d kB of the executable's mapping still resident, want 0", what, kb)
		}
	}
	same := p.Frames(teller+1, true) // not cached, in a loaded unit
	if same[0].Func != "teller" || same[0].File != first[0].File || same[0].Line == 0 || o.dw.secs != nil {
		t.Errorf("after the drop: Frames(teller+1) = %+v, DWARF parsed again %v; want teller in %s with a line, from the loaded unit", same, o.dw.secs != nil, first[0].File)
	}
}

// The parsed DWARF behind an object's index, left unneeded for its idle
// time, is dropped and its budget given back; addresses in units already
// loaded are still named, with lines, without parsing it again; an address
// in a unit not loaded parses it again, and the next idle time is twice as
// long.
func TestTrimDebugInfo(t *testing.T) {
	cache, p, o, teller, first := ledgerDWARF(t)
	if n := cache.TrimDebugInfo(); n != 0 {
		t.Fatalf("DWARF needed just now was dropped (%d)", n)
	}
	o.dw.used = time.Now().Add(-dwarfIdleFirst)
	checkDropped(t, "TrimDebugInfo", cache.TrimDebugInfo, p, o, teller, first)
	clear(o.dw.units) // as if teller's unit had never been loaded
	again := p.Frames(teller+2, true)
	if again[0].Func != "teller" || again[0].File != first[0].File || again[0].Line == 0 {
		t.Errorf("Frames(teller+2) with no unit loaded = %+v, want teller in %s with a line", again, first[0].File)
	}
	if o.dw.secs == nil || o.dw.idle != 2*dwarfIdleFirst {
		t.Errorf("DWARF parsed again %v, next idle time %s; want parsed and %s", o.dw.secs != nil, o.dw.idle, 2*dwarfIdleFirst)
	}
}

// DropDebugInfo drops the parsed DWARF behind an object's index however
// recently it was used, its budget given back, for its first
// dwarfQuickParses parses; addresses in units already loaded are still
// named, with lines, without parsing it again; an address in a unit not
// loaded parses it again. Once parsed that many times it is kept while
// needed, and TrimDebugInfo drops it after its idle time, the next idle
// time twice as long.
func TestDropDebugInfo(t *testing.T) {
	cache, p, o, teller, first := ledgerDWARF(t)
	if n := cache.TrimDebugInfo(); n != 0 {
		t.Fatalf("TrimDebugInfo dropped DWARF needed just now (%d)", n)
	}
	checkDropped(t, "DropDebugInfo after the first parse", cache.DropDebugInfo, p, o, teller, first)
	// Each address below falls in a unit not loaded: every lookup
	// parses the DWARF again.
	for i := 2; i <= dwarfQuickParses; i++ {
		clear(o.dw.units)
		again := p.Frames(teller+uint64(i), true)
		if again[0].Func != "teller" || again[0].File != first[0].File || again[0].Line == 0 || o.dw.secs == nil {
			t.Fatalf("parse %d: Frames = %+v, DWARF parsed %v; want teller in %s with a line, parsed again", i, again, o.dw.secs != nil, first[0].File)
		}
		if n := cache.DropDebugInfo(); n != 1 {
			t.Fatalf("parse %d of %d: DropDebugInfo dropped %d, want the DWARF dropped at once", i, dwarfQuickParses, n)
		}
	}
	clear(o.dw.units)
	p.Frames(teller+dwarfQuickParses+1, true)
	if o.dw.secs == nil || o.dw.parses != dwarfQuickParses+1 {
		t.Fatalf("DWARF parsed %v, %d parses; want parsed, %d", o.dw.secs != nil, o.dw.parses, dwarfQuickParses+1)
	}
	if n := cache.DropDebugInfo(); n != 0 {
		t.Fatalf("after %d parses, DropDebugInfo dropped DWARF needed just now (%d)", o.dw.parses, n)
	}
	idle := o.dw.idle
	o.dw.used = time.Now().Add(-idle)
	if n := cache.TrimDebugInfo(); n != 1 || o.dw.secs != nil || o.dw.idle != 2*idle {
		t.Errorf("after its idle time %s: dropped %d, kept %v, next idle time %s; want dropped, %s", idle, n, o.dw.secs != nil, o.dw.idle, 2*idle)
	}
	if idle != dwarfIdleFirst {
		t.Errorf("idle time after the quick parses %s, want %s", idle, dwarfIdleFirst)
	}
}

// residentKB returns the resident size of the mapping of this process
// that starts at b, from /proc/self/smaps.
func residentKB(t *testing.T, b []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&b[0])))
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) > 0 && !strings.HasSuffix(f[0], ":") {
			// A mapping's header: "start-end perms offset dev inode path".
			in = strings.HasPrefix(line, start)
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			kb, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no mapping at %s in /proc/self/smaps", start)
	return 0
}
