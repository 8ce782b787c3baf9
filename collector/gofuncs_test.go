package collector

import (
	"bufio"
	"bytes"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

// TestFindGoFuncs finds the Go lock slow paths in a Go binary built by the
// installed toolchain, and in the same binary stripped of its symbol table
// (found through pclntab then), and checks each function's entry and RET
// offsets against the Go toolchain's own disassembler.
func TestFindGoFuncs(t *testing.T) {
	bin := testbin.Go(t, "fixtures/cmd/gofixture")
	stripped := testbin.Go(t, "fixtures/cmd/gofixture", "-ldflags=-s -w")
	want := objdumpRets(t, bin)
	got, err := findGoFuncs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if got.table != "symbol table" || len(got.missing) != 0 {
		t.Errorf("table %q, missing %q; want every function from the symbol table", got.table, got.missing)
	}
	var names []string
	for _, f := range got.funcs {
		names = append(names, f.Name)
		w, ok := want[f.Name]
		if !ok {
			t.Errorf("%s: not in go tool objdump's output", f.Name)
			continue
		}
		// The text segment's file offset and address differ by the
		// same amount for every function: 0x400000 in a Go executable.
		if off := w.entry - 0x400000; f.Offset != off {
			t.Errorf("%s: entry at file offset 0x%x, objdump puts it at 0x%x", f.Name, f.Offset, off)
		}
		if !slices.Equal(f.Rets, w.rets) {
			t.Errorf("%s: RET offsets %v, objdump %v", f.Name, f.Rets, w.rets)
		}
		if f.Entry == 0 || f.Entry != w.push {
			t.Errorf("%s: entry probe at +0x%x, want the frame pointer's PUSH, which objdump puts at +0x%x", f.Name, f.Entry, w.push)
		}
	}
	if wantNames := []string{"internal/sync.(*Mutex).lockSlow", "sync.runtime_SemacquireRWMutexR", "sync.runtime_SemacquireRWMutex"}; !slices.Equal(names, wantNames) {
		t.Errorf("found %q, want %q", names, wantNames)
	}
	// The park/wake probes: at the frame pointer's PUSH of queue and
	// releaseSudog, and semacquire1's return into each lock wrapper
	// listed with the wrapper's kind.
	if got.parkMissing != "" {
		t.Errorf("park/wake probes: %s", got.parkMissing)
	}
	for _, f := range []goFunc{got.park, got.wake} {
		if w := want[f.Name]; f.Entry != w.push || f.Offset != w.entry-0x400000 {
			t.Errorf("%s: probe at file offset 0x%x+0x%x, want 0x%x+0x%x", f.Name, f.Offset, f.Entry, w.entry-0x400000, w.push)
		}
	}
	for name, kind := range map[string]uint32{"internal/sync.runtime_SemacquireMutex": goSyncMutex, "sync.runtime_SemacquireRWMutexR": goSyncRLock, "sync.runtime_SemacquireRWMutex": goSyncWLock} {
		w := want[name]
		if w.semaRet == 0 || !slices.Contains(got.callers, goCaller{Off: w.semaRet - 0x400000, Kind: kind}) {
			t.Errorf("%s: semacquire1 returns to 0x%x, not among the callers %+v with kind %d", name, w.semaRet, got.callers, kind)
		}
	}

	fromPcln, err := findGoFuncs(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if fromPcln.table != "pclntab" {
		t.Errorf("stripped binary: functions found in the %s, want pclntab", fromPcln.table)
	}
	if len(fromPcln.funcs) != len(got.funcs) {
		t.Fatalf("stripped binary: %d functions, want %d", len(fromPcln.funcs), len(got.funcs))
	}
	for i, f := range fromPcln.funcs {
		// -s -w drops tables, not code: the functions are where they were.
		if g := got.funcs[i]; f.Name != g.Name || f.Offset != g.Offset || f.Entry != g.Entry || !slices.Equal(f.Rets, g.Rets) {
			t.Errorf("stripped binary: %+v, want %+v", f, g)
		}
	}
	if fromPcln.park.Offset != got.park.Offset || fromPcln.wake.Offset != got.wake.Offset || !slices.Equal(fromPcln.callers, got.callers) {
		t.Errorf("stripped binary: park %+v, wake %+v, callers %+v; want %+v, %+v, %+v", fromPcln.park, fromPcln.wake, fromPcln.callers, got.park, got.wake, got.callers)
	}
}

// TestFindGoFuncsRefuses checks that what cannot be probed is said: a C
// executable has neither a Go function table nor the functions, and a
// code fragment that does not decode is never given RET offsets.
func TestFindGoFuncsRefuses(t *testing.T) {
	c := testbin.C(t, "testdata/sleeper.c", "-O2")
	if _, err := findGoFuncs(c); err == nil || !strings.Contains(err.Error(), "none of Go's lock slow paths") {
		t.Errorf("C executable: err %v, want none of the functions found", err)
	}
	if _, err := findGoFuncs("/nonexistent/exe"); err == nil {
		t.Error("missing executable: no error")
	}
	// ret, then a REX prefix cut short; ret, then an invalid opcode.
	for _, code := range [][]byte{{0xc3, 0x48}, {0xc3, 0xd6}} {
		if insts, err := decodeAll(code); err == nil {
			t.Errorf("% x decoded: %v", code, insts)
		}
	}
	// push rbp; mov rbp, rsp; pop rbp; ret; nop; ret; int3; int3
	insts, err := decodeAll([]byte{0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3, 0x90, 0xc3, 0xcc, 0xcc})
	if rets := retOffsets(insts); err != nil || !slices.Equal(rets, []uint64{5, 7}) {
		t.Errorf("rets %v, err %v; want [5 7]", rets, err)
	}
	// A function that does something else before its PUSH is probed at
	// its first instruction: mov rax, rbx; push rbp.
	insts, err = decodeAll([]byte{0x48, 0x89, 0xd8, 0x55, 0xc3})
	if e := entryOffset(insts); err != nil || e != 0 {
		t.Errorf("entry +0x%x, err %v; want 0", e, err)
	}
}

// objFunc is a function as go tool objdump lists it.
type objFunc struct {
	entry, push uint64
	rets        []uint64
	// semaRet is the address after its call of runtime.semacquire1.
	semaRet uint64
}

// objdumpRets disassembles the lock slow paths, the park/wake probes'
// functions and the Mutex wrapper of bin with go tool objdump and returns
// each one's entry address, RET offsets and return from semacquire1.
func objdumpRets(t *testing.T, bin string) map[string]objFunc {
	t.Helper()
	out, err := exec.Command("go", "tool", "objdump", "-s", `^(internal/sync\.\(\*Mutex\)\.lockSlow|sync\.runtime_SemacquireRWMutexR?|internal/sync\.runtime_SemacquireMutex|runtime\.\(\*semaRoot\)\.queue|runtime\.releaseSudog)$`, bin).Output()
	if err != nil {
		t.Fatalf("go tool objdump: %v", err)
	}
	text := regexp.MustCompile(`^TEXT (\S+)\(SB\)`)
	inst := regexp.MustCompile(`^\s+\S+\s+0x([0-9a-f]+)\s+[0-9a-f]+\s+(\S+)`)
	funcs := map[string]objFunc{}
	var cur string
	afterSema := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := text.FindStringSubmatch(sc.Text()); m != nil {
			cur = m[1]
			continue
		}
		m := inst.FindStringSubmatch(sc.Text())
		if m == nil || cur == "" {
			continue
		}
		addr, _ := strconv.ParseUint(m[1], 16, 64)
		f := funcs[cur]
		if f.entry == 0 {
			f.entry = addr
		}
		if m[2] == "RET" {
			f.rets = append(f.rets, addr-f.entry)
		}
		if m[2] == "PUSHQ" && f.push == 0 && strings.Contains(sc.Text(), "PUSHQ BP") {
			f.push = addr - f.entry
		}
		if afterSema {
			f.semaRet = addr
		}
		afterSema = m[2] == "CALL" && strings.Contains(sc.Text(), "runtime.semacquire1(SB)")
		funcs[cur] = f
	}
	if len(funcs) != 6 {
		t.Fatalf("go tool objdump listed %d functions, want 6:\n%s", len(funcs), out)
	}
	return funcs
}
