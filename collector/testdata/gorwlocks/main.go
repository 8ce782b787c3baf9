// Command gorwlocks contends a sync.Mutex, and an RWMutex between readers
// and a writer, and waits on a WaitGroup, for the duration given as its argument, so the collector's
// tests can check the Go lock probes in a binary of any Go release since
// 1.21 (a module of its own, without dependencies, built with
// GOTOOLCHAIN).
package main

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

var (
	mu   sync.Mutex
	rw   sync.RWMutex
	n    int
	data = map[int]int{}
	stop atomic.Bool
)

// mutexWorker takes mu for a short loop, over and over: a convoy of
// sync.Mutex waiters.
//
//go:noinline
func mutexWorker() {
	for !stop.Load() {
		mu.Lock()
		for i := 0; i < 2000; i++ {
			n++
		}
		mu.Unlock()
	}
}

// reader holds the read side for a while: readers queue behind the
// writer that waits for them.
//
//go:noinline
func reader() {
	for !stop.Load() {
		rw.RLock()
		_ = data[1]
		time.Sleep(50 * time.Microsecond)
		rw.RUnlock()
	}
}

// writer takes the write side, waiting for the readers to leave.
//
//go:noinline
func writer() {
	for !stop.Load() {
		rw.Lock()
		data[1]++
		time.Sleep(200 * time.Microsecond)
		rw.Unlock()
		time.Sleep(100 * time.Microsecond)
	}
}

// waiter waits on a WaitGroup over and over: a semaphore wait that is not
// a lock's, which the Go lock probes leave out.
//
//go:noinline
func waiter() {
	for !stop.Load() {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			time.Sleep(100 * time.Microsecond)
			wg.Done()
		}()
		wg.Wait()
	}
}

func main() {
	d, err := time.ParseDuration(os.Args[1])
	if err != nil {
		os.Exit(2)
	}
	for i := 0; i < 16; i++ {
		go mutexWorker()
		go reader()
	}
	go writer()
	go waiter()
	time.Sleep(d)
	stop.Store(true)
}
