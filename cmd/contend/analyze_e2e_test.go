package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/fixtures/expect"
	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/report"
)

// e2eDuration is how long each fixture runs: the fixtures' runner takes
// its goroutine dumps at 60% of the run, so 4 s gives 2.4 s of steady
// state before the dump and a CPU profile of 400 samples per core.
const e2eDuration = 4 * time.Second

// TestAnalyzeFixturesEndToEnd runs every Go fixture variant as its own
// process, takes its profiles, analyzes them and judges the verdicts as
// make validate does (package expect): the bad variant gives its kind first,
// at exactly its point; the idle fixture gives no finding; the fixed
// variant keeps neither the bad variant's kind at that point nor more than
// its share of the bad variant's cost per second.
func TestAnalyzeFixturesEndToEnd(t *testing.T) {
	testbin.Integration(t)
	bin := filepath.Join(t.TempDir(), "gofixture")
	build := exec.Command("go", "build", "-o", bin, "./fixtures/cmd/gofixture")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build gofixture: %v\n%s", err, out)
	}
	for _, name := range []string{"stripe", "iolock", "spin", "idle"} {
		c, ok := expect.Lookup("go/" + name)
		if !ok {
			t.Fatalf("no expectation for go/%s", name)
		}
		var bad expect.Run
		for _, variant := range []string{"bad", "fixed"} {
			t.Run(name+"-"+variant, func(t *testing.T) {
				dir := t.TempDir()
				ctx, cancel := context.WithTimeout(context.Background(), e2eDuration+time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, name, "-variant", variant, "-duration", e2eDuration.String(), "-profiles", dir)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("gofixture: %v\n%s", err, out)
				}
				paths, _ := filepath.Glob(filepath.Join(dir, "*"))
				rec, err := recording.Open(paths...)
				if err != nil {
					t.Fatalf("open profiles: %v", err)
				}
				res, err := analyzer.Analyze(rec, analyzer.Options{})
				if err != nil {
					t.Fatal(err)
				}
				run := expect.FromResult(res)
				var v expect.Verdict
				if variant == "bad" {
					bad = run
					v = expect.JudgeBad(c, run)
				} else {
					v = expect.JudgeFixed(c, bad, run)
				}
				if !v.Pass {
					var b strings.Builder
					report.Text(&b, res, report.TextOptions{ShowIdle: true})
					t.Errorf("%s (findings: %s); analysis of %s-%s:\n%s", v.Why, v.Got, name, variant, b.String())
				}
			})
		}
	}
}
