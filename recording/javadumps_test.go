package recording

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contend-dev/contend/javadump"
)

func javaDumpFile(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join("..", "javadump", "testdata", name)
}

// A Java thread dump given to Open is recognised by its content, alone or
// beside a recording, and carried to the analyzer.
func TestOpenJavaDump(t *testing.T) {
	path := javaDumpFile(t, "jdk17-jcmd-monitor.txt")
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.JavaDumps) != 1 || len(r.JavaDumps[0].Threads) != 83 || r.Meta.Source != SourceFiles {
		t.Fatalf("dumps %d, source %q", len(r.JavaDumps), r.Meta.Source)
	}
	if diff := cmp.Diff([]Input{{Path: path, Kind: InputJavaDump}}, r.Meta.Inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	if !r.Meta.Start.Equal(r.JavaDumps[0].Taken) {
		t.Errorf("start %v, dump taken %v", r.Meta.Start, r.JavaDumps[0].Taken)
	}
}

// A truncated Java dump is refused with the line, not read as something
// else.
func TestOpenTruncatedJavaDump(t *testing.T) {
	b, err := os.ReadFile(javaDumpFile(t, "jdk17-jcmd-monitor.txt"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.txt")
	if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path)
	if !errors.Is(err, javadump.ErrBadDump) || !strings.Contains(err.Error(), "cut.txt: truncated: the dump ends at line") {
		t.Errorf("error %v", err)
	}
}

// Java dumps and the copied JIT code survive a write and a read.
func TestJavaRoundTrip(t *testing.T) {
	r, err := Open(javaDumpFile(t, "jdk17-jcmd-iolock.txt"), javaDumpFile(t, "jdk17-jstack-deadlock.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r.JITCode = []CodeBlob{{Name: "fixtures.Spin.onMessage", Start: 0x7f0000001000, Code: []byte{0x8b, 0x46, 0x0c, 0x85, 0xc0, 0x75, 0xf9}}}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	back, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.JavaDumps) != 2 || string(back.JavaDumps[1].Raw) != string(r.JavaDumps[1].Raw) || back.JavaDumps[1].Deadlocks != 1 {
		t.Errorf("dumps after the round trip: %d", len(back.JavaDumps))
	}
	if diff := cmp.Diff(r.JITCode, back.JITCode); diff != "" {
		t.Errorf("JIT code (-want +got):\n%s", diff)
	}
}
