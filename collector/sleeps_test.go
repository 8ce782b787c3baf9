package collector

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/recording"
)

// kernelFrames names addresses from a fixed table, as kallsyms would.
type kernelFrames map[uint64]string

func (k kernelFrames) Frame(addr uint64) recording.Frame {
	return recording.Frame{Func: k[addr], Addr: addr, Kernel: true}
}

func TestDecodeSleep(t *testing.T) {
	b := make([]byte, sleepRecSize)
	le := binary.LittleEndian
	b[0], b[1] = kindSleep, 2
	le.PutUint16(b[2:], 72)
	le.PutUint32(b[4:], 9)
	le.PutUint32(b[8:], 11)
	le.PutUint32(b[12:], 12) // waker
	le.PutUint64(b[16:], 33) // user stack
	le.PutUint64(b[24:], 1500)
	le.PutUint64(b[32:], 300)
	le.PutUint64(b[40:], 44) // kernel stack
	le.PutUint64(b[48:], 777)
	le.PutUint64(b[56:], 4096)
	le.PutUint64(b[64:], 512)
	le.PutUint32(b[72:], 254<<20|1)
	le.PutUint32(b[76:], 5)
	le.PutUint32(b[80:], 9)
	le.PutUint32(b[84:], 7)
	le.PutUint16(b[88:], 1)
	le.PutUint16(b[90:], 0)
	le.PutUint32(b[96:], 2)
	le.PutUint64(b[104:], 0xa)
	le.PutUint64(b[112:], 0xb)
	r, err := decodeSleep(b)
	if err != nil {
		t.Fatal(err)
	}
	want := sleepRec{
		Ev:  rawEvent{Kind: kindSleep, Op: 2, Sys: 72, PID: 9, TID: 11, Peer: 12, Stack: 33, TS: 1500, Dur: 300, Addr: 44},
		Ino: 777, LStart: 4096, LLen: 512, Dev: 254<<20 | 1, FD: 5, WakerPID: 9, Cmd: 7, LType: 1, NSPCs: 2,
		SPCs: [schedPCs]uint64{0xa, 0xb},
	}
	if r != want {
		t.Errorf("decodeSleep = %+v, want %+v", r, want)
	}
	if _, err := decodeSleep(b[:sleepRecSize-1]); err == nil {
		t.Error("decodeSleep of a short record: no error")
	}
	o := sleepObject(r, nil)
	wantObj := &recording.Object{FD: 5, Dev: "fe:01", Inode: 777, Cmd: "F_SETLKW",
		Range: &recording.LockRange{Type: "F_WRLCK", Whence: "SEEK_SET", Start: 4096, Len: 512}}
	if diff := cmp.Diff(wantObj, o); diff != "" {
		t.Errorf("sleepObject (-want +got):\n%s", diff)
	}
	if got := o.Key(); got != "file:fe:01:777" {
		t.Errorf("Key = %q", got)
	}
	r.Ev.Kind, r.Ev.Sys, r.Cmd, r.Err = kindTryFail, 73, 2|4, 11
	if o := sleepObject(r, nil); o.Cmd != "LOCK_EX|LOCK_NB" || o.Err != "EAGAIN" || o.Range != nil {
		t.Errorf("failed flock's object %+v", o)
	}
	r.FD = -1
	if o := sleepObject(r, nil); o != nil {
		t.Errorf("object of a call without a descriptor: %+v", o)
	}
}

func TestSchedFrames(t *testing.T) {
	ksym := kernelFrames{1: "bpf_prog_x", 2: "__traceiter_sched_switch", 3: "__schedule", 4: "schedule",
		5: "rwsem_down_write_slowpath", 6: "down_write", 7: "ext4_buffered_write_iter", 8: "vfs_write"}
	r := sleepRec{NSPCs: 8, SPCs: [schedPCs]uint64{1, 2, 3, 4, 5, 6, 7, 8}}
	sched := schedFrames(r, ksym)
	walked := []recording.Frame{ksym.Frame(7), ksym.Frame(8)}
	var got []string
	for _, f := range joinKernel(sched, walked) {
		got = append(got, f.Func)
	}
	want := []string{"schedule", "rwsem_down_write_slowpath", "down_write", "ext4_buffered_write_iter", "vfs_write"}
	if !cmp.Equal(got, want) {
		t.Errorf("joined kernel frames %v, want %v", got, want)
	}
	// Without __schedule the frames cannot be told from the tracepoint's.
	r.SPCs[2] = 1
	if f := schedFrames(r, ksym); f != nil {
		t.Errorf("frames without __schedule: %v, want none", f)
	}
	if f := joinKernel(nil, walked); len(f) != 2 {
		t.Errorf("joinKernel without sched frames: %v", f)
	}
}

