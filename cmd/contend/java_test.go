package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// contend analyze reads a Java thread dump and names the monitor, its
// waiters and its holder.
func TestAnalyzeJavaDump(t *testing.T) {
	in := filepath.Join("..", "..", "javadump", "testdata", "jdk17-jcmd-iolock.txt")
	stdout, stderr, code := runCLI(t, "analyze", in)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"io-under-lock", "fixtures.IoLock.lookup", `"manager-0"`, "FileChannelImpl.force", "8 of 22 threads"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// A Java thread dump cut short is bad input: one line naming the file and
// the line, exit code 2.
func TestAnalyzeTruncatedJavaDump(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "javadump", "testdata", "jdk17-jcmd-monitor.txt"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "threads.txt")
	if err := os.WriteFile(path, b[:len(b)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "analyze", path)
	if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "threads.txt: truncated: the dump ends at line") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestRecordJVMDumpsUsage(t *testing.T) {
	for _, n := range []string{"-1", "61"} {
		if _, _, code := runCLI(t, "record", "-p", "1", "--jvm-dumps", n); code != exitUsage {
			t.Errorf("--jvm-dumps %s: exit %d, want %d", n, code, exitUsage)
		}
	}
}
