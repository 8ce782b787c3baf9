// goprog is a test program for package symbolize. It records the return
// address of a call made from code inlined twice (main.mid2 inlined into
// main.middle inlined into main.outer) and prints it with the frames the Go
// runtime itself derives for it, as one JSON line, so the tests can compare
// their symbolization with the runtime's. Then it parks threads in futex waits (goroutines locked to
// their threads and blocked on a channel) and waits for stdin to close.
package main

import (
	"encoding/json"
	"io"
	"os"
	"runtime"
)

type frame struct {
	Func string `json:"func"`
	File string `json:"file"`
	Line int    `json:"line"`
}

type site struct {
	// PC is the return address of the call to main.inner in main.outer.
	// runtime.Callers gives it as its second pc; the pcs after it up to
	// main.main's stand for the inlined frames and are not real return
	// addresses.
	PC uint64 `json:"pc"`
	// Frames is the runtime's expansion of the stack from PC on.
	Frames []frame `json:"frames"`
}

//go:noinline
func inner(n int) []uintptr {
	pcs := make([]uintptr, 16)
	k := runtime.Callers(1, pcs)
	return pcs[:k]
}

func mid2(n int) []uintptr { return inner(n + 1) }

func middle(n int) []uintptr { return mid2(n + 1) }

//go:noinline
func outer(n int) []uintptr { return middle(n * 2) }

func main() {
	pcs := outer(3)
	s := site{PC: uint64(pcs[1])}
	fr := runtime.CallersFrames(pcs[1:])
	for {
		f, more := fr.Next()
		s.Frames = append(s.Frames, frame{f.Function, f.File, f.Line})
		if !more {
			break
		}
	}
	block := make(chan struct{})
	for i := 0; i < 3; i++ {
		go func() {
			runtime.LockOSThread()
			<-block
		}()
	}
	b, _ := json.Marshal(s)
	os.Stdout.Write(append(b, '\n'))
	io.Copy(io.Discard, os.Stdin)
}
