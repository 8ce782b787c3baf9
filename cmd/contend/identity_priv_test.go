//go:build linux && amd64

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/internal/testbin"
)

// recordFixture runs a native fixture, records it for d with contend and
// returns the recording's directory and its analysis.
func recordFixture(t *testing.T, src, variant, dir string, d time.Duration) *analyzer.Result {
	t.Helper()
	bin := testbin.C(t, src, "-O2", "-g")
	// Build contend before the fixture starts, so that the fixture's run
	// covers the recording; it is killed when the test ends.
	cmd, out, errb := contendCmd(t, "record", "-d", d.String(), "-o", dir, "--format", "json")
	p := testbin.Start(t, bin, "-variant", variant, "-duration", "120")
	v, err := p.Value("pid", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Args = append(cmd.Args, "-p", v)
	defer p.Cmd.Process.Kill()
	if err := cmd.Run(); err != nil {
		t.Fatalf("record: %v\n%s", err, errb)
	}
	var res analyzer.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("record output: %v\n%s", err, out)
	}
	return &res
}

// Three recordings of the same program, each a new process with its own
// load addresses, name the lock and the program point by the same keys.
// The stripe fixture's lock is one global mutex; the turns fixture's is a
// structure folded from two condition variables and two mutexes, whose
// words a recording sees in a different order each time.
func TestStableKeysAcrossRecordings(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct{ src, lock, point string }{
		{"../../fixtures/c/stripe.c", "table_lock", "conn_on_message"},
		{"../../fixtures/c/turns.c", "gil+0x28", "gil_take"},
	} {
		t.Run(filepath.Base(c.src), func(t *testing.T) {
			var keys, points, addrs []string
			for i := 0; i < 3; i++ {
				res := recordFixture(t, c.src, "bad", filepath.Join(t.TempDir(), "rec"), 2*time.Second)
				if len(res.Findings) == 0 || res.Findings[0].Lock == nil {
					t.Fatalf("recording %d: no lock finding", i)
				}
				f := res.Findings[0]
				keys = append(keys, f.Lock.Key)
				points = append(points, f.Point.Key)
				addrs = append(addrs, f.Lock.Address)
			}
			for i := range keys {
				if keys[i] != keys[0] || points[i] != points[0] {
					t.Errorf("keys differ across recordings: locks %q, points %q", keys, points)
					break
				}
			}
			if got := keys[0]; !hasSuffixAfterColon(got, c.lock) {
				t.Errorf("lock key %q, want module:%s", got, c.lock)
			}
			if !hasSuffixAfterBang(points[0], c.point) {
				t.Errorf("point key %q, want module!%s", points[0], c.point)
			}
			if addrs[0] == addrs[1] && addrs[1] == addrs[2] {
				t.Logf("the three runs loaded at one address (%s): the keys were not tested against a moved lock", addrs[0])
			}
		})
	}
}

func hasSuffixAfterColon(key, want string) bool {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == ':' {
			return key[i+1:] == want
		}
	}
	return false
}

func hasSuffixAfterBang(key, want string) bool {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '!' {
			return key[i+1:] == want
		}
	}
	return false
}

// compare matches a lock across recordings by its key: two recordings of
// the stripe fixture's bad variant put table_lock at different addresses,
// yet compare shows it as one row present on both sides; against the
// fixed variant, which stripes the lock, the row is gone on side B.
func TestCompareMatchesLockByKey(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	a, b, fixed := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "fixed")
	ra := recordFixture(t, "../../fixtures/c/stripe.c", "bad", a, 2*time.Second)
	recordFixture(t, "../../fixtures/c/stripe.c", "bad", b, 2*time.Second)
	recordFixture(t, "../../fixtures/c/stripe.c", "fixed", fixed, 2*time.Second)
	if len(ra.Findings) == 0 || ra.Findings[0].Lock == nil || ra.Findings[0].Lock.Key == "" {
		t.Fatalf("no keyed lock finding in %s", a)
	}
	key := ra.Findings[0].Lock.Key
	row := func(x, y string) map[string]any {
		t.Helper()
		cmd, out, errb := contendCmd(t, "compare", x, y, "--format", "json")
		if err := cmd.Run(); err != nil {
			t.Fatalf("compare: %v\n%s", err, errb)
		}
		var c struct {
			Points []map[string]any `json:"points"`
		}
		if err := json.Unmarshal(out.Bytes(), &c); err != nil {
			t.Fatalf("compare output: %v\n%s", err, out)
		}
		for _, p := range c.Points {
			if p["key"] == key {
				return p
			}
		}
		t.Fatalf("compare %s %s: no row keyed %q in %s", x, y, key, out)
		return nil
	}
	same := row(a, b)
	if missing(same["a"]) || missing(same["b"]) {
		t.Errorf("the same lock in two recordings is not matched: %v", same)
	}
	gone := row(a, fixed)
	if missing(gone["a"]) || !missing(gone["b"]) {
		t.Errorf("table_lock after the fix: %v, want present before and gone after", gone)
	}
	if _, err := os.Stat(filepath.Join(fixed, "meta.json")); err != nil {
		t.Fatal(err)
	}
}

func missing(side any) bool {
	m, ok := side.(map[string]any)
	return !ok || m["missing"] == true
}
