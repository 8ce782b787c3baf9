package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRecordOutputCheckedFirst: an -o that cannot be created fails before
// anything is attached, with the path the user gave, not after the whole
// recording and not naming a temporary directory.
func TestRecordOutputCheckedFirst(t *testing.T) {
	target := exec.Command("sleep", "120")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Process.Kill(); target.Wait() })
	pid := strconv.Itoa(target.Process.Pid)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const duration = 20 * time.Second
	for _, c := range []struct{ out, want string }{
		{"/proc/x/out", "cannot create /proc/x/out: making a directory in /proc"},
		{filepath.Join(file, "rec"), "cannot create " + filepath.Join(file, "rec") + ": " + file + " is not a directory"},
		{file, file + " already exists"},
	} {
		cmd, _, errb := contendCmd(t, "record", "-p", pid, "-d", duration.String(), "-o", c.out)
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(2*duration, func() { cmd.Process.Kill() })
		code := exitCodeOf(t, cmd.Wait())
		timer.Stop()
		took := time.Since(start)
		msg := errb.String()
		if code != exitUsage || !strings.Contains(msg, c.want) {
			t.Errorf("-o %s: exit %d, stderr %q; want exit %d saying %q", c.out, code, msg, exitUsage, c.want)
		}
		if strings.Contains(msg, ".contend-check-") || strings.Contains(msg, ".tmp-") {
			t.Errorf("-o %s: the error names a temporary directory: %q", c.out, msg)
		}
		// The check is a few system calls; the recording it stands
		// before lasts 20 s. A quarter of that leaves room for a loaded
		// machine and still tells the two apart.
		if took > duration/4 {
			t.Errorf("-o %s: failed after %s, not before recording %s", c.out, took.Round(time.Millisecond), duration)
		}
	}
}
