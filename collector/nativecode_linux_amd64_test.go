//go:build linux && amd64

package collector

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/symbolize"
)

// TestNativeCodeSurvivesRenameAndFIFO: the target renames its executable
// mid-recording and leaves a FIFO at the old path. The recording ends on
// time and carries the code of the loop its threads spin in, byte for
// byte the function of the executable that ran, with its build ID: the
// code comes from the object opened when the process joined, never from
// the path.
func TestNativeCodeSurvivesRenameAndFIFO(t *testing.T) {
	requireRoot(t)
	built := testbin.C(t, "testdata/hog.c", "-O2", "-g")
	data, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "hog")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	p := testbin.Start(t, exe, "3")
	pid := mustPID(t, p)
	tidSet(t, p, 3)
	s, err := Start(context.Background(), Options{PID: pid, Duration: 2 * time.Second, Probes: []string{ProbeOnCPU}})
	if err != nil {
		t.Fatal(err)
	}
	moved := exe + ".moved"
	if err := os.Rename(exe, moved); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(exe, 0o600); err != nil {
		t.Fatal(err)
	}
	// A recording of 2 s; the bound leaves room for a loaded machine
	// while telling apart a recording that blocks on the FIFO.
	select {
	case <-s.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("recording still running 60 s into a 2 s recording")
	}
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}

	ef, err := elf.Open(moved)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var sym elf.Symbol
	for _, s := range syms {
		if s.Name == "spin_loop" {
			sym = s
		}
	}
	text := ef.Section(".text")
	if sym.Value == 0 || text == nil {
		t.Fatal("no spin_loop in hog")
	}
	f, err := symbolize.OpenFile(moved, symbolize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	var got *recording.NativeCode
	for i, c := range rec.NativeCode {
		if c.Name == "spin_loop" {
			got = &rec.NativeCode[i]
		}
	}
	if got == nil {
		t.Fatalf("native code %+v, want spin_loop's", rec.NativeCode)
	}
	want := make([]byte, len(got.Code))
	if _, err := text.ReadAt(want, int64(sym.Value-text.Addr)); err != nil {
		t.Fatal(err)
	}
	if got.Module != "hog" || got.PID != pid || got.Start != sym.Value || got.BuildID == "" || got.BuildID != f.BuildID() || !bytes.Equal(got.Code, want) || uint64(len(got.Code)) < sym.Size {
		t.Errorf("spin_loop copied as module %q pid %d at 0x%x (build %q), %d bytes; want hog, pid %d, at 0x%x (build %q), its %d bytes as in the executable", got.Module, got.PID, got.Start, got.BuildID, len(got.Code), pid, sym.Value, f.BuildID(), sym.Size)
	}
	in := 0
	for _, s := range rec.Profile(recording.ViewOnCPU).Sample {
		if loc := userLeaf(s); loc != nil && got.Contains(loc.Address) {
			in++
		}
	}
	if in == 0 {
		t.Error("no on-CPU sample lies in the copy at its load bias")
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := recording.Write(dir, rec); err != nil {
		t.Fatal(err)
	}
	back, err := recording.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.NativeCode) != len(rec.NativeCode) {
		t.Errorf("%d functions read back, %d written", len(back.NativeCode), len(rec.NativeCode))
	}
}
