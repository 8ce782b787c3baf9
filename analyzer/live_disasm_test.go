package analyzer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// spinRecording copies the committed recording of the C spin fixture,
// with the executable it was recorded from, into a new directory, and
// reads it back with its executable named at its new place.
func spinRecording(t *testing.T) (rec *recording.Recording, exe string) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "rec")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", "live", "c-spin-bad"))); err != nil {
		t.Fatal(err)
	}
	rec, err := recording.Read(dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.NativeCode) == 0 {
		t.Fatalf("%s carries no native code", dst)
	}
	rec.Meta.Exe = filepath.Join(dst, "spin")
	return rec, rec.Meta.Exe
}

// analyzeWithin analyzes rec, failing the test when the analysis does not
// end within bound (the goroutine of a hung analysis is left behind).
func analyzeWithin(t *testing.T, rec *recording.Recording, bound time.Duration) *analyzer.Result {
	t.Helper()
	type done struct {
		res *analyzer.Result
		err error
	}
	ch := make(chan done, 1)
	start := time.Now()
	go func() {
		res, err := analyzer.Analyze(rec, analyzer.Options{})
		ch <- done{res, err}
	}()
	select {
	case d := <-ch:
		if d.err != nil {
			t.Fatal(d.err)
		}
		t.Logf("analysis took %s", time.Since(start).Round(time.Millisecond))
		return d.res
	case <-time.After(bound):
		t.Fatalf("analysis still running after %s", bound)
		return nil
	}
}

// spinVerdict is what a busy-wait finding says, with the loop its machine
// code shows; "" when the first finding is no busy-wait.
func spinVerdict(res *analyzer.Result) string {
	if len(res.Findings) == 0 || res.Findings[0].Kind != analyzer.KindSpinConvoy {
		return ""
	}
	f := res.Findings[0]
	v := fmt.Sprintf("%s | %s | %s | %d threads", f.Kind, f.Headline, f.Confidence, f.Participants)
	for _, e := range f.Evidence {
		if e.Kind == analyzer.EvSpinLoop {
			v += fmt.Sprintf(" | %s at 0x%x, %v insns, pause %v", e.Names["shape"], uint64(e.Figures["start"]), e.Figures["insns"], e.Figures["pause"])
		}
	}
	return v
}

// analysisBound is how long the analysis of the spin recording may take:
// it takes tens of milliseconds; the bound leaves room for a loaded machine and
// the race detector while telling apart an analysis that blocks.
const analysisBound = 20 * time.Second

// TestAnalysisReadsNoBinary: the target renames its executable
// mid-recording and leaves a FIFO at the old path. The analysis used to
// open the "binary" to disassemble its spin loop and block on the FIFO
// forever. It now reads the recording's copy of the code only: a FIFO at
// the path, the binary removed, or the binary present give the same
// verdict, with the loop confirmed from the machine code, in bounded time.
func TestAnalysisReadsNoBinary(t *testing.T) {
	rec, _ := spinRecording(t)
	with := spinVerdict(analyzeWithin(t, rec, analysisBound))
	if !strings.Contains(with, " at 0x") {
		t.Fatalf("with the binary present: %q, want a busy-wait confirmed from its machine code", with)
	}
	// Each case names its own path, so that nothing read for one
	// could serve another.
	rec, exe := spinRecording(t)
	if err := os.Remove(exe); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(exe, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := spinVerdict(analyzeWithin(t, rec, analysisBound)); got != with {
		t.Errorf("with a FIFO at the binary's path:\n%s\nwant as with the binary:\n%s", got, with)
	}
	rec, exe = spinRecording(t)
	if err := os.Remove(exe); err != nil {
		t.Fatal(err)
	}
	if got := spinVerdict(analyzeWithin(t, rec, analysisBound)); got != with {
		t.Errorf("with the binary removed:\n%s\nwant as with it:\n%s", got, with)
	}
}

// TestOldRecordingWithoutCodeReadsNoBinary: a recording made before the
// code was copied, whose executable's path is now a FIFO, is analyzed in
// bounded time, without the disassembly: the analysis says the
// machine-code evidence is missing, and never reads the path.
func TestOldRecordingWithoutCodeReadsNoBinary(t *testing.T) {
	rec, exe := spinRecording(t)
	if err := os.Remove(exe); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(exe, 0o600); err != nil {
		t.Fatal(err)
	}
	rec.NativeCode = nil
	res := analyzeWithin(t, rec, analysisBound)
	for _, f := range res.Findings {
		for _, e := range f.Evidence {
			if e.Source == "disasm" {
				t.Errorf("finding %s has machine-code evidence without any code in the recording: %+v", f.Kind, e)
			}
		}
	}
	noted := false
	for _, n := range res.Notes {
		noted = noted || strings.Contains(n, "no copy of the target's machine code")
	}
	if !noted {
		t.Errorf("notes %q, want one saying the machine code is missing", res.Notes)
	}
}

// TestNativeCodeOfAnotherObjectIsNotUsed: code copied from another object
// (another module) or at other addresses does not stand in for the
// function sampled.
func TestNativeCodeOfAnotherObjectIsNotUsed(t *testing.T) {
	rec, _ := spinRecording(t)
	want := spinVerdict(analyzeWithin(t, rec, analysisBound))
	for i := range rec.NativeCode {
		rec.NativeCode[i].Module = "libother.so"
	}
	if got := spinVerdict(analyzeWithin(t, rec, analysisBound)); got == want || strings.Contains(got, " at 0x") {
		t.Errorf("with the code named after another object: %q, want no machine-code evidence", got)
	}
}
