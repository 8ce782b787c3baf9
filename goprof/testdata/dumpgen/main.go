// Command dumpgen writes the go126-* profiles and dumps of this directory:
// goroutines in many wait states (sync.Mutex, RWMutex, channel, select,
// Cond, WaitGroup, locked to thread, a deep stack, pprof labels), then the
// mutex, block, CPU, heap and threadcreate profiles.
//
//	go build -trimpath -o /tmp/dumpgen . && /tmp/dumpgen go126
//	GODEBUG=tracebacklabels=1 /tmp/dumpgen lbl          # go126-labels-debug2.txt
//	GOTRACEBACK=system /tmp/dumpgen sq hang 2>go126-sigquit.txt & kill -QUIT $!
//
// It lives under testdata so the go tool never builds it with the module.
package main

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

type box[T any] struct {
	mu sync.Mutex
	v  T
}

func (b *box[T]) hold(d time.Duration) { b.mu.Lock(); time.Sleep(d); b.mu.Unlock() }
func (b *box[T]) wait()                { b.mu.Lock(); b.mu.Unlock() }

type svc struct{ rw sync.RWMutex }

func (s *svc) reader() { s.rw.RLock(); s.rw.RUnlock() }
func (s *svc) writer() { s.rw.Lock(); s.rw.Unlock() }

func recvLoop(c chan int) {
	for range c {
	}
}
func selectLoop(a, b chan int) {
	select {
	case <-a:
	case <-b:
	}
}
func condWait(c *sync.Cond)     { c.L.Lock(); c.Wait(); c.L.Unlock() }
func wgWait(wg *sync.WaitGroup) { wg.Wait() }
func locked(c chan int)         { runtime.LockOSThread(); <-c }
func deep(n int, c chan int) {
	if n == 0 {
		<-c
		return
	}
	deep(n-1, c)
}

//go:noinline
func busy(x int) int {
	for i := 0; i < 1000; i++ {
		x = x*31 + i
	}
	return x
}

func main() {
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	b := &box[int]{}
	go b.hold(2 * time.Second)
	time.Sleep(10 * time.Millisecond)
	for i := 0; i < 3; i++ {
		go b.wait()
	}
	s := &svc{}
	s.rw.Lock()
	go s.reader()
	go s.writer()
	c := make(chan int)
	go recvLoop(c)
	go selectLoop(make(chan int), make(chan int))
	cond := sync.NewCond(&sync.Mutex{})
	go condWait(cond)
	var wg sync.WaitGroup
	wg.Add(1)
	go wgWait(&wg)
	go locked(c)
	go deep(120, c)
	pprof.Do(context.Background(), pprof.Labels("relay", "r1", "sub", "s9"), func(context.Context) {
		go recvLoop(make(chan int))
	})
	time.Sleep(100 * time.Millisecond)
	if len(os.Args) > 2 && os.Args[2] == "hang" {
		select {}
	}
	fc, _ := os.Create(os.Args[1] + "-cpu.pb.gz")
	pprof.StartCPUProfile(fc)
	x := 0
	for t := time.Now(); time.Since(t) < 300*time.Millisecond; {
		x += busy(x)
	}
	pprof.StopCPUProfile()
	fc.Close()
	write := func(suffix, name string, debug int) {
		f, err := os.Create(os.Args[1] + suffix)
		if err != nil {
			panic(err)
		}
		pprof.Lookup(name).WriteTo(f, debug)
		f.Close()
	}
	write("-debug1.txt", "goroutine", 1)
	write("-debug2.txt", "goroutine", 2)
	write("-goroutine.pb.gz", "goroutine", 0)
	s.rw.Unlock()
	time.Sleep(2500 * time.Millisecond)
	write("-mutex-debug1.txt", "mutex", 1)
	write("-block-debug1.txt", "block", 1)
	write("-mutex.pb.gz", "mutex", 0)
	write("-block.pb.gz", "block", 0)
	write("-heap.pb.gz", "heap", 0)
	write("-threadcreate.txt", "threadcreate", 1)
	write("-heap.txt", "heap", 1)
}
