package symbolize

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/contend-dev/contend/recording"
)

// goSite is what testdata/goprog prints: a return address inside
// main.outer, in code inlined from main.mid2 through main.middle, and the
// Go runtime's own expansion of the stack from there.
type goSite struct {
	PC     uint64 `json:"pc"`
	Frames []struct {
		Func string `json:"func"`
		File string `json:"file"`
		Line int    `json:"line"`
	} `json:"frames"`
}

var goBuilds = []struct {
	name  string
	flags []string
	dwarf bool
}{
	{"default", nil, true},
	{"stripped", []string{"-ldflags=-s -w"}, false},
	{"pie-stripped", []string{"-buildmode=pie", "-ldflags=-s -w"}, false},
}

// TestGoFrames compares symbolization of a Go return address with the Go
// runtime's answer for the same address: with DWARF the inlined frames are
// expanded and every function, file and line matches; without DWARF there
// is one frame, the physical function, with the pclntab's (innermost)
// position.
func TestGoFrames(t *testing.T) {
	dir := t.TempDir()
	for _, b := range goBuilds {
		t.Run(b.name, func(t *testing.T) {
			bin := buildGo(t, dir, "goprog-"+b.name, b.flags...)
			tg := startTarget(t, bin)
			var site goSite
			if err := json.Unmarshal([]byte(tg.first), &site); err != nil {
				t.Fatalf("parse %q: %v", tg.first, err)
			}
			// The runtime's frames for the physical pc end at main.outer.
			k := slices.IndexFunc(site.Frames, func(f struct {
				Func string `json:"func"`
				File string `json:"file"`
				Line int    `json:"line"`
			}) bool {
				return f.Func == "main.outer"
			})
			if k < 2 {
				t.Fatalf("runtime frames do not show main.outer with two inlined callees: %+v", site.Frames)
			}
			p, err := Open(tg.pid(), Options{DebugDirs: []string{}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			got := p.Frames(site.PC, false)
			var want []recording.Frame
			if b.dwarf {
				for i, f := range site.Frames[:k+1] {
					want = append(want, recording.Frame{Func: f.Func, File: f.File, Line: f.Line, Inlined: i < k})
				}
			} else {
				want = []recording.Frame{{Func: "main.outer", File: site.Frames[0].File, Line: site.Frames[0].Line}}
			}
			if len(got) != len(want) {
				t.Fatalf("got\n%swant\n%s", describe(got), describe(want))
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.Func != w.Func || g.File != w.File || g.Line != w.Line || g.Inlined != w.Inlined || g.Addr != site.PC {
					t.Errorf("frame %d: got %+v, want %+v", i, g, w)
				}
			}
			fn, code, ok := p.FunctionAt(site.PC)
			if !ok || fn.Name != "main.outer" || fn.Start > site.PC || fn.End <= site.PC || len(code) != int(fn.End-fn.Start) {
				t.Errorf("FunctionAt = %+v (%d bytes), %v", fn, len(code), ok)
			}
		})
	}
}

// TestUnwindGoThread unwinds an idle Go thread parked in futex(2): the Go
// binary has no .eh_frame (and, stripped, no .debug_frame either), so the
// walk relies on the pclntab's stack-pointer table.
func TestUnwindGoThread(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	for _, b := range goBuilds {
		t.Run(b.name, func(t *testing.T) {
			bin := buildGo(t, dir, "goprog-"+b.name, b.flags...)
			tg := startTarget(t, bin)
			c := captureBlocked(t, tg.pid(), 0)
			_, st, complete := unwindCaptured(t, tg.pid(), Options{DebugDirs: []string{}}, c)
			ph := physical(st.Frames)
			// Idle Ms sleep in notesleep; sysmon in notetsleep; an M
			// waiting for a runtime lock (Go 1.24's spinbit mutex, e.g.
			// in exitsyscall: lock2) in semasleep, as a CI run caught one.
			want := [][]string{{"runtime.futex"}, {"runtime.futexsleep"}, {"runtime.notesleep", "runtime.notetsleep_internal", "runtime.semasleep"}}
			if len(ph) < len(want) {
				t.Fatalf("only %d frames", len(ph))
			}
			for i, w := range want {
				if !slices.Contains(w, ph[i].Func) {
					t.Errorf("frame %d = %q, want one of %q", i, ph[i].Func, w)
				}
			}
			// An idle M's g0 stack ends where it was entered: in
			// runtime.mstart (a top frame: complete) or at the stack switch
			// runtime.mcall (the frames beyond are on another stack).
			last := ph[len(ph)-1].Func
			switch {
			case last == "runtime.mstart" && complete:
			case last == "runtime.mcall" && !complete:
			default:
				t.Errorf("walk ended at %q (complete=%v), want runtime.mstart (complete) or runtime.mcall (incomplete)", last, complete)
			}
		})
	}
}

// TestGoDataSymbol names a Go global through .symtab.
func TestGoDataSymbol(t *testing.T) {
	dir := t.TempDir()
	bin := buildGo(t, dir, "goprog")
	tg := startTarget(t, bin)
	p, err := Open(tg.pid(), Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	v, _ := nmValue(t, bin, "runtime.sched", false)
	bias := biasOf(t, tg.pid(), bin)
	name, ok := p.DataSymbol(bias + v + 8)
	if want := fmt.Sprintf("runtime.sched+0x8 (%s)", "goprog"); !ok || name != want {
		t.Errorf("DataSymbol(&runtime.sched+8) = %q, %v; want %q", name, ok, want)
	}
}

func TestLegacyCountFits(t *testing.T) {
	header := func(order binary.ByteOrder, magic uint32, ptr byte, nfunc uint64, size int) []byte {
		b := make([]byte, size)
		order.PutUint32(b, magic)
		b[6], b[7] = 1, ptr
		if ptr == 4 {
			order.PutUint32(b[8:], uint32(nfunc))
		} else {
			order.PutUint64(b[8:], nfunc)
		}
		return b
	}
	cases := []struct {
		name string
		data []byte
		want bool
	}{
		{"go1.16, 8 functions in 4 KB", header(binary.LittleEndian, go116magic, 8, 8, 4096), true},
		{"go1.2 32-bit, big-endian", header(binary.BigEndian, go12magic, 4, 100, 4096), true},
		{"as many functions as 8-byte entries", header(binary.LittleEndian, go12magic, 8, 512, 4096), true},
		{"one function more than the bytes hold", header(binary.LittleEndian, go12magic, 8, 513, 4096), false},
		{"big-endian go1.20 asking for 77 GB", header(binary.BigEndian, go120magic, 8, 1<<33, 64), false},
		{"pointer size 2", header(binary.LittleEndian, go116magic, 2, 1, 4096), false},
		{"no known magic", header(binary.LittleEndian, 0x12345678, 8, 1, 4096), false},
		{"shorter than a header", header(binary.LittleEndian, go116magic, 4, 0, 12), false},
	}
	for _, c := range cases {
		if got := legacyCountFits(c.data); got != c.want {
			t.Errorf("%s: legacyCountFits = %v, want %v", c.name, got, c.want)
		}
	}
}
