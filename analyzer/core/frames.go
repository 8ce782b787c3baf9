package core

import (
	"path"
	"regexp"
	"strings"

	"github.com/contend-dev/contend/recording"
)

// This file is THE frame classification shared by every detector, Go and
// live: which frames are lock machinery (skipped when choosing a program
// point), which stacks are idle waits (never contention), which frames are
// I/O, and where a stack's program point is.
//
// Frames are recording.Frame values, leaf first. Go frames are named as the
// Go runtime names them ("sync.(*Mutex).Lock", "main.(*T).f.func1"); native
// frames by their symbol ("pthread_mutex_lock", "__lll_lock_wait"); kernel
// frames carry Frame.Kernel.

// GoPackage returns the import path of a Go function name:
// "github.com/a/b.(*T).M" → "github.com/a/b", "sync.(*Mutex).Lock" → "sync".
// A name without a dot (a C symbol) returns "".
func GoPackage(fn string) string {
	if strings.ContainsAny(fn, "+:@ ") {
		return "" // C++ ("ns::f"), unresolved ("libc.so.6+0x1f00"), versioned ("f@GLIBC_2.2.5")
	}
	if cloneAt(fn) >= 0 {
		return "" // a GCC or LLVM clone of a C function ("f.constprop.0")
	}
	if i := strings.IndexByte(fn, '['); i >= 0 {
		fn = fn[:i] // generic instantiation: "pkg.F[...]"
	}
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return ""
	}
	return fn[:slash+1+dot]
}

// lockPackages are the Go packages whose frames are lock machinery: the
// runtime (scheduler, semaphores, atomics) and the sync packages. A program
// point is never inside them.
var lockPackages = map[string]bool{
	"runtime":                 true,
	"sync":                    true,
	"internal/sync":           true,
	"sync/atomic":             true,
	"runtime/internal/atomic": true,
	"internal/runtime/atomic": true,
}

// lockPackagePrefixes extends lockPackages to the runtime's internal
// packages (internal/runtime/maps, internal/runtime/syscall, …).
var lockPackagePrefixes = []string{"internal/runtime/", "runtime/internal/"}

// plumbingPackages hold the system-call plumbing below the os package. They
// are skipped like lock machinery when choosing a program point, so a
// goroutine in a write syscall sits at the user code that wrote, not at
// syscall.Syscall.
var plumbingPackages = map[string]bool{
	"syscall":                  true,
	"internal/poll":            true,
	"internal/syscall/unix":    true,
	"golang.org/x/sys/unix":    true,
	"internal/syscall/execenv": true,
}

// nativeRole is what a native lock function tells of the futex word it
// waits on or wakes: a mutex's, a condition variable's, a thread join's.
type nativeRole int

const (
	nativeNone nativeRole = iota
	NativeMutex
	NativeCond
	NativeJoin
)

// NativeRoleFuncs are the native lock functions that tell a futex word's
// role (roleOf); every one of them is lock machinery as well. Names are
// normalised by normNative first.
var NativeRoleFuncs = map[string]nativeRole{
	"lll_lock_wait": NativeMutex, "lll_lock_wait_private": NativeMutex,
	"lll_lock_wake": NativeMutex, "lll_lock_wake_private": NativeMutex,
	"lll_mutex_lock_optimized": NativeMutex, "lll_mutex_unlock_optimized": NativeMutex,
	"pthread_mutex_lock": NativeMutex, "pthread_mutex_timedlock": NativeMutex,
	"pthread_mutex_clocklock": NativeMutex, "pthread_mutex_lock_full": NativeMutex,
	"pthread_mutex_cond_lock": NativeMutex, "pthread_mutex_unlock": NativeMutex,
	"pthread_mutex_unlock_usercnt": NativeMutex, "pthread_mutex_unlock_full": NativeMutex,
	"pthread_rwlock_rdlock": NativeMutex, "pthread_rwlock_wrlock": NativeMutex,
	"pthread_rwlock_unlock": NativeMutex, "pthread_rwlock_rdlock_full": NativeMutex,
	"pthread_rwlock_wrlock_full": NativeMutex,
	// glibc 2.34+ names the 64-bit-time implementations and the unlock
	// halves.
	"pthread_rwlock_rdlock_full64": NativeMutex, "pthread_rwlock_wrlock_full64": NativeMutex,
	"pthread_rwlock_rdunlock": NativeMutex, "pthread_rwlock_wrunlock": NativeMutex,
	"pthread_rwlock_timedrdlock": NativeMutex, "pthread_rwlock_timedwrlock": NativeMutex,
	"pthread_rwlock_clockrdlock": NativeMutex, "pthread_rwlock_clockwrlock": NativeMutex,
	"pthread_rwlock_timedrdlock64": NativeMutex, "pthread_rwlock_timedwrlock64": NativeMutex,
	"pthread_rwlock_clockrdlock64": NativeMutex, "pthread_rwlock_clockwrlock64": NativeMutex,
	"futex_lock_pi": NativeMutex, "futex_lock_pi64": NativeMutex, "futex_unlock_pi": NativeMutex,
	"std::mutex::lock": NativeMutex, "std::__1::mutex::lock": NativeMutex,

	"pthread_cond_wait": NativeCond, "pthread_cond_timedwait": NativeCond,
	"pthread_cond_clockwait": NativeCond, "pthread_cond_wait_common": NativeCond,
	"condvar_dec_grefs": NativeCond, "condvar_quiesce_and_switch_g1": NativeCond,
	"pthread_cond_signal": NativeCond, "pthread_cond_broadcast": NativeCond,
	"std::condition_variable::wait": NativeCond, "std::__1::condition_variable::wait": NativeCond,
	"std::condition_variable::notify_one": NativeCond, "std::condition_variable::notify_all": NativeCond,

	"pthread_join": NativeJoin, "pthread_clockjoin_ex": NativeJoin, "pthread_timedjoin_np": NativeJoin,
	"pthread_clockjoin_np": NativeJoin, "pthread_tryjoin_np": NativeJoin,
}

