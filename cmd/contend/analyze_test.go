package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/fixtures/expect"
)

var update = flag.Bool("update", false, "rewrite the golden files of the analyze tests")

// runCLI runs contend with args in process and returns its stdout, the
// error message main would print, and the exit code.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	switch {
	case err == nil:
	case errors.Is(err, errFindings):
		code = exitFindings
	default:
		code = exitCode(err)
		errb.WriteString("contend: " + err.Error() + "\n")
	}
	return out.String(), errb.String(), code
}

// writeProfile writes a small mutex/block-style profile with one stack.
func writeProfile(t *testing.T, path string, values []int64, fns ...string) {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "contentions", Unit: "count"},
		Period:     1,
	}
	s := &profile.Sample{Value: values}
	for i, fn := range fns {
		f := &profile.Function{ID: uint64(i + 1), Name: fn, SystemName: fn, Filename: "/src/app/app.go"}
		l := &profile.Location{ID: uint64(i + 1), Address: uint64(0x1000 + i), Line: []profile.Line{{Function: f, Line: int64(10 + i)}}}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, l)
		s.Location = append(s.Location, l)
	}
	p.Sample = []*profile.Sample{s}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
}

// contendedInput writes a block profile with real contention and returns
// its path.
func contendedInput(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "block.pb.gz")
	writeProfile(t, path, []int64{1000, int64(5 * time.Second)}, "sync.(*Mutex).Lock", "app.(*Store).Put", "app.worker")
	return path
}

func TestAnalyzeBadInput(t *testing.T) {
	dir := t.TempDir()
	good := contendedInput(t)
	data, _ := os.ReadFile(good)
	files := map[string][]byte{
		"empty.pb.gz":     {},
		"truncated.pb.gz": data[:len(data)/2],
		"garbage.bin":     bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x00}, 50),
		"notes.txt":       []byte("these are my notes\nnothing to see\n"),
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, "analyze", good, path)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, name) {
				t.Errorf("stderr %q: want one line naming %s", stderr, name)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		_, stderr, code := runCLI(t, "analyze", filepath.Join(dir, "nope.pb.gz"))
		if code != exitUsage || !strings.Contains(stderr, "nope.pb.gz") {
			t.Errorf("code %d, stderr %q", code, stderr)
		}
	})
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{{"analyze"}, {"analyze", "--format", "xml", good}, {"analyze", "--width", "-1", good}} {
			if _, _, code := runCLI(t, args...); code != exitUsage {
				t.Errorf("%v: exit code %d, want %d", args, code, exitUsage)
			}
		}
	})
}

func TestAnalyzeFormats(t *testing.T) {
	in := contendedInput(t)
	stdout, _, code := runCLI(t, "analyze", in)
	if code != exitOK || !strings.Contains(stdout, "lost waiting for ONE lock: sync.Mutex.Lock in app.(*Store).Put") {
		t.Fatalf("code %d, text output:\n%s", code, stdout)
	}
	if _, _, code := runCLI(t, "analyze", "--fail-on-findings", in); code != exitFindings {
		t.Errorf("--fail-on-findings: exit code %d, want %d", code, exitFindings)
	}

	stdout, _, code = runCLI(t, "analyze", "--format", "json", in)
	var res analyzer.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != exitOK {
		t.Fatalf("json output (code %d): %v\n%s", code, err, stdout)
	}
	if res.Schema != analyzer.SchemaVersion || len(res.Findings) != 1 || res.Findings[0].Kind != analyzer.KindContention {
		t.Errorf("json result %+v", res)
	}

	dir := t.TempDir()
	out := filepath.Join(dir, "findings.pb.gz")
	if _, _, code := runCLI(t, "analyze", "--format", "pprof", "-o", out, in); code != exitOK {
		t.Fatalf("pprof: exit code %d", code)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("parse %s: %v", out, err)
	}
	if len(p.Sample) == 0 || p.SampleType[0].Type != "wait" {
		t.Errorf("pprof output %v", p)
	}
	// -o leaves no temporary files behind and replaces an older file.
	if _, _, code := runCLI(t, "analyze", "-o", out, in); code != exitOK {
		t.Fatalf("text -o: exit code %d", code)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("output dir holds %d entries, want 1", len(entries))
	}
	text, _ := os.ReadFile(out)
	if !strings.Contains(string(text), "app.(*Store).Put") {
		t.Errorf("-o file %q", text)
	}
}

