package recording

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRecordingKeepsEveryByte (issue 33, row 13): names that are not
// valid UTF-8 came back from a recording with U+FFFD in place of their
// bytes, while the README said the recording keeps every byte. Process
// and thread names, command lines and executable paths now come back
// byte for byte; valid names are written as before, with no extra field.
func TestRecordingKeepsEveryByte(t *testing.T) {
	bad := "w\xff\xfe\x1b[31m" // invalid UTF-8 and an escape sequence
	in := &Recording{
		Meta: Meta{Source: SourceLive, PID: 7, Comm: bad, Cmdline: []string{"/bin/x", "--name=" + bad}, Exe: "/opt/\xc3(/x",
			Processes: []Process{{PID: 7, Comm: bad, Cmdline: []string{"x\x80"}, Exe: "/opt/ok"}, {PID: 8, Comm: "plain"}}},
		Threads: &Timeline{Interval: 100 * time.Millisecond, ClockTicks: 100, Samples: 1, Threads: []ThreadSeries{
			{TID: 7, Comm: bad, First: 0, States: "R", UTime: []uint64{1}, STime: []uint64{0}, Voluntary: []uint64{0}, Involuntary: []uint64{0}},
			{TID: 8, Comm: "worker-1", First: 0, States: "S", UTime: []uint64{0}, STime: []uint64{0}, Voluntary: []uint64{0}, Involuntary: []uint64{0}},
		}},
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	out, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if out.Meta.Comm != bad || out.Meta.Exe != in.Meta.Exe || !cmp.Equal(out.Meta.Cmdline, in.Meta.Cmdline) {
		t.Errorf("meta names %q %q %q, want %q %q %q", out.Meta.Comm, out.Meta.Exe, out.Meta.Cmdline, bad, in.Meta.Exe, in.Meta.Cmdline)
	}
	if diff := cmp.Diff(in.Meta.Processes, out.Meta.Processes); diff != "" {
		t.Errorf("processes (-want +got):\n%s", diff)
	}
	if got := out.Threads.Threads[0].Comm; got != bad {
		t.Errorf("thread name %q, want %q", got, bad)
	}
	if got := out.Threads.Threads[1].Comm; got != "worker-1" {
		t.Errorf("valid thread name %q", got)
	}
	threads, err := os.ReadFile(filepath.Join(dir, ThreadsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(threads), `"comm_b64"`); n != 1 {
		t.Errorf("threads.json has %d comm_b64 fields, want 1 (the invalid name only)", n)
	}
	if !strings.Contains(string(threads), "\\ufffd") && !strings.Contains(string(threads), "\ufffd") {
		t.Error("threads.json does not keep a readable escaped name beside the bytes")
	}
}
