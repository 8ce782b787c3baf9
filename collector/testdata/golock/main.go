// Command golock runs goroutines locked to their own OS threads that
// contend on a lock built directly on futex(2), so the collector's tests
// can check futex waits of a Go program: the lock keeps its owner's thread
// id 8 bytes after the futex word, where glibc keeps a mutex's owner.
//
// Prints "pid=P lock=0xADDR" then "tid=T" per worker.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// futexLock is a three-state futex mutex (0 free, 1 locked, 2 locked with
// waiters), laid out like glibc's pthread_mutex_t: word at +0, owner tid
// at +8.
type futexLock struct {
	state uint32
	_     uint32
	owner int32
}

//go:noinline
func (l *futexLock) Lock() {
	if atomic.CompareAndSwapUint32(&l.state, 0, 1) {
		atomic.StoreInt32(&l.owner, int32(unix.Gettid()))
		return
	}
	for atomic.SwapUint32(&l.state, 2) != 0 {
		futexWait(&l.state, 2)
	}
	atomic.StoreInt32(&l.owner, int32(unix.Gettid()))
}

//go:noinline
func (l *futexLock) Unlock() {
	atomic.StoreInt32(&l.owner, 0)
	if atomic.SwapUint32(&l.state, 0) == 2 {
		futexWake(&l.state, 1)
	}
}

// futex(2) operations (linux/futex.h).
const (
	futexWaitOp  = 0
	futexWakeOp  = 1
	futexPrivate = 128
)

//go:noinline
func futexWait(addr *uint32, val uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp|futexPrivate, uintptr(val), 0, 0, 0)
}

//go:noinline
func futexWake(addr *uint32, n int) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp|futexPrivate, uintptr(n), 0, 0, 0)
}

var (
	lock    futexLock
	counter uint64
)

// updateShared takes the lock and works while holding it.
//
//go:noinline
func updateShared() {
	lock.Lock()
	for i := 0; i < 20000; i++ {
		atomic.AddUint64(&counter, 1)
	}
	lock.Unlock()
}

func worker() {
	runtime.LockOSThread()
	fmt.Printf("tid=%d\n", unix.Gettid())
	for {
		updateShared()
	}
}

func main() {
	n := flag.Int("threads", 4, "worker threads")
	flag.Parse()
	fmt.Printf("pid=%d lock=%#x\n", os.Getpid(), uintptr(unsafe.Pointer(&lock)))
	for i := 0; i < *n; i++ {
		go worker()
	}
	select {}
}
