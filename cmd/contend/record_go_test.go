//go:build linux && amd64

package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/fixtures/expect"
	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// TestRecordGoDiscoversPprof records the Go stripe fixture, which serves
// net/http/pprof on a loopback port of its own choosing, without --pprof:
// record finds the endpoint among the process's listening sockets, says
// so on stderr and in the recording, and the convoy is named as
// validate's go/stripe case requires.
func TestRecordGoDiscoversPprof(t *testing.T) {
	requireRoot(t)
	pid, url := startGoFixture(t)
	dir := filepath.Join(t.TempDir(), "rec")
	cmd, _, errb := contendCmd(t, "record", "-p", strconv.Itoa(pid), "-d", "5s", "-o", dir)
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("contend record exited %d\nstderr: %s", code, errb)
	}
	note := "Go runtime profiles fetched from " + url + "/debug/pprof/, found among the process's listening sockets"
	if !strings.Contains(errb.String(), "contend: "+note) {
		t.Errorf("stderr lacks %q:\n%s", note, errb)
	}
	rec, err := recording.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	gd := rec.Meta.GoData
	if gd == nil || !gd.Discovered || gd.Endpoint != url+"/debug/pprof" || len(gd.Absent()) != 0 {
		t.Errorf("meta go_data %+v, want every kind fetched from the discovered %s", gd, url)
	}
	if !strings.Contains(strings.Join(rec.Meta.Warnings, "\n"), note) {
		t.Errorf("meta warnings %q lack the discovery note", rec.Meta.Warnings)
	}
	res, err := analyzer.Analyze(rec, analyzer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := expect.Lookup("go/stripe")
	if v := expect.JudgeBad(c, expect.FromResult(res)); !v.Pass {
		t.Errorf("go/stripe recorded without --pprof: %s (got %s)", v.Why, v.Got)
	}
	for _, m := range res.Missing {
		if strings.HasPrefix(m.What, "the Go ") || strings.HasPrefix(m.What, "a goroutine dump") {
			t.Errorf("Go data listed missing though fetched: %+v", m)
		}
	}
}

// TestRecordGoWithoutEndpoint records the Go stripe fixture started
// without an endpoint, in its bad and fixed variants: record says none
// was found and that the goroutines' lock waits are measured with uprobes
// instead; the recording says which Go data it has and lacks; the
// analysis names the bad variant's convoy at the function that takes the
// lock, from the uprobes' data, and gives the fixed variant no such
// finding; the Go profiles not had are listed missing, with why.
func TestRecordGoWithoutEndpoint(t *testing.T) {
	requireRoot(t)
	c, _ := expect.Lookup("go/stripe")
	bad := recordGoNoEndpoint(t, testbin.Go(t, "fixtures/cmd/gofixture"), "bad", "symbol table")
	if v := expect.JudgeBad(c, expect.FromResult(bad)); !v.Pass {
		t.Errorf("go/stripe bad, recorded without an endpoint: %s (got %s)", v.Why, v.Got)
	}
	if len(bad.Findings) > 0 {
		f := bad.Findings[0]
		if f.Kind != analyzer.KindLockConvoy || !hasEvidenceFrom(f, string(recording.ViewGoLockWaits)) {
			t.Errorf("first finding %s at %s, want a lock convoy with evidence from %s: %+v", f.Kind, f.Point.Function, recording.ViewGoLockWaits, f.Evidence)
		}
	}
	fixed := recordGoNoEndpoint(t, testbin.Go(t, "fixtures/cmd/gofixture"), "fixed", "symbol table")
	if v := expect.JudgeFixed(c, expect.FromResult(bad), expect.FromResult(fixed)); !v.Pass {
		t.Errorf("go/stripe fixed, recorded without an endpoint: %s (got %s)", v.Why, v.Got)
	}
}