// nativeLockFuncs are the other native (C library) functions that
// implement locking and waiting without telling a word's role. Names are
// normalised by normNative first.
var nativeLockFuncs = map[string]bool{
	// glibc internals of locking, waiting and cancellation that appear in
	// unwound stacks (inlined helpers named through DWARF).
	"futex_wait_simple":                true,
	"futex_wait_cancelable":            true,
	"futex_abstimed_wait_cancelable":   true,
	"condvar_confirm_wakeup":           true,
	"condvar_cancel_waiting":           true,
	"pthread_disable_asynccancel":      true,
	"pthread_enable_asynccancel":       true,
	"GI___pthread_disable_asynccancel": true,
	// CPython's wrappers of its condition variables and mutexes
	// (Python/condvar.h), inlined into the code that takes the GIL.
	"PyCOND_WAIT":      true,
	"PyCOND_TIMEDWAIT": true,
	"PyCOND_SIGNAL":    true,
	"PyCOND_BROADCAST": true,
	"PyMUTEX_LOCK":     true,
	"PyMUTEX_UNLOCK":   true,
	// Ruby's wrappers of its native condition variables and mutexes
	// (thread_pthread.c), exported, below the static code of the GVL.
	"rb_native_cond_wait":              true,
	"rb_native_cond_timedwait":         true,
	"rb_native_cond_signal":            true,
	"rb_native_cond_broadcast":         true,
	"rb_native_mutex_lock":             true,
	"rb_native_mutex_unlock":           true,
	"pthread_mutex_trylock":            true,
	"pthread_spin_lock":                true,
	"lll_unlock_wake":                  true,
	"futex_wait":                       true,
	"futex_wake":                       true,
	"futex_abstimed_wait":              true,
	"futex_abstimed_wait_common":       true,
	"futex_abstimed_wait_common64":     true,
	"futex_abstimed_wait_cancelable64": true,
	"sem_wait":                         true,
	"sem_timedwait":                    true,
	"new_sem_wait_slow":                true,
	"new_sem_wait_slow64":              true,
	"syscall":                          true,
	// Giving up the CPU is how a yielding busy-wait waits: the program
	// point is the loop that yields, not the yield.
	"sched_yield":             true,
	"pthread_yield":           true,
	"thrd_yield":              true,
	"syscall_cancel":          true,
	"syscall_cancel_arch":     true,
	"internal_syscall_cancel": true,
	"std::__detail::__atomic_futex_unsigned_base::_M_futex_wait_until": true,
}

// cloneSuffix matches the suffixes GCC and LLVM give the copies of a
// function they specialise or split ("__new_sem_wait_slow64.constprop.0",
// "f.isra.0", "f.part.1", "f.lto_priv.0", "f.llvm.123"). No Go symbol has
// these: a Go function's dotted parts after the package are identifiers,
// closures ("func1") and numbered init functions ("init.0").
var cloneSuffix = regexp.MustCompile(`\.(constprop|isra|part|lto_priv|llvm)\.[0-9]+`)

// cloneWords are the words cloneSuffix starts with. Frames are classified
// per sample, and most names (Go's, Java's, C's without clones) contain
// none of them: those are answered without running the expression.
var cloneWords = []string{".constprop.", ".isra.", ".part.", ".lto_priv.", ".llvm."}

// cloneAt returns where cloneSuffix first matches fn, or -1.
func cloneAt(fn string) int {
	for _, w := range cloneWords {
		if strings.Contains(fn, w) {
			if loc := cloneSuffix.FindStringIndex(fn); loc != nil {
				return loc[0]
			}
			return -1
		}
	}
	return -1
}

// NormNative strips the decorations C libraries and compilers put on
// symbol names: leading underscores, the "__GI_" alias prefix, "@GLIBC_2.x"
// versions and clone suffixes (".constprop.0", ".cold").
func NormNative(fn string) string {
	if i := strings.IndexByte(fn, '@'); i > 0 {
		fn = fn[:i]
	}
	if i := cloneAt(fn); i >= 0 {
		fn = fn[:i]
	}
	fn = strings.TrimSuffix(fn, ".cold")
	fn = strings.TrimPrefix(fn, "__GI_")
	return strings.TrimLeft(fn, "_")
}

// IsLockPackage reports whether a Go package is lock machinery: the
// runtime, its internal packages and the sync packages.
func IsLockPackage(pkg string) bool {
	if lockPackages[pkg] {
		return true
	}
	for _, p := range lockPackagePrefixes {
		if strings.HasPrefix(pkg, p) {
			return true
		}
	}
	return false
}

// IsLockMachinery reports whether f is lock machinery: Go runtime and sync
// frames, glibc's locking and futex wrappers, and kernel frames.
func IsLockMachinery(f recording.Frame) bool {
	if f.Kernel {
		return true
	}
	if m, ok := JVMMachinery(f); ok {
		return m
	}
	if pkg := GoPackage(f.Func); pkg != "" {
		return IsLockPackage(pkg)
	}
	n := NormNative(f.Func)
	return nativeLockFuncs[n] || NativeRoleFuncs[n] != nativeNone
}

