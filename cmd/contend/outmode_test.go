package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Issue 33 row 13: `analyze -o` and `export -o` wrote 0644, so a report
// naming the target's code and threads was readable by every local user.
// Both now write 0600, whatever the umask.
func TestOutputFilesArePrivate(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "report.txt")
	if _, stderr, code := runCLI(t, "analyze", "-o", report, contendedInput(t)); code != exitOK {
		t.Fatalf("analyze -o: exit code %d\n%s", code, stderr)
	}
	trace := filepath.Join(dir, "trace.pftrace")
	if _, stderr, code := runCLI(t, "export", "../../analyzer/testdata/live/c-iolock-bad", "--format", "perfetto", "-o", trace); code != exitOK {
		t.Fatalf("export -o: exit code %d\n%s", code, stderr)
	}
	for _, p := range []string{report, trace} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(p), st.Mode().Perm())
		}
	}
}
