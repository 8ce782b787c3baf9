package symbolize

import (
	"encoding/binary"
	"math/rand"
	"os"
	"sync"
	"testing"
)

var (
	selfOnce sync.Once
	selfProc *Process
	selfErr  error
)

// self opens this test process once for the fuzz targets.
func self(t testing.TB) *Process {
	selfOnce.Do(func() { selfProc, selfErr = Open(os.Getpid(), Options{DebugDirs: []string{}}) })
	if selfErr != nil {
		t.Fatal(selfErr)
	}
	return selfProc
}

// execRanges lists the executable regions of p.
func execRanges(p *Process) [][2]uint64 {
	p.impl.mu.Lock()
	defer p.impl.mu.Unlock()
	var out [][2]uint64
	for _, r := range p.impl.regions {
		if r.exec {
			out = append(out, [2]uint64{r.start, r.end})
		}
	}
	return out
}

// checkUnwind runs Unwind and Stack and checks what must hold for any
// input: no panic, the first pc is IP, the depth bound holds, every pc
// gets at least one frame.
func checkUnwind(t testing.TB, p *Process, r Regs, w []byte) {
	pcs, _ := p.Unwind(r, w)
	if len(pcs) == 0 || pcs[0] != r.IP || len(pcs) > MaxDepth {
		t.Fatalf("Unwind(%+v, %d bytes) = %d pcs, first %v", r, len(w), len(pcs), pcs)
	}
	st := p.Stack(pcs)
	if len(st.Frames) < len(pcs) {
		t.Fatalf("Stack(%d pcs) = %d frames", len(pcs), len(st.Frames))
	}
	for _, f := range st.Frames {
		if f.Func == "" {
			t.Fatalf("empty frame name for 0x%x", f.Addr)
		}
	}
}

// randomWindow fills a window with a mix of random words, pointers into
// the window itself (plausible saved frame pointers and CFAs) and
// addresses inside executable regions (plausible return addresses).
func randomWindow(rng *rand.Rand, sp uint64, n int, code [][2]uint64) []byte {
	w := make([]byte, n&^7)
	for off := 0; off+8 <= len(w); off += 8 {
		var v uint64
		switch rng.Intn(4) {
		case 0:
			v = rng.Uint64()
		case 1:
			v = sp + uint64(rng.Intn(n+64))
		default:
			if len(code) > 0 {
				c := code[rng.Intn(len(code))]
				v = c[0] + uint64(rng.Int63n(int64(c[1]-c[0])))
			}
		}
		binary.LittleEndian.PutUint64(w[off:], v)
	}
	return w
}

