package live

import (
	"sort"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
	"golang.org/x/arch/x86/x86asm"
)

// This file confirms a busy-wait by reading the machine code of the loop
// the CPU samples fall in: a spin loop is a handful of instructions that
// re-read one memory address (or exchange it atomically) until it
// changes, with no call and no system call; a work loop computes in
// registers or walks memory. The code is the recording's copy, taken by
// the collector from the objects the target mapped: the analysis opens
// no file.

// maxSpinLoopInsns bounds the size of a busy-wait loop. A test-and-set or
// test-and-test-and-set wait compiles to 2–6 instructions (load, test,
// branch; a pause; an exchange), and a relaxed load through a Go atomic
// adds none after inlining. Twelve leaves room for a backoff counter while
// keeping out any loop that does real work per iteration.
const maxSpinLoopInsns = 12

// loopReport is what the disassembly says about the sampled addresses of
// one function.
type loopReport struct {
	// busy maps each sampled runtime address to whether it lies in a
	// busy-wait loop.
	busy map[uint64]bool
	// insns is the size of the hottest busy-wait loop, start its ELF
	// address, and text its instructions for the evidence.
	insns int
	start uint64
	text  string
	// pause is set when the loop executes PAUSE (a spin hint).
	pause bool
}

// nativeLoops classifies the loops of a native function of module that
// hold the sampled runtime addresses addrs (with their sample weights),
// from the copy of its machine code the recording carries
// (recording.NativeCode): the copy that holds the hottest address, whose
// load bias is the one it was sampled at. ok is false when the recording
// holds no such copy. No binary is read: the file at a path the target
// named may have been replaced since (even by a FIFO), or be another
// build on the analyzing machine. A recording made before code was
// copied gets a note saying the loops are judged from their samples
// alone.
func nativeLoops(a *core.Output, rec *recording.Recording, module string, addrs map[uint64]int64) (loopReport, bool) {
	if module == "" || module == kernelModule || module == recording.ModuleJava || len(addrs) == 0 {
		return loopReport{}, false
	}
	if rec.NativeCode == nil {
		a.Note("the recording holds no copy of the target's machine code (it was made by a contend that did not keep one): busy-wait loops in native code are judged from their samples alone, never from binaries on this machine")
		return loopReport{}, false
	}
	hot := hottest(addrs)
	for _, c := range rec.NativeCode {
		if c.Module != module || !c.Contains(hot) {
			continue
		}
		d := &localDecoder{code: c.Code, start: c.Start, at: map[uint64]inst{}}
		return busyLoopsBy(func(a uint64) *loop { return d.innermostLoop(a - c.Bias) }, addrs, nil), true
	}
	return loopReport{}, false
}

// localDecoder finds the loops around sampled addresses by decoding the
// few instructions near each, instead of the whole function: a busy-wait
// loop is at most maxSpinLoopInsns instructions, and a sampled address is
// the start of an instruction, so the decoding is in step from it.
// Decoding all of an interpreter's dispatch loop (56 KB) for each window
// would cost a tenth of an always-on recorder's CPU. Instructions are
// decoded once per address.
type localDecoder struct {
	code  []byte
	start uint64
	at    map[uint64]inst
}

// decode returns the instruction at ELF address a.
func (d *localDecoder) decode(a uint64) (inst, bool) {
	if in, ok := d.at[a]; ok {
		return in, in.Len > 0
	}
	var in inst
	if a >= d.start && a-d.start < uint64(len(d.code)) {
		if x, err := x86asm.Decode(d.code[a-d.start:], 64); err == nil && x.Len > 0 {
			in = inst{addr: a, Inst: x}
		}
	}
	d.at[a] = in
	return in, in.Len > 0
}

// run decodes up to n instructions from a, stopping after the one at or
// past stop.
func (d *localDecoder) run(a, stop uint64, n int) []inst {
	var out []inst
	for len(out) < n {
		in, ok := d.decode(a)
		if !ok {
			break
		}
		out = append(out, in)
		if a >= stop {
			break
		}
		a += uint64(in.Len)
	}
	return out
}

// innermostLoop returns the smallest loop of at most maxSpinLoopInsns
// instructions (a backward branch and its target) that contains ELF
// address a, nil when none does. A larger loop is never a busy-wait, so
// it is not looked for.
func (d *localDecoder) innermostLoop(a uint64) *loop {
	var best *loop
	for _, br := range d.run(a, ^uint64(0), maxSpinLoopInsns) {
		target, ok := branchTarget(br)
		if !ok || target > a {
			continue
		}
		body := d.run(target, br.addr, maxSpinLoopInsns)
		if len(body) == 0 || body[len(body)-1].addr != br.addr || !holds(body, a) {
			continue
		}
		if best == nil || len(body) < len(best.insts) {
			best = &loop{insts: body}
		}
	}
	return best
}

