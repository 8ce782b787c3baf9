package live

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/javadump"
	"github.com/contend-dev/contend/recording"
)

// Stacks of a JVM's threads as the probes see them.
var (
	jvmCondWait = []recording.Frame{libc("__futex_abstimed_wait_common64"), libc("__pthread_cond_wait_common"), libc("pthread_cond_wait")}
	jvmCondWake = []recording.Frame{libc("futex_wake"), libc("pthread_cond_signal"), jvm("os::PlatformEvent::unpark")}
)

// monitorWait is a compiled method's wait for a monitor at point.
func monitorWait(point string) []recording.Frame {
	return append(append([]recording.Frame{}, jvmCondWait...), jvm("os::PlatformEvent::park"), jvm("ObjectMonitor::EnterI"),
		jvm("ObjectMonitor::enter"), jvm("SharedRuntime::complete_monitor_locking_C"), jv("_complete_monitor_locking_Java"), jv(point), jv("Interpreter"))
}

// monitorRelease is a compiled method's release that unparks a waiter.
func monitorRelease(point string) []recording.Frame {
	return append(append([]recording.Frame{}, jvmCondWake...), jvm("ObjectMonitor::ExitEpilog"), jvm("ObjectMonitor::exit"), jv(point))
}

var (
	poolTake = append(append([]recording.Frame{}, jvmCondWait...), jvm("Parker::park"), jvm("Unsafe_Park"), jv("jdk.internal.misc.Unsafe.park"),
		jv("java.util.concurrent.locks.LockSupport.park"), jv("java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await"),
		jv("java.util.concurrent.LinkedBlockingQueue.take"), jv("java.util.concurrent.ThreadPoolExecutor.getTask"))
	safepointWait = []recording.Frame{libc("syscall"), jvm("LinuxWaitBarrier::wait"), jvm("SafepointSynchronize::block"), jvm("SafepointMechanism::process"), jv("app.Work.run")}
)

// parkWord gives thread tid its own park word at addr, waited on at
// frames for ns.
func (f *liveFixture) parkWord(addr uint64, tid int, ns int64, frames []recording.Frame) {
	f.word(addr, "", uint64(ns), []int{tid}, nil, 0)
	f.wait(addr, tid, ns, frames)
}

// Each Java thread waits on its own word: the words of the threads that
// hand a monitor to each other become one lock at its program point;
// another pair's monitor stays apart; an idle pool and a safepoint are
// not locks.
func TestJVMLocksFromHandoffs(t *testing.T) {
	f := newLiveFixture(3 * time.Second)
	// Six threads queue on the monitor at app.Table.put: each releases
	// it to the next.
	for i := 0; i < 6; i++ {
		tid := 100 + i
		f.parkWord(0x7000+uint64(i)*0x100, tid, 2e9, monitorWait("app.Table.put"))
		f.wake(0x7000+uint64((i+1)%6)*0x100, tid, 50, monitorRelease("app.Table.put"))
	}
	// Two threads hand another monitor, at the same point, to each
	// other only.
	f.parkWord(0x9000, 200, 1e9, monitorWait("app.Table.put"))
	f.parkWord(0x9100, 201, 1e9, monitorWait("app.Table.put"))
	f.wake(0x9000, 201, 20, monitorRelease("app.Table.put"))
	f.wake(0x9100, 200, 20, monitorRelease("app.Table.put"))
	// A thread the monitor was never handed to while recorded waits
	// where the six do.
	f.parkWord(0x7600, 106, 3e9, monitorWait("app.Table.put"))
	// Idle pool workers and a safepoint.
	f.parkWord(0xa000, 300, 3e9, poolTake)
	f.word(0xb000, "", 6e6, []int{100, 101, 102}, []int{1}, 3)
	for _, tid := range []int{100, 101, 102} {
		f.wait(0xb000, tid, 2e6, safepointWait)
	}
	locks := f.ld.jvmLocks(f.ld.lockGroups(), nil)
	g := groupOf(t, locks, 0x7000)
	if g.jvm == nil || len(g.waiters) != 7 || g.idle || g.role != roleMutex || !g.jvm.byWakes || g.jvm.flavor != core.FlavorMonitor {
		t.Fatalf("monitor group: jvm %+v, %d waiters, idle %v, role %d", g.jvm, len(g.waiters), g.idle, g.role)
	}
	if g2 := groupOf(t, locks, 0x9000); g2 == g || len(g2.waiters) != 2 {
		t.Errorf("the pair's monitor joined the six's, or has %d waiters", len(g2.waiters))
	}
	if p := groupOf(t, locks, 0xa000); !p.idle || !strings.Contains(p.idleReason, "LinkedBlockingQueue.take") {
		t.Errorf("pool worker: idle %v (%q)", p.idle, p.idleReason)
	}
	if s := groupOf(t, locks, 0xb000); !s.idle || s.jvm == nil || !s.jvm.pause || !strings.Contains(s.idleReason, "safepoint") {
		t.Errorf("safepoint: idle %v jvm %+v (%q)", s.idle, s.jvm, s.idleReason)
	}
	c := f.ld.lockCase(g, locks)
	if !c.Java || c.Point.Function != "app.Table.put" || c.ID.Name != "a Java monitor (synchronized)" || c.Participants != 7 {
		t.Errorf("case: java %v at %s, lock %+v, %d participants", c.Java, c.Point.Function, c.ID, c.Participants)
	}
}

