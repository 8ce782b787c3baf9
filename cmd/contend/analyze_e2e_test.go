package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/report"
)

// e2eDuration is how long each fixture runs: the fixtures' runner takes
// its goroutine dumps at 60% of the run, so 4 s gives 2.4 s of steady
// state before the dump and a CPU profile of 400 samples per core.
const e2eDuration = 4 * time.Second

// TestAnalyzeFixturesEndToEnd runs every Go fixture variant as its own
// process, takes its profiles, analyzes them and checks the verdict: the
// bad variant gives its kind at its function; the fixed variants and the
// idle fixture give no convoy (no lock convoy, spin convoy or I/O under a
// lock), except the queue a parking lock leaves (see remaining).
func TestAnalyzeFixturesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every fixture for several seconds")
	}
	bin := filepath.Join(t.TempDir(), "gofixture")
	build := exec.Command("go", "build", "-o", bin, "./fixtures/cmd/gofixture")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build gofixture: %v\n%s", err, out)
	}
	convoys := map[analyzer.Kind]bool{analyzer.KindLockConvoy: true, analyzer.KindSpinConvoy: true, analyzer.KindIOUnderLock: true}
	bad := map[string]struct {
		kind analyzer.Kind
		fn   string // the finding's program point function contains this
	}{
		"stripe": {analyzer.KindLockConvoy, "stripe.(*subscription).onIncomingMessage"},
		"iolock": {analyzer.KindIOUnderLock, "iolock.(*manager)."},
		"spin":   {analyzer.KindSpinConvoy, "spin.(*spinLock).lock"},
	}
	for _, name := range []string{"stripe", "iolock", "spin", "idle"} {
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
				var got []string
				for _, f := range res.Findings {
					got = append(got, string(f.Kind)+" at "+f.Point.Function)
				}
				defer func() {
					if t.Failed() {
						var b strings.Builder
						report.Text(&b, res, report.TextOptions{ShowIdle: true})
						t.Logf("analysis of %s-%s:\n%s", name, variant, b.String())
					}
				}()
				want, isBad := bad[name]
				if variant == "bad" && isBad {
					if len(res.Findings) == 0 || res.Findings[0].Kind != want.kind || !strings.Contains(res.Findings[0].Point.Function, want.fn) {
						t.Errorf("findings %q: want first %s at %s", got, want.kind, want.fn)
					}
					return
				}
				for _, f := range res.Findings {
					if convoys[f.Kind] && !remaining(name+"-"+variant, f.Kind) {
						t.Errorf("%s at %s reported for a variant without one (all findings %q)", f.Kind, f.Point.Function, got)
					}
				}
			})
		}
	}
}

// remaining reports whether a fixed variant may still show a convoy of
// kind k; see the function of the same name in analyzer/fixtures_test.go:
// the spin fixture's parking lock ends the spinning, not the sharing.
func remaining(fixture string, k analyzer.Kind) bool {
	return fixture == "spin-fixed" && k == analyzer.KindLockConvoy
}