// isPlumbing reports whether f is system-call plumbing skipped when choosing
// a program point (syscall, internal/poll, C library I/O and waiting
// wrappers).
func isPlumbing(f recording.Frame) bool {
	if isJavaFrame(f) {
		return javaPlumbing(f)
	}
	if pkg := GoPackage(f.Func); pkg != "" {
		return plumbingPackages[pkg]
	}
	n := NormNative(f.Func)
	if nativeIOFuncs[n] {
		return true
	}
	_, idle := idleFuncs[n] // epoll_wait, nanosleep: C library wrappers too
	return idle
}

// waitWrappers are functions outside the runtime and sync packages that
// only wrap a wait; a program point is the code that called them.
var waitWrappers = map[string]bool{"time.Sleep": true}

// IsMachinery reports whether a program point may not be at f.
func IsMachinery(f recording.Frame) bool {
	return IsLockMachinery(f) || isPlumbing(f) || waitWrappers[f.Func]
}

// PointIndex returns the index of the program point of a leaf-first stack:
// the first frame outside lock machinery and system-call plumbing. It
// returns -1 when every frame is machinery (a runtime-only stack).
func PointIndex(frames []recording.Frame) int {
	for i, f := range frames {
		if !IsMachinery(f) {
			return i
		}
	}
	return -1
}

// WaitClass says what a stack is doing, judged from its frames (and, for
// goroutine dumps, its wait state).
type WaitClass uint8

// Wait classes. The zero value is classNone: no wait recognised (running
// code, or an unknown park).
const (
	ClassNone WaitClass = iota
	// classLock: waiting to acquire a user-visible lock (sync.Mutex,
	// sync.RWMutex, a pthread mutex).
	ClassLock
	// classUnlock: releasing a lock (Go mutex-profile stacks).
	ClassUnlock
	// classRuntimeLock: a lock internal to the Go runtime
	// (runtime.lock/unlock, runtime._LostContendedRuntimeLock).
	ClassRuntimeLock
	// classRuntimeWait: a runtime-internal wait that is not a user lock:
	// [semacquire] with no sync frame (GC assist, allocation, STW).
	ClassRuntimeWait
	// classIdle: not contention (select, channel receive, netpoll,
	// sync.Cond waiting for work, sleeps, runtime idle waits).
	ClassIdle
	// classOtherWait: a wait that is neither a lock nor idle (channel send:
	// back-pressure from a consumer).
	ClassOtherWait
)

// LockFlavor tells the kinds of lock apart in a classLock/classUnlock
// stack.
type LockFlavor uint8

const (
	FlavorNone     LockFlavor = iota
	flavorMutex               // sync.Mutex
	FlavorRWWrite             // sync.RWMutex.Lock / Unlock
	FlavorRWRead              // sync.RWMutex.RLock / RUnlock
	flavorNative              // pthread or futex lock
	flavorRuntime             // Go runtime lock
	FlavorMonitor             // Java monitor (synchronized)
	FlavorJavaLock            // java.util.concurrent lock (ReentrantLock …)
)

// String names the flavor as users know it.
func (f LockFlavor) String() string {
	switch f {
	case flavorMutex:
		return "sync.Mutex"
	case FlavorRWWrite:
		return "sync.RWMutex"
	case FlavorRWRead:
		return "sync.RWMutex (read)"
	case flavorNative:
		return "native lock"
	case flavorRuntime:
		return "runtime lock"
	case FlavorMonitor:
		return "Java monitor (synchronized)"
	case FlavorJavaLock:
		return "java.util.concurrent lock"
	}
	return "lock"
}

// lockFuncs maps lock-acquire machinery to its flavor. Go ≤ 1.23 had the
// slow path in package sync; newer Go in internal/sync.
var lockFuncs = map[string]LockFlavor{
	"sync.(*Mutex).Lock":                    flavorMutex,
	"sync.(*Mutex).lockSlow":                flavorMutex,
	"internal/sync.(*Mutex).Lock":           flavorMutex,
	"internal/sync.(*Mutex).lockSlow":       flavorMutex,
	"sync.runtime_SemacquireMutex":          flavorMutex,
	"internal/sync.runtime_SemacquireMutex": flavorMutex,
	"sync.(*RWMutex).Lock":                  FlavorRWWrite,
	"sync.runtime_SemacquireRWMutex":        FlavorRWWrite,
	"sync.(*RWMutex).RLock":                 FlavorRWRead,
	"sync.runtime_SemacquireRWMutexR":       FlavorRWRead,
	"pthread_mutex_lock":                    flavorNative,
	"pthread_mutex_timedlock":               flavorNative,
	"pthread_mutex_clocklock":               flavorNative,
	"pthread_mutex_lock_full":               flavorNative,
	"lll_lock_wait":                         flavorNative,
	"lll_lock_wait_private":                 flavorNative,
	"pthread_rwlock_rdlock":                 flavorNative,
	"pthread_rwlock_wrlock":                 flavorNative,
	"pthread_spin_lock":                     flavorNative,
	"std::mutex::lock":                      flavorNative,
	"std::__1::mutex::lock":                 flavorNative,
	"futex_lock_pi":                         flavorNative,
	"futex_lock_pi64":                       flavorNative,
	// The JVM: a synchronized block entering a taken monitor, a
	// java.util.concurrent lock acquiring its synchronizer (also when a
	// Condition.await takes the lock back).
	"ObjectMonitor::enter":      FlavorMonitor,
	"ObjectMonitor::EnterI":     FlavorMonitor,
	"ObjectMonitor::ReenterI":   FlavorMonitor,
	"ObjectSynchronizer::enter": FlavorMonitor,
	"java.util.concurrent.locks.AbstractQueuedSynchronizer.acquire":         FlavorJavaLock,
	"java.util.concurrent.locks.AbstractQueuedSynchronizer.acquireShared":   FlavorJavaLock,
	"java.util.concurrent.locks.AbstractQueuedLongSynchronizer.acquire":     FlavorJavaLock,
	"java.util.concurrent.locks.AbstractQueuedSynchronizer.acquireQueued":   FlavorJavaLock,
	"java.util.concurrent.locks.AbstractQueuedSynchronizer.doAcquireShared": FlavorJavaLock,
	"java.util.concurrent.locks.StampedLock.acquireWrite":                   FlavorJavaLock,
	"java.util.concurrent.locks.StampedLock.acquireRead":                    FlavorJavaLock,
}

