package symbolize

import (
	"bufio"
	"os/exec"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readelfRegs maps readelf's column names to x86-64 DWARF register
// numbers.
var readelfRegs = map[string]int{
	"rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6, "rsp": 7,
	"r8": 8, "r9": 9, "r10": 10, "r11": 11, "r12": 12, "r13": 13, "r14": 14, "r15": 15,
	"ra": 16, "rip": 16,
}

var (
	readelfFDE = regexp.MustCompile(`^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)`)
	readelfRow = regexp.MustCompile(`^[0-9a-f]{16} `)
	// readelfRegRule joins "r9 (r9)", readelf's two-word form of a
	// register rule, into one field.
	readelfRegRule = regexp.MustCompile(`(r[0-9]+) \(([a-z0-9]+)\)`)
	readelfSec     = regexp.MustCompile(`^Contents of the (\.[a-z_]+) section`)
)

// libcPath returns the C library the toolchain links against.
func libcPath(t *testing.T) string {
	t.Helper()
	requireTool(t, "gcc")
	out, err := exec.Command("gcc", "-print-file-name=libc.so.6").Output()
	if err != nil {
		t.Fatalf("gcc -print-file-name: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// compareWithReadelf checks, for every row of every FDE that binutils'
// readelf --debug-dump=frames-interp prints for path, that the FDE is found
// for that pc and that the computed CFA rule and register rules match.
func compareWithReadelf(t *testing.T, path string) (rows int) {
	t.Helper()
	requireTool(t, "readelf")
	o, err := openObjectFile(path, path, newLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	var eh, df *cfiSection
	for _, s := range o.cfiSections() {
		if s.eh {
			eh = s
		} else {
			df = s
		}
	}
	cmd := exec.Command("readelf", "--debug-dump=frames-interp", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	var sec *cfiSection
	var fdeStart, fdeEnd uint64
	inFDE := false
	var cols []string
	errs := 0
	fail := func(format string, args ...any) {
		errs++
		if errs <= 20 {
			t.Errorf(format, args...)
		}
	}
	for sc.Scan() {
		line := sc.Text()
		if m := readelfSec.FindStringSubmatch(line); m != nil {
			switch m[1] {
			case ".eh_frame":
				sec = eh
			case ".debug_frame":
				sec = df
			default:
				sec = nil
			}
			inFDE = false
			continue
		}
		if m := readelfFDE.FindStringSubmatch(line); m != nil {
			fdeStart, _ = strconv.ParseUint(m[1], 16, 64)
			fdeEnd, _ = strconv.ParseUint(m[2], 16, 64)
			inFDE = true
			cols = nil
			continue
		}
		if strings.Contains(line, " CIE ") {
			inFDE = false
			continue
		}
		if f := strings.Fields(line); len(f) > 1 && f[0] == "LOC" {
			cols = f[1:]
			continue
		}
		if !inFDE || !readelfRow.MatchString(line) || cols == nil {
			continue
		}
		if sec == nil {
			t.Fatalf("%s: readelf shows FDEs in a section not loaded", path)
		}
		f := strings.Fields(readelfRegRule.ReplaceAllString(line, "$1($2)"))
		loc, _ := strconv.ParseUint(f[0], 16, 64)
		fde := sec.find(loc)
		if fde == nil || fde.start != fdeStart || fde.end != fdeEnd {
			fail("%s: pc 0x%x: FDE %v, readelf 0x%x..0x%x", path, loc, fde, fdeStart, fdeEnd)
			continue
		}
		row, ok := rowFor(fde, loc)
		if !ok {
			fail("%s: pc 0x%x: no row", path, loc)
			continue
		}
		rows++
		for i, c := range cols {
			if i+1 >= len(f) {
				break
			}
			v := f[i+1]
			if c == "CFA" {
				if got := describeCFA(row.cfa); got != v {
					fail("%s: pc 0x%x: CFA %s, readelf %s", path, loc, got, v)
				}
				continue
			}
			r, ok := readelfRegs[c]
			if !ok {
				continue
			}
			if got := describeRule(row.regs[r]); got != v {
				fail("%s: pc 0x%x: %s %s, readelf %s", path, loc, c, got, v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if errs > 20 {
		t.Errorf("%s: %d mismatches in all", path, errs)
	}
	return rows
}

// describeCFA and describeRule print rules the way readelf does.
func describeCFA(c cfaRule) string {
	if c.expr != nil {
		return "exp"
	}
	for name, n := range readelfRegs {
		if n == int(c.reg) && name != "ra" && name != "rip" {
			return name + sign(c.off)
		}
	}
	return "r" + strconv.Itoa(int(c.reg)) + sign(c.off)
}

func describeRule(r regRule) string {
	switch r.kind {
	case ruleUnspecified, ruleUndefined:
		return "u"
	case ruleSameValue:
		return "s"
	case ruleOffset:
		return "c" + sign(r.off)
	case ruleValOffset:
		return "v" + sign(r.off)
	case ruleExpr:
		return "exp"
	case ruleValExpr:
		return "vexp"
	case ruleRegister:
		for name, n := range readelfRegs {
			if n == int(r.reg) && name != "ra" && name != "rip" {
				return "r" + strconv.Itoa(n) + "(" + name + ")"
			}
		}
		return "r" + strconv.Itoa(int(r.reg))
	}
	return "?"
}

func sign(n int64) string {
	if n < 0 {
		return strconv.FormatInt(n, 10)
	}
	return "+" + strconv.FormatInt(n, 10)
}

// TestCFIMatchesReadelf compares every unwind row of glibc, a C program
// and a Go binary's .debug_frame with binutils' interpretation.
func TestCFIMatchesReadelf(t *testing.T) {
	dir := t.TempDir()
	paths := []string{
		libcPath(t),
		buildC(t, dir, "ledger.c", "ledger", "-O2", "-g"),
		buildGo(t, dir, "goprog"),
	}
	for _, p := range paths {
		n := compareWithReadelf(t, p)
		t.Logf("%s: %d rows compared", p, n)
		if n < 10 {
			t.Errorf("%s: only %d rows compared; readelf output not understood", p, n)
		}
	}
}

// TestPLTExpression evaluates the CFA expression GNU ld writes for .plt
// entries: CFA = rsp+8, plus 8 once the entry has pushed its index (at
// offset 11 and beyond in the 16-byte entry).
func TestPLTExpression(t *testing.T) {
	expr := []byte{
		0x77, 0x08, // DW_OP_breg7 (rsp) +8
		0x80, 0x00, // DW_OP_breg16 (rip) +0
		0x3f, // DW_OP_lit15
		0x1a, // DW_OP_and
		0x3b, // DW_OP_lit11
		0x2a, // DW_OP_ge
		0x33, // DW_OP_lit3
		0x24, // DW_OP_shl
		0x22, // DW_OP_plus
	}
	const sp = 0x7ffd0000
	for _, c := range []struct{ ip, want uint64 }{
		{0x401020, sp + 8},  // entry start: only the return address
		{0x40102a, sp + 8},  // offset 10: still before the push
		{0x40102b, sp + 16}, // offset 11: index pushed
		{0x40102f, sp + 16},
	} {
		var st frameState
		st.set(regSP, sp)
		st.set(regRA, c.ip)
		got, ok := evalExpr(expr, &st, func(uint64, int) (uint64, bool) { return 0, false })
		if !ok || got != c.want {
			t.Errorf("ip 0x%x: CFA 0x%x, %v; want 0x%x", c.ip, got, ok, c.want)
		}
	}
}

// TestEvalExprRejects checks that malformed or unsupported expressions fail
// instead of producing a value.
func TestEvalExprRejects(t *testing.T) {
	mem := func(uint64, int) (uint64, bool) { return 0, false }
	var st frameState
	st.set(regSP, 0x1000)
	for name, e := range map[string][]byte{
		"empty":            {},
		"pop empty":        {0x22},
		"unknown register": {0x73, 0x00}, // DW_OP_breg3: rbx unknown
		"deref outside":    {0x77, 0x00, 0x06},
		"endless loop":     {0x30, 0x2f, 0xfd, 0xff}, // lit0; skip -3
		"truncated":        {0x0c, 0x01},
		"bad op":           {0xff},
		"div by zero":      {0x31, 0x30, 0x1b},
		"reg op":           {0x57},
	} {
		if v, ok := evalExpr(e, &st, mem); ok {
			t.Errorf("%s: evaluated to 0x%x", name, v)
		}
	}
}

// TestGlibcCFICoverage checks that the functions on glibc's lock-wait path
// have unwind information, and logs every glibc function that has none
// (with the debug file's symbols when installed): those are where a walk
// falls back to frame pointers.
func TestGlibcCFICoverage(t *testing.T) {
	path := libcPath(t)
	o, err := openObjectFile(path, path, newLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	if o.dbg = findDebugFile(o, "/", []string{defaultDebugDir}); o.dbg == nil {
		t.Log("no glibc debug file: checking exported functions only")
	}
	o.loadSymbols()
	var missing []string
	covered := map[string]bool{}
	for i := range o.funcs.syms {
		s := &o.funcs.syms[i]
		name := o.funcs.name(s)
		_, _, ok := o.cfiAt(s.addr)
		covered[name] = ok
		if !ok {
			missing = append(missing, name)
		}
	}
	for _, name := range []string{"pthread_mutex_lock", "__lll_lock_wait", "__lll_lock_wait_private", "start_thread", "pthread_cond_wait"} {
		if ok, known := covered[name]; known && !ok {
			t.Errorf("%s has no CFI", name)
		}
	}
	t.Logf("%d of %d glibc functions have no CFI: %s", len(missing), len(o.funcs.syms), strings.Join(missing, " "))
}

// TestCFIRowCacheAgrees looks up the unwind row at pcs across glibc
// (every 16th byte of each exported function) through the cache, twice,
// and checks each answer against the FDE program run afresh. More pcs than
// rowCacheMax pass through it, so the cache starts over on the way and
// holds no more than its bound.
func TestCFIRowCacheAgrees(t *testing.T) {
	path := libcPath(t)
	o, err := openObjectFile(path, path, newLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	o.loadSymbols()
	var pcs []uint64
	for i := range o.funcs.syms {
		s := &o.funcs.syms[i]
		for pc := s.addr; pc < s.end; pc += 16 {
			pcs = append(pcs, pc)
		}
	}
	if len(pcs) <= rowCacheMax {
		t.Fatalf("only %d pcs in %s: the cache's bound is not reached", len(pcs), path)
	}
	withRow := 0
	for pass := 0; pass < 2; pass++ {
		for _, pc := range pcs {
			row, sig, ok := o.cfiAt(pc)
			want, wantSig, wantOK := o.cfiLookup(pc)
			if ok != wantOK || sig != wantSig || (ok && !reflect.DeepEqual(row, want)) {
				t.Fatalf("pass %d, pc 0x%x: cached (%v, %v) differs from a fresh lookup (%v, %v)", pass, pc, ok, sig, wantOK, wantSig)
			}
			if ok && pass == 0 {
				withRow++
			}
			if n, r := len(o.rows.byPC), len(o.rows.pool); n > rowCacheMax || r > rowPoolMax {
				t.Fatalf("cache holds %d pcs and %d rows, over its bounds %d and %d", n, r, rowCacheMax, rowPoolMax)
			}
		}
	}
	if withRow < len(pcs)/2 {
		t.Fatalf("only %d of %d glibc pcs have a row", withRow, len(pcs))
	}
	t.Logf("%d distinct rows for %d pcs held", len(o.rows.pool), len(o.rows.byPC))
	if len(o.rows.pool) >= len(o.rows.byPC) {
		t.Errorf("%d distinct rows for %d pcs: rows are not shared", len(o.rows.pool), len(o.rows.byPC))
	}
}