// holds reports whether an instruction of insts starts at a.
func holds(insts []inst, a uint64) bool {
	for _, in := range insts {
		if in.addr == a {
			return true
		}
	}
	return false
}

// busyLoops classifies the loops of insts that hold the sampled runtime
// addresses (insts are at runtime address minus bias); prep, when not
// nil, prepares each loop before it is judged.
func busyLoops(insts []inst, addrs map[uint64]int64, bias uint64, prep func(*loop) *loop) loopReport {
	return busyLoopsBy(func(a uint64) *loop { return innermostLoop(insts, a-bias) }, addrs, prep)
}

// busyLoopsBy is busyLoops with the loop around each runtime address
// found by innermost.
func busyLoopsBy(innermost func(uint64) *loop, addrs map[uint64]int64, prep func(*loop) *loop) loopReport {
	rep := loopReport{busy: map[uint64]bool{}}
	var best *loop
	var bestW int64
	for a, w := range addrs {
		l := innermost(a)
		if l != nil && prep != nil {
			l = prep(l)
		}
		if l == nil || !l.busyWait() {
			continue
		}
		rep.busy[a] = true
		if w > bestW {
			best, bestW = l, w
		}
	}
	if best != nil {
		rep.insns, rep.start, rep.pause = len(best.insts), best.insts[0].addr, best.pause()
		rep.text = best.String()
	}
	return rep
}

// hottest returns the address with the largest weight (the lowest on a
// tie).
func hottest(addrs map[uint64]int64) uint64 {
	var best uint64
	var bw int64 = -1
	for a, w := range addrs {
		if w > bw || w == bw && a < best {
			best, bw = a, w
		}
	}
	return best
}

// inst is one decoded instruction at its ELF address.
type inst struct {
	addr uint64
	x86asm.Inst
}

// absolute returns m with a RIP-relative displacement resolved to the ELF
// address it names, so two instructions reading one global compare equal.
func (in inst) absolute(m x86asm.Mem) x86asm.Mem {
	if m.Base == x86asm.RIP {
		m.Disp += int64(in.addr) + int64(in.Len)
		m.Base = 0
	}
	return m
}

func decodeAll(code []byte, start uint64) []inst {
	var out []inst
	for off := 0; off < len(code); {
		in, err := x86asm.Decode(code[off:], 64)
		if err != nil || in.Len == 0 {
			off++
			continue
		}
		out = append(out, inst{addr: start + uint64(off), Inst: in})
		off += in.Len
	}
	return out
}

// loop is the instructions from a backward branch's target to the branch.
type loop struct{ insts []inst }

// innermostLoop returns the smallest loop (a backward branch and its
// target) that contains ELF address a, nil when none does.
func innermostLoop(insts []inst, a uint64) *loop {
	var best *loop
	for i, in := range insts {
		target, ok := branchTarget(in)
		if !ok || target > in.addr || a < target || a > in.addr {
			continue
		}
		j := sort.Search(len(insts), func(j int) bool { return insts[j].addr >= target })
		if j > i || insts[j].addr != target {
			continue
		}
		if best == nil || i-j+1 < len(best.insts) {
			best = &loop{insts: insts[j : i+1]}
		}
	}
	return best
}

// branchTarget returns the ELF address a direct jump goes to.
func branchTarget(in inst) (uint64, bool) {
	if !isJump(in.Op) {
		return 0, false
	}
	rel, ok := in.Args[0].(x86asm.Rel)
	if !ok {
		return 0, false
	}
	return uint64(int64(in.addr) + int64(in.Len) + int64(rel)), true
}

func isJump(op x86asm.Op) bool {
	switch op {
	case x86asm.JMP, x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JCXZ, x86asm.JE, x86asm.JECXZ,
		x86asm.JG, x86asm.JGE, x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS,
		x86asm.JO, x86asm.JP, x86asm.JRCXZ, x86asm.JS, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		return true
	}
	return false
}

// busyWait reports whether the loop is a busy-wait: small, no calls or
// system calls, a conditional branch (the wait ends when the word
// changes), and it re-reads (or atomically exchanges) a memory word whose
// address does not change in the loop and that the loop never plainly
// stores to. A work loop either computes in registers or walks memory
// with an index that changes every iteration; a loop that loads and
// stores the same word (a counter, unoptimized code's locals) is not
// waiting for anyone, and neither is a loop that only ever jumps back.
func (l *loop) busyWait() bool {
	if len(l.insts) > maxSpinLoopInsns || l.lockFreeRetry() {
		return false
	}
	written := map[int]bool{}
	conditional := false
	for _, in := range l.insts {
		switch in.Op {
		case x86asm.CALL, x86asm.LCALL, x86asm.SYSCALL, x86asm.SYSENTER, x86asm.INT, x86asm.RET, x86asm.LRET, x86asm.HLT:
			return false
		}
		if isJump(in.Op) && in.Op != x86asm.JMP {
			conditional = true
		}
		for _, r := range writtenRegs(in.Inst) {
			written[r] = true
		}
	}
	if !conditional {
		return false
	}
	stored := map[x86asm.Mem]bool{}
	for _, in := range l.insts {
		if in.Op == x86asm.MOV || in.Op == x86asm.MOVNTI {
			if m, ok := in.Args[0].(x86asm.Mem); ok {
				stored[in.absolute(m)] = true
			}
		}
	}
	for _, in := range l.insts {
		if in.Op == x86asm.LEA || in.Op == x86asm.NOP {
			continue
		}
		for _, a := range in.Args {
			m, ok := a.(x86asm.Mem)
			if !ok || stored[in.absolute(m)] {
				continue
			}
			if (m.Base == 0 || m.Base == x86asm.RIP || !written[regFamily(m.Base)]) && (m.Index == 0 || !written[regFamily(m.Index)]) {
				return true
			}
		}
	}
	return false
}