// UnlockFuncs maps lock-release machinery (the leaf of Go mutex-profile
// stacks) to its flavor.
var UnlockFuncs = map[string]LockFlavor{
	"sync.(*Mutex).Unlock":              flavorMutex,
	"sync.(*Mutex).unlockSlow":          flavorMutex,
	"internal/sync.(*Mutex).Unlock":     flavorMutex,
	"internal/sync.(*Mutex).unlockSlow": flavorMutex,
	"sync.(*RWMutex).Unlock":            FlavorRWWrite,
	"sync.(*RWMutex).RUnlock":           FlavorRWRead,
	"sync.(*RWMutex).rUnlockSlow":       FlavorRWRead,
	"runtime.unlock":                    flavorRuntime,
	"runtime.unlock2":                   flavorRuntime,
	"runtime.unlockWithRank":            flavorRuntime,
	"runtime._LostContendedRuntimeLock": flavorRuntime,
	"pthread_mutex_unlock":              flavorNative,
	"lll_unlock_wake":                   flavorNative,
	"lll_lock_wake":                     flavorNative,
	"lll_lock_wake_private":             flavorNative,
}

// idleFuncs maps frames that mark an idle wait to the reason shown to the
// user. Any stack containing one of them below its program point is idle,
// whatever its count or delay: waiting for work is not contention.
var idleFuncs = map[string]string{
	// Go: goroutines waiting for something to do.
	"runtime.selectgo":                "blocked in select",
	"runtime.block":                   "blocked in select {} forever",
	"runtime.chanrecv":                "waiting to receive from a channel",
	"runtime.chanrecv1":               "waiting to receive from a channel",
	"runtime.chanrecv2":               "waiting to receive from a channel",
	"internal/poll.runtime_pollWait":  "waiting for network or pipe I/O (netpoll)",
	"internal/poll.(*pollDesc).wait":  "waiting for network or pipe I/O (netpoll)",
	"runtime.netpollblock":            "waiting for network or pipe I/O (netpoll)",
	"sync.(*Cond).Wait":               "sync.Cond.Wait: waiting for work",
	"sync.runtime_notifyListWait":     "sync.Cond.Wait: waiting for work",
	"sync.(*WaitGroup).Wait":          "sync.WaitGroup.Wait: waiting for other goroutines to finish",
	"time.Sleep":                      "sleeping (time.Sleep)",
	"runtime.timeSleep":               "sleeping (time.Sleep)",
	"os/signal.signal_recv":           "waiting for a signal",
	"runtime.gcBgMarkWorker":          "Go runtime idle goroutine (GC worker)",
	"runtime.bgsweep":                 "Go runtime idle goroutine (sweeper)",
	"runtime.bgscavenge":              "Go runtime idle goroutine (scavenger)",
	"runtime.forcegchelper":           "Go runtime idle goroutine (forced GC)",
	"runtime.runfinq":                 "Go runtime idle goroutine (finalizers)",
	"runtime.runCleanups":             "Go runtime idle goroutine (cleanups)",
	"runtime.(*cleanupQueue).dequeue": "Go runtime idle goroutine (cleanups)",
	"runtime.updateMaxProcsGoroutine": "Go runtime idle goroutine (GOMAXPROCS updater)",
	"runtime/pprof.readProfile":       "profiler waiting for CPU samples",
	"runtime.notetsleepg":             "Go runtime idle wait (notetsleepg)",
	"runtime.notesleep":               "Go idle thread (runtime.notesleep)",
	"runtime.notetsleep":              "Go idle thread (runtime.notetsleep)",
	"runtime.futexsleep":              "Go idle thread (runtime.futexsleep)",
	"runtime.stopm":                   "Go idle thread (runtime.stopm)",
	"runtime.mPark":                   "Go idle thread (runtime.mPark)",
	"runtime.findRunnable":            "Go scheduler looking for work",
	"runtime.netpoll":                 "Go scheduler polling the network",
	// Native: threads parked waiting for work or events.
	"epoll_wait":                         "waiting for events (epoll_wait)",
	"epoll_pwait":                        "waiting for events (epoll_pwait)",
	"epoll_pwait2":                       "waiting for events (epoll_pwait2)",
	"poll":                               "waiting for events (poll)",
	"ppoll":                              "waiting for events (ppoll)",
	"select":                             "waiting for events (select)",
	"pselect6":                           "waiting for events (pselect)",
	"nanosleep":                          "sleeping (nanosleep)",
	"clock_nanosleep":                    "sleeping (clock_nanosleep)",
	"sigwait":                            "waiting for a signal",
	"sigwaitinfo":                        "waiting for a signal",
	"sigtimedwait":                       "waiting for a signal",
	"pthread_cond_wait":                  "idle thread parked on a condition variable",
	"pthread_cond_timedwait":             "idle thread parked on a condition variable",
	"pthread_cond_clockwait":             "idle thread parked on a condition variable",
	"pthread_cond_wait_common":           "idle thread parked on a condition variable",
	"std::condition_variable::wait":      "idle thread parked on a condition variable",
	"std::__1::condition_variable::wait": "idle thread parked on a condition variable",
	"accept":                             "waiting for a connection (accept)",
	"accept4":                            "waiting for a connection (accept4)",
	// Java: threads waiting for work, a condition, a timer.
	"java.util.concurrent.LinkedBlockingQueue.take":                                    "idle pool thread waiting for work (LinkedBlockingQueue.take)",
	"java.util.concurrent.LinkedBlockingQueue.poll":                                    "idle pool thread waiting for work (LinkedBlockingQueue.poll)",
	"java.util.concurrent.ArrayBlockingQueue.take":                                     "idle pool thread waiting for work (ArrayBlockingQueue.take)",
	"java.util.concurrent.ArrayBlockingQueue.poll":                                     "idle pool thread waiting for work (ArrayBlockingQueue.poll)",
	"java.util.concurrent.SynchronousQueue.take":                                       "idle pool thread waiting for work (SynchronousQueue.take)",
	"java.util.concurrent.SynchronousQueue.poll":                                       "idle pool thread waiting for work (SynchronousQueue.poll)",
	"java.util.concurrent.LinkedTransferQueue.take":                                    "idle pool thread waiting for work (LinkedTransferQueue.take)",
	"java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue.take":           "idle pool thread waiting for a scheduled task",
	"java.util.concurrent.ThreadPoolExecutor.getTask":                                  "idle pool thread waiting for work (ThreadPoolExecutor.getTask)",
	"java.util.concurrent.ForkJoinPool.awaitWork":                                      "idle fork-join worker waiting for work",
	"java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await":      "waiting on a condition (Condition.await)",
	"java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.awaitNanos": "waiting on a condition (Condition.awaitNanos)",
	"java.util.concurrent.CountDownLatch.await":                                        "waiting for a latch (CountDownLatch.await)",
	"java.util.concurrent.CompletableFuture.get":                                       "waiting for a result (CompletableFuture.get)",
	"java.util.concurrent.FutureTask.get":                                              "waiting for a result (Future.get)",
	"java.lang.Object.wait":                                                            "waiting on a condition (Object.wait)",
	"java.lang.Thread.sleep":                                                           "sleeping (Thread.sleep)",
	"java.lang.Thread.join":                                                            "waiting for a thread to end (Thread.join)",
	"java.util.concurrent.locks.LockSupport.parkNanos":                                 "sleeping (LockSupport.parkNanos)",
	"java.util.concurrent.locks.LockSupport.park":                                      "parked (LockSupport.park) on no lock",
	"java.lang.ref.Reference.waitForReferencePendingList":                              "JVM reference handler waiting for work",
	"ObjectMonitor::wait":                                                              "waiting on a condition (Object.wait)",
	"PosixSemaphore::wait":                                                             "JVM worker thread waiting for work (a garbage collector's worker gang)",
	"JavaThread::sleep":                                                                "sleeping (Thread.sleep)",
}

