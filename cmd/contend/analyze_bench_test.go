package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// benchSamples is the size of the generated profile: 100k distinct
// stacks, far more than the block or mutex profile of a busy service
// holds, so the comparison measures the tools, not process start-up.
const benchSamples = 100_000

// largeProfile builds a block profile of n distinct stacks shaped like a
// large Go service's: 12–40 frames deep, a server loop at the root,
// handlers and library code in the middle, and a mix of mutex waits,
// channel operations, selects and condition-variable waits at the leaf.
func largeProfile(n int) *profile.Profile {
	rng := rand.New(rand.NewPCG(1, 2))
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "contentions", Unit: "count"},
		Period:     1,
		Mapping:    []*profile.Mapping{{ID: 1, Start: 0x400000, Limit: 0x4000000, File: "/usr/local/bin/service", HasFunctions: true, HasFilenames: true, HasLineNumbers: true}},
	}
	funcs := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	loc := func(name, file string, line int) *profile.Location {
		key := fmt.Sprintf("%s:%d", name, line)
		if l := locs[key]; l != nil {
			return l
		}
		f := funcs[name]
		if f == nil {
			f = &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: file}
			funcs[name] = f
			p.Function = append(p.Function, f)
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: p.Mapping[0], Address: 0x400000 + uint64(len(p.Location))*16, Line: []profile.Line{{Function: f, Line: int64(line)}}}
		locs[key] = l
		p.Location = append(p.Location, l)
		return l
	}
	type fn struct{ name, file string }
	var user []fn
	for pkg := range 60 {
		for typ := range 20 {
			for m := range 10 {
				user = append(user, fn{
					name: fmt.Sprintf("github.com/acme/service/internal/pkg%02d.(*Type%02d).Method%d", pkg, typ, m),
					file: fmt.Sprintf("/src/service/internal/pkg%02d/type%02d.go", pkg, typ),
				})
			}
		}
	}
	leaves := [][]fn{
		{{"sync.(*Mutex).Lock", "/usr/local/go/src/sync/mutex.go"}},
		{{"sync.(*RWMutex).RLock", "/usr/local/go/src/sync/rwmutex.go"}},
		{{"runtime.selectgo", "/usr/local/go/src/runtime/select.go"}},
		{{"runtime.chanrecv1", "/usr/local/go/src/runtime/chan.go"}},
		{{"sync.(*Cond).Wait", "/usr/local/go/src/sync/cond.go"}},
	}
	root := []fn{
		{"net/http.HandlerFunc.ServeHTTP", "/usr/local/go/src/net/http/server.go"},
		{"net/http.serverHandler.ServeHTTP", "/usr/local/go/src/net/http/server.go"},
		{"net/http.(*conn).serve", "/usr/local/go/src/net/http/server.go"},
		{"runtime.goexit", "/usr/local/go/src/runtime/asm_amd64.s"},
	}
	seen := map[string]bool{}
	for len(p.Sample) < n {
		s := &profile.Sample{Value: []int64{1 + rng.Int64N(1000), 1000 + rng.Int64N(int64(time.Second))}}
		for _, f := range leaves[rng.IntN(len(leaves))] {
			s.Location = append(s.Location, loc(f.name, f.file, 40+rng.IntN(3)))
		}
		depth := 8 + rng.IntN(29)
		// A stack walks down a call chain: consecutive frames tend to stay
		// in one package, as real code does.
		cur := rng.IntN(len(user))
		for range depth {
			f := user[cur]
			s.Location = append(s.Location, loc(f.name, f.file, 10+rng.IntN(200)))
			if rng.IntN(4) == 0 {
				cur = rng.IntN(len(user))
			} else {
				cur = (cur/10)*10 + rng.IntN(10)
			}
		}
		for _, f := range root {
			s.Location = append(s.Location, loc(f.name, f.file, 2000+rng.IntN(5)))
		}
		key := fmt.Sprint(s.Location)
		if seen[key] {
			continue
		}
		seen[key] = true
		p.Sample = append(p.Sample, s)
	}
	return p
}

func writeLargeProfile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "block.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := largeProfile(benchSamples).Write(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkAnalyzeVsPprof runs `contend analyze` and `go tool pprof -top`
// on the same 100k-sample profile, each as the user would (a fresh
// process), and reports contend's time as a ratio of pprof's measured in
// the same run (contend/pprof below 1 means contend is faster).
//
//	go test -run '^$' -bench AnalyzeVsPprof -benchtime 5x ./cmd/contend
func BenchmarkAnalyzeVsPprof(b *testing.B) {
	path := writeLargeProfile(b)
	bin := filepath.Join(b.TempDir(), "contend")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build contend: %v\n%s", err, out)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command for go tool pprof")
	}
	timeRun := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+b.TempDir(), "NO_COLOR=1")
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return time.Since(start)
	}
	// Warm both (the go command resolves and may build the pprof tool once).
	timeRun(bin, "analyze", path)
	timeRun(gobin, "tool", "pprof", "-top", path)
	var contend, pprof time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Alternate the order so neither tool always runs on a warmer cache.
		if i%2 == 0 {
			contend += timeRun(bin, "analyze", path)
			pprof += timeRun(gobin, "tool", "pprof", "-top", path)
		} else {
			pprof += timeRun(gobin, "tool", "pprof", "-top", path)
			contend += timeRun(bin, "analyze", path)
		}
	}
	b.StopTimer()
	b.ReportMetric(contend.Seconds()/float64(b.N), "contend-s/op")
	b.ReportMetric(pprof.Seconds()/float64(b.N), "pprof-s/op")
	b.ReportMetric(float64(contend)/float64(pprof), "contend/pprof")
}

// BenchmarkAnalyzeLarge measures contend's own work on the large profile
// in process (parse excluded), to profile the analyzer itself:
//
//	go test -run '^$' -bench AnalyzeLarge -cpuprofile cpu.out ./cmd/contend
func BenchmarkAnalyzeLarge(b *testing.B) {
	path := writeLargeProfile(b)
	rec, err := recording.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := analyzer.Analyze(rec, analyzer.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