// lockFreeRetry reports whether the loop is a lock-free update that a
// lost race retries: a CMPXCHG on one word whose comparand (the
// accumulator) is what the word last held, left there by the failed
// CMPXCHG itself or loaded from the word inside the loop, never a
// constant. A spin lock's CMPXCHG compares against the free value (xor
// eax, eax) on every try and fails for as long as the lock is held; a
// lock-free push or add fails only when another thread's update landed
// in between, so it waits for no holder however hot it runs (a queue
// pushed by 14 threads at once spent 10 % of their CPU in its retries).
func (l *loop) lockFreeRetry() bool {
	var word x86asm.Mem
	found := false
	for _, in := range l.insts {
		if in.Op != x86asm.CMPXCHG {
			continue
		}
		m, ok := in.Args[0].(x86asm.Mem)
		if !ok || found && in.absolute(m) != word {
			return false
		}
		word, found = in.absolute(m), true
	}
	if !found {
		return false
	}
	rax := regFamily(x86asm.RAX)
	for _, in := range l.insts {
		if in.Op == x86asm.CMPXCHG {
			continue
		}
		for _, r := range writtenRegs(in.Inst) {
			if r != rax {
				continue
			}
			m, ok := in.Args[1].(x86asm.Mem)
			if in.Op != x86asm.MOV || !ok || in.absolute(m) != word {
				return false
			}
		}
	}
	return true
}

// pause reports whether the loop executes PAUSE.
func (l *loop) pause() bool {
	for _, in := range l.insts {
		if in.Op == x86asm.PAUSE {
			return true
		}
	}
	return false
}

// String renders the loop in Intel syntax, one instruction per "; ".
func (l *loop) String() string {
	s := ""
	for i, in := range l.insts {
		if i > 0 {
			s += "; "
		}
		s += x86asm.IntelSyntax(in.Inst, in.addr, nil)
	}
	return s
}

// writtenRegs returns the register families an instruction writes
// (conservatively: the first operand of anything that is not a compare,
// a test or a branch, plus the implicit accumulator of CMPXCHG and the
// second operand of exchanges).
func writtenRegs(in x86asm.Inst) []int {
	var out []int
	add := func(a x86asm.Arg) {
		if r, ok := a.(x86asm.Reg); ok {
			if f := regFamily(r); f >= 0 {
				out = append(out, f)
			}
		}
	}
	switch in.Op {
	case x86asm.CMP, x86asm.TEST, x86asm.BT, x86asm.NOP, x86asm.PAUSE, x86asm.PUSH:
		return nil
	case x86asm.XCHG, x86asm.XADD:
		add(in.Args[0])
		add(in.Args[1])
	case x86asm.CMPXCHG, x86asm.CMPXCHG8B, x86asm.CMPXCHG16B:
		add(in.Args[0])
		out = append(out, regFamily(x86asm.RAX), regFamily(x86asm.RDX))
	case x86asm.POP:
		add(in.Args[0])
		out = append(out, regFamily(x86asm.RSP))
	default:
		if !isJump(in.Op) {
			add(in.Args[0])
		}
	}
	return out
}

// regFamily maps a general-purpose register of any width to the index of
// its 64-bit register (AL, AX, EAX → RAX), -1 for other registers.
func regFamily(r x86asm.Reg) int {
	switch {
	case r >= x86asm.AL && r <= x86asm.R15B:
		i := int(r - x86asm.AL)
		if i >= 4 && i < 8 { // AH, CH, DH, BH
			return i - 4
		}
		if i >= 8 { // SPB, BPB, SIB, DIB, R8B…
			return i - 4
		}
		return i
	case r >= x86asm.AX && r <= x86asm.R15W:
		return int(r - x86asm.AX)
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return int(r - x86asm.EAX)
	case r >= x86asm.RAX && r <= x86asm.R15:
		return int(r - x86asm.RAX)
	}
	return -1
}