// jvmPauseFuncs are frames of a Java thread stopped by the JVM itself: at
// a safepoint (for a garbage collection or another VM operation) or
// waiting for a collection it asked for. Such a wait is not a lock of the
// program; a lock holder stopped there makes the GC the cause of its
// waiters' wait.
var jvmPauseFuncs = map[string]string{
	"SafepointSynchronize::block":                   "stopped at a JVM safepoint (garbage collection or VM operation)",
	"SafepointMechanism::process":                   "stopped at a JVM safepoint (garbage collection or VM operation)",
	"SafepointMechanism::process_if_requested_slow": "stopped at a JVM safepoint (garbage collection or VM operation)",
	"LinuxWaitBarrier::wait":                        "stopped at a JVM safepoint (garbage collection or VM operation)",
	"GenericWaitBarrier::wait":                      "stopped at a JVM safepoint (garbage collection or VM operation)",
	"VMThread::execute":                             "waiting for a JVM operation (a garbage collection it asked for)",
	"VMThread::wait_until_executed":                 "waiting for a JVM operation (a garbage collection it asked for)",
	"G1CollectedHeap::attempt_allocation_slow":      "waiting for a garbage collection to free memory",
	"G1CollectedHeap::mem_allocate":                 "waiting for a garbage collection to free memory",
	"HandshakeState::process_by_self":               "stopped for a JVM handshake (VM operation)",
}

// idleStates maps Go goroutine wait reasons (the "[...]" of a debug=2 dump)
// that are never contention to the reason shown.
var idleStates = map[string]string{
	"select":                    "blocked in select",
	"select (no cases)":         "blocked in select {} forever",
	"chan receive":              "waiting to receive from a channel",
	"chan receive (nil chan)":   "blocked forever receiving from a nil channel",
	"chan send (nil chan)":      "blocked forever sending to a nil channel",
	"IO wait":                   "waiting for network or pipe I/O (netpoll)",
	"sync.Cond.Wait":            "sync.Cond.Wait: waiting for work",
	"sync.WaitGroup.Wait":       "sync.WaitGroup.Wait: waiting for other goroutines to finish",
	"sleep":                     "sleeping (time.Sleep)",
	"GC worker (idle)":          "Go runtime idle goroutine (GC worker)",
	"GC sweep wait":             "Go runtime idle goroutine (sweeper)",
	"GC scavenge wait":          "Go runtime idle goroutine (scavenger)",
	"finalizer wait":            "Go runtime idle goroutine (finalizers)",
	"cleanup wait":              "Go runtime idle goroutine (cleanups)",
	"force gc (idle)":           "Go runtime idle goroutine (forced GC)",
	"GOMAXPROCS updater (idle)": "Go runtime idle goroutine (GOMAXPROCS updater)",
	"trace reader (blocked)":    "execution tracer waiting for data",
	"wait for GC cycle":         "waiting for a GC cycle (runtime.GC)",
}

