package live

import (
	"github.com/contend-dev/contend/recording"
	"golang.org/x/arch/x86/x86asm"
)

// This file confirms a busy-wait in JIT-compiled Java code. The code is in
// no file: the collector copies the hottest compiled functions out of the
// target (recording.JITCode), and their loops are judged as live/disasm.go
// judges a binary's, once the JIT's own safepoint polls are set aside.

// jitLoops disassembles the compiled function fn from the recording's
// copied code and classifies the loops that hold the sampled addresses;
// ok is false when no copy of fn holds them.
func jitLoops(rec *recording.Recording, fn string, addrs map[uint64]int64) (loopReport, bool) {
	hot := hottest(addrs)
	for _, b := range rec.JITCode {
		if b.Name != fn || hot < b.Start || hot >= b.Start+uint64(len(b.Code)) {
			continue
		}
		return busyLoops(decodeAll(b.Code, b.Start), addrs, 0, withoutPolls), true
	}
	return loopReport{}, false
}

// jvmThreadReg is the register HotSpot's compiled code keeps the current
// JavaThread in on x86-64.
const jvmThreadReg = x86asm.R15

// withoutPolls drops a loop's safepoint poll: HotSpot's compiled loops
// load the thread's polling word through r15 and touch the page it
// points to (mov r10, [r15+off]; test [r10], eax), or compare the stack
// pointer with it. Every loop the JIT compiles has one, and its read of a
// fixed address would otherwise make any small work loop look like one
// that waits for a word to change.
func withoutPolls(l *loop) *loop {
	viaThread := map[int]bool{}
	out := &loop{}
	for _, in := range l.insts {
		poll := false
		for _, a := range in.Args {
			m, ok := a.(x86asm.Mem)
			if !ok {
				continue
			}
			if m.Base == jvmThreadReg || viaThread[regFamily(m.Base)] {
				poll = true
			}
		}
		if poll {
			if r, ok := in.Args[0].(x86asm.Reg); ok && in.Op == x86asm.MOV {
				viaThread[regFamily(r)] = true
			}
			continue
		}
		out.insts = append(out.insts, in)
	}
	return out
}
