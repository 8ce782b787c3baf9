package collector

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/symbolize"
)

func TestParseProcSyscall(t *testing.T) {
	for _, tc := range []struct {
		in      string
		blocked bool
		want    procSyscall
		bad     bool
	}{
		{in: "running\n"},
		{in: "-1 0x7ffc9a0 0x7f12345\n"},
		{in: "202 0x55d0c8a04040 0x80 0x2 0x0 0x0 0x0 0x7ffd1234 0x7f00aa\n", blocked: true,
			want: procSyscall{nr: 202, args: [6]uint64{0x55d0c8a04040, 0x80, 2}, sp: 0x7ffd1234, pc: 0x7f00aa}},
		{in: "74 0x3 0x0 0x0 0x0 0x0 0x0 0x7ffd 0x7f00\n", blocked: true,
			want: procSyscall{nr: 74, args: [6]uint64{3}, sp: 0x7ffd, pc: 0x7f00}},
		{in: "", bad: true},
		{in: "x 1 2", bad: true},
		{in: "202 0x1 0x2", bad: true},
		{in: "202 0x1 0x2 0x3 0x4 0x5 zz 0x7 0x8", bad: true},
	} {
		got, blocked, err := parseProcSyscall([]byte(tc.in))
		if (err != nil) != tc.bad || blocked != tc.blocked || got != tc.want {
			t.Errorf("parseProcSyscall(%q) = %+v, %v, %v", tc.in, got, blocked, err)
		}
	}
}

// fakeMem is target memory: one 16-byte glibc mutex at base (futex word,
// then owner at +8) and a futex_waitv vector at vec.
type fakeMem struct{ data map[uint64][]byte }

func (m fakeMem) ReadAt(p []byte, off int64) (int, error) {
	for base, b := range m.data {
		if uint64(off) >= base && uint64(off)+uint64(len(p)) <= base+uint64(len(b)) {
			return copy(p, b[uint64(off)-base:]), nil
		}
	}
	return 0, os.ErrNotExist
}

