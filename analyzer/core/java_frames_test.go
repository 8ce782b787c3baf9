package core

import (
	"testing"

	"github.com/contend-dev/contend/recording"
)

// jv, jvm and libc build frames of Java code, of libjvm.so and of glibc.
func jv(fn string) recording.Frame  { return recording.Frame{Func: fn, Module: recording.ModuleJava} }
func jvm(fn string) recording.Frame { return recording.Frame{Func: fn, Module: JVMModule} }
func libc(fn string) recording.Frame {
	return recording.Frame{Func: fn, Module: "libc.so.6"}
}

// The stacks a JVM's threads wait in, as the probes see them (compiled
// code named from the perf map, the JVM's own frames) and as a thread
// dump prints them, classified and given their program point.
func TestJavaStacks(t *testing.T) {
	condWait := []recording.Frame{libc("__futex_abstimed_wait_common64"), libc("__pthread_cond_wait_common"), libc("pthread_cond_wait")}
	for _, tc := range []struct {
		name   string
		frames []recording.Frame
		point  string
		class  WaitClass
		flavor LockFlavor
	}{
		{"monitor, compiled", append(append([]recording.Frame{}, condWait...),
			jvm("os::PlatformEvent::park"), jvm("ObjectMonitor::EnterI"), jvm("ObjectMonitor::enter"), jvm("ObjectSynchronizer::enter"),
			jvm("SharedRuntime::complete_monitor_locking_C"), jv("_complete_monitor_locking_Java"), jv("fixtures.Stripe.onMessage"), jv("Interpreter")),
			"fixtures.Stripe.onMessage", ClassLock, FlavorMonitor},
		{"monitor, interpreted", append(append([]recording.Frame{}, condWait...),
			jvm("os::PlatformEvent::park"), jvm("ObjectMonitor::EnterI"), jvm("ObjectMonitor::enter"), jvm("InterpreterRuntime::monitorenter"), jv("Interpreter"), jv("Interpreter")),
			"Interpreter", ClassLock, FlavorMonitor},
		{"ReentrantLock, dump", []recording.Frame{jv("jdk.internal.misc.Unsafe.park"), jv("java.util.concurrent.locks.LockSupport.park"),
			jv("java.util.concurrent.locks.AbstractQueuedSynchronizer.acquire"), jv("java.util.concurrent.locks.ReentrantLock$Sync.lock"),
			jv("java.util.concurrent.locks.ReentrantLock.lock"), jv("fixtures.Writer.frameWrite"), jv("fixtures.Writer.lambda$main$0")},
			"fixtures.Writer.frameWrite", ClassLock, FlavorJavaLock},
		{"idle pool, dump", []recording.Frame{jv("jdk.internal.misc.Unsafe.park"), jv("java.util.concurrent.locks.LockSupport.park"),
			jv("java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionNode.block"), jv("java.util.concurrent.ForkJoinPool.unmanagedBlock"),
			jv("java.util.concurrent.ForkJoinPool.managedBlock"), jv("java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await"),
			jv("java.util.concurrent.LinkedBlockingQueue.take"), jv("java.util.concurrent.ThreadPoolExecutor.getTask")},
			"java.util.concurrent.LinkedBlockingQueue.take", ClassIdle, FlavorNone},
		{"condition signalled, taking the lock back", []recording.Frame{jv("jdk.internal.misc.Unsafe.park"), jv("java.util.concurrent.locks.LockSupport.park"),
			jv("java.util.concurrent.locks.AbstractQueuedSynchronizer.acquire"), jv("java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await"),
			jv("app.Queue.take")},
			"app.Queue.take", ClassLock, FlavorJavaLock},
		{"sleep", append(append([]recording.Frame{}, condWait...), jvm("os::PlatformEvent::park"), jvm("JavaThread::sleep"), jvm("JVM_Sleep"),
			jv("java.lang.Thread.sleep"), jv("fixtures.Fixture.sleep")),
			"fixtures.Fixture.sleep", ClassIdle, FlavorNone},
		{"safepoint", []recording.Frame{libc("syscall"), jvm("LinuxWaitBarrier::wait"), jvm("SafepointSynchronize::block"),
			jvm("SafepointMechanism::process"), jv("fixtures.Spin.onMessage")},
			"fixtures.Spin.onMessage", ClassRuntimeWait, FlavorNone},
		{"GC worker", []recording.Frame{libc("__futex_abstimed_wait_common64"), libc("__new_sem_wait_slow64.constprop.0"), jvm("PosixSemaphore::wait"), jvm("GangWorker::loop")},
			"GangWorker::loop", ClassIdle, FlavorNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pi := PointIndex(tc.frames)
			if pi < 0 || tc.frames[pi].Func != tc.point {
				t.Errorf("point %d, want %s", pi, tc.point)
			}
			sc := ClassifyFrames(tc.frames, pi)
			if sc.Class != tc.class || sc.Class == ClassLock && sc.Flavor != tc.flavor {
				t.Errorf("class %d flavor %d (%s), want %d %d", sc.Class, sc.Flavor, sc.Reason, tc.class, tc.flavor)
			}
			if sc.Class == ClassIdle || sc.Class == ClassRuntimeWait {
				if sc.Reason == "" {
					t.Error("no reason")
				}
			}
		})
	}
}

// Java I/O: the JDK's layers are plumbing, the native write and force
// are I/O, so a holder in FileChannel.force sits at the code that forced.
func TestJavaIOFrames(t *testing.T) {
	fr := []recording.Frame{jv("sun.nio.ch.FileDispatcherImpl.force0"), jv("sun.nio.ch.FileDispatcherImpl.force"),
		jv("sun.nio.ch.FileChannelImpl.force"), jv("fixtures.IoLock.journalWrite"), jv("fixtures.IoLock.claimUpdate")}
	if pi := PointIndex(fr); pi != 3 {
		t.Errorf("point %d, want journalWrite", pi)
	}
	if io := IOIndex(fr, 3); io != 2 {
		t.Errorf("outermost I/O frame %d, want FileChannelImpl.force", io)
	}
	if isIOFrame(jv("fixtures.IoLock.journalWrite")) || isIOFrame(jv("java.util.HashMap.put")) {
		t.Error("program code taken for I/O")
	}
}

// A Java method name looks like a Go one; the module tells them apart.
func TestJavaNotGo(t *testing.T) {
	if IsLockMachinery(jv("sync.Pool.get")) {
		t.Error("a Java class in package sync taken for Go's sync")
	}
	if !IsLockMachinery(jv("StubRoutines (1)")) || IsLockMachinery(jv(javaInterpreter)) {
		t.Error("stubs are machinery, the interpreter is not")
	}
}