// fixtureDirs returns the captured fixture profile directories.
func fixtureDirs(t *testing.T) []string {
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "analyzer", "testdata", "fixtures", "*-*"))
	sort.Strings(dirs)
	return dirs
}

func fixtureInputs(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.pb.gz", "*.txt"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("%s holds no profiles", dir)
	}
	return files
}

// TestAnalyzeGolden compares the analysis of every captured fixture
// profile set with its golden text and JSON. Refresh with -update; a
// negative control's golden must hold no finding, even then (the idle
// standard of make validate and the replay tests).
func TestAnalyzeGolden(t *testing.T) {
	dirs := fixtureDirs(t)
	if len(dirs) == 0 {
		t.Fatal("no captured fixture profiles under analyzer/testdata/fixtures: they are part of the repository (make capture rewrites them)")
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		for _, tc := range []struct {
			suffix string
			args   []string
		}{
			{".txt", nil},
			{".show-idle.txt", []string{"--show-idle"}},
			{".json", []string{"--format", "json"}},
		} {
			t.Run(name+tc.suffix, func(t *testing.T) {
				args := append([]string{"analyze"}, tc.args...)
				stdout, stderr, code := runCLI(t, append(args, fixtureInputs(t, dir)...)...)
				if code != exitOK {
					t.Fatalf("exit code %d: %s", code, stderr)
				}
				if tc.suffix == ".json" {
					checkControl(t, name, stdout)
				}
				golden := filepath.Join("testdata", "golden", name+tc.suffix)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), stdout); diff != "" {
					t.Errorf("%s (-want +got):\n%s", golden, diff)
				}
			})
		}
	}
}

// checkControl fails the test when the captured fixture name
// ("idle-bad") is a negative control and the analysis in JSON holds a
// finding.
func checkControl(t *testing.T, name, analysis string) {
	t.Helper()
	fixture, _, _ := strings.Cut(name, "-")
	c, ok := expect.Lookup("go/" + fixture)
	if !ok {
		t.Fatalf("no expectation for go/%s", fixture)
	}
	if !c.Control {
		return
	}
	var res analyzer.Result
	if err := json.Unmarshal([]byte(analysis), &res); err != nil {
		t.Fatal(err)
	}
	if v := expect.JudgeBad(c, expect.FromResult(&res)); !v.Pass {
		t.Fatalf("%s: %s (findings: %s)", name, v.Why, v.Got)
	}
}

func TestAnalyzeColor(t *testing.T) {
	in := contendedInput(t)
	t.Setenv("NO_COLOR", "")
	if out, _, _ := runCLI(t, "analyze", in); strings.Contains(out, "\x1b[") {
		t.Errorf("colour without --color")
	}
	if out, _, _ := runCLI(t, "analyze", "--color", in); !strings.Contains(out, "\x1b[") {
		t.Errorf("no colour with --color")
	}
	t.Setenv("NO_COLOR", "1")
	if out, _, _ := runCLI(t, "analyze", "--color", in); strings.Contains(out, "\x1b[") {
		t.Errorf("colour with --color although NO_COLOR is set")
	}
}

// /dev/null is a character device but no terminal: output redirected
// there is not shown to anyone, so it needs no colour and may be binary.
func TestDevNullIsNoTerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("isTerminal(/dev/null) = true")
	}
}

// TestAnalyzeVerboseLoss: what the probes lost is one line on stderr
// under --verbose and nothing without it; the report itself is the same.
func TestAnalyzeVerboseLoss(t *testing.T) {
	// A live recording whose probes lost events (its meta.json has
	// drop_* counters above zero).
	rec := filepath.Join("..", "..", "analyzer", "testdata", "live", "c-stripe-bad")
	quiet, quietErr, code := runCLI(t, "analyze", rec)
	if code != exitOK || quietErr != "" {
		t.Fatalf("without --verbose: code %d, stderr %q", code, quietErr)
	}
	loud, loudErr, code := runCLI(t, "analyze", "--verbose", rec)
	if code != exitOK {
		t.Fatalf("--verbose: code %d, stderr %q", code, loudErr)
	}
	if !strings.HasPrefix(loudErr, "contend: the probes lost ") || strings.Count(loudErr, "\n") != 1 || !strings.Contains(loudErr, "drop_* counters in meta.json") {
		t.Errorf("--verbose stderr %q: want one line on what the probes lost", loudErr)
	}
	if loud != quiet {
		t.Errorf("--verbose changed the report")
	}
}