// With thread dumps, the words are joined by the object each thread
// waits for, whatever the hand-offs, and the lock is named after it.
func TestJVMLocksFromDumps(t *testing.T) {
	f := newLiveFixture(3 * time.Second)
	header := func(name string, nid int) string {
		return fmt.Sprintf("\"%s\" #20 prio=5 os_prio=0 tid=0x1 nid=0x%x waiting for monitor entry [0x2]\n   java.lang.Thread.State: BLOCKED (on object monitor)\n", name, nid)
	}
	dump := "Full thread dump test VM:\n\n"
	for i, obj := range []string{"0x00000000a0", "0x00000000a0", "0x00000000b0", "0x00000000b0"} {
		dump += header("t", 100+i) + "\tat app.Table.put(Table.java:9)\n\t- waiting to lock <" + obj + "> (a app.Table$Bucket)\n\n"
	}
	dump += "JNI global refs: 1\n"
	d, err := javadump.Parse([]byte(dump))
	if err != nil {
		t.Fatal(err)
	}
	f.ld.rec.JavaDumps = []*javadump.Dump{d}
	for i := 0; i < 4; i++ {
		f.parkWord(0x7000+uint64(i)*0x100, 100+i, 2e9, monitorWait("app.Table.put"))
	}
	// A hand-off between threads the dumps place on different objects
	// does not join them.
	f.wake(0x7200, 101, 5, monitorRelease("app.Table.put"))
	locks := f.ld.jvmLocks(f.ld.lockGroups(), core.BuildJavaData(f.ld.rec))
	a, b := groupOf(t, locks, 0x7000), groupOf(t, locks, 0x7200)
	if a == b || len(a.waiters) != 2 || len(b.waiters) != 2 {
		t.Fatalf("groups: %d and %d waiters (same group %v)", len(a.waiters), len(b.waiters), a == b)
	}
	if id := a.id(f.ld); id.Address != "0x00000000a0" || id.Name != "app.Table$Bucket" || a.jvm.byWakes {
		t.Errorf("lock %+v, by wakes %v", id, a.jvm.byWakes)
	}
	c := f.ld.lockCase(a, locks)
	if c.Point.File != "Table.java" || c.Point.Line != 9 || !strings.Contains(c.What, "app.Table$Bucket <0x00000000a0>") {
		t.Errorf("point %s:%d, what %q", c.Point.File, c.Point.Line, c.What)
	}
}

// A holder stopped at a safepoint while others wait makes the JVM pause
// a link of the lock's chain.
func TestJVMHolderAtSafepoint(t *testing.T) {
	f := newLiveFixture(time.Second)
	ms := int64(time.Millisecond)
	f.parkWord(0x7000, 21, 100*ms, monitorWait("app.Table.put"))
	f.parkWord(0x7100, 22, 10*ms, monitorWait("app.Table.put"))
	f.wake(0x7000, 22, 1, monitorRelease("app.Table.put"))
	f.wake(0x7100, 21, 1, monitorRelease("app.Table.put"))
	f.word(0xb000, "", uint64(80*ms), []int{22}, []int{1}, 1)
	f.wait(0xb000, 22, 80*ms, safepointWait)
	f.ld.ev = indexEvents([]recording.Event{
		{Kind: recording.EventWait, T: 0, Dur: 100 * ms, TID: 21, Addr: 0x7000, Stack: -1},
		{Kind: recording.EventWait, T: 10 * ms, Dur: 80 * ms, TID: 22, Addr: 0xb000, Stack: -1},
		{Kind: recording.EventWakeup, T: 100 * ms, TID: 22, Peer: 21, Stack: -1},
		{Kind: recording.EventWake, T: 100 * ms, TID: 22, Peer: 1, Addr: 0x7000, Stack: -1},
	})
	locks := f.ld.jvmLocks(f.ld.lockGroups(), nil)
	c := f.ld.lockCase(groupOf(t, locks, 0x7000), locks)
	if len(c.Chain) == 0 || c.Chain[0].What != chainJVMPause || c.Chain[0].Share < 0.75 {
		t.Errorf("chain %+v, want the safepoint first with 80%% of the waiting", c.Chain)
	}
}

