package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/fixtures/expect"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// live returns the path of a live recording kept for the analyzer's replay
// tests.
func live(name string) string {
	return filepath.Join("..", "..", "analyzer", "testdata", "live", name)
}

func TestCompareStripeFix(t *testing.T) {
	var out bytes.Buffer
	o := compareOptions{a: live("c-stripe-bad"), b: live("c-stripe-fixed"), format: formatJSON, window: time.Second}
	if err := runCompare(o, &out); err != nil {
		t.Fatal(err)
	}
	var c comparison
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("compare --format json: %v\n%s", err, out.String())
	}
	if len(c.Points) == 0 {
		t.Fatal("no program point compared")
	}
	// The striped fix ends the convoy on table_lock; its connection
	// threads still meet now and then on a shared stripe
	// (fixtures/c/README.md), which the analyzer may report at the same
	// function on the stripes, as no convoy and at no more than the share
	// of the bad cost a fixed variant may keep. Its 64 threads then queue
	// for the 2 CPUs instead (CPU saturation), which is no lock's cost.
	p := c.Points[0]
	if !strings.HasPrefix(p.Name, "conn_on_message [") || !strings.Contains(p.Name, "table_lock") || p.A.Kind != "lock-convoy" || p.A.Value <= 0 || p.A.Participants != 64 {
		t.Errorf("first point %+v, want the lock convoy of 64 threads on table_lock in conn_on_message", p)
	}
	if !p.B.NoFinding || p.B.Missing {
		t.Errorf("after the fix: %+v; want table_lock's convoy gone, measured", p.B)
	}
	for _, q := range c.Points[1:] {
		if strings.HasPrefix(q.Name, "conn_on_message") && !q.B.NoFinding && !q.B.Missing && q.B.Kind != "cpu-saturation" && (q.B.Kind == "lock-convoy" || q.B.Value > expect.MaxFixedShare*p.A.Value) {
			t.Errorf("after the fix: %+v; want no convoy, and at most %.0f%% of the convoy's %v", q, expect.MaxFixedShare*100, p.A.Value)
		}
	}
	byName := map[string]figure{}
	for _, f := range c.Process {
		byName[f.Name] = f
	}
	wait, ok := byName["threads waiting on locks"]
	if !ok || wait.B.Value > expect.MaxFixedShare*wait.A.Value || (wait.A.Over == "") == (wait.A.NoSpread == "") {
		t.Errorf("threads waiting on locks: %+v, want at most %.0f%% as many after the fix, with a spread or the reason for none", wait, expect.MaxFixedShare*100)
	}
	if cpus := byName["CPUs used by the process"]; cpus.A.Over == "" || cpus.A.Low > cpus.A.Value || cpus.A.High < cpus.A.Value {
		t.Errorf("CPUs used: %+v, want a spread over windows around the mean", cpus.A)
	}

	out.Reset()
	o.format = formatText
	if err := runCompare(o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A  " + live("c-stripe-bad"), "conn_on_message", "lock-convoy", "Spread over"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCompareSeveralRecordings(t *testing.T) {
	var out bytes.Buffer
	a := live("c-writer-bad") + "," + live("c-writer-bad")
	o := compareOptions{a: a, b: live("c-writer-fixed"), format: formatJSON, window: time.Second}
	if err := runCompare(o, &out); err != nil {
		t.Fatal(err)
	}
	var c comparison
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.A.Paths) != 2 {
		t.Errorf("side A has %d recordings, want 2", len(c.A.Paths))
	}
	for _, f := range c.Process {
		if f.Name == "threads waiting, in findings" && (f.A.Over != "2 recordings" || f.A.Low != f.A.High || f.A.Value <= 0) {
			t.Errorf("the same recording twice: %+v, want no spread between them", f.A)
		}
	}
}

func TestCompareErrors(t *testing.T) {
	for _, o := range []compareOptions{
		{a: live("c-spin-bad"), b: filepath.Join(t.TempDir(), "missing"), format: formatText, window: time.Second},
		{a: live("c-spin-bad"), b: live("c-spin-fixed"), format: "xml", window: time.Second},
		{a: live("c-spin-bad"), b: live("c-spin-fixed"), format: formatText, window: 0},
		{a: ",", b: live("c-spin-fixed"), format: formatText, window: time.Second},
	} {
		err := runCompare(o, &bytes.Buffer{})
		if err == nil || exitCode(err) != exitUsage {
			t.Errorf("compare %+v: error %v (exit %d), want a usage error", o, err, exitCode(err))
		}
	}
}

