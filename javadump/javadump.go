// Package javadump parses Java thread dumps: the text `jcmd PID
// Thread.print` (with or without -l), `jstack PID` and a HotSpot JVM's
// SIGQUIT handler print. A dump names every thread with its native thread
// id (the Linux tid), its state, its stack, the monitors it holds and the
// one it waits for ("- waiting to lock <0x…> (a Foo)"), the
// java.util.concurrent lock it parks on ("- parking to wait for <0x…>"),
// and, with -l, the ownable synchronizers it holds.
package javadump

import (
	"errors"
	"strings"
	"time"
)

// ErrBadDump is wrapped by every error about text that is not a complete
// Java thread dump: truncated, or holding lines no JVM writes in one. The
// CLI maps it to the exit code for bad input.
var ErrBadDump = errors.New("bad Java thread dump")

// Dump is one Java thread dump.
type Dump struct {
	// Taken is the dump's timestamp line ("2026-12-01 16:39:53", local
	// time, whole seconds), zero when the dump has none.
	Taken time.Time
	// VM describes the JVM: "OpenJDK 64-Bit Server VM (17.0.15+6 mixed
	// mode, sharing)", "" when the dump does not say.
	VM string
	// Threads lists every thread in dump order, Java threads and the
	// VM's own (GC, compiler, VM Thread).
	Threads []*Thread
	// Ownable is set when the dump lists each Java thread's locked
	// ownable synchronizers (jcmd Thread.print -l, jstack -l): only then
	// does it name the holders of java.util.concurrent locks.
	Ownable bool
	// Deadlocks is how many Java-level deadlocks the JVM reported.
	Deadlocks int
	// Raw is the dump's text as read, kept so a recording can store it
	// unchanged.
	Raw []byte
}

// Thread is one thread of a dump.
type Thread struct {
	Name string
	// ID is the Java thread id ("#12"), 0 for the VM's own threads.
	ID int64
	// NID is the native thread id: the Linux tid, as /proc and the
	// kernel name the thread.
	NID    int
	Daemon bool
	// Java is set for threads that run Java code (they have a
	// java.lang.Thread.State line); the VM's own threads have none.
	Java bool
	// State is the java.lang.Thread.State ("RUNNABLE", "BLOCKED",
	// "WAITING", "TIMED_WAITING", "NEW", "TERMINATED"), "" for VM
	// threads; Detail its parenthesised detail ("on object monitor",
	// "parking", "sleeping").
	State, Detail string
	// Status is the header's own word for what the thread does:
	// "waiting for monitor entry", "runnable", "in Object.wait()",
	// "waiting on condition", "sleeping".
	Status string
	// Frames is the stack, leaf first.
	Frames []Frame
	// Owns lists the ownable synchronizers the thread holds (with -l):
	// java.util.concurrent locks it has acquired.
	Owns []Lock
}

// Frame is one frame of a Java stack.
type Frame struct {
	// Func is "pkg.Class.method" (hidden classes keep their suffix:
	// "pkg.Main$$Lambda$3/0x0000000800c01000.run").
	Func string
	// File and Line locate it, "" and 0 when the dump does not say
	// (native methods, classes compiled without debug information).
	File string
	Line int
	// Module is the module and version the class comes from
	// ("java.base@17.0.15"), "" for classes on the class path.
	Module string
	// Native is set for native methods.
	Native bool
	// Locks holds the lock lines printed under the frame: what the frame
	// locked or waits for.
	Locks []Lock
}

// LockOp is what a lock line says a frame does with an object.
type LockOp string

// Lock operations, as the JVM prints them.
const (
	// OpWaitLock: blocked entering a synchronized block or method.
	OpWaitLock LockOp = "waiting to lock"
	// OpLocked: holds the object's monitor.
	OpLocked LockOp = "locked"
	// OpParking: parked in LockSupport.park on a java.util.concurrent
	// synchronizer (a lock, or a condition).
	OpParking LockOp = "parking to wait for"
	// OpWaitOn: in Object.wait() on the object (the monitor is released
	// while waiting).
	OpWaitOn LockOp = "waiting on"
	// OpRelock: woken from Object.wait(), waiting to take the monitor
	// back.
	OpRelock LockOp = "waiting to re-lock in wait()"
	// OpEliminated: a monitor the JIT removed (lock elision).
	OpEliminated LockOp = "eliminated"
	// OpOwns: an ownable synchronizer the thread holds.
	OpOwns LockOp = "owns"
)

// Lock is one object a thread locks, holds or waits for.
type Lock struct {
	Op LockOp
	// Addr is the object's address ("0x000000069ec19a18"), "" when the
	// dump gives none ("<no object reference available>", a scalar-
	// replaced owner).
	Addr string
	// Class is the object's class ("java.lang.Object",
	// "java.util.concurrent.locks.ReentrantLock$NonfairSync").
	Class string
}

// isSyncClass reports whether class is a java.util.concurrent
// synchronizer that excludes other threads (a lock's Sync), as opposed to
// a condition or a latch.
func isSyncClass(class string) bool {
	if strings.HasSuffix(class, "$ConditionObject") || strings.HasSuffix(class, "ConditionNode") {
		return false
	}
	for _, s := range []string{"ReentrantLock$", "ReentrantReadWriteLock$", "StampedLock", "Semaphore$"} {
		if strings.Contains(class, s) {
			return true
		}
	}
	return false
}

// Waits returns the lock the thread waits to acquire: the monitor it is
// blocked entering (or re-entering after Object.wait), or the
// java.util.concurrent lock it parks on. A thread parked on a condition,
// a latch or a queue waits for an event, not a lock: ok is false.
func (t *Thread) Waits() (Lock, bool) {
	for _, f := range t.Frames {
		for _, l := range f.Locks {
			switch {
			case l.Op == OpWaitLock, l.Op == OpRelock:
				return l, true
			case l.Op == OpParking && isSyncClass(l.Class):
				return l, true
			}
		}
	}
	return Lock{}, false
}

// Holds returns every lock the thread holds: monitors ("- locked") and,
// in a dump taken with -l, ownable synchronizers. A monitor the thread
// waits on in Object.wait() is released meanwhile and not held.
func (t *Thread) Holds() []Lock {
	waitOn := map[string]bool{}
	for _, f := range t.Frames {
		for _, l := range f.Locks {
			if l.Op == OpWaitOn && l.Addr != "" {
				waitOn[l.Addr] = true
			}
		}
	}
	var out []Lock
	for _, f := range t.Frames {
		for _, l := range f.Locks {
			if l.Op == OpLocked && l.Addr != "" && !waitOn[l.Addr] {
				out = append(out, l)
			}
		}
	}
	return append(out, t.Owns...)
}

// HoldsAt returns the index of the frame that took lock addr (the frame
// whose "- locked" line names it), -1 when the thread does not hold it
// or holds it as an ownable synchronizer (taken somewhere below the
// frame that called lock()).
func (t *Thread) HoldsAt(addr string) int {
	for i, f := range t.Frames {
		for _, l := range f.Locks {
			if l.Op == OpLocked && l.Addr == addr {
				return i
			}
		}
	}
	return -1
}