// lockStates are Go wait reasons of goroutines waiting for a sync lock.
var lockStates = map[string]LockFlavor{
	"sync.Mutex.Lock":    flavorMutex,
	"sync.RWMutex.Lock":  FlavorRWWrite,
	"sync.RWMutex.RLock": FlavorRWRead,
}

// runtimeWaitStates are Go wait reasons of runtime-internal waits, never a
// user lock.
var runtimeWaitStates = map[string]string{
	"GC assist wait":       "runtime-internal wait (GC assist): not a user lock",
	"GC assist marking":    "runtime-internal wait (GC assist): not a user lock",
	"garbage collection":   "runtime-internal wait (garbage collection): not a user lock",
	"stopping the world":   "runtime-internal wait (stopping the world): not a user lock",
	"GC mark termination":  "runtime-internal wait (GC mark termination): not a user lock",
	"flushing proc caches": "runtime-internal wait (flushing proc caches): not a user lock",
}

// atomicPackages hold atomic operations: a CPU sample whose leaf is in one
// of them is executing an atomic load, store or compare-and-swap.
var atomicPackages = map[string]bool{
	"sync/atomic":             true,
	"internal/runtime/atomic": true,
	"runtime/internal/atomic": true,
}

// YieldFuncs are frames of a goroutine or thread giving up its CPU on
// purpose; a busy-wait that reaches them yields instead of spinning.
var YieldFuncs = map[string]bool{
	"runtime.Gosched":     true,
	"runtime.gosched_m":   true,
	"runtime.goschedImpl": true,
	"runtime.osyield":     true,
	"runtime.usleep":      true,
	"sched_yield":         true,
}

// StackClass is the classification of one stack.
type StackClass struct {
	Class WaitClass
	// Flavor is the lock flavor for classLock, classUnlock and
	// classRuntimeLock.
	Flavor LockFlavor
	// Reason says why an idle or runtime-internal wait is not contention.
	Reason string
	// Machinery is the outermost machinery frame the classification rests
	// on ("sync.(*Mutex).Lock"), for display.
	Machinery string
}

// ClassifyFrames classifies a leaf-first stack by the machinery frames
// below its program point (or all frames when pi is -1). A lock or unlock
// frame decides first: a goroutine in sync.Mutex.Lock called from inside a
// select case still waits for the lock.
func ClassifyFrames(frames []recording.Frame, pi int) StackClass {
	end := pi
	if end < 0 {
		end = len(frames)
	}
	// A runtime.unlock at the leaf is contention on a lock inside the
	// runtime, even when sync.Mutex machinery called it (the semaphore
	// table's lock in semrelease1): the runtime lock is what was contended.
	if len(frames) > 0 {
		if fl, ok := UnlockFuncs[frames[0].Func]; ok && fl == flavorRuntime {
			return StackClass{Class: ClassRuntimeLock, Flavor: fl, Machinery: frames[0].Func}
		}
	}
	var idle StackClass
	// A point that is itself an idle loop (os/signal.signal_recv, the
	// profiler's reader) is idle too.
	if pi >= 0 && pi < len(frames) {
		if r, ok := idleFuncs[frames[pi].Func]; ok {
			idle = StackClass{Class: ClassIdle, Reason: r, Machinery: frames[pi].Func}
		}
	}
	sawSemacquire := false
	for i := end - 1; i >= 0; i-- { // outermost machinery first
		fn := frames[i].Func
		nfn := fn
		if GoPackage(fn) == "" {
			nfn = NormNative(fn)
		}
		if fl, ok := lockFuncs[nfn]; ok {
			return StackClass{Class: ClassLock, Flavor: fl, Machinery: fn}
		}
		if fl, ok := UnlockFuncs[nfn]; ok {
			if fl == flavorRuntime {
				return StackClass{Class: ClassRuntimeLock, Flavor: fl, Machinery: fn}
			}
			return StackClass{Class: ClassUnlock, Flavor: fl, Machinery: fn}
		}
		if idle.Class == ClassNone {
			if r, ok := idleFuncs[nfn]; ok {
				idle = StackClass{Class: ClassIdle, Reason: r, Machinery: fn}
			}
		}
		if r, ok := jvmPauseFuncs[nfn]; ok && idle.Class == ClassNone {
			idle = StackClass{Class: ClassRuntimeWait, Reason: r, Machinery: fn}
		}
		switch nfn {
		case "runtime.chansend1", "runtime.chansend":
			if idle.Class == ClassNone {
				idle = StackClass{Class: ClassOtherWait, Reason: "blocked sending on a channel (back-pressure from its receiver)", Machinery: fn}
			}
		case "runtime.semacquire", "runtime.semacquire1":
			sawSemacquire = true
		}
	}
	if idle.Class != ClassNone {
		return idle
	}
	if sawSemacquire {
		return StackClass{Class: ClassRuntimeWait, Reason: "runtime-internal semaphore wait (GC, allocation): not a user lock", Machinery: "runtime.semacquire"}
	}
	return StackClass{}
}

