package symbolize

// Limits of the DWARF expression evaluator. Unwind expressions in glibc,
// PLT entries and signal frames use fewer than 10 operations and a stack
// of 3; the limits only stop corrupt input (loops through DW_OP_bra).
const (
	maxExprSteps = 256
	maxExprStack = 64
)

// frameState is the register state of one frame during a walk.
type frameState struct {
	regs  [numRegs]uint64
	known uint32 // bit i: regs[i] is known
}

func (s *frameState) get(r uint64) (uint64, bool) {
	if r >= numRegs || s.known&(1<<r) == 0 {
		return 0, false
	}
	return s.regs[r], true
}

func (s *frameState) set(r uint64, v uint64) {
	if r < numRegs {
		s.regs[r] = v
		s.known |= 1 << r
	}
}

func (s *frameState) forget(r uint64) {
	if r < numRegs {
		s.known &^= 1 << r
	}
}

// memReader reads a 64-bit value of target memory (from the copied stack
// window only).
type memReader func(addr uint64, size int) (uint64, bool)

// evalExpr evaluates a DWARF location expression (DWARF 5 section 2.5)
// over the registers of st, with init pushed first (the CFA for
// DW_CFA_expression and DW_CFA_val_expression). It supports the operations
// unwind tables use: constants, register-relative values, stack
// manipulation, arithmetic and logic, comparisons, branches and
// dereferences. Anything else makes it fail.
func evalExpr(expr []byte, st *frameState, mem memReader, init ...uint64) (uint64, bool) {
	stack := make([]uint64, 0, 8)
	stack = append(stack, init...)
	push := func(v uint64) bool {
		if len(stack) >= maxExprStack {
			return false
		}
		stack = append(stack, v)
		return true
	}
	pop := func() (uint64, bool) {
		if len(stack) == 0 {
			return 0, false
		}
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		return v, true
	}
	c := &cursor{b: expr}
	for steps := 0; c.pos < len(c.b); steps++ {
		if steps >= maxExprSteps {
			return 0, false
		}
		op := c.u8()
		ok := true
		switch {
		case op >= 0x30 && op <= 0x4f: // DW_OP_lit0..31
			ok = push(uint64(op - 0x30))
		case op >= 0x50 && op <= 0x6f: // DW_OP_reg0..31: a register, not a location
			return 0, false
		case op >= 0x70 && op <= 0x8f: // DW_OP_breg0..31
			off := c.sleb()
			v, known := st.get(uint64(op - 0x70))
			ok = known && push(v+uint64(off))
		default:
			ok = evalOp(op, c, st, mem, push, pop)
		}
		if !ok || c.bad {
			return 0, false
		}
	}
	return pop()
}

