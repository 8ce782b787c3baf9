package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/fixtures/expect"
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
	if !p.B.Missing {
		t.Errorf("after the fix: %+v; want table_lock's convoy gone", p.B)
	}
	for _, q := range c.Points[1:] {
		if strings.HasPrefix(q.Name, "conn_on_message") && !q.B.Missing && q.B.Kind != "cpu-saturation" && (q.B.Kind == "lock-convoy" || q.B.Value > expect.MaxFixedShare*p.A.Value) {
			t.Errorf("after the fix: %+v; want no convoy, and at most %.0f%% of the convoy's %v", q, expect.MaxFixedShare*100, p.A.Value)
		}
	}
	byName := map[string]figure{}
	for _, f := range c.Process {
		byName[f.Name] = f
	}
	wait, ok := byName[figLockWait]
	if !ok || wait.B.Value > expect.MaxFixedShare*wait.A.Value || !wait.Apart || wait.A.Over == "" {
		t.Errorf("threads waiting on locks: %+v, want at most %.0f%% as many after the fix, apart, with a spread", wait, expect.MaxFixedShare*100)
	}
	if cpus := byName[figCPUs]; cpus.A.Over == "" || cpus.A.Low > cpus.A.Value || cpus.A.High < cpus.A.Value {
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
		if f.Name == figWaiting && (f.A.Over != "2 recordings" || f.A.Low != f.A.High || f.A.Value <= 0) {
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

func TestFmtNum(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 123.4: "123", 12.34: "12.3", 1.234: "1.23", 0.001234: "0.001"} {
		if got := fmtNum(x); got != want {
			t.Errorf("fmtNum(%v) = %q, want %q", x, got, want)
		}
	}
}
