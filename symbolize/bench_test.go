package symbolize

import (
	"debug/elf"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"
)

// benchAddrs is how many addresses one benchmark pass symbolizes: the
// figure the collector must handle well under a second.
const benchAddrs = 100_000

// funcAddrs draws n addresses inside the functions of p's executable
// mappings, with the sorted function starts (the baseline's table).
func funcAddrs(b *testing.B, p *Process, n int) (addrs, starts []uint64) {
	b.Helper()
	p.impl.mu.Lock()
	defer p.impl.mu.Unlock()
	type fn struct{ lo, hi uint64 }
	var fns []fn
	seen := map[*object]bool{}
	for _, r := range p.impl.regions {
		if !r.exec || r.obj == nil || seen[r.obj] {
			continue
		}
		seen[r.obj] = true
		o := r.obj
		if t := o.pcln(); t != nil && t.legacy == nil {
			for i := 0; i < t.nfunc; i++ {
				e, _ := t.ftab(i)
				nx, _ := t.ftab(i + 1)
				if nx > e {
					fns = append(fns, fn{r.bias + t.textStart + uint64(e), r.bias + t.textStart + uint64(nx)})
				}
			}
		}
		o.loadSymbols()
		for _, s := range o.funcs.syms {
			fns = append(fns, fn{r.bias + s.addr, r.bias + s.end})
		}
	}
	if len(fns) == 0 {
		b.Fatal("no functions")
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < n; i++ {
		f := fns[rng.Intn(len(fns))]
		addrs = append(addrs, f.lo+uint64(rng.Int63n(int64(f.hi-f.lo))))
	}
	for _, f := range fns {
		starts = append(starts, f.lo)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	return addrs, starts
}

// searchBaseline is the floor of any symbolizer: one binary search per
// address in a sorted table of function starts.
func searchBaseline(addrs, starts []uint64) int {
	hits := 0
	for _, a := range addrs {
		if sort.Search(len(starts), func(i int) bool { return starts[i] > a }) > 0 {
			hits++
		}
	}
	return hits
}

// benchTarget opens a process with a large Go binary (this test binary)
// and, when gcc is present, a C program with glibc, debug files included.
func benchTargets(b *testing.B) map[string]int {
	out := map[string]int{"self-go": os.Getpid()}
	if _, err := os.Stat("/usr/bin/gcc"); err == nil {
		bin := buildC(b, b.TempDir(), "ledger.c", "ledger", "-O2", "-g")
		tg := startTarget(b, bin, "2")
		out["ledger-glibc"] = tg.pid()
	}
	return out
}

// BenchmarkSymbolize symbolizes 100k distinct addresses with a fresh
// Process (cold: tables parsed, no cache) and again (warm: cached), and
// reports both per address and as a ratio to a bare binary search over the
// same addresses, timed in the same iteration.
func BenchmarkSymbolize(b *testing.B) {
	for name, pid := range benchTargets(b) {
		b.Run(name, func(b *testing.B) {
			p0, err := Open(pid, Options{})
			if err != nil {
				b.Fatal(err)
			}
			addrs, starts := funcAddrs(b, p0, benchAddrs)
			p0.Close()
			var cold, warm, base time.Duration
			var heap uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				searchBaseline(addrs, starts)
				t1 := time.Now()
				p, err := Open(pid, Options{})
				if err != nil {
					b.Fatal(err)
				}
				for _, a := range addrs {
					p.Frames(a, true)
				}
				t2 := time.Now()
				for _, a := range addrs {
					p.Frames(a, true)
				}
				t3 := time.Now()
				if i == 0 {
					b.StopTimer()
					h := heapInUse()
					p.Close()
					heap = h - min(h, heapInUse())
					b.StartTimer()
				} else {
					p.Close()
				}
				base += t1.Sub(t0)
				cold += t2.Sub(t1)
				warm += t3.Sub(t2)
			}
			n := float64(b.N * len(addrs))
			b.ReportMetric(float64(cold.Nanoseconds())/n, "cold-ns/addr")
			b.ReportMetric(float64(warm.Nanoseconds())/n, "warm-ns/addr")
			b.ReportMetric(float64(cold)/float64(base), "cold/search")
			b.ReportMetric(float64(warm)/float64(base), "warm/search")
			b.ReportMetric(float64(cold.Milliseconds())/float64(b.N), "ms/100k-cold")
			b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
		})
	}
}

// BenchmarkUnwind unwinds a real blocked glibc thread's stack copy
// (captured once with ptrace) with CFI, against the frame-pointer walk of
// the same window as the baseline.
func BenchmarkUnwind(b *testing.B) {
	requireRoot(b)
	bin := buildC(b, b.TempDir(), "ledger.c", "ledger", "-O2", "-g")
	tg := startTarget(b, bin, "4")
	c := captureBlocked(b, tg.pid(), tg.fields(b)["lock"])
	p, err := Open(tg.pid(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	pcs, _ := p.Unwind(c.regs, c.window)
	var cfi, fp time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		p.impl.unwindWith(c.regs, c.window, methodFramePointer)
		t1 := time.Now()
		p.Unwind(c.regs, c.window)
		t2 := time.Now()
		fp += t1.Sub(t0)
		cfi += t2.Sub(t1)
	}
	b.ReportMetric(float64(cfi.Nanoseconds())/float64(b.N), "cfi-ns/stack")
	b.ReportMetric(float64(len(pcs)), "frames")
	b.ReportMetric(float64(cfi)/float64(fp), "cfi/fp")
}

// largeObjects returns a big C++ shared library (libLLVM when installed)
// and a big Go binary with DWARF (the go command, built for the test).
func largeObjects(b *testing.B) map[string]string {
	out := map[string]string{}
	for _, pat := range []string{"/usr/lib/x86_64-linux-gnu/libLLVM*.so.1", "/usr/lib/x86_64-linux-gnu/libLLVM*.so"} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			sort.Strings(m)
			out["cxx-library"] = m[len(m)-1]
			break
		}
	}
	gocmd := filepath.Join(b.TempDir(), "go")
	run(b, filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", gocmd, "cmd/go")
	out["go-binary"] = gocmd
	return out
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkLargeObject loads the symbol, unwind and line tables of a large
// object and looks up 100k addresses in it. It reports the heap the tables
// keep, against the heap debug/elf's Symbols and DynamicSymbols keep for
// the same object (the baseline, measured in the same iteration), and the
// cost per address (symbol, inline frames and CFI row).
func BenchmarkLargeObject(b *testing.B) {
	for name, path := range largeObjects(b) {
		b.Run(name, func(b *testing.B) {
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("object: %s (%d MiB)", path, st.Size()>>20)
			for i := 0; i < b.N; i++ {
				benchLargeObject(b, path)
			}
		})
	}
}

func benchLargeObject(b *testing.B, path string) {
	h0 := heapInUse()
	ef, err := elf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	ds, _ := ef.DynamicSymbols()
	ss, _ := ef.Symbols()
	h1 := heapInUse()
	baseline := h1 - min(h1, h0)
	runtime.KeepAlive(ds)
	runtime.KeepAlive(ss)
	ef.Close()
	ds, ss = nil, nil

	h2 := heapInUse()
	o, err := openObjectFile(path, path, newLimits())
	if err != nil {
		b.Fatal(err)
	}
	defer o.close()
	o.loadSymbols()
	o.cfiSections()
	t := o.pcln()
	h3 := heapInUse()
	tables := h3 - min(h3, h2)

	type fn struct{ lo, hi uint64 }
	var fns []fn
	for _, s := range o.funcs.syms {
		fns = append(fns, fn{s.addr, s.end})
	}
	if t != nil && t.legacy == nil {
		for i := 0; i < t.nfunc; i++ {
			e, _ := t.ftab(i)
			nx, _ := t.ftab(i + 1)
			if nx > e {
				fns = append(fns, fn{t.textStart + uint64(e), t.textStart + uint64(nx)})
			}
		}
	}
	if len(fns) == 0 {
		b.Fatalf("%s: no functions", path)
	}
	rng := rand.New(rand.NewSource(2))
	addrs := make([]uint64, benchAddrs)
	for j := range addrs {
		f := fns[rng.Intn(len(fns))]
		addrs[j] = f.lo + uint64(rng.Int63n(int64(f.hi-f.lo)))
	}
	t0 := time.Now()
	found := 0
	for _, a := range addrs {
		if len(o.codeFrames(a)) > 0 {
			found++
		}
		o.cfiAt(a)
	}
	el := time.Since(t0)
	h4 := heapInUse()
	b.ReportMetric(float64(tables)/(1<<20), "tables-MiB")
	b.ReportMetric(float64(tables)/float64(max(baseline, 1)), "tables/debug-elf")
	b.ReportMetric(float64(h4-min(h4, h2))/(1<<20), "after-lookups-MiB")
	b.ReportMetric(float64(el.Nanoseconds())/float64(len(addrs)), "ns/addr")
	b.ReportMetric(float64(len(o.funcs.syms)+len(o.objs.syms)), "symbols")
	if found < len(addrs) {
		b.Fatalf("only %d of %d addresses named", found, len(addrs))
	}
}

// BenchmarkOpenKernel reads this machine's /proc/kallsyms: what every
// start of contend pays, and the memory that it leaves behind as garbage.
func BenchmarkOpenKernel(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		k, err := OpenKernel("")
		if errors.Is(err, ErrKallsymsHidden) {
			b.Skip("kernel addresses are hidden (kptr_restrict)")
		}
		if err != nil {
			b.Fatal(err)
		}
		if len(k.syms) == 0 {
			b.Fatal("no symbols")
		}
	}
}
