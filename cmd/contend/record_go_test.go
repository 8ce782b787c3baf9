//go:build linux && amd64

package main

import (
	"os/exec"
	"path/filepath"
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
// without an endpoint: record says none was found, the recording says
// which Go data it lacks, and the analysis lists each Go profile absent
// instead of reading the idle Ms as "no contention".
func TestRecordGoWithoutEndpoint(t *testing.T) {
	requireRoot(t)
	fx := exec.Command(testbin.Go(t, "fixtures/cmd/gofixture"), "stripe", "-variant", "bad", "-duration", "60s")
	if err := fx.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fx.Process.Kill()
		fx.Wait()
	})
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
	rec, err := recording.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if gd := rec.Meta.GoData; gd == nil || gd.Endpoint != "" || len(gd.Absent()) != len(recording.GoKinds) {
		t.Fatalf("meta go_data %+v, want every kind absent", gd)
	}
	res, err := analyzer.Analyze(rec, analyzer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"the Go mutex profile", "the Go block profile", "a goroutine dump with wait states (debug=2)", "the Go CPU profile"} {
		found := false
		for _, m := range res.Missing {
			if m.What == what {
				found = strings.HasSuffix(m.Decides, "Not recorded: no pprof endpoint: the process listens on no TCP socket")
			}
		}
		if !found {
			t.Errorf("Missing lacks %q with why: %+v", what, res.Missing)
		}
	}
}