// TestUnwindRandomWindows feeds thousands of random register sets and
// windows, made to look like stacks, to the unwinder over this process
// (Go) and over a C program (glibc, .eh_frame): none may panic or break the
// invariants.
func TestUnwindRandomWindows(t *testing.T) {
	t.Run("go", func(t *testing.T) { unwindRandomWindows(t, self(t)) })
	t.Run("c", func(t *testing.T) {
		// buildC fails without gcc under CI and skips elsewhere.
		bin := buildC(t, t.TempDir(), "ledger.c", "ledger", "-O2", "-g")
		tg := startTarget(t, bin, "2")
		p, err := Open(tg.pid(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		unwindRandomWindows(t, p)
	})
}

// unwindRandomWindows unwinds thousands of random register sets and
// windows over p and checks the invariants of every result.
func unwindRandomWindows(t *testing.T, p *Process) {
	rng := rand.New(rand.NewSource(1))
	code := execRanges(p)
	for i := 0; i < 5000; i++ {
		sp := 0x7ffc00000000 + uint64(rng.Intn(1<<20))&^7
		n := rng.Intn(4096)
		c := code[rng.Intn(len(code))]
		r := Regs{
			IP: c[0] + uint64(rng.Int63n(int64(c[1]-c[0]))),
			SP: sp,
			BP: sp + uint64(rng.Intn(n+16)),
		}
		switch rng.Intn(8) {
		case 0:
			r.IP = rng.Uint64()
		case 1:
			r.BP = rng.Uint64()
		case 2:
			r.SP = ^uint64(0) - uint64(rng.Intn(64))
		}
		checkUnwind(t, p, r, randomWindow(rng, r.SP, n, code))
		// Random addresses never lose a frame either.
		if fr := p.Frames(rng.Uint64(), rng.Intn(2) == 0); len(fr) == 0 {
			t.Fatal("no frame for a random address")
		}
		p.DataSymbol(rng.Uint64())
		p.FunctionAt(r.IP)
	}
}

func FuzzUnwind(f *testing.F) {
	f.Add(uint64(0), uint64(0x7ffc0000), uint64(0x7ffc0010), []byte{})
	f.Add(uint64(1234), uint64(0x7ffc0000), uint64(0), make([]byte, 64))
	f.Add(uint64(99), ^uint64(0)-8, ^uint64(0), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, ipSel, sp, bp uint64, w []byte) {
		p := self(t)
		code := execRanges(p)
		// Map the selector into code most of the time, so the rules of
		// real functions are exercised.
		ip := ipSel
		if ipSel%4 != 0 && len(code) > 0 {
			c := code[int(ipSel/4)%len(code)]
			ip = c[0] + (ipSel/4)%(c[1]-c[0])
		}
		checkUnwind(t, p, Regs{IP: ip, SP: sp, BP: bp}, w)
	})
}

func FuzzCFISection(f *testing.F) {
	// A CIE and an FDE as GCC writes them, as the seed.
	f.Add([]byte{
		0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0,
		0x14, 0, 0, 0, 0x1c, 0, 0, 0, 0xe0, 0xff, 0xff, 0xff, 0x10, 0, 0, 0, 0, 0x41, 0x0e, 0x10, 0, 0,
	}, uint64(0x10))
	f.Fuzz(func(t *testing.T, data []byte, pc uint64) {
		for _, eh := range []bool{true, false} {
			s := &cfiSection{data: data, eh: eh, cies: map[uint64]*cie{}}
			s.buildIndex()
			for _, probe := range []uint64{pc, pc + 1, 0} {
				if fd := s.find(probe); fd != nil {
					rowFor(fd, probe)
				}
			}
			for _, r := range s.index {
				if fd, _, ok := s.parseEntry(r.off); ok && fd != nil {
					rowFor(fd, r.start+pc%max(r.end-r.start, 1))
				}
			}
		}
	})
}

func FuzzEvalExpr(f *testing.F) {
	f.Add([]byte{0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22})
	f.Add([]byte{0x77, 0xa0, 0x01, 0x06})
	f.Fuzz(func(t *testing.T, expr []byte) {
		var st frameState
		st.set(regSP, 0x1000)
		st.set(regBP, 0x1010)
		st.set(regRA, 0x400000)
		w := &window{base: 0x1000, b: make([]byte, 64)}
		evalExpr(expr, &st, w.read, 0x1008)
	})
}

func FuzzParseMapsLine(f *testing.F) {
	f.Add("55afb5461000-55afb5462000 r--p 00000000 fe:00 9982386   /tmp/ledger")
	f.Add("7ffc1a3f2000-7ffc1a3f4000 r-xp 00000000 00:00 0  [vdso]")
	f.Fuzz(func(t *testing.T, line string) {
		m, err := parseMapsLine(line)
		if err == nil && m.end < m.start {
			t.Fatalf("accepted end < start: %q", line)
		}
	})
}

// TestConcurrentUse calls a fresh Process from several goroutines at once
// (run with -race): lazy table loading must be safe.
func TestConcurrentUse(t *testing.T) {
	p, err := Open(os.Getpid(), Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	code := execRanges(p)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for i := 0; i < 500; i++ {
				c := code[rng.Intn(len(code))]
				pc := c[0] + uint64(rng.Int63n(int64(c[1]-c[0])))
				p.Stack([]uint64{pc, pc + 1})
				p.Unwind(Regs{IP: pc, SP: 0x1000}, randomWindow(rng, 0x1000, 256, code))
				p.DataSymbol(pc)
				p.FunctionAt(pc)
			}
		}(int64(g))
	}
	wg.Wait()
}
