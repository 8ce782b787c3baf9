package core

import (
	"strings"

	"github.com/contend-dev/contend/recording"
)

// This file is the frame classification of Java programs, consulted by
// frames.go's predicates for frames of the JVM: Java code (module
// recording.ModuleJava: JIT-compiled methods named from the perf map, the
// interpreter, the JVM's stubs, and every frame of a thread dump) and the
// JVM itself (libjvm.so).
//
// A Java thread that waits parks in the JVM: a synchronized block that
// finds its monitor taken goes through ObjectMonitor::enter/EnterI to
// os::PlatformEvent::park, a java.util.concurrent lock through
// LockSupport.park and Unsafe.park to Parker::park; both end in
// pthread_cond_wait on a condition variable of the waiting thread's own.
// The futex word therefore names the waiter, not the lock: which lock it
// is, and whether the wait is contention at all, is read from the frames
// (the Java frames above the park say what is parked on), and the lock is
// told by who hands it to whom (live/jvm.go) or by a thread dump.

// JVMModule is the JVM's shared object.
const JVMModule = "libjvm.so"

// jvmWaitPrefixes are the JVM functions a Java thread passes through to
// wait or to hand a lock over: monitors, parking, sleeping, safepoints,
// the VM's own mutexes. They are lock machinery: a program point is never
// inside them.
var jvmWaitPrefixes = []string{
	"os::PlatformEvent::", "PlatformEvent::", "os::PlatformParker::", "PlatformParker::", "Parker::",
	"ObjectMonitor::", "ObjectSynchronizer::", "ObjectLocker::",
	"SharedRuntime::complete_monitor_", "SharedRuntime::monitor_", "InterpreterRuntime::monitor",
	"Runtime1::monitor", "OptoRuntime::",
	"Unsafe_Park", "Unsafe_Unpark", "JVM_MonitorWait", "JVM_MonitorNotify", "JVM_Sleep",
	"JavaThread::sleep", "JavaThread::java_suspend", "ThreadBlockInVM", "ThreadInVMfromJava",
	"SafepointSynchronize::", "SafepointMechanism::", "LinuxWaitBarrier::", "GenericWaitBarrier::",
	"HandshakeState::", "JavaThread::check_special_condition", "JavaThread::handle_special",
	"Monitor::", "Mutex::", "os::PlatformMonitor::", "PlatformMonitor::", "os::PlatformMutex::",
	"MonitorLocker::", "MutexLocker::", "VMThread::execute", "VMThread::wait_", "PosixSemaphore::",
}

// javaMachineryPrefixes are the Java packages and classes of locking,
// parking and atomics: java.util.concurrent.locks, Unsafe's park, the
// atomic classes (a busy-wait's compareAndSet), Object.wait and
// Thread.sleep (wrappers of a wait; the point is their caller).
var javaMachineryPrefixes = []string{
	"java.util.concurrent.locks.", "java.util.concurrent.atomic.",
	"jdk.internal.misc.Unsafe.", "sun.misc.Unsafe.",
	"java.lang.Object.wait", "java.lang.Thread.sleep", "java.lang.Thread.onSpinWait",
	"java.lang.invoke.VarHandle", "java.lang.invoke.VarHandleGuards.",
	// The blocking helper java.util.concurrent's conditions park through.
	"java.util.concurrent.ForkJoinPool.managedBlock", "java.util.concurrent.ForkJoinPool.unmanagedBlock",
}

// javaPlumbingPrefixes are the JDK's layers between a program's I/O call
// and the system call: skipped like system-call plumbing when choosing a
// program point, so that a thread in FileChannel.write sits at the code
// that wrote.
var javaPlumbingPrefixes = []string{
	"sun.nio.ch.", "sun.nio.fs.", "java.io.FileOutputStream.", "java.io.FileInputStream.",
	"java.io.RandomAccessFile.", "java.nio.channels.", "java.nio.file.Files.",
	"java.net.SocketOutputStream.", "java.net.SocketInputStream.", "java.net.Socket$",
}

// javaIOPrefixes are Java methods that do file or network I/O.
var javaIOPrefixes = []string{
	"sun.nio.ch.FileDispatcherImpl.", "sun.nio.ch.FileChannelImpl.write", "sun.nio.ch.FileChannelImpl.force",
	"sun.nio.ch.FileChannelImpl.read", "sun.nio.ch.FileChannelImpl.transfer", "sun.nio.ch.IOUtil.write",
	"sun.nio.ch.IOUtil.read", "sun.nio.ch.SocketDispatcher.", "sun.nio.ch.SocketChannelImpl.write",
	"sun.nio.ch.SocketChannelImpl.read", "sun.nio.ch.NioSocketImpl.", "sun.nio.fs.UnixNativeDispatcher.",
	"sun.nio.fs.UnixCopyFile.", "java.io.FileOutputStream.write", "java.io.FileOutputStream.writeBytes",
	"java.io.FileDescriptor.sync", "java.io.RandomAccessFile.write", "java.io.RandomAccessFile.read",
	"java.io.FileInputStream.read", "java.nio.file.Files.move", "java.nio.file.Files.write",
	"java.nio.file.Files.delete", "java.nio.file.Files.createFile",
}

// isJavaFrame reports whether f is Java code (or one of the JVM's stubs
// between compiled methods).
func isJavaFrame(f recording.Frame) bool { return f.Module == recording.ModuleJava }

// isJavaMethod reports whether a Java frame names a method
// ("pkg.Class.method"), not a stub ("StubRoutines (1)") or the
// interpreter.
func isJavaMethod(fn string) bool {
	return strings.Contains(fn, ".") && !strings.Contains(fn, " ")
}

// javaInterpreter is the name of frames in the JVM's interpreter: the
// method being interpreted is not named from the perf map.
const javaInterpreter = "Interpreter"

// JVMMachinery says whether a frame of the JVM or of Java code is lock
// machinery; ok is false for frames of neither, which frames.go judges.
func JVMMachinery(f recording.Frame) (machinery, ok bool) {
	switch {
	case f.Module == JVMModule:
		return hasAnyPrefix(f.Func, jvmWaitPrefixes), true
	case isJavaFrame(f):
		if !isJavaMethod(f.Func) {
			// The JVM's stubs between compiled code and the runtime
			// ("_complete_monitor_locking_Java", "StubRoutines (1)").
			return f.Func != javaInterpreter, true
		}
		return hasAnyPrefix(f.Func, javaMachineryPrefixes), true
	}
	return false, false
}

// javaPlumbing reports whether a Java frame is I/O plumbing of the JDK.
func javaPlumbing(f recording.Frame) bool {
	return hasAnyPrefix(f.Func, javaPlumbingPrefixes)
}

// javaIO reports whether a Java frame does I/O.
func javaIO(f recording.Frame) bool {
	return hasAnyPrefix(f.Func, javaIOPrefixes)
}

// hasAnyPrefix reports whether s starts with one of prefixes.
func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
