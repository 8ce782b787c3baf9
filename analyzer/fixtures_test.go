package analyzer_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/fixtures/expect"
	"github.com/contend-dev/contend/recording"
)

// TestCapturedFixtures replays the profiles captured from the Go fixtures
// (testdata/fixtures/<name>-<variant>, written by `make capture`) and
// judges the verdicts as make validate does (package expect): each bad
// variant gives its kind first, at exactly its point; the idle fixture
// gives no finding; each fixed variant keeps neither its bad variant's
// kind at that point nor more than its share of the bad variant's cost per
// second. The rendered outputs are compared with golden files in
// cmd/contend.
func TestCapturedFixtures(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "fixtures", "*-*"))
	if len(dirs) == 0 {
		t.Fatal("no captured fixture profiles under testdata/fixtures: they are part of the repository (make capture rewrites them)")
	}
	runs := map[string]expect.Run{}
	for _, dir := range dirs {
		paths, _ := filepath.Glob(filepath.Join(dir, "*"))
		rec, err := recording.Open(paths...)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		res, err := analyzer.Analyze(rec, analyzer.Options{})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		runs[filepath.Base(dir)] = expect.FromResult(res)
	}
	for name, run := range runs {
		fixture, variant, _ := strings.Cut(name, "-")
		t.Run(name, func(t *testing.T) {
			c, ok := expect.Lookup("go/" + fixture)
			if !ok {
				t.Fatalf("no expectation for go/%s", fixture)
			}
			var v expect.Verdict
			switch variant {
			case "bad":
				v = expect.JudgeBad(c, run)
			case "fixed":
				bad, ok := runs[fixture+"-bad"]
				if !ok {
					t.Fatalf("no %s-bad capture to judge the fixed variant against", fixture)
				}
				v = expect.JudgeFixed(c, bad, run)
			default:
				t.Fatalf("unknown variant %q", variant)
			}
			if !v.Pass {
				t.Errorf("%s (findings: %s)", v.Why, v.Got)
			}
			if v.ShareSec > 0 {
				t.Logf("%s: %.0f%% of the bad variant's cost per second", v.Got, v.ShareSec*100)
			}
		})
	}
}
