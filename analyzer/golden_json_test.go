package analyzer_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the analysis of today's code")

// goldenInputs names every committed recording the tests load: each live
// recording, each captured fixture (its profiles together), each dump,
// and each Java thread dump, with the paths recording.Open takes.
func goldenInputs(t *testing.T) map[string][]string {
	t.Helper()
	in := map[string][]string{}
	live, _ := filepath.Glob(filepath.Join("testdata", "live", "*"))
	for _, d := range live {
		in["live-"+filepath.Base(d)] = []string{d}
	}
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "fixtures", "*-*"))
	for _, d := range fixtures {
		paths, _ := filepath.Glob(filepath.Join(d, "*"))
		in["fixture-"+filepath.Base(d)] = paths
	}
	dumps, _ := filepath.Glob(filepath.Join("testdata", "dumps", "*"))
	for _, p := range dumps {
		in["dump-"+filepath.Base(p)] = []string{p}
	}
	java, _ := filepath.Glob(filepath.Join("..", "javadump", "testdata", "*.txt"))
	for _, p := range java {
		in["java-"+filepath.Base(p)] = []string{p}
	}
	if len(live) == 0 || len(fixtures) == 0 || len(dumps) == 0 || len(java) == 0 {
		t.Fatalf("inputs missing: %d live, %d fixtures, %d dumps, %d java", len(live), len(fixtures), len(dumps), len(java))
	}
	return in
}

// TestGoldenJSON holds the JSON result of every committed recording to
// the file kept for it under testdata/golden, so that a change to the
// analyzer's structure shows any change to what it says, byte for byte.
// Run with -update to rewrite the files after a change meant to alter a
// result.
func TestGoldenJSON(t *testing.T) {
	inputs := goldenInputs(t)
	if !*update {
		kept, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
		for _, k := range kept {
			name := filepath.Base(k)
			if _, ok := inputs[name[:len(name)-len(".json")]]; !ok {
				t.Errorf("%s has no recording", k)
			}
		}
	}
	for name, paths := range inputs {
		t.Run(name, func(t *testing.T) {
			rec, err := recording.Open(paths...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := analyzer.Analyze(rec, analyzer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			file := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the JSON result differs from %s", file)
			}
		})
	}
}
