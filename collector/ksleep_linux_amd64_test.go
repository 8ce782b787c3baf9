//go:build linux && amd64

package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// openFile finds the descriptor of process pid open on a file whose path
// ends in suffix, waiting up to 10 s for it to be opened, and returns
// the file's device ("MAJOR:MINOR" in hex, as /proc/locks gives it) and
// inode: the ground truth a recording's objects are checked against.
func openFile(t *testing.T, pid int, suffix string) (dev string, ino uint64) {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			name := filepath.Join(dir, e.Name())
			if l, err := os.Readlink(name); err != nil || !strings.HasSuffix(l, suffix) {
				continue
			}
			var st unix.Stat_t
			if err := unix.Stat(name, &st); err != nil {
				continue
			}
			return fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev)), st.Ino
		}
	}
	t.Fatalf("pid %d opened no file ending in %s", pid, suffix)
	return "", 0
}

// posixLockKey returns the "MAJOR:MINOR:INODE" of the file on which
// /proc/locks shows a POSIX lock of bytes 0-4095 held by a child of
// process parent, waiting up to 10 s for one: the kernel's own view of
// the lock the children take turns on.
func posixLockKey(t *testing.T, parent int) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			// 1: POSIX  ADVISORY  WRITE 17997 fe:00:9978299 0 4095
			f := strings.Fields(line)
			if len(f) != 8 || f[1] != "POSIX" || f[6] != "0" || f[7] != "4095" {
				continue
			}
			stat, err := os.ReadFile(filepath.Join("/proc", f[4], "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...: comm holds no ") " here.
			rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if len(rest) > 1 && rest[1] == strconv.Itoa(parent) {
				return f[5]
			}
		}
	}
	t.Fatalf("/proc/locks shows no lock of bytes 0-4095 held by a child of %d", parent)
	return ""
}

// kernelFuncs returns the names of the kernel frames at the start of st,
// and the frames after them.
func kernelFuncs(st recording.Stack) (kernel []string, rest []recording.Frame) {
	i := 0
	for i < len(st.Frames) && st.Frames[i].Kernel {
		kernel = append(kernel, st.Frames[i].Func)
		i++
	}
	return kernel, st.Frames[i:]
}

// TestSleepKernelStackFlock records the flock convoy fixture: its threads
// sleep in flock(2) on one file. Every such sleep must come with the
// kernel's wait function on its kernel stack, above the fixture's own
// locking function, the file's device and inode as the kernel has them,
// and a waker in the process.
func TestSleepKernelStackFlock(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "../fixtures/c/flockconvoy.c", "-O2", "-g")
	p := testbin.Start(t, bin, "-variant", "bad", "-duration", "60")
	pid := mustPID(t, p)
	dev, ino := openFile(t, pid, "/app.log")
	rec := recordFor(t, Options{PID: pid, Duration: 2 * time.Second})

	var flocks, named, woken int
	for _, e := range rec.Events {
		if e.Kind != recording.EventSleep || e.Syscall != "flock" {
			continue
		}
		flocks++
		if e.Obj == nil || e.Obj.Inode != ino || e.Obj.Dev != dev || e.Obj.Cmd != "LOCK_EX" {
			t.Fatalf("flock sleep's object %+v, want the file %s:%d, LOCK_EX", e.Obj, dev, ino)
		}
		if e.Stack < 0 {
			continue
		}
		kernel, user := kernelFuncs(rec.Stacks[e.Stack])
		if slices.Contains(kernel, "locks_lock_inode_wait") && slices.ContainsFunc(user, func(f recording.Frame) bool { return f.Func == "locked_append" }) {
			named++
		} else if named == 0 && flocks < 5 {
			t.Logf("flock sleep's stack: kernel %v, then %d frames", kernel, len(user))
		}
		if e.PeerPID == pid && e.Peer != 0 && e.Peer != e.TID {
			woken++
		}
	}
	if flocks < 20 {
		t.Fatalf("%d flock sleeps in 2 s of an 8-thread flock convoy, want at least 20", flocks)
	}
	// A stack can be lost (the kernel's walk failing, a window not yet
	// unwound), rarely: nearly all must be whole.
	if named < flocks*9/10 {
		t.Errorf("%d of %d flock sleeps have locks_lock_inode_wait above locked_append", named, flocks)
	}
	if woken < flocks*9/10 {
		t.Errorf("%d of %d flock sleeps were woken by another thread of the process", woken, flocks)
	}
}

// TestTryFailRecordLock records the sleep-retry fixture: worker processes
// try a record lock with F_SETLK and sleep between failed tries. The
// failures, which never sleep, must be in the recording with the file and
// the range asked for.
func TestTryFailRecordLock(t *testing.T) {
	requireRoot(t)
	bin := testbin.C(t, "../fixtures/c/lockretry.c", "-O2", "-g")
	p := testbin.Start(t, bin, "-variant", "bad", "-duration", "60")
	pid := mustPID(t, p)
	rec := recordFor(t, Options{Target: Target{Comm: commOf(bin)}, Duration: 2 * time.Second})
	key := posixLockKey(t, pid)
	fails := 0
	for _, e := range rec.Events {
		if e.Kind != recording.EventTryFail {
			continue
		}
		fails++
		o := e.Obj
		if e.Syscall != "fcntl" || o == nil || o.Cmd != "F_SETLK" || o.Err != "EAGAIN" || o.Dev+":"+strconv.FormatUint(o.Inode, 10) != key ||
			o.Range == nil || *o.Range != (recording.LockRange{Type: "F_WRLCK", Whence: "SEEK_SET", Start: 0, Len: 4096}) {
			t.Fatalf("failed attempt %+v, object %+v, want fcntl F_SETLK EAGAIN on the header's 4096 bytes", e, o)
		}
	}
	if n := rec.Meta.Counters["ev_lock_try_fail"]; fails < 20 || n < uint64(fails) {
		t.Errorf("%d failed attempts logged, %d counted, want at least 20 logged and no fewer counted", fails, n)
	}
}

// TestHaveTracepoint: the optional lock probes load only where the
// kernel has their tracepoints, and a missing one is named.
func TestHaveTracepoint(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		testbin.Skip(t, "no kernel BTF")
	}
	if err := haveTracepoint("sched_switch"); err != nil {
		t.Errorf("sched_switch: %v", err)
	}
	err := haveTracepoint("no_such_tracepoint")
	if err == nil || !strings.Contains(err.Error(), "no_such_tracepoint") {
		t.Errorf("a missing tracepoint: %v, want an error naming it", err)
	}
}
