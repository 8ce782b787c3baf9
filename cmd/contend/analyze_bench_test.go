package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
)

// writeLargeProfile writes the synthetic block profile of
// fixtures/cmd/bigprofile with 100k distinct stacks, far more than the
// block or mutex profile of a busy service holds, so the comparison
// measures the tools, not process start-up.
func writeLargeProfile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "block.pb.gz")
	cmd := exec.Command("go", "run", "./fixtures/cmd/bigprofile", "-n", "100000", "-o", path)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("bigprofile: %v\n%s", err, out)
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
		testbin.Skip(b, "no go command for go tool pprof")
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
