package symbolize

import "encoding/binary"

// stepResult says how one unwind step ended.
type stepResult int

const (
	stepOK   stepResult = iota // the caller's state was recovered
	stepEnd                    // this is the outermost frame
	stepFail                   // no rule applies or memory is missing
)

// unwindMethod selects the unwind rules tried, for tests that compare
// methods; the zero value tries every method.
type unwindMethod uint8

const (
	methodAll unwindMethod = iota
	methodFramePointer
)

// window is a copied stack region starting at base.
type window struct {
	base uint64
	b    []byte
}

// read returns size (1..8) bytes at addr as a little-endian number.
func (w *window) read(addr uint64, size int) (uint64, bool) {
	if addr < w.base || size < 1 || size > 8 {
		return 0, false
	}
	off := addr - w.base
	if off > uint64(len(w.b)) || uint64(size) > uint64(len(w.b))-off {
		return 0, false
	}
	var buf [8]byte
	copy(buf[:], w.b[off:off+uint64(size)])
	return binary.LittleEndian.Uint64(buf[:]), true
}

func (p *process) unwind(r Regs, stack []byte) ([]uint64, bool) {
	return p.unwindWith(r, stack, methodAll)
}

func (p *process) unwindWith(r Regs, stack []byte, method unwindMethod) ([]uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := &window{base: r.SP, b: stack}
	var st frameState
	st.set(regRA, r.IP)
	st.set(regSP, r.SP)
	st.set(regBP, r.BP)
	pcs := []uint64{r.IP}
	exact := true // the pc of the current frame is exact, not a return address
	for len(pcs) < MaxDepth {
		pc := st.regs[regRA]
		lookup := pc
		if !exact {
			lookup--
		}
		var next frameState
		var signal bool
		res := stepFail
		if err := guarded(func() { next, signal, res = p.step(&st, pc, lookup, len(pcs) == 1, w, method) }); err != nil {
			p.lim.fault(p.moduleAt(lookup), err)
			return pcs, false
		}
		switch res {
		case stepEnd:
			return pcs, true
		case stepFail:
			return pcs, false
		}
		ra := next.regs[regRA]
		if ra == 0 {
			// A zero return address is how thread entry points and
			// hand-written start code mark the outermost frame.
			return pcs, true
		}
		callerLookup := ra
		if !signal {
			callerLookup--
		}
		if reg := p.regionAt(callerLookup); reg == nil || !reg.exec {
			return pcs, false
		}
		pcs = append(pcs, ra)
		st = next
		exact = signal
	}
	return pcs, false
}

// step recovers the caller's registers of the frame executing at pc.
// lookup is the address to find unwind rules for (pc-1 for return
// addresses). signal reports that this frame is a signal trampoline, so the
// caller's pc is exact. Caller holds p.mu.
func (p *process) step(st *frameState, pc, lookup uint64, leaf bool, w *window, method unwindMethod) (next frameState, signal bool, res stepResult) {
	sp, _ := st.get(regSP)
	reg := p.regionAt(lookup)
	if reg == nil || !reg.exec {
		return next, false, stepFail
	}
	if o := reg.obj; o != nil && method == methodAll {
		v := lookup - reg.bias
		if t := o.pcln(); t != nil {
			if f, ok := t.find(v); ok {
				flag := t.flag(f)
				if flag&funcFlagTopFrame != 0 {
					return next, false, stepEnd
				}
				if flag&funcFlagSPWrite != 0 && !leaf {
					// A stack switch (mcall, systemstack, morestack):
					// the caller's frame is on another stack.
					return next, false, stepFail
				}
				if delta, ok := t.spDelta(f, v); ok && delta >= 0 {
					return goStep(st, sp, uint64(delta), w)
				}
			}
		}
		if row, sig, ok := o.cfiAt(v); ok {
			// The object describes this pc: its rules are the truth, and
			// when they cannot be followed the walk stops rather than
			// guess with the frame pointer.
			next, res := applyRow(&row, st, pc, w)
			return next, sig, res
		}
	}
	return fpStep(st, sp, w)
}