// evalOp runs one operation other than the literal and register ranges.
func evalOp(op uint8, c *cursor, st *frameState, mem memReader, push func(uint64) bool, pop func() (uint64, bool)) bool {
	binop := func(f func(a, b uint64) (uint64, bool)) bool {
		b, ok1 := pop()
		a, ok2 := pop()
		if !ok1 || !ok2 {
			return false
		}
		v, ok := f(a, b)
		return ok && push(v)
	}
	bool2 := func(b bool) (uint64, bool) {
		if b {
			return 1, true
		}
		return 0, true
	}
	switch op {
	case 0x03: // DW_OP_addr
		return push(c.u64())
	case 0x06: // DW_OP_deref
		a, ok := pop()
		if !ok {
			return false
		}
		v, ok := mem(a, 8)
		return ok && push(v)
	case 0x94: // DW_OP_deref_size
		n := int(c.u8())
		a, ok := pop()
		if !ok || n < 1 || n > 8 {
			return false
		}
		v, ok := mem(a, n)
		return ok && push(v)
	case 0x08: // DW_OP_const1u
		return push(uint64(c.u8()))
	case 0x09: // DW_OP_const1s
		return push(uint64(int64(int8(c.u8()))))
	case 0x0a: // DW_OP_const2u
		return push(uint64(c.u16()))
	case 0x0b: // DW_OP_const2s
		return push(uint64(int64(int16(c.u16()))))
	case 0x0c: // DW_OP_const4u
		return push(uint64(c.u32()))
	case 0x0d: // DW_OP_const4s
		return push(uint64(int64(int32(c.u32()))))
	case 0x0e, 0x0f: // DW_OP_const8u, DW_OP_const8s
		return push(c.u64())
	case 0x10: // DW_OP_constu
		return push(c.uleb())
	case 0x11: // DW_OP_consts
		return push(uint64(c.sleb()))
	case 0x12: // DW_OP_dup
		v, ok := pop()
		return ok && push(v) && push(v)
	case 0x13: // DW_OP_drop
		_, ok := pop()
		return ok
	case 0x14: // DW_OP_over
		b, ok1 := pop()
		a, ok2 := pop()
		return ok1 && ok2 && push(a) && push(b) && push(a)
	case 0x15: // DW_OP_pick
		idx := int(c.u8())
		var tmp []uint64
		for i := 0; i <= idx; i++ {
			v, ok := pop()
			if !ok {
				return false
			}
			tmp = append(tmp, v)
		}
		for i := len(tmp) - 1; i >= 0; i-- {
			push(tmp[i])
		}
		return push(tmp[idx])
	case 0x16: // DW_OP_swap
		b, ok1 := pop()
		a, ok2 := pop()
		return ok1 && ok2 && push(b) && push(a)
	case 0x17: // DW_OP_rot
		c3, ok1 := pop()
		b, ok2 := pop()
		a, ok3 := pop()
		return ok1 && ok2 && ok3 && push(c3) && push(a) && push(b)
	case 0x19: // DW_OP_abs
		v, ok := pop()
		if int64(v) < 0 {
			v = -v
		}
		return ok && push(v)
	case 0x1f: // DW_OP_neg
		v, ok := pop()
		return ok && push(-v)
	case 0x20: // DW_OP_not
		v, ok := pop()
		return ok && push(^v)
	case 0x23: // DW_OP_plus_uconst
		v, ok := pop()
		return ok && push(v+c.uleb())
	case 0x1a: // DW_OP_and
		return binop(func(a, b uint64) (uint64, bool) { return a & b, true })
	case 0x1b: // DW_OP_div
		return binop(func(a, b uint64) (uint64, bool) {
			if b == 0 || (int64(a) == -1<<63 && int64(b) == -1) {
				return 0, false
			}
			return uint64(int64(a) / int64(b)), true
		})
	case 0x1c: // DW_OP_minus
		return binop(func(a, b uint64) (uint64, bool) { return a - b, true })
	case 0x1d: // DW_OP_mod
		return binop(func(a, b uint64) (uint64, bool) {
			if b == 0 {
				return 0, false
			}
			return a % b, true
		})
	case 0x1e: // DW_OP_mul
		return binop(func(a, b uint64) (uint64, bool) { return a * b, true })
	case 0x21: // DW_OP_or
		return binop(func(a, b uint64) (uint64, bool) { return a | b, true })
	case 0x22: // DW_OP_plus
		return binop(func(a, b uint64) (uint64, bool) { return a + b, true })
	case 0x24: // DW_OP_shl
		return binop(func(a, b uint64) (uint64, bool) { return a << (b & 63), b < 64 })
	case 0x25: // DW_OP_shr
		return binop(func(a, b uint64) (uint64, bool) { return a >> (b & 63), b < 64 })
	case 0x26: // DW_OP_shra
		return binop(func(a, b uint64) (uint64, bool) { return uint64(int64(a) >> (b & 63)), b < 64 })
	case 0x27: // DW_OP_xor
		return binop(func(a, b uint64) (uint64, bool) { return a ^ b, true })
	case 0x29: // DW_OP_eq
		return binop(func(a, b uint64) (uint64, bool) { return bool2(a == b) })
	case 0x2a: // DW_OP_ge
		return binop(func(a, b uint64) (uint64, bool) { return bool2(int64(a) >= int64(b)) })
	case 0x2b: // DW_OP_gt
		return binop(func(a, b uint64) (uint64, bool) { return bool2(int64(a) > int64(b)) })
	case 0x2c: // DW_OP_le
		return binop(func(a, b uint64) (uint64, bool) { return bool2(int64(a) <= int64(b)) })
	case 0x2d: // DW_OP_lt
		return binop(func(a, b uint64) (uint64, bool) { return bool2(int64(a) < int64(b)) })
	case 0x2e: // DW_OP_ne
		return binop(func(a, b uint64) (uint64, bool) { return bool2(a != b) })
	case 0x2f: // DW_OP_skip
		off := int(int16(c.u16()))
		return jump(c, off)
	case 0x28: // DW_OP_bra
		off := int(int16(c.u16()))
		v, ok := pop()
		if !ok {
			return false
		}
		if v != 0 {
			return jump(c, off)
		}
		return true
	case 0x92: // DW_OP_bregx
		r := c.uleb()
		off := c.sleb()
		v, known := st.get(r)
		return known && push(v+uint64(off))
	case 0x96: // DW_OP_nop
		return true
	}
	return false
}

// jump moves the cursor by off bytes, staying inside the expression (a
// jump to its very end finishes it).
func jump(c *cursor, off int) bool {
	to := c.pos + off
	if to < 0 || to > len(c.b) {
		return false
	}
	c.pos = to
	return true
}