// goFixture returns the directory of a Go fixture's captured profiles.
func goFixture(name string) string {
	return filepath.Join("..", "..", "analyzer", "testdata", "fixtures", name)
}

// compareJSON runs compare a b and decodes its JSON.
func compareJSON(t *testing.T, a, b string) comparison {
	t.Helper()
	var out bytes.Buffer
	if err := runCompare(compareOptions{a: a, b: b, format: formatJSON, window: time.Second}, &out); err != nil {
		t.Fatalf("compare %s %s: %v", a, b, err)
	}
	var c comparison
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCompareValueInsideSpread: a figure is never printed outside its own
// spread. The recordings' event logs cover their waits unevenly, so their
// 1-second windows can miss the recording's total (47.7 [0–41.5]); such
// a spread is withheld, and the reason given.
func TestCompareValueInsideSpread(t *testing.T) {
	pairs := [][2]string{
		{live("c-stripe-bad"), live("c-stripe-fixed")},
		{live("c-iolock-bad"), live("c-writer-bad")},
		{live("python-gil"), live("c-spin-bad")},
		{live("c-writer-bad") + "," + live("c-stripe-bad"), live("c-writer-fixed")},
	}
	withheld := 0
	for _, p := range pairs {
		c := compareJSON(t, p[0], p[1])
		if c.Schema != CompareSchemaVersion {
			t.Errorf("schema %q, want %q", c.Schema, CompareSchemaVersion)
		}
		for _, f := range append(c.Process, c.Points...) {
			for _, s := range []stat{f.A, f.B} {
				if s.Missing {
					continue
				}
				if s.Value < s.Low || s.Value > s.High {
					t.Errorf("%s vs %s: %s: %s outside its spread [%s–%s] (%s)", p[0], p[1], f.Name, units.Float(s.Value), units.Float(s.Low), units.Float(s.High), s.Over)
				}
				if s.NoSpread != "" {
					withheld++
				}
			}
		}
	}
	if withheld == 0 {
		t.Error("no spread was withheld: the recordings that gave 47.7 [0–41.5] no longer test the rule")
	}
}

// TestCompareSaysNoData: a figure one side has no data for reads "no
// data", never "gone", and is never "apart". Side B is the fixed
// variant's recording written again without its /proc thread timeline,
// as a recording without the sampler is.
func TestCompareSaysNoData(t *testing.T) {
	var out bytes.Buffer
	fixed, err := recording.Read(live("c-stripe-fixed"))
	if err != nil {
		t.Fatal(err)
	}
	fixed.Threads = nil
	b := filepath.Join(t.TempDir(), "fixed-without-timeline")
	if err := recording.Write(b, fixed); err != nil {
		t.Fatal(err)
	}
	o := compareOptions{a: live("c-stripe-bad"), b: b, format: formatText, window: time.Second}
	if err := runCompare(o, &out); err != nil {
		t.Fatal(err)
	}
	c := compareJSON(t, o.a, o.b)
	seen := false
	for _, f := range c.Process {
		if !f.B.Missing {
			continue
		}
		seen = true
		if f.Apart || f.Change != 0 {
			t.Errorf("%s: no data in B, yet apart=%v change=%v", f.Name, f.Apart, f.Change)
		}
		line := lineWith(out.String(), f.Name+" (")
		if !strings.Contains(line, "no data in B") || strings.Contains(line, "gone") || strings.Contains(line, "apart") {
			t.Errorf("%s: %q, want it to say no data in B", f.Name, line)
		}
	}
	if !seen {
		t.Fatal("no figure without data in B although its timeline is gone: the test lost its case")
	}
}

func lineWith(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestCompareRefusesWhatItCannotUse: inputs without a duration (a
// goroutine dump) have no rates, and threads do not compare with
// goroutines: each is a usage error naming the input, never an empty
// table.
func TestCompareRefusesWhatItCannotUse(t *testing.T) {
	dump := filepath.Join(goFixture("stripe-bad"), "goroutine.txt")
	for _, c := range []struct{ a, b, want string }{
		{dump, dump, dump + " has no duration"},
		{live("c-stripe-bad"), dump, dump + " has no duration"},
		{goFixture("stripe-bad"), live("c-stripe-bad"), "counts goroutines (Go profiles) and " + live("c-stripe-bad") + " counts threads"},
	} {
		var out bytes.Buffer
		err := runCompare(compareOptions{a: c.a, b: c.b, format: formatText, window: time.Second}, &out)
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("compare %s %s: %v (exit %d), output %q; want a usage error saying %q", c.a, c.b, err, exitCode(err), out.String(), c.want)
		}
	}
}

// TestCompareGoProfilesCountGoroutines: Go-profile sides are labelled in
// goroutines, not threads.
func TestCompareGoProfilesCountGoroutines(t *testing.T) {
	var out bytes.Buffer
	if err := runCompare(compareOptions{a: goFixture("stripe-bad"), b: goFixture("stripe-fixed"), format: formatText, window: time.Second}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "goroutines waiting, in findings (goroutines)") || !strings.Contains(out.String(), "181 goroutines") || strings.Contains(out.String(), "thread") {
		t.Errorf("Go profiles compared in threads:\n%s", out.String())
	}
	if c := compareJSON(t, goFixture("stripe-bad"), goFixture("stripe-fixed")); c.Unit != "goroutines" || c.Points[0].Unit != "goroutines waiting + CPUs burning" {
		t.Errorf("JSON unit %q, point unit %q", c.Unit, c.Points[0].Unit)
	}
}

// TestComparePredictions: each prediction of A's findings is held against
// what B measured at the same point, by the rule make validate uses: the
// factor is B over A, the inside flag is the prediction's own range test,
// and for the stripe fixture's lock the factor is the one validate's
// check computes from the same two analyses. A throughput prediction is
// said to be unmeasured, not judged.
func TestComparePredictions(t *testing.T) {
	for _, tc := range []struct{ bad, fixed, metric string }{
		{"c-stripe-bad", "c-stripe-fixed", "wait_seconds"},
		{"c-spin-bad", "c-spin-fixed", "cpu_seconds"},
	} {
		var out bytes.Buffer
		o := compareOptions{a: live(tc.bad), b: live(tc.fixed), format: formatJSON, window: time.Second}
		if err := runCompare(o, &out); err != nil {
			t.Fatal(err)
		}
		var c comparison
		if err := json.Unmarshal(out.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		a, err := loadSide(live(tc.bad))
		if err != nil {
			t.Fatal(err)
		}
		b, err := loadSide(live(tc.fixed))
		if err != nil {
			t.Fatal(err)
		}
		ra, rb := expect.FromResult(a[0].res), expect.FromResult(b[0].res)
		ra.Seconds, rb.Seconds = durationOf(a[0]), durationOf(b[0])
		want := map[string]expect.Check{}
		for _, ch := range expect.CheckPredictions(ra, rb) {
			want[string(ch.Prediction.Metric)] = ch
		}
		judged := 0
		for _, p := range c.Predictions {
			switch {
			case p.Prediction.Metric == "throughput":
				if p.NotMeasured == "" || p.Inside {
					t.Errorf("%s: throughput %+v judged, want said unmeasured", tc.bad, p)
				}
				continue
			case p.NotMeasured != "":
				continue
			}
			judged++
			if p.A <= 0 || math.Abs(p.Measured-p.B/p.A) > 1e-9 || p.Inside != p.Prediction.Inside(p.Measured) {
				t.Errorf("%s: %+v: measured is not B/A or inside disagrees with the range", tc.bad, p)
			}
			if w, ok := want[string(p.Prediction.Metric)]; ok && p.Point == ra.Findings[0].Point && (!w.OK || math.Abs(w.Measured-p.Measured) > 1e-9) {
				t.Errorf("%s: %s measured ×%v, validate's check ×%v (ok %v)", tc.bad, p.Prediction.Metric, p.Measured, w.Measured, w.OK)
			}
		}
		var metric bool
		for _, p := range c.Predictions {
			metric = metric || (string(p.Prediction.Metric) == tc.metric && p.NotMeasured == "")
		}
		if judged == 0 || !metric {
			t.Errorf("%s: predictions %+v, want %s measured", tc.bad, c.Predictions, tc.metric)
		}
		out.Reset()
		o.format = formatText
		if err := runCompare(o, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "PREDICTED BY A'S FINDINGS") || !strings.Contains(out.String(), "predictions measured fell inside their range") {
			t.Errorf("%s: text output lacks the predictions:\n%s", tc.bad, out.String())
		}
	}
}