// goStep unwinds a Go frame with the SP delta from the pclntab: the
// return address sits just above the frame, and functions with a frame
// save the caller's frame pointer right below it.
func goStep(st *frameState, sp, delta uint64, w *window) (frameState, bool, stepResult) {
	var next frameState
	cfa := sp + delta + 8
	ra, ok := w.read(cfa-8, 8)
	if !ok || cfa <= sp {
		return next, false, stepFail
	}
	next = *st
	next.set(regRA, ra)
	next.set(regSP, cfa)
	if delta > 0 {
		if bp, ok := w.read(cfa-16, 8); ok {
			next.set(regBP, bp)
		} else {
			next.forget(regBP)
		}
	}
	return next, false, stepOK
}

// fpStep applies the frame-pointer rule: CFA = rbp+16, return address at
// rbp+8, saved rbp at rbp. It only trusts rbp when it points into the
// window above the current stack pointer.
func fpStep(st *frameState, sp uint64, w *window) (frameState, bool, stepResult) {
	var next frameState
	bp, ok := st.get(regBP)
	if !ok || bp < sp || bp+16 < bp {
		return next, false, stepFail
	}
	savedBP, ok1 := w.read(bp, 8)
	ra, ok2 := w.read(bp+8, 8)
	if !ok1 || !ok2 {
		return next, false, stepFail
	}
	next = *st
	next.set(regBP, savedBP)
	next.set(regRA, ra)
	next.set(regSP, bp+16)
	return next, false, stepOK
}

// applyRow computes the caller's registers from a CFI row.
func applyRow(row *cfiRow, st *frameState, pc uint64, w *window) (frameState, stepResult) {
	var next frameState
	cur := *st
	cur.set(regRA, pc) // DW_OP_breg16 (rip) in PLT expressions reads the pc
	var cfa uint64
	if row.cfa.expr != nil {
		v, ok := evalExpr(row.cfa.expr, &cur, w.read)
		if !ok {
			return next, stepFail
		}
		cfa = v
	} else {
		base, ok := cur.get(uint64(row.cfa.reg))
		if !ok {
			return next, stepFail
		}
		cfa = base + uint64(row.cfa.off)
	}
	sp, _ := cur.get(regSP)
	if cfa <= sp {
		// Every caller's frame lies above its callee's; anything else is
		// a corrupt rule or a garbage register and would loop.
		return next, stepFail
	}
	for r := uint64(0); r < numRegs; r++ {
		rule := &row.regs[r]
		switch rule.kind {
		case ruleUnspecified, ruleSameValue:
			if r == regRA {
				if rule.kind == ruleUnspecified {
					return next, stepFail
				}
				next.set(r, pc)
				continue
			}
			if v, ok := cur.get(r); ok {
				next.set(r, v)
			}
		case ruleUndefined:
			if r == regRA {
				return next, stepEnd
			}
		case ruleOffset:
			if v, ok := w.read(cfa+uint64(rule.off), 8); ok {
				next.set(r, v)
			} else if r == regRA {
				return next, stepFail
			}
		case ruleValOffset:
			next.set(r, cfa+uint64(rule.off))
		case ruleRegister:
			if v, ok := cur.get(uint64(rule.reg)); ok {
				next.set(r, v)
			}
		case ruleExpr:
			if a, ok := evalExpr(rule.expr, &cur, w.read, cfa); ok {
				if v, ok := w.read(a, 8); ok {
					next.set(r, v)
				}
			}
		case ruleValExpr:
			if v, ok := evalExpr(rule.expr, &cur, w.read, cfa); ok {
				next.set(r, v)
			}
		}
		if r == regRA {
			if _, ok := next.get(regRA); !ok {
				return next, stepFail
			}
		}
	}
	if row.regs[regSP].kind == ruleUnspecified || row.regs[regSP].kind == ruleSameValue {
		next.set(regSP, cfa)
	}
	if nsp, ok := next.get(regSP); !ok || nsp <= sp {
		return next, stepFail
	}
	return next, stepOK
}