func TestBuildEventsSleep(t *testing.T) {
	src := &fakeStacks{
		kernel: map[uint64][]recording.Frame{44: {{Func: "locks_lock_inode_wait", Kernel: true}}},
		events: map[evKey][]recording.Frame{{tid: 11, ts: 1500}: frames("app", "flock", "locked_append", "main")},
	}
	raw := []rawEvent{
		{Kind: kindSleep, Op: 1, Sys: 73, PID: 9, TID: 11, Peer: 12, Stack: 33, TS: 1500, Dur: 300, Addr: 44},
		{Kind: kindSleep, Op: 2, Sys: sysNone, PID: 9, TID: 13, Stack: stackLost, TS: 1600, Dur: 50, Addr: stackLost},
		{Kind: kindTryFail, Sys: 72, PID: 9, TID: 14, Stack: stackNone, TS: 1700, Addr: stackNone},
	}
	obj := &recording.Object{FD: 3, Dev: "fe:00", Inode: 77, Cmd: "LOCK_EX"}
	fail := &recording.Object{FD: 4, Dev: "fe:00", Inode: 78, Cmd: "F_SETLK", Err: "EAGAIN"}
	objs := map[objKey]sleepInfo{{11, 1500}: {obj: obj, wakerPID: 9}, {14, 1700}: {obj: fail}}
	each := func(fn func(*rawEvent)) {
		for i := range raw {
			fn(&raw[i])
		}
	}
	evs, stacks := buildEvents(each, len(raw), 1000, 2000, src, objs)
	want := []recording.Event{
		{Kind: recording.EventSleep, T: 500, Dur: 300, PID: 9, TID: 11, Peer: 12, PeerPID: 9, Syscall: "flock", State: "sleeping", Obj: obj, Stack: 0},
		{Kind: recording.EventSleep, T: 600, Dur: 50, PID: 9, TID: 13, State: "uninterruptible", Stack: -1},
		{Kind: recording.EventTryFail, T: 700, PID: 9, TID: 14, Syscall: "fcntl", Obj: fail, Stack: -1},
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(stacks) != 1 || len(stacks[0].Frames) != 4 || !stacks[0].Frames[0].Kernel || stacks[0].Frames[1].Kernel {
		t.Errorf("stacks %+v, want the kernel frame, then the user frames", stacks)
	}
}

func TestFDPaths(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	dev := uint32(unix.Major(st.Dev))<<20 | uint32(unix.Minor(st.Dev))
	var p fdPaths
	pid, fd := uint32(os.Getpid()), int32(f.Fd())
	if got := p.path(pid, fd, dev, st.Ino); got != f.Name() {
		t.Errorf("path = %q, want %q", got, f.Name())
	}
	// Another file now behind the descriptor: not named by this one's path.
	if got := p.path(pid, fd, dev, st.Ino+1); got != "" {
		t.Errorf("path of another inode = %q, want none", got)
	}
	if got := p.path(pid, 1<<20, dev, st.Ino); got != "" {
		t.Errorf("path of a closed descriptor = %q", got)
	}
	if got := devString(dev); got != fmtDev(st.Dev) {
		t.Errorf("devString = %q, want %q", got, fmtDev(st.Dev))
	}
}

func fmtDev(d uint64) string {
	hex := func(v uint32) string {
		s := strconv.FormatUint(uint64(v), 16)
		if len(s) < 2 {
			s = "0" + s
		}
		return s
	}
	return hex(unix.Major(d)) + ":" + hex(unix.Minor(d))
}
