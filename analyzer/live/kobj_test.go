package live

import (
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

var (
	retryObj   = &recording.Object{FD: 3, Dev: "fe:00", Inode: 42, Path: "/var/db/journal", Cmd: "F_SETLK", Err: "EAGAIN", Range: &recording.LockRange{Type: "F_WRLCK", Whence: "SEEK_SET", Len: 4096}}
	tryStack   = append(nativeStack("libc.so.6", "fcntl"), nativeStack("app", "lock_header", "worker", "main")...)
	sleepStack = append(append([]recording.Frame{{Func: "hrtimer_nanosleep", Kernel: true}}, nativeStack("libc.so.6", "clock_nanosleep", "nanosleep", "usleep")...), nativeStack("app", "lock_header", "worker", "main")...)
	flockStack = append(append([]recording.Frame{{Func: "locks_lock_inode_wait", Kernel: true}, {Func: "__do_sys_flock", Kernel: true}}, nativeStack("libc.so.6", "flock")...), nativeStack("app", "locked_append", "worker_thread", "start_thread")...)
)

// pollFixture builds a recording in which threads 11..14 sleep a
// millisecond in usleep under lock_header, 200 times each over 1 s;
// with fail set, each sleep follows a failed F_SETLK on the journal.
func pollFixture(fail bool) *Data {
	return pollFixtureAt(fail, tryStack, sleepStack)
}

// pollFixtureAt is pollFixture with the failed tries at try and the
// sleeps at sleep.
func pollFixtureAt(fail bool, try, sleep []recording.Frame) *Data {
	f := newLiveFixture(time.Second)
	rec := f.ld.rec
	rec.Stacks = []recording.Stack{{Frames: try}, {Frames: sleep}}
	for tid := 11; tid <= 14; tid++ {
		f.ld.thread(tid)
		for i := range 200 {
			t := int64(i)*int64(5*time.Millisecond) + int64(tid)
			if fail {
				rec.Events = append(rec.Events, recording.Event{Kind: recording.EventTryFail, T: t, TID: tid, PID: 10, Syscall: "fcntl", Stack: 0, Obj: retryObj})
			}
			rec.Events = append(rec.Events, recording.Event{Kind: recording.EventSleep, T: t + 1000, Dur: int64(time.Millisecond), TID: tid, PID: 10, Syscall: "clock_nanosleep", State: recording.StateSleeping, Stack: 1})
		}
	}
	f.ld.ev = indexEvents(rec.Events)
	return f.ld
}

// A thread that fails F_SETLK and sleeps before trying again waits for
// the lock: a polled-lock finding at the caller of fcntl, and its sleeps
// are the ones the idle rows must leave out. The same sleep loop without
// a failed try stays idle: no finding, no point taken from the idle rows.
func TestPolledLockNeedsAFailedTry(t *testing.T) {
	out := &core.Output{Res: &core.Result{}}
	done := pollFixture(true).polled(out, map[int]int64{})
	if len(out.Res.Findings) != 1 {
		t.Fatalf("%d findings, want one polled lock", len(out.Res.Findings))
	}
	f := out.Res.Findings[0]
	if f.Kind != core.KindPolledLock || f.Point.Function != "lock_header" || f.Lock.Key != "record-lock /var/db/journal 0+4096" {
		t.Errorf("finding %s at %s on %+v", f.Kind, f.Point.Function, f.Lock)
	}
	if f.Participants != 4 || f.WaitSeconds < 0.79 || f.WaitSeconds > 0.81 {
		t.Errorf("participants %d, wait %.3f s; want 4 threads, 0.8 s", f.Participants, f.WaitSeconds)
	}
	tries := f.Evidence[0]
	if tries.Kind != core.EvPolledTries || tries.Figures["rate"] != 800 || tries.Figures["share"] < 0.19 || tries.Figures["share"] > 0.21 {
		t.Errorf("tries evidence %+v, want 800 failures a second, 20%% asleep", tries)
	}
	if len(done) == 0 {
		t.Error("the sleeps between tries are not taken from the idle rows")
	}

	out = &core.Output{Res: &core.Result{}}
	if done := pollFixture(false).polled(out, map[int]int64{}); len(out.Res.Findings) != 0 || len(done) != 0 {
		t.Errorf("a sleep loop without failed tries: findings %v, points %v taken from the idle rows", out.Res.Findings, done)
	}
}

// SQLite's busy handler: the retry loop (pager_wait_on_lock, a static
// function the stripped library names by address) calls unixLock, whose
// fcntl(F_SETLK) fails, then the busy handler, which sleeps. The sleep's
// stack never passes through the failing function; it meets the
// failure's two callers up. Those sleeps are the wait between tries; a
// sleep that meets the failure only in the thread's main loop is not.
func TestPolledLockSleepInASiblingOfTheTry(t *testing.T) {
	lib := "libsqlite3.so.0.8.6"
	callers := nativeStack(lib, "sqlite3PagerSharedLock", "sqlite3BtreeBeginTrans", "sqlite3_step", "main")
	try := append(append(nativeStack("libc.so.6", "__fcntl64_nocancel_adjusted", "fcntl"), nativeStack(lib, lib+"+0xab44f", lib+"+0xae8a3")...), callers...)
	busy := append(append(append([]recording.Frame{{Func: "hrtimer_nanosleep", Kernel: true}}, nativeStack("libc.so.6", "clock_nanosleep", "nanosleep", "usleep")...),
		nativeStack(lib, lib+"+0xaa1b5", lib+"+0xa1c77", "sqlite3InvokeBusyHandler", lib+"+0xae8c2")...), callers...)

	out := &core.Output{Res: &core.Result{}}
	done := pollFixtureAt(true, try, busy).polled(out, map[int]int64{})
	if len(out.Res.Findings) != 1 {
		t.Fatalf("%d findings, want one polled lock", len(out.Res.Findings))
	}
	f := out.Res.Findings[0]
	if f.Kind != core.KindPolledLock || f.Point.Function != lib+"+0xab44f" || f.WaitSeconds < 0.79 || f.WaitSeconds > 0.81 {
		t.Errorf("finding %s at %s, wait %.3f s; want polled-lock at the caller of fcntl, 0.8 s", f.Kind, f.Point.Function, f.WaitSeconds)
	}
	if len(done) == 0 {
		t.Error("the busy handler's sleeps are not taken from the idle rows")
	}

	out = &core.Output{Res: &core.Result{}}
	if done := pollFixtureAt(false, try, busy).polled(out, map[int]int64{}); len(out.Res.Findings) != 0 || len(done) != 0 {
		t.Errorf("the busy handler's sleeps without failed tries: findings %v, points %v taken from the idle rows", out.Res.Findings, done)
	}

	idle := append(append([]recording.Frame{{Func: "hrtimer_nanosleep", Kernel: true}}, nativeStack("libc.so.6", "clock_nanosleep", "nanosleep", "usleep")...),
		nativeStack(lib, "idle_wait", "sqlite3_step", "main")...)
	out = &core.Output{Res: &core.Result{}}
	if done := pollFixtureAt(true, try, idle).polled(out, map[int]int64{}); len(out.Res.Findings) != 0 || len(done) != 0 {
		t.Errorf("sleeps that meet the failed tries only three callers up: findings %v, points %v taken from the idle rows", out.Res.Findings, done)
	}
}

// Threads asleep in flock, each woken by the previous holder, are one
// lock keyed by the file; the same sleeps woken by nobody in the target
// are not a lock.
func TestFlockSleepsAreOneLock(t *testing.T) {
	for _, woken := range []bool{true, false} {
		f := newLiveFixture(time.Second)
		rec := f.ld.rec
		rec.Stacks = []recording.Stack{{Frames: flockStack}}
		obj := &recording.Object{FD: 3, Dev: "fe:00", Inode: 7, Path: "/var/log/app.log", Cmd: "LOCK_EX"}
		for i := range 400 {
			tid, peer := 21+i%4, 0
			if woken {
				peer = 21 + (i+3)%4
			}
			f.ld.thread(tid)
			rec.Events = append(rec.Events, recording.Event{Kind: recording.EventSleep, T: int64(i) * int64(2*time.Millisecond), Dur: int64(2 * time.Millisecond), TID: tid, PID: 20, Peer: peer, PeerPID: 20, Syscall: "flock", State: recording.StateSleeping, Stack: 0, Obj: obj})
		}
		f.ld.ev = indexEvents(rec.Events)
		out := &core.Output{Res: &core.Result{}}
		f.ld.kernelLocks(out, nil, map[int]int64{})
		if !woken {
			if len(out.Res.Findings) != 0 {
				t.Errorf("sleeps no thread of the target ended made a lock: %s", out.Res.Findings[0].Headline)
			}
			continue
		}
		if len(out.Res.Findings) != 1 {
			t.Fatalf("%d findings, want the flock", len(out.Res.Findings))
		}
		got := out.Res.Findings[0]
		if got.Kind != core.KindKernelObjectLock || got.Point.Function != "locked_append" || got.Lock.Key != "flock /var/log/app.log" || got.Participants != 4 {
			t.Errorf("finding %s at %s on %+v, %d threads", got.Kind, got.Point.Function, got.Lock, got.Participants)
		}
	}
}

// flock(1) processes that exit before contend reads their fd leave the
// file's device and inode only: their sleeps and the others', on the same
// inode, are one lock, named by the path the others read.
func TestFlockSleepsWithoutAPathAreTheSameLock(t *testing.T) {
	f := newLiveFixture(time.Second)
	rec := f.ld.rec
	rec.Stacks = []recording.Stack{{Frames: flockStack}}
	named := &recording.Object{FD: 3, Dev: "fe:00", Inode: 7, Path: "/var/lock/app.lock", Cmd: "LOCK_EX"}
	bare := &recording.Object{FD: 3, Dev: "fe:00", Inode: 7, Cmd: "LOCK_EX"}
	for i := range 400 {
		tid, obj := 21+i%4, named
		if i%2 == 0 {
			obj = bare
		}
		f.ld.thread(tid)
		rec.Events = append(rec.Events, recording.Event{Kind: recording.EventSleep, T: int64(i) * int64(2*time.Millisecond), Dur: int64(2 * time.Millisecond), TID: tid, PID: 20, Peer: 21 + (i+3)%4, PeerPID: 20, Syscall: "flock", State: recording.StateSleeping, Stack: 0, Obj: obj})
	}
	f.ld.ev = indexEvents(rec.Events)
	out := &core.Output{Res: &core.Result{}}
	f.ld.kernelLocks(out, nil, map[int]int64{})
	if len(out.Res.Findings) != 1 {
		t.Fatalf("%d findings, want one flock", len(out.Res.Findings))
	}
	got := out.Res.Findings[0]
	if got.Lock.Key != "flock /var/lock/app.lock" || got.WaitSeconds < 0.79 || got.WaitSeconds > 0.81 {
		t.Errorf("lock %+v, wait %.3f s; want the path's flock, all 0.8 s", got.Lock, got.WaitSeconds)
	}
}

// A stack that stops at the C library's flock (a process that exited
// before its stack was unwound) is the same call as the complete stacks
// that go on from there: the point is the program's caller, whichever
// kind of stack weighs more.
func TestFlockTruncatedStacksJoinTheirCaller(t *testing.T) {
	truncated := append([]recording.Frame{{Func: "locks_lock_inode_wait", Kernel: true}, {Func: "__do_sys_flock", Kernel: true}}, nativeStack("libc.so.6", "flock")...)
	f := newLiveFixture(time.Second)
	rec := f.ld.rec
	rec.Stacks = []recording.Stack{{Frames: flockStack}, {Frames: truncated}}
	obj := &recording.Object{FD: 3, Dev: "fe:00", Inode: 7, Path: "/var/lock/app.lock", Cmd: "LOCK_EX"}
	for i := range 400 {
		// Two of every three sleeps have the truncated stack.
		tid, stack := 21+i%4, 1
		if i%3 == 0 {
			stack = 0
		}
		f.ld.thread(tid)
		rec.Events = append(rec.Events, recording.Event{Kind: recording.EventSleep, T: int64(i) * int64(2*time.Millisecond), Dur: int64(2 * time.Millisecond), TID: tid, PID: 20, Peer: 21 + (i+3)%4, PeerPID: 20, Syscall: "flock", State: recording.StateSleeping, Stack: stack, Obj: obj})
	}
	f.ld.ev = indexEvents(rec.Events)
	out := &core.Output{Res: &core.Result{}}
	f.ld.kernelLocks(out, nil, map[int]int64{})
	if len(out.Res.Findings) != 1 {
		t.Fatalf("%d findings, want one flock", len(out.Res.Findings))
	}
	if got := out.Res.Findings[0]; got.Point.Function != "locked_append" || got.WaitSeconds < 0.79 {
		t.Errorf("point %s, wait %.3f s; want locked_append with all 0.8 s", got.Point.Function, got.WaitSeconds)
	}
}