// ClassifyGoroutine classifies a goroutine from its dump state (may be "")
// and its leaf-first stack. States decide where they are unambiguous;
// "semacquire" (Go ≤ 1.20 used it for sync.Mutex too) and stateless dumps
// fall back to the frames.
func ClassifyGoroutine(state string, frames []recording.Frame, pi int) StackClass {
	fc := ClassifyFrames(frames, pi)
	if fl, ok := lockStates[state]; ok {
		if fc.Class == ClassLock {
			return fc
		}
		return StackClass{Class: ClassLock, Flavor: fl, Machinery: state}
	}
	if r, ok := runtimeWaitStates[state]; ok {
		return StackClass{Class: ClassRuntimeWait, Reason: r, Machinery: state}
	}
	if state == "semacquire" {
		if fc.Class == ClassLock || fc.Class == ClassIdle {
			return fc
		}
		return StackClass{Class: ClassRuntimeWait, Reason: "[semacquire] with no sync frame: runtime-internal wait (GC assist, allocation), not a user lock", Machinery: state}
	}
	if r, ok := idleStates[state]; ok {
		if fc.Class == ClassLock {
			return fc // a lock wait inside a select case still waits for the lock
		}
		return StackClass{Class: ClassIdle, Reason: r, Machinery: state}
	}
	if state == "chan send" && fc.Class != ClassLock {
		return StackClass{Class: ClassOtherWait, Reason: "blocked sending on a channel (back-pressure from its receiver)", Machinery: state}
	}
	return fc
}

// nativeIOFuncs are C library I/O and syscall wrappers (normalised names).
var nativeIOFuncs = map[string]bool{
	"write": true, "libc_write": true, "pwrite": true, "pwrite64": true,
	"libc_pwrite": true, "libc_pwrite64": true, "writev": true, "pwritev": true, "pwritev2": true,
	"read": true, "libc_read": true, "pread": true, "pread64": true, "libc_pread64": true,
	"readv": true, "preadv": true,
	"fsync": true, "libc_fsync": true, "fdatasync": true, "libc_fdatasync": true,
	"sync_file_range": true, "syncfs": true,
	"rename": true, "renameat": true, "renameat2": true, "unlink": true, "unlinkat": true,
	"open": true, "open64": true, "libc_open64": true, "openat": true, "openat64": true, "libc_openat64": true,
	"ftruncate": true, "ftruncate64": true, "fallocate": true, "fallocate64": true,
	"fwrite": true, "fflush": true, "IO_file_write": true, "new_file_write": true,
	"IO_new_file_xsputn": true, "IO_do_write": true, "new_do_write": true,
	"send": true, "sendto": true, "sendmsg": true, "recv": true, "recvfrom": true, "recvmsg": true,
}

// goIOFuncs are Go functions that do file or network I/O.
var goIOFuncs = map[string]bool{
	"os.(*File).Write":                true,
	"os.(*File).WriteString":          true,
	"os.(*File).WriteAt":              true,
	"os.(*File).Sync":                 true,
	"os.(*File).Read":                 true,
	"os.(*File).ReadAt":               true,
	"os.(*File).ReadFrom":             true,
	"os.(*File).Truncate":             true,
	"os.(*File).Close":                true,
	"os.(*File).write":                true,
	"os.(*File).pwrite":               true,
	"os.(*File).read":                 true,
	"os.WriteFile":                    true,
	"os.ReadFile":                     true,
	"os.Rename":                       true,
	"os.rename":                       true,
	"os.Remove":                       true,
	"os.RemoveAll":                    true,
	"os.Create":                       true,
	"os.Open":                         true,
	"os.OpenFile":                     true,
	"os.openFileNolog":                true,
	"os.Truncate":                     true,
	"os.Link":                         true,
	"os.Symlink":                      true,
	"os.Mkdir":                        true,
	"os.MkdirAll":                     true,
	"os.CreateTemp":                   true,
	"io/ioutil.WriteFile":             true,
	"io/ioutil.ReadFile":              true,
	"internal/poll.(*FD).Write":       true,
	"internal/poll.(*FD).Pwrite":      true,
	"internal/poll.(*FD).Writev":      true,
	"internal/poll.(*FD).Read":        true,
	"internal/poll.(*FD).Pread":       true,
	"internal/poll.(*FD).Fsync":       true,
	"internal/poll.(*FD).Ftruncate":   true,
	"internal/poll.ignoringEINTRIO":   true,
	"internal/poll.ignoringEINTR":     true,
	"syscall.Write":                   true,
	"syscall.write":                   true,
	"syscall.Pwrite":                  true,
	"syscall.pwrite":                  true,
	"syscall.Read":                    true,
	"syscall.read":                    true,
	"syscall.Pread":                   true,
	"syscall.pread":                   true,
	"syscall.Fsync":                   true,
	"syscall.Fdatasync":               true,
	"syscall.Rename":                  true,
	"syscall.Renameat":                true,
	"syscall.renameat":                true,
	"syscall.Unlink":                  true,
	"syscall.Unlinkat":                true,
	"syscall.unlinkat":                true,
	"syscall.Open":                    true,
	"syscall.openat":                  true,
	"syscall.Ftruncate":               true,
	"syscall.Syscall":                 true,
	"syscall.Syscall6":                true,
	"internal/syscall/unix.Renameat2": true,
	"internal/syscall/unix.Unlinkat":  true,
	"internal/syscall/unix.Openat":    true,
	"internal/syscall/unix.Fstatat":   true,
	"golang.org/x/sys/unix.Fsync":     true,
	"golang.org/x/sys/unix.Fdatasync": true,
	"golang.org/x/sys/unix.Write":     true,
	"golang.org/x/sys/unix.Pwrite":    true,
	"golang.org/x/sys/unix.Renameat2": true,
	"net.(*conn).Write":               true,
	"net.(*conn).Read":                true,
	"net.(*netFD).Write":              true,
	"net.(*netFD).Read":               true,
}