// A monitor's exit wakes one successor, so the waiters queued behind a
// holder that writes to disk are woken by the threads ahead of them, not
// by the writer: each release during a wait ends a hold, and the writer's
// I/O stalls every wait it falls in. When the writer's I/O comes after it
// let the monitor go (the fixed variant), no hold contains it.
func TestJVMHoldersInTurn(t *testing.T) {
	ms := int64(time.Millisecond)
	build := func(ioUnder bool) *core.LockCase {
		f := newLiveFixture(time.Second)
		waiters := []int{100, 101, 102, 103}
		word := func(tid int) uint64 { return 0x7000 + uint64(tid-100)*0x100 }
		for _, tid := range waiters {
			f.parkWord(word(tid), tid, 100*ms, monitorWait("app.Claims.lookup"))
		}
		const writer = 110
		f.ld.thread(writer)
		// The writer releases to 100 at 55 ms (bad) or 5 ms (fixed);
		// each waiter then releases to the next 15 ms later.
		rel := 55 * ms
		if !ioUnder {
			rel = 5 * ms
		}
		evs := []recording.Event{{Kind: recording.EventIO, T: 6 * ms, Dur: 44 * ms, TID: writer, Syscall: "fsync", Stack: -1}}
		f.wake(word(100), writer, 1, monitorRelease("app.Claims.update"))
		evs = append(evs, recording.Event{Kind: recording.EventWake, T: rel, TID: writer, Peer: 1, Addr: word(100), Stack: -1},
			recording.Event{Kind: recording.EventWakeup, T: rel, TID: writer, Peer: 100, Stack: -1})
		for i, tid := range waiters {
			end := rel + 5*ms + int64(i)*15*ms
			evs = append(evs, recording.Event{Kind: recording.EventWait, T: 0, Dur: end, TID: tid, Addr: word(tid), Stack: -1})
			if i+1 < len(waiters) {
				next := waiters[i+1]
				f.wake(word(next), tid, 1, monitorRelease("app.Claims.lookup"))
				evs = append(evs, recording.Event{Kind: recording.EventWake, T: end + 10*ms, TID: tid, Peer: 1, Addr: word(next), Stack: -1},
					recording.Event{Kind: recording.EventWakeup, T: end + 10*ms, TID: tid, Peer: next, Stack: -1})
			}
		}
		f.ld.ev = indexEvents(evs)
		locks := f.ld.jvmLocks(f.ld.lockGroups(), nil)
		return f.ld.lockCase(groupOf(t, locks, word(100)), locks)
	}
	// Bad: the 44 ms fsync lies in every wait's first hold: 4 × 44 ms of
	// the waits' 60+75+90+105 ms.
	bad := build(true)
	if want := 4 * 44.0 / 330; !bad.IO.Explains || bad.IO.Share < want-0.01 || bad.IO.Share > want+0.01 || bad.IO.Call != "fsync" {
		t.Errorf("I/O under the monitor: explains %v, share %.2f (want %.2f), call %q", bad.IO.Explains, bad.IO.Share, want, bad.IO.Call)
	}
	// Only the first waiter was woken by the writer: counting its wait
	// alone would give 44 of 330 ms, under the bar.
	if 44.0/330 >= core.IOMinExplained {
		t.Fatalf("the scenario does not tell the two rules apart")
	}
	if fixed := build(false); fixed.IO.Explains || fixed.IO.Share != 0 {
		t.Errorf("I/O after the release: explains %v, share %.2f, want none", fixed.IO.Explains, fixed.IO.Share)
	}
}

// lastWaitEnd finds a thread's last wait for the lock that ended in a
// span, skipping its waits on other words and the wait still under way.
func TestLastWaitEnd(t *testing.T) {
	own := map[uint64]bool{0x10: true}
	x := indexEvents([]recording.Event{
		{Kind: recording.EventWait, T: 0, Dur: 10, TID: 1, Addr: 0x10, Stack: -1},
		{Kind: recording.EventWait, T: 12, Dur: 8, TID: 1, Addr: 0x20, Stack: -1},
		{Kind: recording.EventWait, T: 25, Dur: 5, TID: 1, Addr: 0x10, Stack: -1},
	})
	for _, tc := range []struct{ after, before, want int64 }{
		{5, 28, 10},  // the wait on the lock under way at 28 and the one on another word are skipped
		{11, 40, 30}, // the last one
		{11, 28, 11}, // none ended in (11, 28]
		{31, 40, 31}, // none after 31
		{0, 100, 30},
	} {
		if got := x.lastWaitEnd(1, own, tc.after, tc.before); got != tc.want {
			t.Errorf("lastWaitEnd(%d, %d) = %d, want %d", tc.after, tc.before, got, tc.want)
		}
	}
	if got := x.lastWaitEnd(2, own, 3, 9); got != 3 {
		t.Errorf("a thread with no waits: %d, want 3", got)
	}
}

// jv, jvm and libc build frames of Java code, of libjvm.so and of glibc.
func jv(fn string) recording.Frame  { return recording.Frame{Func: fn, Module: recording.ModuleJava} }
func jvm(fn string) recording.Frame { return recording.Frame{Func: fn, Module: core.JVMModule} }
func libc(fn string) recording.Frame {
	return recording.Frame{Func: fn, Module: "libc.so.6"}
}