// TestRecordGoStrippedWithoutEndpoint records the bad Go stripe fixture
// built without a symbol table (-ldflags=-s -w): the uprobes are placed
// through the runtime's own function table and the convoy is named all
// the same.
func TestRecordGoStrippedWithoutEndpoint(t *testing.T) {
	requireRoot(t)
	c, _ := expect.Lookup("go/stripe")
	res := recordGoNoEndpoint(t, testbin.Go(t, "fixtures/cmd/gofixture", "-ldflags=-s -w"), "bad", "pclntab")
	if v := expect.JudgeBad(c, expect.FromResult(res)); !v.Pass {
		t.Errorf("stripped go/stripe bad, recorded without an endpoint: %s (got %s)", v.Why, v.Got)
	}
}

// recordGoNoEndpoint runs the Go stripe fixture bin in variant without an
// endpoint, records it for 2 s, checks what record says and what the
// recording holds of the Go data (the lock slow paths found in table),
// and returns the analysis.
func recordGoNoEndpoint(t *testing.T, bin, variant, table string) *analyzer.Result {
	t.Helper()
	fx := exec.Command(bin, "stripe", "-variant", variant, "-duration", "60s")
	testbin.StartCmd(t, fx)
	time.Sleep(300 * time.Millisecond) // past the runtime's start
	dir := filepath.Join(t.TempDir(), "rec")
	cmd, _, errb := contendCmd(t, "record", "-p", strconv.Itoa(fx.Process.Pid), "-d", "2s", "-o", dir)
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("contend record exited %d\nstderr: %s", code, errb)
	}
	const why = "no --pprof was given, and the process listens on no TCP socket that could serve net/http/pprof; give --pprof http://HOST:PORT"
	if !strings.Contains(errb.String(), "contend: no Go runtime profiles: "+why) {
		t.Errorf("stderr does not say no endpoint was found:\n%s", errb)
	}
	probed := "contend: Go lock waits measured with uprobes at the entries of runtime.(*semaRoot).queue and runtime.releaseSudog (found in the executable's " + table + ")"
	if !strings.Contains(errb.String(), probed) {
		t.Errorf("stderr does not say the lock waits are measured with uprobes (%q):\n%s", probed, errb)
	}
	rec, err := recording.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	gd := rec.Meta.GoData
	if gd == nil || gd.Endpoint != "" || len(gd.Absent()) != len(recording.GoKinds) {
		t.Fatalf("meta go_data %+v, want every pprof kind absent", gd)
	}
	if u := gd.Uprobes; !u.Have() || u.Table != table || !slices.Contains(u.Functions, "runtime.(*semaRoot).queue") || len(u.Missing) != 0 {
		t.Errorf("meta go_data uprobes %+v, want the park/wake probes, found in the %s", u, table)
	}
	if rec.Profile(recording.ViewGoLockWaits) == nil {
		t.Fatalf("no %s view in the recording", recording.ViewGoLockWaits)
	}
	if variant == "bad" && !strings.HasPrefix(gd.Uprobes.Detached, "taken off after") {
		t.Errorf("go_data uprobes detached = %q: the bad fixture contends tens of thousands of times a second, past the probes' budget", gd.Uprobes.Detached)
	}
	res, err := analyzer.Analyze(rec, analyzer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"the Go mutex profile", "the Go block profile", "a goroutine dump with wait states (debug=2)", "the Go CPU profile"} {
		found := false
		for _, m := range res.Missing {
			if m.What == what {
				found = strings.Contains(m.Decides, "Not recorded: no pprof endpoint: the process listens on no TCP socket")
				if what == "the Go block profile" {
					found = found && strings.Contains(m.Decides, "measured with uprobes instead (go-lockwaits), their channel and select waits were not")
					// The fixture contends past the probes' budget: they
					// come off after a second, and the note says so.
					if gd.Uprobes.Detached != "" {
						found = found && strings.HasSuffix(m.Decides, "; the uprobes were "+gd.Uprobes.Detached)
					}
				}
			}
		}
		if !found {
			t.Errorf("Missing lacks %q with why: %+v", what, res.Missing)
		}
	}
	return res
}

// hasEvidenceFrom reports whether f has evidence from source.
func hasEvidenceFrom(f analyzer.Finding, source string) bool {
	for _, e := range f.Evidence {
		if e.Source == source {
			return true
		}
	}
	return false
}
