package recording

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSleepEventsRoundTrip: the sleeps in the kernel and failed lock
// attempts keep their state, object and kernel frames through Write and
// Read, and a log written before they existed reads as it did.
func TestSleepEventsRoundTrip(t *testing.T) {
	obj := &Object{FD: 3, Dev: "fe:00", Inode: 9978299, Path: "/tmp/journal", Cmd: "F_SETLK", Err: "EAGAIN",
		Range: &LockRange{Type: "F_WRLCK", Whence: "SEEK_SET", Start: 0, Len: 4096}}
	rec := &Recording{
		Meta: Meta{Source: SourceLive, PID: 9},
		Stacks: []Stack{{Frames: []Frame{
			{Func: "rwsem_down_read_slowpath", Kernel: true}, {Func: "lock_mm_and_find_vma", Kernel: true},
			{Func: "touch_slice", Module: "mmapstorm"},
		}}},
		Events: []Event{
			{Kind: EventSleep, T: 10, Dur: 500, PID: 9, TID: 11, Peer: 12, PeerPID: 9, State: StateUninterruptible, Stack: 0},
			{Kind: EventTryFail, T: 20, PID: 9, TID: 13, Syscall: "fcntl", Obj: obj, Stack: -1},
		},
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Write(dir, rec); err != nil {
		t.Fatal(err)
	}
	back, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec.Events, back.Events); diff != "" {
		t.Errorf("events after a round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rec.Stacks, back.Stacks); diff != "" {
		t.Errorf("stacks after a round trip (-want +got):\n%s", diff)
	}
	if got := back.Events[1].Obj.Key(); got != "file:fe:00:9978299" {
		t.Errorf("object key %q", got)
	}

	// A log of an older version: no state, no object.
	old := Recording{Meta: Meta{Source: SourceLive, PID: 9}}
	odir := filepath.Join(t.TempDir(), "old")
	if err := Write(odir, &old); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(`{"k":"dsleep","t":5,"d":100,"tid":14,"stack":-1}` + "\n"))
	zw.Close()
	if err := os.WriteFile(filepath.Join(odir, EventsFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	oback, err := Read(odir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{Kind: EventDSleep, T: 5, Dur: 100, TID: 14, Stack: -1}}
	if diff := cmp.Diff(want, oback.Events); diff != "" {
		t.Errorf("older log (-want +got):\n%s", diff)
	}
	if (*Object)(nil).Key() != "" {
		t.Error("Key of no object is not empty")
	}
}