func TestOpenFromSyscall(t *testing.T) {
	mutex := make([]byte, 16)
	binary.LittleEndian.PutUint32(mutex[0:], 2)
	binary.LittleEndian.PutUint32(mutex[8:], 4242) // __owner
	pi := make([]byte, 4)
	binary.LittleEndian.PutUint32(pi, 0x80000000|777) // FUTEX_WAITERS | owner
	vec := make([]byte, 24)
	binary.LittleEndian.PutUint64(vec[8:], 0x1000)
	binary.LittleEndian.PutUint32(vec[16:], 0x82) // FUTEX2_PRIVATE | FUTEX2_SIZE_U32
	mem := fakeMem{data: map[uint64][]byte{0x1000: mutex, 0x2000: pi, 0x3000: vec}}
	for _, tc := range []struct {
		name string
		ps   procSyscall
		want openCall
		ok   bool
	}{
		{"glibc mutex", procSyscall{nr: nrFutex, args: [6]uint64{0x1000, 0x80, 2}}, openCall{pid: 4, tid: 5, ts: 9, nr: nrFutex, addr: 0x1000, owner: 4242, op: opWait, ip: 0x7f01, sp: 0x7ffd}, true},
		{"shared mutex", procSyscall{nr: nrFutex, args: [6]uint64{0x1000, 0x0, 2}}, openCall{pid: 4, tid: 5, ts: 9, nr: nrFutex, addr: 0x1000, owner: 4242, op: opWait, shared: true, ip: 0x7f01, sp: 0x7ffd}, true},
		{"bitset wait", procSyscall{nr: nrFutex, args: [6]uint64{0x1000, 0x89}}, openCall{pid: 4, tid: 5, ts: 9, nr: nrFutex, addr: 0x1000, owner: 4242, op: opWaitBitset, ip: 0x7f01, sp: 0x7ffd}, true},
		{"pi lock", procSyscall{nr: nrFutex, args: [6]uint64{0x2000, 0x86}}, openCall{pid: 4, tid: 5, ts: 9, nr: nrFutex, addr: 0x2000, owner: 777, op: opLockPI, ip: 0x7f01, sp: 0x7ffd}, true},
		{"futex_waitv", procSyscall{nr: nrFutexWaitv, args: [6]uint64{0x3000, 1}}, openCall{pid: 4, tid: 5, ts: 9, nr: nrFutexWaitv, addr: 0x1000, owner: 4242, op: opFutexWaitv, ip: 0x7f01, sp: 0x7ffd}, true},
		{"unreadable owner", procSyscall{nr: nrFutexWait, args: [6]uint64{0x9000, 0, 0, 0x80}}, openCall{pid: 4, tid: 5, ts: 9, nr: nrFutexWait, addr: 0x9000, op: opFutexWait, ip: 0x7f01, sp: 0x7ffd}, true},
		{"fsync", procSyscall{nr: 74, args: [6]uint64{3}}, openCall{pid: 4, tid: 5, ts: 9, io: true, nr: 74, ip: 0x7f01, sp: 0x7ffd}, true},
		{"wake is no wait", procSyscall{nr: nrFutex, args: [6]uint64{0x1000, 0x81}}, openCall{}, false},
		{"epoll_wait", procSyscall{nr: 232}, openCall{}, false},
	} {
		tc.ps.sp, tc.ps.pc = 0x7ffd, 0x7f01
		got, ok := openFromSyscall(4, 5, tc.ps, 9, mem)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: openFromSyscall = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestSeedOpen runs seedOpen over a test /proc tree: the thread blocked
// in a futex wait and the one in fsync are seeded; the running one and
// the one in epoll_wait are not.
func TestSeedOpen(t *testing.T) {
	root := t.TempDir()
	task := filepath.Join(root, "77", "task")
	for tid, content := range map[string]string{
		"77": "running\n",
		"78": "202 0x1000 0x80 0x2 0x0 0x0 0x0 0x7ffd 0x7f00\n",
		"79": "74 0x3 0x0 0x0 0x0 0x0 0x0 0x7ffd 0x7f00\n",
		"80": "232 0x4 0x7ffd 0x10 0xffffffff 0x0 0x0 0x7ffd 0x7f00\n",
	} {
		if err := os.MkdirAll(filepath.Join(task, tid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(task, tid, "syscall"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := newFakeTracer()
	if n := seedOpen(f, root, 77, 12345); n != 2 {
		t.Errorf("seeded %d calls, want 2", n)
	}
	want := []openCall{{pid: 77, tid: 78, ts: 12345, nr: nrFutex, addr: 0x1000, op: opWait, ip: 0x7f00, sp: 0x7ffd}, {pid: 77, tid: 79, ts: 12345, io: true, nr: 74, ip: 0x7f00, sp: 0x7ffd}}
	if diff := cmp.Diff(want, f.seeded, cmp.AllowUnexported(openCall{})); diff != "" {
		t.Errorf("seeded (-want +got):\n%s", diff)
	}
}

// TestSessionInProgress checks that calls in progress reach snapshots,
// windows and the final recording, timed up to each one's end.
func TestSessionInProgress(t *testing.T) {
	f := newFakeTracer()
	s := startFake(t, context.Background(), Options{Probes: []string{ProbeFutex, ProbeIO}}, f)
	// One wait since the start of the recording, one fsync since 100ms
	// in.
	f.setOpen(
		openCall{pid: fakePID, tid: 21, ts: s.clk.mono, addr: 0xabc, owner: 7, op: opWait},
		openCall{pid: fakePID, tid: 22, ts: s.clk.mono + uint64(100*time.Millisecond), io: true, nr: 74},
	)
	inProgress := func(r *recording.Recording, v recording.View, tid int64) int64 {
		t.Helper()
		var ns int64
		for _, smp := range r.Profile(v).Sample {
			if smp.NumLabel[recording.LabelTID][0] == tid && len(smp.NumLabel[recording.LabelInProgress]) == 1 {
				ns += smp.Value[1]
			}
		}
		return ns
	}
	// The wait is counted up to the latest drain: wait until the drains
	// have covered 400ms of it, however late they run.
	waitUntil(t, "the open wait counted for 400ms", func() bool {
		return inProgress(s.Snapshot(0), recording.ViewFutexWait, 21) >= int64(400*time.Millisecond)
	})
	whole := s.Snapshot(0)
	if w := inProgress(whole, recording.ViewFutexWait, 21); w < int64(350*time.Millisecond) || w > int64(whole.Meta.Duration) {
		t.Errorf("open wait counted %v in a %v snapshot", time.Duration(w), whole.Meta.Duration)
	}
	win := s.Snapshot(100 * time.Millisecond)
	if w := inProgress(win, recording.ViewFutexWait, 21); w <= 0 || w > int64(win.Meta.Duration) {
		t.Errorf("open wait counted %v in a %v window", time.Duration(w), win.Meta.Duration)
	}
	var lock *recording.LockStat
	for i := range whole.Locks {
		if whole.Locks[i].Addr == 0xabc {
			lock = &whole.Locks[i]
		}
	}
	if lock == nil || lock.InProgress != 1 || lock.Owners[7] != 1 || !slices.Contains(lock.Waiters, 21) {
		t.Errorf("lock stat %+v: want one wait in progress by 21 behind 7", lock)
	}
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if io := inProgress(rec, recording.ViewIO, 22); io < int64(250*time.Millisecond) || io > int64(rec.Meta.Duration-100*time.Millisecond) {
		t.Errorf("open fsync counted %v in a %v recording that it joined 100ms in", time.Duration(io), rec.Meta.Duration)
	}
	var buf bytes.Buffer
	if err := rec.Profile(recording.ViewIO).Write(&buf); err != nil {
		t.Fatal(err)
	}
}

// unwindSyms is a procSymbols whose unwinder returns the ip and the first
// word of the window, and whose frames are named after their address.
type unwindSyms struct{ rawSymbols }

func (unwindSyms) Unwind(r symbolize.Regs, window []byte) ([]uint64, bool) {
	if len(window) < 8 {
		return nil, false
	}
	return []uint64{r.IP, binary.LittleEndian.Uint64(window)}, true
}

func (unwindSyms) Stack(pcs []uint64) recording.Stack {
	st := recording.Stack{}
	for _, pc := range pcs {
		st.Frames = append(st.Frames, recording.Frame{Func: fmt.Sprintf("fn_%x", pc), Addr: pc})
	}
	return st
}

func TestSessionUnwindsOpenCalls(t *testing.T) {
	f := newFakeTracer()
	stack := make([]byte, 4096)
	binary.LittleEndian.PutUint64(stack, 0xcafe) // "return address" at sp
	s := startFakeWith(t, context.Background(), Options{}, f, unwindSyms{}, fakeMem{data: map[uint64][]byte{0x7000: stack}})
	f.setOpen(
		openCall{pid: fakePID, tid: 31, ts: s.clk.mono, addr: 0xabc, op: opWait, ip: 0xbeef, sp: 0x7000},
		openCall{pid: fakePID, tid: 32, ts: s.clk.mono, addr: 0xabc, op: opWait, ip: 0xbeef, sp: 0x9000}, // unreadable stack
	)
	got := map[int64]string{}
	waitUntil(t, "both open calls in a snapshot", func() bool {
		rec := s.Snapshot(0)
		got = map[int64]string{}
		for _, smp := range rec.Profile(recording.ViewFutexWait).Sample {
			if len(smp.NumLabel[recording.LabelInProgress]) == 1 {
				got[smp.NumLabel[recording.LabelTID][0]] = strings.Join(funcs(smp), " ")
			}
		}
		return len(got) >= 2
	})
	want := map[int64]string{31: "fn_beef fn_cafe", 32: frameInProgress}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("in-progress stacks (-want +got):\n%s", diff)
	}
	// Once the call ends, its stack is forgotten.
	f.setOpen()
	waitUntil(t, "the stack of the ended call forgotten", func() bool {
		s.Snapshot(0)
		return !s.res.hasOpen(evKey{31, s.clk.mono})
	})
	s.Stop()
}