// kernelIOPrefixes recognise kernel frames of I/O system calls.
var kernelIOPrefixes = []string{
	"__x64_sys_write", "__x64_sys_pwrite", "__x64_sys_fsync", "__x64_sys_fdatasync",
	"__x64_sys_rename", "__x64_sys_openat", "__x64_sys_read", "__x64_sys_pread",
	"__arm64_sys_write", "__arm64_sys_pwrite", "__arm64_sys_fsync", "__arm64_sys_fdatasync",
	"__arm64_sys_rename", "__arm64_sys_openat",
	"vfs_write", "vfs_fsync", "do_fsync", "vfs_rename", "ksys_write", "ksys_pwrite",
}

// isIOFrame reports whether f is file, network or syscall I/O.
func isIOFrame(f recording.Frame) bool {
	if f.Kernel {
		for _, p := range kernelIOPrefixes {
			if strings.HasPrefix(f.Func, p) {
				return true
			}
		}
		return false
	}
	if isJavaFrame(f) {
		return javaIO(f)
	}
	if GoPackage(f.Func) != "" {
		return goIOFuncs[f.Func]
	}
	return nativeIOFuncs[NormNative(f.Func)]
}

// IOIndex returns the index of the outermost I/O frame among frames[:end]
// (the I/O call nearest the program), or -1.
func IOIndex(frames []recording.Frame, end int) int {
	if end > len(frames) {
		end = len(frames)
	}
	for i := end - 1; i >= 0; i-- {
		if isIOFrame(frames[i]) {
			return i
		}
	}
	return -1
}

// IsAtomicFrame reports whether f is an atomic operation.
func IsAtomicFrame(f recording.Frame) bool {
	return atomicPackages[GoPackage(f.Func)]
}

// HasAtomic reports whether any of frames[:end] is an atomic operation:
// the stack executes an atomic load, store or compare-and-swap below its
// program point.
func HasAtomic(frames []recording.Frame, end int) bool {
	for i := 0; i < end && i < len(frames); i++ {
		if IsAtomicFrame(frames[i]) {
			return true
		}
	}
	return false
}

// HasYield reports whether any of frames[:end] gives up the CPU on purpose.
func HasYield(frames []recording.Frame, end int) bool {
	for i := 0; i < end && i < len(frames); i++ {
		fn := frames[i].Func
		if GoPackage(fn) == "" {
			fn = NormNative(fn)
		}
		if YieldFuncs[fn] {
			return true
		}
	}
	return false
}

// ReceiverType returns the receiver type of a Go method (closures count as
// their enclosing method): "pkg.(*T).M.func1" → "pkg.(*T)", "pkg.T.M" →
// "pkg.T". It returns "" for plain functions and closures of functions.
func ReceiverType(fn string) string {
	fn = EnclosingFunc(fn)
	pkg := GoPackage(fn)
	if pkg == "" {
		return ""
	}
	rest := fn[len(pkg)+1:]
	if strings.HasPrefix(rest, "(*") {
		if i := strings.Index(rest, ")."); i > 0 {
			return fn[:len(pkg)+1+i+1]
		}
		return ""
	}
	if i := strings.IndexByte(rest, '.'); i > 0 {
		return fn[:len(pkg)+1+i]
	}
	return ""
}

// EnclosingFunc strips closure suffixes: "pkg.(*T).M.func1.2" →
// "pkg.(*T).M". Closures run inside the critical sections their enclosing
// function opens.
func EnclosingFunc(fn string) string {
	for {
		i := strings.LastIndexByte(fn, '.')
		if i < 0 {
			return fn
		}
		last := fn[i+1:]
		if strings.HasPrefix(last, "func") || strings.HasPrefix(last, "gowrap") || strings.HasPrefix(last, "deferwrap") || isDigits(last) {
			fn = fn[:i]
			continue
		}
		return fn
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// shortFunc shortens a function name for headlines: the package path keeps
// only its last element, "github.com/a/b/store.(*S).Save" → "store.(*S).Save".
func ShortFuncName(fn string) string {
	pkg := GoPackage(fn)
	if pkg == "" {
		return fn
	}
	return path.Base(pkg) + fn[len(pkg):]
}

// FrameKey names a frame for a program point key: "module!function", the
// function alone when the module is unknown, or the module-relative
// "module+0xOFF" an unresolved frame is named by.
func FrameKey(f recording.Frame) string {
	if f.Kernel {
		return "[kernel]!" + f.Func
	}
	if f.Module == "" || strings.HasPrefix(f.Func, f.Module+"+") {
		return f.Func
	}
	return f.Module + "!" + f.Func
}

// SplitModule splits a data symbol name "sym+0x10 (module)" into
// "sym+0x10" and the module, "" when it names none.
func SplitModule(name string) (rest, module string) {
	if i := strings.LastIndex(name, " ("); i >= 0 && strings.HasSuffix(name, ")") {
		return name[:i], name[i+2 : len(name)-1]
	}
	return name, ""
}

// SymbolModule splits a data symbol name "sym+0x10 (module)" into the
// symbol and the module; "" parts when absent.
func SymbolModule(name string) (sym, module string) {
	sym, module = SplitModule(name)
	if i := strings.IndexByte(sym, '+'); i >= 0 {
		sym = sym[:i]
	}
	return sym, module
}
